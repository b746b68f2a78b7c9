// Package contextpack holds no Go code of its own: the scripts beside it
// measure contextpack's context quality (contextpack/cmd/cpquality) on
// pinned repositories, and its reports. Its tests run each script, and the
// assembly-latency benchmark contextpack/cmd/cpbench, with their smallest
// settings and check what they write.
package contextpack

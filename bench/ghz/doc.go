// Package ghz holds no Go code of its own: the latency benchmark is the
// scripts beside it (run.sh, steps.sh, surfaces.sh) and their Go half,
// benchtool. Its tests run each script with its smallest settings and check
// the report it writes.
package ghz

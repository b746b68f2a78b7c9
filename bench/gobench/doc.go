// Package gobench holds no Go code of its own: the Go benchmarks
// (func BenchmarkXxx in the packages' _test.go files, run with go test
// -bench) are the benchmarks docs/benchmarks.md names beside the programs
// under bench/. Its test runs each of them once, so that one which no
// longer runs fails the suite (plain go test never runs them).
package gobench

//go:build linux

package tokenizer

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread, so benchmarks can
// report per-core cost on a machine shared with other work (wall-clock
// ns/op grows with the load, thread CPU time much less).
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

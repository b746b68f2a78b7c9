//go:build unix && !linux

package ollamatest

import (
	"errors"
	"syscall"
	"time"
)

// sysProcAttr puts the server in its own process group (so Stop reaches its
// model runners).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

var errNoProc = errors.New("ollamatest: listing a process group needs Linux's /proc")

func groupMembers(int) ([]int, error) { return nil, errNoProc }

func stopped(int) bool { return true }

func cpuTime(int) (time.Duration, error) { return 0, errNoProc }

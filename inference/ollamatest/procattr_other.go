//go:build unix && !linux

package ollamatest

import "syscall"

// sysProcAttr puts the server in its own process group (so Stop reaches its
// model runners).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

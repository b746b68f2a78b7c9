package ollamatest

import "syscall"

// sysProcAttr puts the server in its own process group (so Stop reaches its
// model runners) and kills it if the test process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

//go:build unix

package evaluator

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive advisory lock without waiting; the lock
// goes with the open file (flock), so it ends when f is closed, also when
// the process dies.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrJournalBusy
		}
		return err
	}
}

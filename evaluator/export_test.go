package evaluator

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// The sandbox the package's tests share, internal and external: one for
// all of them (the Go runs' seed build cache is made once, the warm
// sandboxes start once). TestMain closes it before it looks for leaked
// goroutines. Tests may run in parallel on it: each run is private.
var (
	sandboxOnce sync.Once
	shared      *sandbox.Sandbox
	sharedErr   error
)

// SharedTestSandbox is the tests' shared sandbox (Timeout 20 s, the
// defaults otherwise).
func SharedTestSandbox() (*sandbox.Sandbox, error) {
	sandboxOnce.Do(func() {
		shared, sharedErr = sandbox.New(sandbox.Config{Timeout: 20 * time.Second}, zap.NewNop())
	})
	return shared, sharedErr
}

// CloseSharedTestSandbox closes it, if it was made.
func CloseSharedTestSandbox() {
	if shared != nil {
		_ = shared.Close()
	}
}

package evaluator_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/infill-dev/infill/evaluator"
)

// TestMain closes the sandbox the tests share (evaluator.SharedTestSandbox)
// after them, then checks that nothing leaked a goroutine.
func TestMain(m *testing.M) {
	code := m.Run()
	evaluator.CloseSharedTestSandbox()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

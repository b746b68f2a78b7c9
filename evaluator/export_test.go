package evaluator

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/tools/txtar"

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

// RequireGo skips (fails with CI=true) when the go command is missing.
func RequireGo(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go not on PATH")
		}
		t.Skip("go not on PATH")
	}
}

// GoTestdata writes the Go module of the txtar file into a directory and
// returns it; it skips (fails with CI=true) without the go command.
func GoTestdata(t testing.TB, file string) string {
	t.Helper()
	RequireGo(t)
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range ar.Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

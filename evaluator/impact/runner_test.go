package impact_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// sandboxRunner satisfies impact.Runner with the evaluator's sandbox as its
// public API stands: a command run in a private copy, stdout kept whole.
type sandboxRunner struct{ sb *sandbox.Sandbox }

func (r sandboxRunner) Run(ctx context.Context, cmd impact.Command) ([]byte, error) {
	res, err := r.sb.Run(ctx, sandbox.Spec{SourceDir: cmd.Dir, Files: cmd.Files, Command: cmd.Argv, Env: cmd.Env})
	if err != nil {
		return nil, err
	}
	if res.Status != sandbox.StatusExited {
		return nil, fmt.Errorf("run ended %s: %s", res.Status, res.Stderr)
	}
	if res.StdoutBytes > int64(len(res.Stdout)) {
		return nil, fmt.Errorf("stdout cut to its last %d of %d bytes", len(res.Stdout), res.StdoutBytes)
	}
	return []byte(res.Stdout), nil
}

// newSandboxRunner skips without bubblewrap on a developer machine and fails
// under CI=true. Memory and processes are above the sandbox's defaults: a
// real suite (more-itertools' starts 50 threads, each with an 8 MiB stack
// counted by RLIMIT_AS) fails under 1 GiB with or without tracing.
func newSandboxRunner(t testing.TB, timeout time.Duration) sandboxRunner {
	t.Helper()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pytest"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-pytest missing: %v", err)
		}
		t.Skipf("python3-pytest missing: %v", err)
	}
	sb, err := sandbox.New(sandbox.Config{Timeout: timeout, WarmWorkers: -1, MemoryBytes: 4 << 30, Processes: 256,
		OutputTailBytes: 32 << 20, OutputLimitBytes: 64 << 20}, zaptest.NewLogger(t))
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("sandbox unavailable: %v", err)
		}
		t.Fatalf("sandbox.New: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sandboxRunner{sb}
}

// hostRunner runs on the host, without isolation. TEST ONLY, and only for
// this package's own trusted test data: it exists to try interpreters the
// sandbox cannot bind (a Python 3.12+ outside /usr, for sys.monitoring).
type hostRunner struct {
	t   testing.TB
	env []string
}

func (r hostRunner) Run(ctx context.Context, cmd impact.Command) ([]byte, error) {
	dir := r.t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(cmd.Dir)); err != nil {
		return nil, err
	}
	for name, text := range cmd.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	c := exec.CommandContext(ctx, cmd.Argv[0], cmd.Argv[1:]...)
	c.Dir = dir
	c.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	for k, v := range cmd.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Env = append(c.Env, r.env...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	if stdout.Len() == 0 {
		return nil, fmt.Errorf("no output; stderr: %s", strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

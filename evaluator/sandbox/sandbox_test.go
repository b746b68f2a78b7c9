package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// newTestSandbox returns a Sandbox or skips the test when bubblewrap cannot
// run here; with CI=true a missing sandbox is a failure.
func newTestSandbox(t testing.TB, cfg Config) *Sandbox {
	t.Helper()
	sb, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("sandbox unavailable: %v", err)
		}
		t.Fatalf("sandbox.New: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

// bothPaths runs fn on a sandbox with warm sandboxes and on one without, so
// that program runs are checked on both paths. Without warm sandboxes here
// the warm half skips (fails with CI=true).
func bothPaths(t *testing.T, cfg Config, fn func(t *testing.T, sb *Sandbox)) {
	t.Helper()
	for _, warm := range []bool{true, false} {
		t.Run(map[bool]string{true: "warm", false: "cold"}[warm], func(t *testing.T) {
			c := cfg
			if !warm {
				c.WarmWorkers = -1
			}
			sb := newTestSandbox(t, c)
			if warm && !sb.Warm() {
				if os.Getenv("CI") == "true" {
					t.Fatal("warm sandboxes unavailable")
				}
				t.Skip("warm sandboxes unavailable here")
			}
			fn(t, sb)
		})
	}
}

func program(src string) Spec {
	return Spec{Python: []string{"program", "program.py"}, Warm: true, Files: map[string]string{"program.py": src}}
}

// passed is a run's pass: the Python runner's pass signal, or a plain
// command's exit status 0.
func passed(spec Spec, res Result) bool {
	if len(spec.Python) == 0 {
		return res.Status == StatusExited && res.ExitCode == 0
	}
	return res.Passed()
}

func TestRunVerdicts(t *testing.T) {
	bothPaths(t, Config{Timeout: 10 * time.Second}, func(t *testing.T, sb *Sandbox) {
		cases := []struct {
			name   string
			spec   Spec
			pass   bool
			status Status
			code   int
		}{
			{"ok", program("def f():\n    return 1\nassert f() == 1\nprint('hi')\n"), true, StatusExited, 0},
			{"assertion", program("assert 1 == 2\n"), false, StatusExited, 1},
			{"syntax error", program("def f(:\n"), false, StatusExited, 1},
			{"os._exit(0)", program("import os\nos._exit(0)\nassert False\n"), false, StatusExited, 0},
			{"sys.exit(0) in program", program("import sys\nsys.exit(0)\n"), false, StatusExited, 1},
			{"exec away", program("import os\nos.execv('/bin/true', ['true'])\n"), false, StatusExited, 0},
			{"self kill", program("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"), false, StatusSignaled, -1},
			{"kill group", program("import os, signal\nos.kill(0, signal.SIGKILL)\n"), false, StatusSignaled, -1},
			{"kill all", program("import os, signal\nos.kill(-1, signal.SIGKILL)\n"), false, StatusExited, 1},
			{"kill parent then exit 0", program("import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\nos._exit(0)\n"), false, StatusExited, 0},
			{"script exit 0", Spec{Python: []string{"script", "s.py", "a"}, Files: map[string]string{"s.py": "import sys\nassert sys.argv[1:] == ['a']\nsys.exit(0)\n"}}, true, StatusExited, 0},
			{"script exit 3", Spec{Python: []string{"script", "s.py"}, Files: map[string]string{"s.py": "import sys\nsys.exit(3)\n"}}, false, StatusExited, 3},
			{"multiprocessing", program("import multiprocessing\nif __name__ == '__main__':\n    with multiprocessing.Pool(2) as p:\n        assert p.map(abs, [-1, -2]) == [1, 2]\n"), true, StatusExited, 0},
			{"threads and tmp", program("import threading, tempfile\nt = threading.Thread(target=lambda: None)\nt.start(); t.join()\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'x')\n"), true, StatusExited, 0},
			{"no nested user namespace", program("import subprocess\nr = subprocess.run(['unshare', '-U', 'true'], capture_output=True)\nassert r.returncode != 0, r\n"), true, StatusExited, 0},
			{"non-root and no capabilities", program("import os\nassert os.getuid() == 65534 and os.getgid() == 65534\nassert open('/proc/self/status').read().split('CapEff:')[1].split()[0] == '0000000000000000'\nassert os.getpid() < 10\n"), true, StatusExited, 0},
			{"command", Spec{Command: []string{"/bin/sh", "-c", "exit 0"}}, true, StatusExited, 0},
			{"command fail", Spec{Command: []string{"/bin/sh", "-c", "exit 4"}}, false, StatusExited, 4},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				res, err := sb.Run(context.Background(), tc.spec)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := passed(tc.spec, res); got != tc.pass {
					t.Errorf("Passed = %v, want %v (status %s exit %d signal %d)\nstdout: %s\nstderr: %s", got, tc.pass, res.Status, res.ExitCode, res.Signal, res.Stdout, res.Stderr)
				}
				if res.Status != tc.status {
					t.Errorf("Status = %s, want %s (exit %d)\nstderr: %s", res.Status, tc.status, res.ExitCode, res.Stderr)
				}
				if tc.status == StatusExited && res.ExitCode != tc.code {
					t.Errorf("ExitCode = %d, want %d\nstderr: %s", res.ExitCode, tc.code, res.Stderr)
				}
			})
		}
	})
}

func TestPytestCounts(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 20 * time.Second})
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "pkg", "__init__.py"), "")
	mustWrite(t, filepath.Join(dir, "pkg", "mod.py"), "def add(a, b):\n    return a + b\n")
	mustWrite(t, filepath.Join(dir, "tests", "test_mod.py"), "from pkg.mod import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_zero():\n    assert add(0, 0) == 0\n")
	res, err := sb.Run(context.Background(), Spec{Python: []string{"pytest", "-q", "-p", "no:cacheprovider", "tests"}, SourceDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() || res.Tests == nil || res.Tests.Passed != 2 || res.Tests.Failed != 0 {
		t.Fatalf("pytest run: pass=%v tests=%+v\nstdout: %s\nstderr: %s", res.Passed(), res.Tests, res.Stdout, res.Stderr)
	}
	// A completion that exits early inside a test must fail.
	res, err = sb.Run(context.Background(), Spec{Python: []string{"pytest", "-q", "-p", "no:cacheprovider", "tests"}, SourceDir: dir,
		Files: map[string]string{"pkg/mod.py": "import os\ndef add(a, b):\n    os._exit(0)\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed() {
		t.Fatalf("os._exit(0) inside a test passed: %+v", res)
	}
}

func TestWriteFilesCannotEscape(t *testing.T) {
	sb := newTestSandbox(t, Config{})
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	mustWrite(t, outside, "original")
	if err := os.Symlink(outside, filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	_, err := sb.Run(context.Background(), Spec{SourceDir: dir, Command: []string{"/bin/true"}, Files: map[string]string{"link.py": "pwned"}})
	if err == nil {
		t.Fatal("write through a symlink leaving the copy succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != "original" {
		t.Fatalf("host file changed: %q", b)
	}
	if _, err := sb.Run(context.Background(), Spec{Command: []string{"/bin/true"}, Files: map[string]string{"../x": ""}}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("../x accepted: %v", err)
	}
}

func TestTailWriter(t *testing.T) {
	w := &tailWriter{max: 4}
	for _, s := range []string{"ab", "cde", "f", "ghijkl"} {
		_, _ = w.Write([]byte(s))
	}
	if got := w.String(); got != "ijkl" || w.total != 12 {
		t.Fatalf("tail = %q total %d", got, w.total)
	}
	w = &tailWriter{max: 4}
	_, _ = w.Write([]byte("ab"))
	_, _ = w.Write([]byte("cde"))
	if got := w.String(); got != "bcde" {
		t.Fatalf("tail = %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"python outside":  {PythonPath: "/root/.pyenv/bin/python3"},
		"negative memory": {MemoryBytes: 1},
		"root uid":        {UID: -1},
		"relative ro":     {ReadOnlyPaths: []string{"venv"}},
	} {
		if err := c.WithDefaults().Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func mustWrite(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

var _ = strings.TrimSpace

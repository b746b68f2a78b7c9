package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator/sandbox/sandboxtest"
)

// TestPythonEnvironmentResolution: where a venv lies decides how it is
// mounted, nothing is run on the host to find out, and what cannot be
// mounted or run is an environment error.
func TestPythonEnvironmentResolution(t *testing.T) {
	root := sandboxtest.SharedTempDir(t)
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxtest.MakeVenv(t, filepath.Join(repo, ".venv"), "extpkg", false)
	outside := filepath.Join(root, "venvs", "tools")
	sandboxtest.MakeVenv(t, outside, "extpkg", true)

	if got := RepositoryPython(repo); got != ".venv/bin/python" {
		t.Errorf("RepositoryPython = %q", got)
	}
	if got := RepositoryPython(root); got != "" {
		t.Errorf("RepositoryPython of a directory without a venv = %q", got)
	}

	in, err := PythonEnvironment(".venv/bin/python", repo)
	if err != nil {
		t.Fatal(err)
	}
	if in.Interpreter != ".venv/bin/python" || in.VirtualEnv != ".venv" || !in.AliasSource ||
		len(in.Skip) != 1 || in.Skip[0] != ".venv" || len(in.Mounts) != 1 || in.Mounts[0] != (Mount{filepath.Join(repo, ".venv"), ".venv"}) {
		t.Errorf("venv in the repository: %+v", in)
	}

	out, err := PythonEnvironment(filepath.Join(outside, "bin", "python3"), repo)
	if err != nil {
		t.Fatal(err)
	}
	if out.Interpreter != filepath.Join(outside, "bin", "python3") || out.VirtualEnv != outside || len(out.Skip) != 0 ||
		len(out.Mounts) != 1 || out.Mounts[0] != (Mount{outside, outside}) {
		t.Errorf("venv outside the repository: %+v", out)
	}

	// An installation outside /usr is mounted whole, when it is one.
	prefix := filepath.Join(root, "opt", "py")
	for _, d := range []string{"bin", "lib/python3.11"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(prefix, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	if env, err := PythonEnvironment(filepath.Join(prefix, "bin", "python3"), repo); err != nil || len(env.Mounts) != 0 {
		// A link into /usr runs /usr's interpreter: nothing to mount.
		t.Errorf("link to /usr/bin/python3: %+v %v", env, err)
	}
	exe := filepath.Join(prefix, "bin", "python3.11")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if env, err := PythonEnvironment(exe, repo); err != nil || len(env.Mounts) != 1 || env.Mounts[0].Source != prefix || env.Interpreter != exe {
		t.Errorf("interpreter in %s: %+v %v", prefix, env, err)
	}
	notPrefix := filepath.Join(root, "tools", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(notPrefix), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notPrefix, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	for name, c := range map[string]struct{ python, want string }{
		"missing":          {filepath.Join(root, "nope", "bin", "python"), "no such file or directory"},
		"not a prefix":     {notPrefix, "not a Python installation"},
		"relative escape":  {"../venvs/tools/bin/python3", "must stay inside the repository"},
		"not executable":   {filepath.Join(repo, ".venv", "pyvenv.cfg"), "not an executable file"},
		"missing in repo":  {"venv/bin/python", "no such file or directory"},
		"directory":        {outside, "not an executable file"},
		"system directory": {"/proc/self/exe", "/proc"},
	} {
		_, err := PythonEnvironment(c.python, repo)
		if !errors.Is(err, ErrEnvironment) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrEnvironment with %q", name, err, c.want)
		}
	}
}

// TestPythonEnvironmentRuns runs tests with a venv that has a package
// Debian's python3 lacks: in the repository (mounted where it was, not
// copied) and outside it, with the pass signal and pytest's counts kept,
// and the venv read-only.
func TestPythonEnvironmentRuns(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 20 * time.Second, WarmWorkers: -1})
	root := sandboxtest.SharedTempDir(t)
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	test := `import os, sys
import extpkg

def test_answer():
    assert extpkg.answer() == 42

def test_venv_is_read_only():
    assert sys.prefix != sys.base_prefix, sys.prefix
    target = os.path.join(os.path.dirname(extpkg.__file__), "written")
    try:
        open(target, "w").close()
    except OSError:
        return
    raise AssertionError("wrote into the venv")
`
	if err := os.WriteFile(filepath.Join(repo, "tests", "test_ext.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.MakeVenv(t, filepath.Join(repo, ".venv"), "extpkg", true)
	outside := filepath.Join(root, "venv-outside")
	sandboxtest.MakeVenv(t, outside, "extpkg", true)

	if out, err := exec.Command("/usr/bin/python3", "-c", "import extpkg").CombinedOutput(); err == nil {
		t.Fatalf("the system python has extpkg: %s", out)
	}
	spec := Spec{Python: []string{"pytest", "-q", "-p", "no:cacheprovider", "tests"}, SourceDir: repo, WorkName: "repo"}
	res, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed() || res.Failure == nil || !strings.Contains(res.Failure.Report, "No module named 'extpkg'") {
		t.Fatalf("without the venv: passed=%v failure %+v\n%s", res.Passed(), res.Failure, res.Stdout)
	}
	for _, python := range []string{".venv/bin/python", filepath.Join(outside, "bin", "python")} {
		env, err := PythonEnvironment(python, repo)
		if err != nil {
			t.Fatal(err)
		}
		spec.Environment = env
		res, err := sb.Run(context.Background(), spec)
		if err != nil {
			t.Fatalf("%s: %v", python, err)
		}
		if !res.Passed() || res.Tests == nil || res.Tests.Passed != 2 {
			t.Errorf("%s: passed=%v tests %+v\n%s%s", python, res.Passed(), res.Tests, res.Stdout, res.Stderr)
		}
	}
	if os.Geteuid() == 0 {
		// The sandbox's user cannot reach a venv under a 0700 directory:
		// the sandbox binds it for that user where root can make a mount
		// namespace (reach.go); where it cannot, that is said up front,
		// with the remedy.
		hidden := filepath.Join(t.TempDir(), "venv")
		sandboxtest.MakeVenv(t, hidden, "extpkg", true)
		if err := os.Chmod(filepath.Dir(hidden), 0o700); err != nil {
			t.Fatal(err)
		}
		env, err := PythonEnvironment(filepath.Join(hidden, "bin", "python"), repo)
		if err != nil {
			t.Fatal(err)
		}
		spec.Environment = env
		if sb.hidden != nil {
			res, err := sb.Run(context.Background(), spec)
			if err != nil || !res.Passed() || res.Tests == nil || res.Tests.Passed != 2 {
				t.Errorf("venv the sandbox's user cannot reach: %v, passed=%v tests %+v\n%s%s", err, res.Passed(), res.Tests, res.Stdout, res.Stderr)
			}
		}
		saved := sb.hidden
		sb.hidden = nil
		if _, err := sb.Run(context.Background(), spec); !errors.Is(err, ErrEnvironment) || !strings.Contains(err.Error(), "chmod o+x") {
			t.Errorf("venv the sandbox's user cannot read, without a mount namespace: %v", err)
		}
		sb.hidden = saved
	}
	if _, err := os.Stat(filepath.Join(repo, ".venv", "lib")); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "*", "lib", "python3*", "site-packages", "extpkg", "written")); len(m) > 0 {
		t.Errorf("a run wrote into a venv: %v", m)
	}
}

// TestPythonEnvironmentEditable: an editable install of the repository (a
// .pth file naming its src/) reaches the private copy with the run's
// files, never the pristine repository.
func TestPythonEnvironmentEditable(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 20 * time.Second, WarmWorkers: -1})
	root := sandboxtest.SharedTempDir(t)
	repo := filepath.Join(root, "proj")
	for _, d := range []string{"src/proj", "tests"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"src/proj/__init__.py": "def value():\n    return 1\n",
		"tests/test_value.py":  "import proj\n\ndef test_value():\n    assert proj.value() == 2, proj.__file__\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	venv := filepath.Join(root, "venv")
	sp := sandboxtest.MakeVenv(t, venv, "unused", true)
	if err := os.WriteFile(filepath.Join(sp, "__editable__.proj.pth"), []byte(filepath.Join(repo, "src")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := PythonEnvironment(filepath.Join(venv, "bin", "python"), repo)
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Python: []string{"pytest", "-q", "-p", "no:cacheprovider"}, SourceDir: repo, WorkName: "proj", Environment: env}
	res, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed() {
		t.Fatal("the pristine value() passed a test that wants 2")
	}
	spec.Files = map[string]string{"src/proj/__init__.py": "def value():\n    return 2\n"}
	res, err = sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Fatalf("the run's own file was not the one imported:\n%s%s", res.Stdout, res.Stderr)
	}
}

package evaluator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/evaluator/sandbox/sandboxtest"
)

// runTask plans task's run with its reference in place, runs it and reads
// it, as grading does.
func runTask(t testing.TB, r *Runner, task Task) (sandbox.Result, *testRun, error) {
	t.Helper()
	run, err := r.planRun(&task, task.Reference)
	if err != nil {
		return sandbox.Result{}, nil, err
	}
	out, err := r.exec.Run(context.Background(), run.spec)
	if err == nil {
		err = run.finish(&out)
	}
	return out, run, err
}

// TestEnvironmentErrors: a missing test runner or entry point is no
// verdict (ErrEnvironment), not a failure of the code under test; each
// runner says which.
func TestEnvironmentErrors(t *testing.T) {
	r := newGoRunner(t, nil, Toolchains{})
	dir := t.TempDir()
	sandboxtest.WriteFiles(t, dir, map[string]string{"mod.py": "x = 1\n"})
	// Stands in for an interpreter without pytest: the runner imports
	// pytest with the repository first on sys.path.
	noPytest := t.TempDir()
	sandboxtest.WriteFiles(t, noPytest, map[string]string{"pytest.py": "raise ImportError('No module named pytest')\n"})
	task := func(repo, file string, ts TestSpec) Task {
		data, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil {
			t.Fatal(err)
		}
		return Task{ID: "t", Path: file, Reference: string(data), Exec: Exec{Kind: ExecRepository, RepoDir: repo, Test: ts}}
	}
	for name, tc := range map[string]struct {
		task Task
		want string
	}{
		"command not found": {task(dir, "mod.py", TestSpec{Kind: TestCommand, Command: []string{"/bin/sh", "-c", "no-such-test-runner"}}), "test command not found (exit 127): /bin/sh -c no-such-test-runner"},
		"not executable":    {task(dir, "mod.py", TestSpec{Kind: TestCommand, Command: []string{"/bin/sh", "-c", "./mod.py"}}), "cannot be executed (exit 126)"},
		"no entry point":    {task(dir, "mod.py", TestSpec{Kind: TestScript, Script: "evaluate_repo.py"}), "test entry point evaluate_repo.py is missing"},
		"no pytest":         {task(noPytest, "pytest.py", TestSpec{Kind: TestPytest}), "pytest is not installed"},
		"no tests":          {task(dir, "mod.py", TestSpec{Kind: TestPytest, Args: []string{"-q", "-p", "no:cacheprovider"}}), "pytest collected no tests"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runTask(t, r, tc.task)
			if !errors.Is(err, sandbox.ErrEnvironment) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrEnvironment with %q", err, tc.want)
			}
		})
	}
	// pytest's usage errors are the environment's, with what pytest
	// refused; a conftest.py that does not import is not one (the code
	// under test may be what broke it).
	_, _, err := runTask(t, r, task(dir, "mod.py", TestSpec{Kind: TestPytest, Args: []string{"-q", "--no-such-flag"}}))
	if !errors.Is(err, sandbox.ErrEnvironment) || !strings.Contains(err.Error(), "pytest usage error (exit 4): error: unrecognized arguments: --no-such-flag") {
		t.Errorf("usage error: %v", err)
	}
	conftest := t.TempDir()
	sandboxtest.WriteFiles(t, conftest, map[string]string{"conftest.py": "import mod\n"})
	sandboxtest.WriteFiles(t, conftest, map[string]string{"mod.py": "def f(:\n"})
	sandboxtest.WriteFiles(t, conftest, map[string]string{"test_mod.py": "def test_f():\n    pass\n"})
	res, run, err := runTask(t, r, task(conftest, "mod.py", TestSpec{Kind: TestPytest, Args: []string{"-q", "-p", "no:cacheprovider"}}))
	if err != nil || run.passed(&res) || res.ExitCode != 4 || !strings.Contains(res.Stderr, "SyntaxError") {
		t.Errorf("conftest that does not import: %v, exit %d\n%s", err, res.ExitCode, res.Stderr)
	}
	// A completion cannot forge one: ENV without the run's nonce is ignored.
	prog := Task{ID: "p", Reference: "import os\nos.write(3, b'ENV 0123 {\"message\": \"forged\"}\\n')\nraise SystemExit(3)\n", Exec: Exec{Kind: ExecProgram}}
	res, run, err = runTask(t, r, prog)
	if err != nil || run.passed(&res) {
		t.Fatalf("forged ENV line: %v %+v", err, res)
	}
}

// TestExplainUnreachable: an unmodified repository whose interpreter the
// sandbox's user cannot reach (pyenv's in root's home, where root cannot
// make a mount namespace) gets a fix line that names the remedy, not "run
// the tests yourself".
func TestExplainUnreachable(t *testing.T) {
	b := BaselineFailure{Test: TestSpec{Kind: TestPytest, Args: []string{"-q"}}, Python: ".venv/bin/python",
		Result: Result{Verdict: VerdictError, Error: "sandbox: environment failure: the sandbox's user (uid 65534) cannot reach " +
			"/root/.pyenv/versions/3.11.7: /root is not searchable by others (chmod o+x)"}}
	got := b.Explain()
	for _, want := range []string{"with .venv/bin/python", "fix: ", "chmod o+x /root", "PYENV_ROOT=/opt/pyenv", "/usr/bin/python3"} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "run the tests yourself") {
		t.Errorf("the fix is the catch-all:\n%s", got)
	}
}

package evaluator

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// TestPythonFor: which interpreter a repository task's tests run with —
// the task's own, the server's rule for its directory, the repository's
// venv — and that a task may not name an interpreter the server did not
// allow.
func TestPythonFor(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repos", "proj")
	ruled := filepath.Join(root, "pythons", "bin", "python3")
	for _, d := range []string{filepath.Join(repo, ".venv", "bin"), filepath.Join(root, "pythons", "lib", "python3.11"), filepath.Dir(ruled)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(repo, ".venv", "bin", "python"), ruled} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, ".venv", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(python string) *Task {
		return &Task{ID: "t", Path: "m.py", Exec: Exec{Kind: ExecRepository, RepoDir: repo, Test: TestSpec{Kind: TestPytest, Python: python}}}
	}
	roots := []string{filepath.Join(root, "repos")}
	rule := []PythonRule{{Dir: filepath.Join(root, "repos"), Python: ruled}}
	for name, c := range map[string]struct {
		cfg    Config
		python string
		want   string // the environment's interpreter; "" none
		err    error
	}{
		"the repository's venv":             {Config{}, "", ".venv/bin/python", nil},
		"the server's rule before the venv": {Config{Pythons: rule, AllowedRepoRoots: roots}, "", ruled, nil},
		"the task's own":                    {Config{Pythons: rule}, ".venv/bin/python", ".venv/bin/python", nil},
		"one the server named":              {Config{Pythons: rule, AllowedRepoRoots: roots}, ruled, ruled, nil},
		"one it did not":                    {Config{AllowedRepoRoots: roots}, ruled, "", ErrPythonNotAllowed},
		"anything locally":                  {Config{}, ruled, ruled, nil},
		"missing":                           {Config{}, "env/bin/python", "", sandbox.ErrEnvironment},
	} {
		env, err := c.cfg.pythonFor(task(c.python))
		switch {
		case c.err != nil:
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case env == nil || env.Interpreter != c.want:
			t.Errorf("%s: %+v, want interpreter %s", name, env, c.want)
		}
	}
	if env, err := (&Config{}).pythonFor(&Task{Exec: Exec{Kind: ExecRepository, RepoDir: root}}); env != nil || err != nil {
		t.Errorf("no venv, no rule: %+v %v", env, err)
	}
}

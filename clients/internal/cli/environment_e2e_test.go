package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox/sandboxtest"
	"github.com/infill-dev/infill/server/servertest"
)

// venvRepo writes a repository whose tests import extpkg, which only a
// virtual environment has, and whose pytest configuration names
// pytest-cov's options.
func venvRepo(t *testing.T, dir string) {
	sandboxtest.WriteFiles(t, dir, map[string]string{
		"pyproject.toml":       "[tool.pytest.ini_options]\naddopts = \"--cov=shapes --cov-report=term-missing\"\n",
		"shapes/__init__.py":   "",
		"shapes/area.py":       "import extpkg\n\n\ndef square(side):\n    area = side * side\n    return area\n\n\ndef scaled(side):\n    return square(side) * extpkg.answer()\n",
		"tests/test_shapes.py": "from shapes.area import scaled, square\n\n\ndef test_square():\n    assert square(3) == 9\n\n\ndef test_scaled():\n    assert scaled(2) == 168\n",
	})
}

// TestEndToEndEvalEnvironment: eval mask on a repository with its own
// venv and a pytest configuration naming a plugin that is not installed,
// then eval run --reference in this process's sandbox and through a
// server; the same repository with the venv elsewhere (--python); and,
// without any venv, the explanation of the failed check and ERROR, not
// FAILED, for the reference.
func TestEndToEndEvalEnvironment(t *testing.T) {
	t.Parallel()
	root := sandboxtest.SharedTempDir(t)
	repo := filepath.Join(root, "shapes")
	venvRepo(t, repo)
	sandboxtest.MakeVenv(t, filepath.Join(repo, ".venv"), "extpkg", true)
	srv := servertest.StartEval(t, root)
	bench := filepath.Join(root, "shapes.bench.jsonl")

	code, stdout, stderr := runTool(t.Context(), srv.Addr, "eval", "mask", "--levels", "statement,expression", "--per-level", "2",
		"--sandbox-memory", "2GiB", "-o", bench, repo)
	if code != 0 {
		t.Fatalf("mask: exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{"pytest configuration: dropped --cov=shapes --cov-report=term-missing from the addopts of pyproject.toml (pytest-cov is not installed)",
		"the unmodified repository passes 2 tests"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mask output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "with .venv/bin/python") {
		t.Errorf("mask does not say which interpreter: %s", stderr)
	}
	data, err := os.ReadFile(bench)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		ID   string             `json:"id"`
		Test evaluator.TestSpec `json:"test"`
	}
	expected := map[string]int{} // each record's passing tests: its selection's, or the suite's 2
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		expected[rec.ID] = rec.Test.ExpectedTests
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Test.Python != ".venv/bin/python" || !strings.Contains(strings.Join(rec.Test.Args, " "), "-o addopts=") {
		t.Errorf("record's test: %+v", rec.Test)
	}

	for _, where := range [][]string{{"--local"}, nil} {
		out := filepath.Join(t.TempDir(), "ref.jsonl")
		args := append([]string{"eval", "run", "--reference", "--infill", bench, "-o", out}, where...)
		code, stdout, stderr := runTool(t.Context(), srv.Addr, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, stdout, stderr)
		}
		for _, r := range cli.ReadResults(t, out) {
			if n := expected[r.TaskID]; !r.Passed() || r.Tests == nil || r.Tests.Passed != n || n < 1 || n > 2 {
				t.Errorf("%v: %s %s %s %s", where, r.TaskID, r.Verdict, r.Reason, r.Error)
			}
		}
	}

	// The venv elsewhere: --python names it.
	moved := filepath.Join(root, "elsewhere")
	if err := os.Rename(filepath.Join(repo, ".venv"), moved); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "python.jsonl")
	code, stdout, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--reference", "--local", "--infill", bench,
		"--python", filepath.Join(moved, "bin", "python"), "-o", out)
	if code != 0 {
		t.Fatalf("--python: exit %d: %s%s", code, stdout, stderr)
	}

	// Without a venv: the benchmark's interpreter is missing (ERROR, and
	// a non-zero exit that says why); a benchmark naming none fails its
	// tests on an import the unmodified repository fails on too (ERROR);
	// mask explains the failed check.
	out = filepath.Join(t.TempDir(), "gone.jsonl")
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--reference", "--local", "--infill", bench, "-o", out)
	if code == 0 || !strings.Contains(stderr, "reached no verdict (ERROR)") || !strings.Contains(stderr, "interpreter .venv/bin/python: no such file or directory") {
		t.Errorf("missing interpreter: exit %d: %s", code, stderr)
	}
	plain := filepath.Join(root, "plain.bench.jsonl")
	if err := os.WriteFile(plain, []byte(strings.ReplaceAll(string(data), `,"python":".venv/bin/python"`, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--reference", "--local", "--infill", plain, "-o", filepath.Join(t.TempDir(), "plain.jsonl"))
	if code == 0 || !strings.Contains(stderr, "the unmodified repository's tests fail on an import too: ModuleNotFoundError: No module named 'extpkg'") {
		t.Errorf("module missing for the reference too: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runTool(t.Context(), srv.Addr, "eval", "mask", "--per-level", "1", "-o", filepath.Join(root, "none.jsonl"), repo)
	if code == 0 {
		t.Fatalf("mask without the venv: exit 0: %s", stdout)
	}
	for _, want := range []string{"the unmodified repository does not pass its tests", "exit status 2: pytest was interrupted",
		"No module named 'extpkg'", "last lines of its output:", "fix: the module extpkg is not installed for the sandbox's python3"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("mask explanation lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "none.jsonl")); err == nil {
		t.Error("mask wrote a benchmark after a failed check")
	}
}

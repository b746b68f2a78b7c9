package evaluator_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/masking"
	"github.com/infill-dev/infill/evaluator/sandbox/sandboxtest"
)

// repoTask is a pytest task on the file lib/m.py of repo, whose masked
// middle is the first line.
func repoTask(repo, id string, args ...string) evaluator.Task {
	if len(args) == 0 {
		args = []string{"-q", "-p", "no:cacheprovider"}
	}
	src := map[string]string{
		"needs-dep": "import infill_missing_dep\n\ndef f():\n    return 1\n",
		"healthy":   "import json\n\ndef f():\n    return json.loads('1')\n",
	}[filepath.Base(repo)]
	first, rest, _ := strings.Cut(src, "\n")
	return evaluator.Task{
		ID: id, Benchmark: "env", Level: evaluator.LevelStatement, RepoName: filepath.Base(repo), Path: "lib/m.py",
		Prefix: "", Reference: first, Suffix: "\n" + rest,
		Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repo,
			Test: evaluator.TestSpec{Kind: evaluator.TestPytest, Args: args}, Timeout: 20 * time.Second},
	}
}

// TestEnvironmentIsNotTheModel: failures of the environment are ERROR, a
// completion's own failures FAILED, even when both are import errors.
// The unmodified repository decides which an import error is.
func TestEnvironmentIsNotTheModel(t *testing.T) {
	sb := newSandbox(t)
	root := sandboxtest.SharedTempDir(t)
	for _, name := range []string{"needs-dep", "healthy"} {
		task := repoTask(filepath.Join(root, name), "")
		sandboxtest.WriteFiles(t, task.Exec.RepoDir, map[string]string{
			"lib/__init__.py":   "",
			"lib/m.py":          task.Compose(task.Reference),
			"tests/test_m.py":   "from lib.m import f\n\ndef test_f():\n    assert f() == 1\n",
			"tests/__init__.py": "",
		})
	}
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	needs, healthy := filepath.Join(root, "needs-dep"), filepath.Join(root, "healthy")
	cases := []struct {
		task       evaluator.Task
		completion string
		verdict    evaluator.Verdict
		why        string
	}{
		// A module neither in the repository nor installed, imported at
		// collection: the reference cannot pass either.
		{repoTask(needs, "reference needs a module that is not installed"), "import infill_missing_dep", evaluator.VerdictError,
			"the unmodified repository's tests fail on an import too: ModuleNotFoundError: No module named 'infill_missing_dep'"},
		{repoTask(needs, "another completion there"), "import infill_missing_dep as dep", evaluator.VerdictError,
			"the unmodified repository's tests fail on an import too"},
		// One that does without the module passes: nothing is assumed.
		{repoTask(needs, "a completion without it"), "import os", evaluator.VerdictPassed, ""},
		// The same kind of failure, caused by the completion: FAILED.
		{repoTask(healthy, "misspelt import"), "import jsn", evaluator.VerdictFailed,
			"collecting tests/test_m.py: ModuleNotFoundError: No module named 'jsn' at lib/m.py:1"},
		{repoTask(healthy, "reference"), "import json", evaluator.VerdictPassed, ""},
		{repoTask(healthy, "name error"), "import os", evaluator.VerdictFailed,
			"tests/test_m.py::test_f: NameError: name 'json' is not defined at lib/m.py:4"},
		// pytest refusing its command line, a missing interpreter.
		{repoTask(healthy, "usage error", "-q", "--no-such-option"), "import json", evaluator.VerdictError,
			"pytest usage error (exit 4): error: unrecognized arguments: --no-such-option"},
		{func() evaluator.Task {
			t := repoTask(healthy, "missing interpreter")
			t.Exec.Test.Python = "venv/bin/python"
			return t
		}(), "import json", evaluator.VerdictError, "interpreter venv/bin/python: no such file or directory"},
	}
	var jobs []evaluator.Job
	for _, c := range cases {
		jobs = append(jobs, evaluator.Job{Task: c.task, Completions: []evaluator.Completion{{Text: c.completion}}})
	}
	got := map[string]evaluator.Result{}
	var mu sync.Mutex
	if _, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		got[res.TaskID] = res
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		res := got[c.task.ID]
		why := res.Reason + res.Error
		if res.Verdict != c.verdict || !strings.Contains(why, c.why) {
			t.Errorf("%s: %s %q, want %s with %q\n%s", c.task.ID, res.Verdict, why, c.verdict, c.why, res.StdoutTail)
		}
	}
}

// TestVenvBenchmark builds a benchmark from a repository whose tests need
// a package that only its own virtual environment has, and grades it:
// the records name the interpreter, references pass with pytest's count,
// empty middles fail.
func TestVenvBenchmark(t *testing.T) {
	sb := newSandbox(t)
	repo := filepath.Join(sandboxtest.SharedTempDir(t), "venvrepo")
	sandboxtest.WriteFiles(t, repo, map[string]string{
		"lib/__init__.py": "",
		"lib/m.py":        "import extpkg\n\n\ndef double_answer():\n    value = extpkg.answer()\n    return value * 2\n",
		"tests/test_m.py": "from lib.m import double_answer\n\n\ndef test_double():\n    assert double_answer() == 84\n\n\ndef test_type():\n    assert isinstance(double_answer(), int)\n",
	})
	sandboxtest.MakeVenv(t, filepath.Join(repo, ".venv"), "extpkg", true)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 3, PerLevel: 2, RequireEmptyFails: true,
		Levels: []evaluator.Level{evaluator.LevelStatement, evaluator.LevelExpression}, Timeout: 20 * time.Second}, r, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if stats.BaselineTests != 2 || len(recs) < 2 {
		t.Fatalf("stats %+v, %d records", stats, len(recs))
	}
	var jobs []evaluator.Job
	for _, rec := range recs {
		if rec.Test.Python != ".venv/bin/python" {
			t.Fatalf("record %s: python %q", rec.ID, rec.Test.Python)
		}
		task, err := rec.Task(repo)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: []evaluator.Completion{{Text: task.Reference}, {Text: ""}}})
	}
	var mu sync.Mutex
	if _, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		if res.Passed() != (res.Sample == 0) || res.Sample == 0 && (res.Tests == nil || res.Tests.Passed != 2) {
			t.Errorf("%s #%d: %s %s %s", res.TaskID, res.Sample, res.Verdict, res.Reason, res.Error)
		}
		if res.Sample == 1 && res.Reason == "" {
			t.Errorf("%s: failed without a reason", res.TaskID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestForeignPythonVenv: a repository's .venv made from a Python
// installed outside /usr — pyenv's in root's home, unreachable by the
// sandbox's user when the tests run as root — builds and grades a
// benchmark: the sandbox binds the installation for its user. Debian's
// pytest is lent to the venv through a .pth file (nothing is downloaded).
func TestForeignPythonVenv(t *testing.T) {
	python, prefix := sandboxtest.ForeignPython(t)
	sb := newSandbox(t)
	repo := filepath.Join(sandboxtest.SharedTempDir(t), "pyenvrepo")
	sandboxtest.WriteFiles(t, repo, map[string]string{
		"lib/__init__.py": "",
		"lib/m.py":        "import sys\nimport extpkg\n\n\ndef double_answer():\n    value = extpkg.answer()\n    return value * 2\n\n\ndef prefix():\n    return sys.base_prefix\n",
		"tests/test_m.py": "from lib.m import double_answer, prefix\n\n\ndef test_double():\n    assert double_answer() == 84\n\n\ndef test_prefix():\n    assert prefix() == " + strconv.Quote(prefix) + "\n",
	})
	site := sandboxtest.MakeVenvWith(t, python, filepath.Join(repo, ".venv"), "extpkg", false)
	sandboxtest.WriteFiles(t, site, map[string]string{"debian-pytest.pth": "/usr/lib/python3/dist-packages\n"})
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 3, PerLevel: 1, RequireEmptyFails: true,
		Levels: []evaluator.Level{evaluator.LevelStatement}, Timeout: 20 * time.Second}, r, zaptest.NewLogger(t))
	var be *masking.BaselineError
	if errors.As(err, &be) {
		t.Fatalf("%v\n%s", err, be.Explain(be.Test.Python))
	}
	if err != nil {
		t.Fatal(err)
	}
	if stats.BaselineTests != 2 || len(recs) != 1 || recs[0].Test.Python != ".venv/bin/python" {
		t.Fatalf("stats %+v, records %+v", stats, recs)
	}
	task, err := recs[0].Task(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		pass bool
	}{{task.Reference, true}, {"", false}} {
		res, err := r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: c.text})
		if err != nil || res.Passed() != c.pass || c.pass && (res.Tests == nil || res.Tests.Passed != 2) {
			t.Errorf("completion %q: %v %s %s %s %+v", c.text, err, res.Verdict, res.Reason, res.Error, res.Tests)
		}
	}
}

// TestMaskingPytestConfigs: the two common configurations that name what
// is not installed — addopts with --cov (pytest-cov) and a warning filter
// naming coverage's CoverageWarning — are neutralised through -o
// overrides that the records carry, and said; the benchmark then grades.
func TestMaskingPytestConfigs(t *testing.T) {
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	code := map[string]string{
		"src/calcpkg/__init__.py": "def area(w, h):\n    size = w * h\n    return size\n",
		"tests/test_area.py":      "import warnings\nfrom calcpkg import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n\n\ndef test_warns():\n    with warnings.catch_warnings(record=True):\n        warnings.simplefilter('always')\n        warnings.warn('x', DeprecationWarning)\n",
	}
	for name, c := range map[string]struct {
		config, file string
		fixes        []string
		args         []string
	}{
		"cov": {
			"[tool.pytest.ini_options]\naddopts = \"--cov=calcpkg --cov-report term-missing -ra\"\npythonpath = [\"src\"]\n", "pyproject.toml",
			[]string{"dropped --cov=calcpkg --cov-report term-missing from the addopts of pyproject.toml (pytest-cov is not installed)"},
			[]string{"-o", "addopts=-ra"},
		},
		"filterwarnings": {
			"[pytest]\nfilterwarnings =\n    error\n    # coverage's own\n    ignore:sys.monitoring isn't available:coverage.exceptions.CoverageWarning\n    ignore::ResourceWarning\n", "pytest.ini",
			[]string{`dropped the warning filter "ignore:sys.monitoring isn't available:coverage.exceptions.CoverageWarning" from pytest.ini`,
				"added src to pytest's pythonpath: the tests import calcpkg"},
			[]string{"-o", "filterwarnings=error\nignore::ResourceWarning", "-o", "pythonpath=src"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			repo := filepath.Join(root, name)
			files := map[string]string{c.file: c.config}
			for k, v := range code {
				files[k] = v
			}
			sandboxtest.WriteFiles(t, repo, files)
			recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 1, PerLevel: 1, RequireEmptyFails: true,
				Levels: []evaluator.Level{evaluator.LevelStatement}, Timeout: 20 * time.Second}, r, zaptest.NewLogger(t))
			if err != nil {
				var be *masking.BaselineError
				if errors.As(err, &be) {
					t.Fatal(be.Explain(""))
				}
				t.Fatal(err)
			}
			if len(stats.Fixes) != len(c.fixes) {
				t.Fatalf("fixes %q, want %d", stats.Fixes, len(c.fixes))
			}
			for i, want := range c.fixes {
				if !strings.HasPrefix(stats.Fixes[i], want) {
					t.Errorf("fix %d: %q, want %q...", i, stats.Fixes[i], want)
				}
			}
			if len(recs) != 1 || stats.BaselineTests != 2 {
				t.Fatalf("%d records, stats %+v", len(recs), stats)
			}
			args := recs[0].Test.Args
			if strings.Join(args[len(args)-len(c.args):], "|") != strings.Join(c.args, "|") {
				t.Errorf("record args %q, want them to end with %q", args, c.args)
			}
			task, err := recs[0].Task(repo)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: task.Reference})
			if err != nil || !res.Passed() {
				t.Fatalf("reference: %v %s %s %s", err, res.Verdict, res.Reason, res.Error)
			}
		})
	}
	// What cannot be neutralised is explained.
	repo := filepath.Join(root, "failing")
	sandboxtest.WriteFiles(t, repo, map[string]string{
		"m.py":          "def one():\n    return 1\n",
		"test_m.py":     "from m import one\n\n\ndef test_one():\n    assert one() == 2\n",
		"tests_note.md": "",
	})
	_, _, err = masking.Build(context.Background(), repo, masking.Options{Seed: 1, PerLevel: 1}, r, zaptest.NewLogger(t))
	var be *masking.BaselineError
	if !errors.As(err, &be) {
		t.Fatalf("failing repository: %v", err)
	}
	text := be.Explain("")
	for _, want := range []string{"exit status 1: some tests failed", "why: test_m.py::test_one: AssertionError: assert 1 == 2 at test_m.py:5",
		"last lines of its output:", `fix: some tests fail on the repository as it is, here: leave them out with --pytest "-q --deselect test_m.py::test_one"`} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
}

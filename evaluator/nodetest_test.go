package evaluator_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/masking"
)

// nodePackage unpacks testdata/node/NAME.txtar into a temporary directory
// and installs its dependencies with npm ci when it has a lockfile. It
// skips without node (or npm, for a lockfile) outside CI.
func nodePackage(t *testing.T, name string) string {
	t.Helper()
	need := func(tool string) {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s missing: %v", tool, err)
			}
			t.Skipf("%s missing: %v", tool, err)
		}
	}
	need("node")
	ar, err := txtar.ParseFile(filepath.Join("testdata", "node", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The sandbox's user must reach node_modules, which is mounted, not
	// copied (t.TempDir's directories are private to their owner).
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, name)
	for _, f := range ar.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
		need("npm")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	return dir
}

// TestNodeBenchmarks builds a benchmark from a tiny JavaScript package and a
// tiny TypeScript one (both tested with node --test, the TypeScript one
// through its own tsx) in the real sandbox and grades it: every reference
// passes with the baseline's test count, every empty middle fails, a
// syntax error fails and its reason says so, and the package on disk is
// untouched.
func TestNodeBenchmarks(t *testing.T) {
	for _, c := range []struct {
		name, language string
		tests          int
	}{{"tinyjs", "javascript", 4}, {"tinyts", "typescript", 3}} {
		t.Run(c.name, func(t *testing.T) {
			repo := nodePackage(t, c.name)
			sb := newSandbox(t)
			r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, FullErrors: true}, sb, nil, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, repo)
			levels := []evaluator.Level{evaluator.LevelExpression, evaluator.LevelStatement, evaluator.LevelBlock,
				evaluator.LevelFunction, evaluator.LevelClass}
			recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 1, PerLevel: 1, Levels: levels,
				RequireEmptyFails: true, Timeout: 30 * time.Second}, r, zaptest.NewLogger(t))
			if err != nil {
				var be *masking.BaselineError
				if errors.As(err, &be) && be.Result.Failure != nil {
					t.Logf("first failure's report:\n%s", be.Result.Failure.Report)
				}
				t.Fatal(err)
			}
			if stats.BaselineTests != c.tests || len(recs) != len(levels) {
				t.Fatalf("stats %+v, %d records", stats, len(recs))
			}
			for _, rec := range recs {
				if rec.Language != c.language || rec.Test.Kind != evaluator.TestNode || rec.Test.ExpectedTests != c.tests {
					t.Fatalf("%s: language %q, test %+v", rec.ID, rec.Language, rec.Test)
				}
			}
			gradeRecords(t, r, repo, recs, func(task evaluator.Task) string { return task.Reference + " )(;" },
				func(res evaluator.Result, task evaluator.Task) {
					if res.Sample == 0 && res.Tests.Passed != c.tests {
						t.Errorf("%s: reference counts %+v", res.TaskID, res.Tests)
					}
					// node: "SyntaxError: Unexpected token ')'" at the file;
					// tsx: esbuild's "Transform failed with 1 error: ...:
					// ERROR: Expected ..." at the file.
					syntax := strings.Contains(res.Reason, "SyntaxError") || strings.Contains(res.Reason, "ERROR: ")
					if res.Sample == 2 && (!syntax || !strings.Contains(res.Reason, path.Base(task.Path))) {
						t.Errorf("%s: syntax error: %s %q", res.TaskID, res.Verdict, res.Reason)
					}
				})
			if snapshot(t, repo) != before {
				t.Fatal("the package changed on disk")
			}
		})
	}
}

// isolationTest is a test file added to the tiny JavaScript package as a
// completion: its tests pass only when the sandbox isolates them.
const isolationTest = `"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");

test("no network", async () => {
  const code = await new Promise((resolve) => {
    const s = net.connect({ host: "1.1.1.1", port: 80 });
    s.on("connect", () => { s.destroy(); resolve("connected"); });
    s.on("error", (e) => resolve(e.code));
  });
  assert.notEqual(code, "connected");
});

test("node_modules is read-only", () => {
  assert.throws(() => fs.writeFileSync("node_modules/pad/index.js", "boom"), { code: "EROFS" });
  assert.equal(require("pad")("x", 3), "  x");
});

test("the private copy is writable and HOME is private", () => {
  fs.writeFileSync("lib/stack.js", "// overwritten in the copy\n");
  assert.equal(os.homedir(), "/tmp");
  fs.writeFileSync(os.homedir() + "/x", "y");
});
`

// TestNodeIsolation runs a test file that checks the sandbox from inside:
// no network, node_modules bound read-only, the copy private. It passes
// only when all three hold, and the package on disk stays as it was.
func TestNodeIsolation(t *testing.T) {
	repo := nodePackage(t, "tinyjs")
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 1, FullErrors: true}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, repo)
	task := evaluator.Task{ID: "isolation", Path: "test/isolation.test.js", Level: evaluator.LevelRandomSpan,
		Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repo, Test: evaluator.TestSpec{
			Kind: evaluator.TestNode, Tests: []string{"test/isolation.test.js"}, ExpectedTests: 3}}}
	res, err := r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: isolationTest})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Fatalf("%s %s %s\n%s", res.Verdict, res.Reason, res.Error, res.StdoutTail)
	}
	// Code under test that exits 0 early ends before its tests ran: the
	// counts say so, whatever the exit status.
	exit0 := "const test = require(\"node:test\");\ntest(\"one\", () => {});\n" +
		"test(\"two\", () => { process.exit(0); });\ntest(\"three\", () => {});\n"
	task.Exec.Test.Tests = []string{"test/exit0.test.js"}
	task.Path = "test/exit0.test.js"
	res, err = r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: exit0})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed() {
		t.Fatalf("an early exit(0) passed: %+v", res.Tests)
	}
	t.Logf("exit(0): %s: %s", res.Verdict, res.Reason)
	if snapshot(t, repo) != before {
		t.Fatal("the package changed on disk")
	}
}

// TestNodeSelectTests builds the tiny JavaScript package's benchmark with
// each sample's test files found by V8 coverage: a span of lib/stack.js is
// reached by test/stack.test.js alone (2 tests), one of lib/table.js by
// test/table.test.js alone (2 tests), and grading with just those gives
// the whole suite's verdicts.
func TestNodeSelectTests(t *testing.T) {
	repo := nodePackage(t, "tinyjs")
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, FullErrors: true}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	levels := []evaluator.Level{evaluator.LevelStatement, evaluator.LevelFunction, evaluator.LevelClass}
	recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 2, PerLevel: 2, Levels: levels,
		RequireEmptyFails: true, SelectOptIn: true, Timeout: 30 * time.Second}, r, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if s := stats.Selection; s == nil || s.TestFiles != 2 || s.Samples != len(recs) || s.Whole != 0 {
		t.Fatalf("selection %+v, %d records", stats.Selection, len(recs))
	}
	want := map[string]string{"lib/stack.js": "test/stack.test.js", "lib/table.js": "test/table.test.js"}
	for _, rec := range recs {
		if len(rec.Test.Tests) != 1 || rec.Test.Tests[0] != want[rec.Target] || rec.Test.ExpectedTests != 2 {
			t.Errorf("%s: tests %q, expected %d", rec.ID, rec.Test.Tests, rec.Test.ExpectedTests)
		}
	}
	gradeRecords(t, r, repo, recs, nil, func(res evaluator.Result, _ evaluator.Task) {
		if res.Sample == 0 && res.Tests.Passed != 2 {
			t.Errorf("%s: reference counts %+v", res.TaskID, res.Tests)
		}
	})
}

// gradeRecords grades each record's reference (which must pass), its
// empty middle and, when broken is set, broken(task) (which must fail),
// each with the runner's counts, and hands every result to check.
func gradeRecords(t *testing.T, r *evaluator.Runner, repo string, recs []dataset.InfillRecord, broken func(evaluator.Task) string,
	check func(evaluator.Result, evaluator.Task)) {
	t.Helper()
	var jobs []evaluator.Job
	tasks := map[string]evaluator.Task{}
	for _, rec := range recs {
		task, err := rec.Task(repo)
		if err != nil {
			t.Fatal(err)
		}
		tasks[task.ID] = task
		cs := []evaluator.Completion{{Text: task.Reference}, {Text: ""}}
		if broken != nil {
			cs = append(cs, evaluator.Completion{Text: broken(task)})
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: cs})
	}
	var mu sync.Mutex
	if _, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		if res.Passed() != (res.Sample == 0) || res.Tests == nil {
			t.Errorf("%s sample %d: %s %s %s %+v\n%s", res.TaskID, res.Sample, res.Verdict, res.Reason, res.Error, res.Tests, res.StdoutTail)
			return nil
		}
		check(res, tasks[res.TaskID])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

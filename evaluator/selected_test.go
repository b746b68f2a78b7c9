package evaluator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/masking"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// selectedCase is one line of a testdata/selected archive's cases.jsonl.
type selectedCase struct {
	Name        string   `json:"name"`
	File        string   `json:"file"`
	Mask        string   `json:"mask"`
	Tests       []string `json:"tests"`
	Whole       bool     `json:"whole"`
	Unreached   bool     `json:"unreached"`
	ForceTests  []string `json:"force_tests"`
	Completions []string `json:"completions"`
	// Pass are completions besides the reference that pass (nil: none;
	// with force_tests the reference is not graded).
	Pass []string `json:"pass"`
	// Widen are completions that change the file's shape: their selected
	// run becomes the whole suite's.
	Widen []string `json:"widen"`
}

// extractRepo writes an archive's files to a new directory and returns it
// with the cases of its cases.jsonl.
func extractRepo(t *testing.T, file string) (string, []selectedCase) {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(file), ".txtar"))
	fsys, err := txtar.FS(ar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, fsys); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []selectedCase
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c selectedCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		cases = append(cases, c)
	}
	return dir, cases
}

// TestSelectedTests traces each testdata/selected repository once in the
// sandbox, checks each case's selection, and grades its completions with
// the selected tests and with the whole suite (Config.AllTests): the
// verdicts agree, the reference passes, the others fail.
func TestSelectedTests(t *testing.T) {
	files, err := filepath.Glob("testdata/selected/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	sb := newSandbox(t)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			repo, cases := extractRepo(t, file)
			testSelected(t, sb, repo, cases)
		})
	}
}

func testSelected(t *testing.T, sb *sandbox.Sandbox, repo string, cases []selectedCase) {
	ctx := context.Background()
	ways := map[bool]*evaluator.Runner{}
	for _, all := range []bool{false, true} {
		r, err := evaluator.NewRunner(evaluator.Config{Workers: 1, FullErrors: true, AllTests: all}, sb, nil, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		ways[all] = r
	}
	pytest := evaluator.TestSpec{Kind: evaluator.TestPytest, Args: []string{"-q", "-p", "no:cacheprovider"}}
	task := func(c selectedCase) (evaluator.Task, []byte, int) {
		src, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(c.File)))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(src), c.Mask)
		if i < 0 {
			t.Fatalf("%s: %q not in %s", c.Name, c.Mask, c.File)
		}
		return evaluator.Task{ID: c.Name, Path: c.File, Prefix: string(src[:i]), Reference: c.Mask, Suffix: string(src[i+len(c.Mask):]),
			Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repo, Test: pytest}}, src, i
	}
	// The whole suite's pass count, as eval mask's baseline finds it.
	base, _, _ := task(cases[0])
	res, err := ways[false].Grade(ctx, base, 0, &evaluator.Completion{Text: base.Reference})
	if err != nil || !res.Passed() || res.Tests == nil {
		t.Fatalf("baseline: %v %s %s\n%s", err, res.Verdict, res.Reason, res.StdoutTail)
	}
	suite := res.Tests.Passed
	traced, err := ways[false].TraceTests(ctx, base, evaluator.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reach := traced.Reach
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.Name, " ", "_"), func(t *testing.T) {
			tk, src, at := task(c)
			sel, err := reach.Span(c.File, src, at, at+len(c.Mask))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.ForceTests != nil:
				sel = impact.Selection{Tests: c.ForceTests, Passing: len(c.ForceTests)}
			case c.Unreached:
				if !sel.Empty() {
					t.Fatalf("selection %+v, want none", sel)
				}
				return
			case c.Whole:
				if !sel.Whole || len(sel.Tests) != 0 {
					t.Fatalf("selection %+v, want the whole suite", sel)
				}
			case !slices.Equal(sel.Tests, c.Tests) || sel.Passing != len(c.Tests):
				t.Fatalf("selection %q (%d passing), want %q", sel.Tests, sel.Passing, c.Tests)
			}
			tk.Exec.Test.ExpectedTests, tk.Exec.Test.SuiteTests = suite, 0
			if !sel.Whole {
				tk.Exec.Test.Tests, tk.Exec.Test.ExpectedTests, tk.Exec.Test.SuiteTests = sel.Tests, sel.Passing, suite
			}
			completions := c.Completions
			if c.ForceTests == nil {
				completions = append([]string{c.Mask}, completions...)
			}
			for _, text := range completions {
				want := text == c.Mask && c.ForceTests == nil || slices.Contains(c.Pass, text)
				var verdicts [2]evaluator.Result
				for i, all := range []bool{false, true} {
					res, err := ways[all].Grade(ctx, tk, 0, &evaluator.Completion{Text: text})
					if err != nil {
						t.Fatal(err)
					}
					verdicts[i] = res
					if res.Passed() != want {
						t.Errorf("completion %q, all tests %v: %s (%s%s), want passed=%v\n%s", text, all, res.Verdict, res.Reason, res.Error, want, res.StdoutTail)
					}
				}
				sel, whole := verdicts[0], verdicts[1]
				if sel.Verdict != whole.Verdict {
					t.Errorf("completion %q: selected %s (%s), whole suite %s (%s)", text, sel.Verdict, sel.Reason, whole.Verdict, whole.Reason)
				}
				if slices.Contains(c.Widen, text) && (sel.Reason != whole.Reason || sel.Failure == nil || slices.Contains(tk.Exec.Test.Tests, sel.Failure.Test)) {
					t.Errorf("completion %q changes the shape: the selected run's failure %+v (%s) is not the whole suite's (%s)", text, sel.Failure, sel.Reason, whole.Reason)
				}
				if want && (sel.Tests == nil || sel.Tests.Passed != tk.Exec.Test.ExpectedTests || whole.Tests == nil || whole.Tests.Passed != suite) {
					t.Errorf("completion %q: tests run selected %+v, whole %+v; want %d and %d passed", text, sel.Tests, whole.Tests, tk.Exec.Test.ExpectedTests, suite)
				}
				if strings.HasSuffix(strings.TrimSpace(text), "(") || strings.HasSuffix(strings.TrimSpace(text), "+") || strings.HasSuffix(strings.TrimSpace(text), "=") {
					if !strings.Contains(sel.Reason+sel.StdoutTail, "SyntaxError") {
						t.Errorf("completion %q (a syntax error), selected tests: reason %q does not say SyntaxError\n%s", text, sel.Reason, sel.StdoutTail)
					}
				}
			}
		})
	}
}

// TestMaskingBuildSelected builds a benchmark with the tests traced: the
// records name the tests that execute their spans (or none: the whole
// suite), spans no test executes are dropped, and every record's reference
// passes and empty middle fails with its selected tests and with the
// whole suite alike.
func TestMaskingBuildSelected(t *testing.T) {
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := evaluator.NewRunner(evaluator.Config{Workers: 2, AllTests: true}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := extractRepo(t, "testdata/selected/calc.txtar")
	recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 1, PerLevel: 3, RequireEmptyFails: true,
		Tracer: r, Timeout: 20 * time.Second}, r, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	unreached, selected := 0, 0
	for _, n := range stats.Unreached {
		unreached += n
	}
	if !stats.Traced || stats.BaselineTests != 9 || unreached == 0 || len(recs) < 8 {
		t.Fatalf("stats %+v, %d records", stats, len(recs))
	}
	out := filepath.Join(t.TempDir(), "bench.jsonl")
	var buf bytes.Buffer
	if err := dataset.WriteInfill(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err := dataset.LoadInfill(out)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []evaluator.Job
	for _, task := range tasks {
		ts := task.Exec.Test
		switch {
		case len(ts.Tests) == 0 && ts.ExpectedTests != 9:
			t.Errorf("%s: whole suite expecting %d", task.ID, ts.ExpectedTests)
		case len(ts.Tests) > 0 && (ts.ExpectedTests != len(ts.Tests) || ts.SuiteTests != 9):
			t.Errorf("%s: %d tests, expecting %d, suite %d", task.ID, len(ts.Tests), ts.ExpectedTests, ts.SuiteTests)
		}
		if len(ts.Tests) > 0 {
			selected++
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: []evaluator.Completion{{Text: task.Reference}, {Text: ""}}})
	}
	if selected == 0 {
		t.Fatal("no record names its tests")
	}
	verdicts := map[[2]any]evaluator.Verdict{}
	var mu sync.Mutex
	for _, runner := range []*evaluator.Runner{r, whole} {
		_, err = runner.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
			mu.Lock()
			defer mu.Unlock()
			if res.Passed() != (res.Sample == 0) {
				t.Errorf("%s sample %d: %s %s %s", res.TaskID, res.Sample, res.Verdict, res.Reason, res.Error)
			}
			key := [2]any{res.TaskID, res.Sample}
			if v, ok := verdicts[key]; ok && v != res.Verdict {
				t.Errorf("%s sample %d: %s with the selected tests, %s with the whole suite", res.TaskID, res.Sample, v, res.Verdict)
			}
			verdicts[key] = res.Verdict
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

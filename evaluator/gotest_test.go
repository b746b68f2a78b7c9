package evaluator_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/masking"
)

// goModule writes testdata/go/calc.txtar into a directory; it skips (fails
// with CI=true) without the go command.
func goModule(t *testing.T) string {
	t.Helper()
	return evaluator.GoTestdata(t, "testdata/go/calc.txtar")
}

// TestGoRepository masks the Go module at every level, checks what was
// masked and what was left out, and grades each sample's reference
// (passes) and an empty middle (fails); then grades hand-made completions
// of calc.go (the table below) for their verdicts and reasons.
func TestGoRepository(t *testing.T) {
	dir := goModule(t)
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs, stats, err := masking.Build(ctx, dir, masking.Options{Seed: 1, PerLevel: 2, RequireEmptyFails: true, Repository: dir}, r, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Language != "go" || stats.Files != 2 || stats.Packages != 2 || stats.BaselineTests != 9 {
		t.Errorf("stats: language %q, %d files, %d packages, %d tests; want go, 2 (calc.go, words/words.go), 2, 9 (7 + 2)",
			stats.Language, stats.Files, stats.Packages, stats.BaselineTests)
	}
	for _, want := range []string{"package nodeps: no tests", "gen.go: generated"} {
		if !slices.Contains(stats.Excluded, want) {
			t.Errorf("excluded %q, want %q among them", stats.Excluded, want)
		}
	}
	var jobs []evaluator.Job
	levels := map[evaluator.Level]int{}
	for _, rec := range recs {
		levels[rec.Level]++
		want := map[string]int{"calc.go": 7, "words/words.go": 2}[rec.Target]
		if rec.Language != "go" || rec.Test.Kind != evaluator.TestGo || rec.Test.ExpectedTests != want {
			t.Errorf("%s: language %q, test %+v; want go, expected %d", rec.ID, rec.Language, rec.Test, want)
		}
		task, err := rec.Task(dir)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: []evaluator.Completion{{Text: task.Reference}, {Text: ""}}})
	}
	for _, l := range evaluator.Levels() {
		if levels[l] == 0 {
			t.Errorf("no sample at level %s (%v)", l, levels)
		}
	}
	var mu sync.Mutex
	rep, err := r.RunJobs(ctx, jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		if res.Passed() != (res.Sample == 0) || res.Language != "go" {
			t.Errorf("%s sample %d (%q): %s %s %s", res.TaskID, res.Sample, res.Completion, res.Verdict, res.Reason, res.Error)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Summary.ByLanguage; len(g) != 1 || g[0].Language != "go" || g[0].Samples != 2*len(recs) {
		t.Errorf("by language %+v", g)
	}

	src, err := os.ReadFile(filepath.Join(dir, "calc.go"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, span, completion string
		timeout                time.Duration
		verdict                evaluator.Verdict
		reason                 []string // in the reason
	}{
		{name: "reference", span: "return a + b", completion: "return a + b", verdict: evaluator.VerdictPassed},
		{name: "another test fails", span: "if x > hi {\n\t\treturn hi\n\t}", completion: "",
			verdict: evaluator.VerdictFailed, reason: []string{"TestClamp/above", "Clamp(11, 0, 10) = 11, want 10"}},
		{name: "compile error", span: "return a + b", completion: "return a +",
			verdict: evaluator.VerdictFailed, reason: []string{"build failed: calc.go:"}},
		{name: "vet rejects", span: "return a + b", completion: "_ = string(a)\n\treturn a + b",
			verdict: evaluator.VerdictFailed, reason: []string{"build failed: calc.go:"}},
		{name: "panic", span: "total := 0", completion: "total := xs[len(xs)]",
			verdict: evaluator.VerdictFailed, reason: []string{"panic: runtime error: index out of range"}},
		{name: "module the repository does not require", span: `import "errors"`, completion: `import "errors"; import _ "example.org/missing"`,
			verdict: evaluator.VerdictFailed, reason: []string{"build failed", "example.org/missing"}},
		{name: "endless loop", span: "return a + b", completion: "for {\n\t}", timeout: 3 * time.Second,
			verdict: evaluator.VerdictTimeout, reason: []string{"timed out after 3s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := strings.Index(string(src), c.span)
			if i < 0 {
				t.Fatalf("span %q not in calc.go", c.span)
			}
			completion := c.completion
			task := evaluator.Task{ID: c.name, Benchmark: "go", Level: evaluator.LevelStatement, Language: "go", Path: "calc.go",
				Prefix: string(src[:i]), Suffix: string(src[i+len(c.span):]), Reference: c.span,
				Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: dir, Timeout: c.timeout,
					Test: evaluator.TestSpec{Kind: evaluator.TestGo, ExpectedTests: 7}}}
			res, err := r.Grade(ctx, task, 0, &evaluator.Completion{Text: completion})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != c.verdict {
				t.Fatalf("verdict %s (%s %s), want %s\n%s\n%s", res.Verdict, res.Reason, res.Error, c.verdict, res.StdoutTail, res.StderrTail)
			}
			for _, want := range c.reason {
				if !strings.Contains(res.Reason, want) {
					t.Errorf("reason %q lacks %q", res.Reason, want)
				}
			}
		})
	}
}

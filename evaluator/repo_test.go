package evaluator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/masking"
)

const execRepoBenchDir = "testdata/execrepobench"

func loadExecRepoBench(t *testing.T) []evaluator.Task {
	t.Helper()
	tasks, err := dataset.LoadExecRepoBench(filepath.Join(execRepoBenchDir, "samples.jsonl"),
		dataset.ExecRepoBenchOptions{ReposDir: filepath.Join(execRepoBenchDir, "repos")})
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// TestExecRepoBenchSamples grades the ExecRepoBench-format samples: the true
// middle passes, an empty middle and hostile middles fail, and the
// repositories on disk are untouched.
func TestExecRepoBenchSamples(t *testing.T) {
	sb := newSandbox(t)
	tasks := loadExecRepoBench(t)
	if len(tasks) != 9 {
		t.Fatalf("%d samples", len(tasks))
	}
	before := snapshot(t, filepath.Join(execRepoBenchDir, "repos"))
	hostile := map[string]string{
		"exit0":   "__import__('os')._exit(0)",
		"killpg":  "__import__('os').killpg(0, 9)",
		"sysexit": "__import__('sys').exit(0)",
	}
	var jobs []evaluator.Job
	for _, task := range tasks {
		cs := []evaluator.Completion{{Text: task.Reference}, {Text: ""}}
		for _, h := range []string{"exit0", "killpg", "sysexit"} {
			cs = append(cs, evaluator.Completion{Text: hostileFor(task, hostile[h])})
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: cs})
	}
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	rep, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		want := res.Sample == 0
		if res.Passed() != want {
			t.Errorf("%s sample %d (%q): verdict %s (%s) %s\n%s", res.TaskID, res.Sample, res.Completion, res.Verdict, res.Reason, res.Error, res.StdoutTail+res.StderrTail)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Graded != 9*5 {
		t.Fatalf("graded %d", rep.Graded)
	}
	// pass@1 over 5 samples with 1 passing = 0.2 for every task.
	if p := rep.Summary.Overall.PassAtK[1]; p < 0.199 || p > 0.201 {
		t.Errorf("pass@1 = %v", p)
	}
	if len(rep.Summary.ByLevel) != 6 {
		t.Errorf("levels: %+v", rep.Summary.ByLevel)
	}
	if after := snapshot(t, filepath.Join(execRepoBenchDir, "repos")); after != before {
		t.Fatal("repositories changed on disk")
	}
}

// hostileFor keeps the completion syntactically at home: statements get
// the hostile call as a statement, expressions as an expression.
func hostileFor(task evaluator.Task, call string) string {
	if strings.Contains(task.Reference, "\n") || strings.HasPrefix(strings.TrimSpace(task.Reference), "return") || task.Level == evaluator.LevelSingleLine {
		indent := task.Reference[:len(task.Reference)-len(strings.TrimLeft(task.Reference, " "))]
		return indent + call + "\n" + task.Reference
	}
	return "(" + call + ") or " + task.Reference
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p)
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestMaskingBuild turns the calc repository into a benchmark, checked in
// the sandbox, and then grades the result: every reference passes and every
// empty completion fails.
func TestMaskingBuild(t *testing.T) {
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(execRepoBenchDir, "repos", "calc")
	pytest := evaluator.TestSpec{Kind: evaluator.TestPytest, Args: []string{"-q", "-p", "no:cacheprovider", "tests"}}
	recs, stats, err := masking.Build(context.Background(), repo, masking.Options{Seed: 1, PerLevel: 2, RequireEmptyFails: true, Test: &pytest, Timeout: 20 * time.Second}, r, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if stats.BaselineTests != 7 || len(recs) < 10 {
		t.Fatalf("stats %+v, %d records", stats, len(recs))
	}
	out := filepath.Join(t.TempDir(), "bench.jsonl")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteInfill(f, recs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tasks, err := dataset.LoadInfill(out)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []evaluator.Job
	for _, task := range tasks {
		if task.Exec.Test.ExpectedTests != 7 {
			t.Fatalf("%s: expected tests %d", task.ID, task.Exec.Test.ExpectedTests)
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: []evaluator.Completion{{Text: task.Reference}, {Text: ""}}})
	}
	var mu sync.Mutex
	_, err = r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		if res.Passed() != (res.Sample == 0) {
			t.Errorf("%s sample %d: %s %s", res.TaskID, res.Sample, res.Verdict, res.Reason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

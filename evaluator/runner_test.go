package evaluator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

func programTask(id, middle string, timeout time.Duration) evaluator.Task {
	return evaluator.Task{
		ID: id, Benchmark: "unit", Level: evaluator.LevelSingleLine,
		Prefix: "def f(x):\n", Suffix: "\n", Reference: "    return x + 1",
		Exec: evaluator.Exec{Kind: evaluator.ExecProgram, Epilogue: "\nassert f(1) == 2\n", Timeout: timeout},
	}
}

// TestRunnerIsolation: crashes, hangs and floods in some samples leave the
// others' verdicts intact.
func TestRunnerIsolation(t *testing.T) {
	sb := newSandbox(t)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		middle  string
		verdict evaluator.Verdict
	}{
		"good":     {"    return x + 1", evaluator.VerdictPassed},
		"wrong":    {"    return x", evaluator.VerdictFailed},
		"segfault": {"    import ctypes; ctypes.string_at(0)", evaluator.VerdictFailed},
		"hang":     {"    while True: pass", evaluator.VerdictTimeout},
		"sleep":    {"    import time; time.sleep(60)", evaluator.VerdictTimeout},
		"flood":    {"    import sys\n    while True: sys.stdout.write('z' * 65536)", evaluator.VerdictFailed},
		"exit0":    {"    import os; os._exit(0)", evaluator.VerdictFailed},
		"good2":    {"    return 1 + x", evaluator.VerdictPassed},
	}
	var jobs []evaluator.Job
	for name, c := range cases {
		jobs = append(jobs, evaluator.Job{Task: programTask(name, "", 2*time.Second), Completions: []evaluator.Completion{{Text: c.middle}}})
	}
	got := map[string]evaluator.Result{}
	var mu sync.Mutex
	rep, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		mu.Lock()
		got[res.TaskID] = res
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range cases {
		if res := got[name]; res.Verdict != c.verdict {
			t.Errorf("%s: verdict %s (%s), want %s\n%s", name, res.Verdict, res.Reason, c.verdict, res.StderrTail)
		}
	}
	if len(got["flood"].StdoutTail) > 2048 || got["flood"].Reason != "output limit hit: 8 MiB of output" {
		t.Errorf("flood: %d bytes kept, reason %q", len(got["flood"].StdoutTail), got["flood"].Reason)
	}
	// Every reason says what went wrong, not only how the run ended.
	for name, want := range map[string]string{
		"segfault": "killed by signal 11 (segmentation fault)",
		"hang":     "timed out after 2s (--sample-timeout raises it)",
		"sleep":    "timed out after 2s (--sample-timeout raises it)",
		"wrong":    "AssertionError at <string>:4 (exit status 1)",
		"exit0":    "exited 0 without the pass signal (the tests did not run to the end)",
	} {
		if got[name].Reason != want || got[name].Limit == "" != (name != "hang" && name != "sleep") {
			t.Errorf("%s: reason %q (limit %q), want %q", name, got[name].Reason, got[name].Limit, want)
		}
	}
	if rep.Summary.Overall.Verdicts["passed"] != 2 {
		t.Errorf("summary %+v", rep.Summary.Overall)
	}
}

// fakeExec records calls and passes every run whose file contains "ok".
type fakeExec struct {
	calls atomic.Int32
	block chan struct{}
}

func (f *fakeExec) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	f.calls.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return sandbox.Result{}, ctx.Err()
		}
	}
	for _, content := range spec.Files {
		if strings.Contains(content, "ok") {
			return sandbox.Result{Status: sandbox.StatusExited, ExitCode: 0, PassSignal: true}, nil
		}
	}
	return sandbox.Result{Status: sandbox.StatusExited, ExitCode: 1}, nil
}

func jobsN(n, samples int) []evaluator.Job {
	var jobs []evaluator.Job
	for i := range n {
		var cs []evaluator.Completion
		for s := range samples {
			text := "bad"
			if (i+s)%2 == 0 {
				text = "ok"
			}
			cs = append(cs, evaluator.Completion{Text: text})
		}
		jobs = append(jobs, evaluator.Job{Task: programTask(fmt.Sprintf("t%02d", i), "", 0), Completions: cs})
	}
	return jobs
}

func TestJournalResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	ex := &fakeExec{}
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 3, Ks: []int{1, 2}, ResultsPath: path}, ex, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	jobs := jobsN(10, 2)
	stop := errors.New("client went away")
	var seen atomic.Int32
	rep, err := r.RunJobs(context.Background(), jobs, func(evaluator.Result) error {
		if seen.Add(1) == 7 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("first run: %v", err)
	}
	first := rep.Graded
	if first < 7 {
		t.Fatalf("first run graded %d", first)
	}
	// Simulate a crash in the middle of writing a record.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"task_id":"t09","benchmark":"unit","sam`)
	f.Close()

	ex2 := &fakeExec{}
	r2, _ := evaluator.NewRunner(evaluator.Config{Workers: 3, Ks: []int{1, 2}, ResultsPath: path}, ex2, nil, zaptest.NewLogger(t))
	rep2, err := r2.RunJobs(context.Background(), jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Resumed != first || rep2.Graded != 20-first || int(ex2.calls.Load()) != 20-first {
		t.Fatalf("resume: resumed %d graded %d calls %d (first run %d)", rep2.Resumed, rep2.Graded, ex2.calls.Load(), first)
	}
	o := rep2.Summary.Overall
	if o.Samples != 20 || o.Tasks != 10 || o.PassAtK[1] != 0.5 || o.PassAtK[2] != 1 {
		t.Fatalf("summary after resume: %+v", o)
	}
	// Every line of the journal is complete and unique.
	j, prev, err := evaluator.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	keys := map[string]bool{}
	for _, p := range prev {
		k := fmt.Sprint(p.TaskID, p.Sample)
		if keys[k] {
			t.Fatalf("duplicate record %s", k)
		}
		keys[k] = true
	}
	if len(prev) != 20 {
		t.Fatalf("journal has %d records", len(prev))
	}
	// A third run has nothing to do.
	ex3 := &fakeExec{}
	r3, _ := evaluator.NewRunner(evaluator.Config{ResultsPath: path}, ex3, nil, nil)
	if rep3, err := r3.RunJobs(context.Background(), jobs, nil); err != nil || rep3.Graded != 0 || ex3.calls.Load() != 0 {
		t.Fatalf("third run: %+v %v", rep3, err)
	}
}

// A run's summary counts the journaled results of the samples it asks
// for, not every task the journal holds.
func TestJournalResumeCountsOnlyAskedFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, Ks: []int{1}, ResultsPath: path}, &fakeExec{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunJobs(context.Background(), jobsN(10, 2), nil); err != nil {
		t.Fatal(err)
	}
	ex := &fakeExec{}
	r2, _ := evaluator.NewRunner(evaluator.Config{Workers: 2, Ks: []int{1}, ResultsPath: path}, ex, nil, nil)
	jobs := jobsN(3, 2)
	jobs = append(jobs, jobs[0]) // asked twice: counted once
	rep, err := r2.RunJobs(context.Background(), jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != 6 || rep.Graded != 0 || ex.calls.Load() != 0 || rep.Summary.Overall.Tasks != 3 || rep.Summary.Overall.Samples != 6 {
		t.Fatalf("resumed %d graded %d calls %d, summary %d tasks %d samples; want 6, 0, 0, 3 and 6",
			rep.Resumed, rep.Graded, ex.calls.Load(), rep.Summary.Overall.Tasks, rep.Summary.Overall.Samples)
	}
}

func TestJournalCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte("{\"task_id\":\"a\"}\nnot json\n{\"task_id\":\"b\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := evaluator.OpenJournal(path); !errors.Is(err, evaluator.ErrCorruptJournal) {
		t.Fatalf("err = %v", err)
	}
}

func TestRunnerCompleter(t *testing.T) {
	ex := &fakeExec{}
	var calls atomic.Int32
	comp := evaluator.CompleterFunc(func(ctx context.Context, task evaluator.Task, sample int) (evaluator.Completion, error) {
		calls.Add(1)
		if task.ID == "t01" {
			return evaluator.Completion{}, errors.New("backend down")
		}
		return evaluator.Completion{Text: "    return x + 1 # ok", TTFT: time.Duration(10+sample) * time.Millisecond, Total: 50 * time.Millisecond}, nil
	})
	path := filepath.Join(t.TempDir(), "r.jsonl")
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, ResultsPath: path, Ks: []int{1, 3}}, ex, comp, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	jobs := []evaluator.Job{{Task: programTask("t00", "", 0), Samples: 3}, {Task: programTask("t01", "", 0), Samples: 3}}
	var errs atomic.Int32
	rep, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		if res.Verdict == evaluator.VerdictError {
			errs.Add(1)
			if !strings.Contains(res.Error, "backend down") {
				t.Errorf("error %q", res.Error)
			}
		} else if res.TTFT < 10*time.Millisecond || res.Total != 50*time.Millisecond || res.EditSimilarity == 0 {
			t.Errorf("latency/metrics not carried: %+v", res)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 6 || errs.Load() != 3 || ex.calls.Load() != 3 {
		t.Fatalf("calls %d errs %d exec %d", calls.Load(), errs.Load(), ex.calls.Load())
	}
	g := rep.Summary.Overall
	if g.TTFT.Count != 3 || g.Total.Mean != 50*time.Millisecond {
		t.Errorf("latency summary %+v", g)
	}
	// Errors are not journaled: a rerun retries only them.
	ex2 := &fakeExec{}
	r2, _ := evaluator.NewRunner(evaluator.Config{Workers: 2, ResultsPath: path}, ex2, comp, nil)
	rep2, err := r2.RunJobs(context.Background(), jobs, nil)
	if err != nil || rep2.Resumed != 3 || rep2.Graded != 3 {
		t.Fatalf("rerun %+v %v", rep2, err)
	}
	// No completer and no completion: an error result, not a panic.
	r3, _ := evaluator.NewRunner(evaluator.Config{}, ex, nil, nil)
	res, err := r3.Grade(context.Background(), programTask("x", "", 0), 0, nil)
	if err != nil || res.Verdict != evaluator.VerdictError {
		t.Fatalf("no completer: %+v %v", res, err)
	}
}

func TestRunnerCancel(t *testing.T) {
	ex := &fakeExec{block: make(chan struct{})}
	r, _ := evaluator.NewRunner(evaluator.Config{Workers: 2}, ex, nil, zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	jobs := make(chan evaluator.Job)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, jobs, nil)
		done <- err
	}()
	jobs <- jobsN(1, 1)[0]
	jobs <- jobsN(1, 1)[0]
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunnerRealCancel(t *testing.T) {
	sb := newSandbox(t)
	r, _ := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	jobs := []evaluator.Job{
		{Task: programTask("a", "", 0), Completions: []evaluator.Completion{{Text: "    import time; time.sleep(600)"}}},
		{Task: programTask("b", "", 0), Completions: []evaluator.Completion{{Text: "    import time; time.sleep(600)"}}},
	}
	_, err := r.RunJobs(ctx, jobs, func(evaluator.Result) error { t.Error("cancelled sample was reported"); return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestTaskValidation(t *testing.T) {
	ex := &fakeExec{}
	r, _ := evaluator.NewRunner(evaluator.Config{AllowedRepoRoots: []string{"/nonexistent-root"}}, ex, nil, nil)
	bad := []evaluator.Task{
		{ID: ""},
		{ID: "lvl", Level: "huge", Exec: evaluator.Exec{Kind: evaluator.ExecProgram}},
		{ID: "rel", Path: "a.py", Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: "relative", Test: evaluator.TestSpec{Kind: evaluator.TestPytest}}},
		{ID: "esc", Path: "../a.py", Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: "/tmp", Test: evaluator.TestSpec{Kind: evaluator.TestPytest}}},
		{ID: "root", Path: "a.py", Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: "/tmp", Test: evaluator.TestSpec{Kind: evaluator.TestPytest}}},
		{ID: "kind", Exec: evaluator.Exec{Kind: "docker"}},
	}
	for _, task := range bad {
		res, err := r.Grade(context.Background(), task, 0, &evaluator.Completion{})
		if err != nil || res.Verdict != evaluator.VerdictError {
			t.Errorf("%q: %+v %v", task.ID, res.Verdict, err)
		}
	}
	if ex.calls.Load() != 0 {
		t.Fatal("invalid task reached the executor")
	}
	// No tests: scored, not executed.
	res, _ := r.Grade(context.Background(), evaluator.Task{ID: "n", Reference: "abc"}, 0, &evaluator.Completion{Text: " abc "})
	if res.Verdict != evaluator.VerdictSkipped || !res.ExactMatch || res.EditSimilarity != 100 {
		t.Fatalf("ExecNone: %+v", res)
	}
}

package evaluator_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// inFlight counts the runs of an Executor at once.
type inFlight struct {
	inner    evaluator.Executor
	now, max atomic.Int32
}

func (c *inFlight) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for m := c.max.Load(); n > m && !c.max.CompareAndSwap(m, n); m = c.max.Load() {
	}
	return c.inner.Run(ctx, spec)
}

// TestPoolBoundsRunners: two Runners of three workers each, sharing a Pool
// of two over the real sandbox, run at most two sandboxes at once.
func TestPoolBoundsRunners(t *testing.T) {
	counter := &inFlight{inner: newSandbox(t)}
	pool, err := evaluator.NewPool(counter, 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for run := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := evaluator.NewRunner(evaluator.Config{Workers: 3}, pool, nil, zaptest.NewLogger(t))
			if err != nil {
				t.Error(err)
				return
			}
			var jobs []evaluator.Job
			for i := range 5 {
				jobs = append(jobs, evaluator.Job{Task: programTask(fmt.Sprintf("r%d-%d", run, i), "", 5*time.Second),
					Completions: []evaluator.Completion{{Text: "    import time; time.sleep(0.2); return x + 1"}}})
			}
			rep, err := r.RunJobs(context.Background(), jobs, nil)
			if err != nil || rep.Summary.Overall.Verdicts["passed"] != 5 {
				t.Errorf("run %d: %v %+v", run, err, rep.Summary.Overall.Verdicts)
			}
		}()
	}
	wg.Wait()
	if m := counter.max.Load(); m != 2 {
		t.Fatalf("%d sandboxes at once, want the pool's 2", m)
	}
	// A run waiting for a slot gives up with its context.
	block := &fakeExec{block: make(chan struct{})}
	one, _ := evaluator.NewPool(block, 1)
	go one.Run(context.Background(), sandbox.Spec{})
	for block.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := one.Run(ctx, sandbox.Spec{}); err != context.DeadlineExceeded {
		t.Fatalf("waiting run: %v", err)
	}
	close(block.block)
	if _, err := evaluator.NewPool(nil, 1); err == nil {
		t.Fatal("NewPool(nil) accepted")
	}
}

// TestJobsOfOneTask: one task's samples arrive in three jobs; they are
// numbered on (FirstSample), a job's own Completer makes its samples, and
// the summary pools all seven.
func TestJobsOfOneTask(t *testing.T) {
	ex := &fakeExec{}
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, Ks: []int{1, 7}}, ex, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	task := programTask("t", "", 0)
	var asked []int
	var mu sync.Mutex
	own := evaluator.CompleterFunc(func(_ context.Context, _ evaluator.Task, sample int) (evaluator.Completion, error) {
		mu.Lock()
		asked = append(asked, sample)
		mu.Unlock()
		return evaluator.Completion{Text: "ok"}, nil
	})
	jobs := []evaluator.Job{
		{Task: task, Completions: []evaluator.Completion{{Text: "ok"}, {Text: "bad"}}},
		{Task: task, FirstSample: 2, Completions: []evaluator.Completion{{Text: "bad"}, {Text: "bad"}, {Text: "ok"}}},
		{Task: task, FirstSample: 5, Samples: 2, Completer: own},
	}
	var samples []int
	rep, err := r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
		samples = append(samples, res.Sample)
		if want := map[int]evaluator.Verdict{0: "passed", 1: "failed", 4: "passed", 5: "passed"}[res.Sample]; want != "" && res.Verdict != want {
			t.Errorf("sample %d: %s, want %s", res.Sample, res.Verdict, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Ints(samples)
	sort.Ints(asked)
	if fmt.Sprint(samples) != "[0 1 2 3 4 5 6]" || fmt.Sprint(asked) != "[5 6]" {
		t.Fatalf("samples %v, completer asked for %v", samples, asked)
	}
	g := rep.Summary.Overall
	if g.Tasks != 1 || g.Samples != 7 || g.PassAtK[7] != 1 || g.PassAtK[1] < 0.571 || g.PassAtK[1] > 0.572 {
		t.Fatalf("summary %+v", g)
	}
}

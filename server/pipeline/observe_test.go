package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/internal/logctx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// outcomes records what the pipeline reports.
type outcomes struct {
	mu  sync.Mutex
	all []Outcome
}

func (o *outcomes) Completed(out Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all = append(o.all, out)
}

func (o *outcomes) last(t *testing.T) Outcome {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.all) == 0 {
		t.Fatal("no outcome reported")
	}
	return o.all[len(o.all)-1]
}

// budgetBackend ends every generation on its latency budget.
type budgetBackend struct{ scriptBackend }

func (b *budgetBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	res, err := b.scriptBackend.Generate(ctx, req, d)
	if res != nil {
		res.Candidates[0].Finish = inference.FinishBudget
	}
	return res, err
}

func newObserved(t *testing.T, be Backend, adm AdmissionConfig, log *zap.Logger) (*Pipeline, *outcomes) {
	t.Helper()
	obs := &outcomes{}
	cfg := DefaultConfig()
	cfg.Admission = adm
	p, err := New(cfg, textBuilder{}, be, log, WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, obs
}

// Every way a completion ends is reported once, with the stages it
// reached and the cause of a cut.
func TestObserverOutcomes(t *testing.T) {
	ctx := context.Background()
	t.Run("served", func(t *testing.T) {
		p, obs := newObserved(t, &scriptBackend{text: "xyz"}, DefaultAdmissionConfig(), nil)
		r := req("def f(")
		r.Surface = "grpc"
		if _, err := p.Complete(ctx, r, Stream{}); err != nil {
			t.Fatal(err)
		}
		o := obs.last(t)
		if o.Surface != "grpc" || o.Class != Interactive || o.Err != nil || o.Cause != CauseNone || !o.Assembled || !o.Queued ||
			o.TimeToFirstToken <= 0 || o.Total < o.TimeToFirstToken || o.CompletionTokens != 3 || o.Reused || o.Shed {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		p, obs := newObserved(t, &scriptBackend{text: "xyz"}, DefaultAdmissionConfig(), nil)
		r := req("x")
		r.Context.Cursor.Path = ""
		if _, err := p.Complete(ctx, r, Stream{}); err == nil {
			t.Fatal("no error")
		}
		if o := obs.last(t); o.Err == nil || o.Assembled || o.Queued || o.Cause != CauseNone {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("budget", func(t *testing.T) {
		p, obs := newObserved(t, &budgetBackend{scriptBackend{text: "x"}}, DefaultAdmissionConfig(), nil)
		if _, err := p.Complete(ctx, req("x"), Stream{}); err != nil {
			t.Fatal(err)
		}
		if o := obs.last(t); o.Err != nil || o.Cause != CauseBudget {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("client and deadline", func(t *testing.T) {
		be := &scriptBackend{text: "x", release: make(chan struct{})}
		// Admission off: the cancelled call sends no probe and holds no slot the
		// second would wait for (and be refused).
		p, obs := newObserved(t, be, AdmissionConfig{Slots: 0, EvalShare: 4, MaxHold: time.Second}, nil)
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			waitFor(t, "the call at the backend", func() bool { return be.calls.Load() == 1 })
			cancel()
		}()
		if _, err := p.Complete(cctx, req("a"), Stream{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		if o := obs.last(t); o.Cause != CauseClient || !o.Queued || o.TimeToFirstToken != 0 {
			t.Fatalf("%+v", o)
		}
		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer dcancel()
		if _, err := p.Complete(dctx, req("b"), Stream{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline: %v", err)
		}
		if o := obs.last(t); o.Cause != CauseDeadline {
			t.Fatalf("%+v", o)
		}
		close(be.release)
	})
	t.Run("superseded and reused", func(t *testing.T) {
		be := &scriptBackend{text: "xyz", release: make(chan struct{})}
		p, obs := newObserved(t, be, DefaultAdmissionConfig(), nil)
		first := make(chan error, 1)
		go func() {
			_, err := p.Complete(ctx, withSession(req("def f("), "s"), Stream{})
			first <- err
		}()
		waitFor(t, "the first call at the backend", func() bool { return be.calls.Load() == 1 })
		go func() {
			time.Sleep(20 * time.Millisecond)
			close(be.release)
		}()
		if _, err := p.Complete(ctx, withSession(req("def g("), "s"), Stream{}); err != nil {
			t.Fatal(err)
		}
		if err := <-first; !errors.Is(err, ErrSuperseded) {
			t.Fatalf("first: %v", err)
		}
		var causes []Cause
		obs.mu.Lock()
		for _, o := range obs.all {
			causes = append(causes, o.Cause)
		}
		obs.mu.Unlock()
		if len(causes) != 2 || (causes[0] != CauseSuperseded && causes[1] != CauseSuperseded) {
			t.Fatalf("causes %v", causes)
		}
		if res, err := p.Complete(ctx, withSession(req("def g(x"), "s"), Stream{}); err != nil || !res.Reused {
			t.Fatalf("typed through: %v %+v", err, res)
		}
		if o := obs.last(t); !o.Reused || o.Queued || o.TimeToFirstToken <= 0 {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("shed", func(t *testing.T) {
		be := &scriptBackend{text: "x", release: make(chan struct{})}
		p, obs := newObserved(t, be, AdmissionConfig{Slots: 1, QueueLength: 0, EvalShare: 4, MaxHold: time.Second}, nil)
		go func() { _, _ = p.Complete(ctx, req("a"), Stream{}) }()
		waitFor(t, "the call at the backend", func() bool { return be.calls.Load() == 1 })
		r := req("b")
		r.Class = Evaluation
		if _, err := p.Complete(ctx, r, Stream{}); !errors.Is(err, ErrOverloaded) {
			t.Fatalf("%v", err)
		}
		if o := obs.last(t); !o.Shed || o.Class != Evaluation || !o.Queued {
			t.Fatalf("%+v", o)
		}
		close(be.release)
		waitFor(t, "the first call's end", func() bool { return p.Stats().InFlight == [2]int{} })
	})
}

// Stats shows the calls under way, the slots taken and the queue.
func TestStats(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{})}
	p := newTestPipeline(t, be, DefaultAdmissionConfig())
	var wg sync.WaitGroup
	for i, class := range []Class{Interactive, Interactive, Evaluation} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req(string(rune('a' + i)))
			r.Class = class
			_, _ = p.Complete(context.Background(), r, Stream{})
		}()
		waitFor(t, "the call queued", func() bool { s := p.Stats(); return s.InFlight[0]+s.InFlight[1] == i+1 })
	}
	waitFor(t, "two queued", func() bool { s := p.Stats(); return s.Queued[0]+s.Queued[1] == 2 })
	if s := p.Stats(); s.InFlight != [2]int{2, 1} || s.Busy != 1 {
		t.Fatalf("%+v", s)
	}
	close(be.release)
	wg.Wait()
	if s := p.Stats(); s.InFlight != [2]int{} || s.Busy != 0 || s.Queued != [2]int{} || len(s.Backends) != 1 || s.Backends[0].OK != 3 {
		t.Fatalf("after: %+v", s)
	}
}

// The pipeline's lines, and those of an abandoned request's probe, carry
// the request id.
func TestLogsCarryRequestID(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	be := &scriptBackend{text: "x", release: make(chan struct{})}
	p, _ := newObserved(t, be, DefaultAdmissionConfig(), zap.New(core))
	ctx, cancel := context.WithCancel(WithRequestID(context.Background(), "r-1"))
	go func() {
		waitFor(t, "the call at the backend", func() bool { return be.calls.Load() == 1 })
		cancel() // before the first token: a probe holds the slot
	}()
	if _, err := p.Complete(ctx, req("x"), Stream{}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	close(be.release)
	waitFor(t, "the probe's line", func() bool {
		return logs.FilterMessage("abandoned request's slot released").Len() == 1
	})
	if logs.Len() < 2 {
		t.Fatalf("%d lines", logs.Len())
	}
	for _, e := range logs.All() {
		if e.ContextMap()["request_id"] != "r-1" {
			t.Errorf("%q: %v", e.Message, e.ContextMap())
		}
	}
	if got := logctx.Fields(ctx); len(got) != 1 || got[0].String != "r-1" {
		t.Errorf("fields %v", got)
	}
}

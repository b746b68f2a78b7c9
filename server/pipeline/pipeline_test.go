package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scriptBackend answers every request with text after it is released
// (release nil: at once); it counts requests and remembers their order.
type scriptBackend struct {
	text    string
	release chan struct{}
	calls   atomic.Int32
	mu      sync.Mutex
	order   []string // the prompts, in the order generation started
	started chan string
}

func (b *scriptBackend) Model(n string) string {
	if n == "" {
		return "m"
	}
	return n
}
func (b *scriptBackend) ContextTokens(string) int              { return 4096 }
func (b *scriptBackend) MaxTokens(n int) int                   { return max(n, 16) }
func (b *scriptBackend) CheckOptions(*inference.Request) error { return nil }
func (b *scriptBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	b.calls.Add(1)
	b.mu.Lock()
	b.order = append(b.order, req.Prompt)
	b.mu.Unlock()
	if b.started != nil {
		b.started <- req.Prompt
	}
	if b.release != nil {
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := d(0, b.text); err != nil {
		return nil, err
	}
	return &inference.Result{Model: req.Model, PromptEvalTokens: req.PromptTokens,
		Candidates: []inference.Candidate{{Text: b.text, Finish: inference.FinishStop, Tokens: 3}}}, nil
}

// textBuilder makes the prompt the cursor file's text and reports the
// cursor, as contextpack does.
type textBuilder struct{}

func (textBuilder) Build(ctx context.Context, req contextpack.Request) (*contextpack.Prompt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range req.Files {
		if f.Path == req.Cursor.Path {
			return &contextpack.Prompt{Text: f.Content, Tokens: 10, Manifest: contextpack.Manifest{PromptTokens: 10},
				Cursor: contextpack.CursorText{Path: f.Path, Text: f.Content, Offset: req.Cursor.Offset}}, nil
		}
	}
	return nil, &contextpack.ArgumentError{Field: "cursor.path", Reason: "not in files"}
}

func newTestPipeline(t *testing.T, be Backend, adm AdmissionConfig) *Pipeline {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Admission = adm
	p, err := New(cfg, textBuilder{}, be, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// req is a request whose cursor file is text with the cursor at its end.
func req(text string) *Request {
	return &Request{Context: contextpack.Request{
		Files:  []contextpack.File{{Path: "a.py", Content: text, HasContent: true}},
		Cursor: contextpack.Cursor{Path: "a.py", Offset: len(text), Encoding: contextpack.EncodingByteOffset},
	}}
}

func withSession(r *Request, id string) *Request { r.ClientID, r.SessionID = "c", id; return r }

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestSupersede(t *testing.T) {
	be := &scriptBackend{text: "xyz", release: make(chan struct{})}
	p := newTestPipeline(t, be, DefaultAdmissionConfig())
	first := make(chan error, 1)
	go func() {
		_, err := p.Complete(context.Background(), withSession(req("def f("), "s1"), Stream{})
		first <- err
	}()
	waitFor(t, "the first call at the backend", func() bool { return be.calls.Load() == 1 })
	// Another session does not cancel it.
	other := make(chan error, 1)
	go func() {
		_, err := p.Complete(context.Background(), withSession(req("x = "), "s2"), Stream{})
		other <- err
	}()
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(be.release)
	}()
	res, err := p.Complete(context.Background(), withSession(req("def f(a"), "s1"), Stream{})
	if err != nil || res.Candidates[0].Text != "xyz" {
		t.Fatalf("second call: %v %+v", err, res)
	}
	if err := <-first; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("first call: %v, want ErrSuperseded", err)
	}
	if c := Classify(ErrSuperseded); c.Kind != KindCanceled || !strings.Contains(c.Message, "superseded") {
		t.Errorf("classified %+v", c)
	}
	if err := <-other; err != nil {
		t.Fatalf("other session: %v", err)
	}
}

func TestTypedThrough(t *testing.T) {
	be := &scriptBackend{text: "return a + b\n"}
	p := newTestPipeline(t, be, DefaultAdmissionConfig())
	ctx := context.Background()
	base := "def add(a, b):\n    "
	suffix := "\n\nprint(add(1, 2))\n"
	at := func(prefix string) *Request {
		r := withSession(req(prefix+suffix), "s")
		r.Context.Cursor.Offset = len(prefix)
		return r
	}
	if res, err := p.Complete(ctx, at(base), Stream{}); err != nil || res.Reused {
		t.Fatalf("first: %v %+v", err, res)
	}
	var streamed []string
	for i, typed := range []string{"r", "ret", "return a"} {
		res, err := p.Complete(ctx, at(base+typed), Stream{OnDelta: func(_ int, s string) error { streamed = append(streamed, s); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimPrefix("return a + b\n", typed)
		if !res.Reused || res.Candidates[0].Text != want || streamed[i] != want {
			t.Fatalf("typed %q: reused %v text %q streamed %q", typed, res.Reused, res.Candidates[0].Text, streamed)
		}
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("backend calls %d, want 1", n)
	}
	// Typing something else drops the entry: the backend is asked, and the
	// old completion is not offered again afterwards.
	if res, err := p.Complete(ctx, at(base+"x"), Stream{}); err != nil || res.Reused {
		t.Fatalf("other text: %v %+v", err, res)
	}
	if n := be.calls.Load(); n != 2 {
		t.Fatalf("backend calls %d, want 2", n)
	}
	// A different suffix, path or session is never typed-through.
	for name, r := range map[string]*Request{
		"suffix":  withSession(req(base+"xr"+"\nother\n"), "s"),
		"session": withSession(req(base+"xr"+suffix), "t"),
		"none":    req(base + "xr" + suffix),
	} {
		r.Context.Cursor.Offset = len(base + "xr")
		if res, err := p.Complete(ctx, r, Stream{}); err != nil || res.Reused {
			t.Errorf("%s: %v, reused %v", name, err, res != nil && res.Reused)
		}
	}
}

// A request whose deadline the queue cannot meet is refused at once, as is
// one that finds its class's queue full.
func TestAdmissionSheds(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{})}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 1, QueueLength: 1, EvalShare: 4, MaxHold: time.Second})
	p.targets[0].gate.hold = ewma{value: 2 * time.Second} // measured: a generation holds its slot 2 s
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(be.release)
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = p.Complete(context.Background(), req("a"), Stream{}) }()
	waitFor(t, "the slot taken", func() bool { r, _ := p.targets[0].gate.stats(); return r == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Complete(ctx, req("b"), Stream{})
	var oe *OverloadError
	if !errors.As(err, &oe) || oe.RetryAfter < time.Second || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("short deadline: %v after %v", err, time.Since(start))
	}
	if c := Classify(err); c.Kind != KindResourceExhausted || c.RetryAfter != oe.RetryAfter {
		t.Errorf("classified %+v", c)
	}
	lb := 100 * time.Millisecond
	r := req("c")
	r.LatencyBudget = &lb
	if _, err := p.Complete(context.Background(), r, Stream{}); !errors.As(err, &oe) {
		t.Fatalf("short latency budget: %v", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = p.Complete(context.Background(), req("d"), Stream{}) }()
	waitFor(t, "one queued", func() bool { _, q := p.targets[0].gate.stats(); return q[Interactive] == 1 })
	start = time.Now()
	if _, err := p.Complete(context.Background(), req("e"), Stream{}); !errors.As(err, &oe) || !strings.Contains(err.Error(), "already waiting") {
		t.Fatalf("full queue: %v", err)
	}
	if d := time.Since(start); d > 5*time.Millisecond {
		t.Logf("full queue answered in %v", d) // a property, not a timing assertion: logged
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("backend calls %d: a refused request reached the backend", n)
	}
}

// Interactive requests start first; evaluation gets one start in every
// EvalShare while both wait; within a class the earliest deadline goes
// first.
func TestAdmissionOrder(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{}), started: make(chan string, 64)}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 1, QueueLength: 64, EvalShare: 3, MaxHold: time.Second})
	var wg sync.WaitGroup
	run := func(name string, class Class, timeout time.Duration) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			r := req(name)
			r.Class = class
			if _, err := p.Complete(ctx, r, Stream{}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	run("first", Interactive, 0)
	<-be.started
	queue := func(name string, class Class, timeout time.Duration, n int) {
		run(name, class, timeout)
		waitFor(t, name+" queued", func() bool { _, q := p.targets[0].gate.stats(); return q[0]+q[1] == n })
	}
	queue("e1", Evaluation, 0, 1)
	queue("e2", Evaluation, 0, 2)
	queue("i-late", Interactive, time.Hour, 3)
	queue("i-none", Interactive, 0, 4)
	queue("i-soon", Interactive, 30*time.Minute, 5)
	queue("i-last", Interactive, 0, 6)
	var got []string
	for range 6 {
		be.release <- struct{}{}
		got = append(got, <-be.started)
	}
	be.release <- struct{}{}
	wg.Wait()
	want := "i-soon i-late e1 i-none i-last e2"
	if strings.Join(got, " ") != want {
		t.Fatalf("start order %v, want %s", got, want)
	}
}

// A request abandoned before its first token keeps its slot until a probe
// (its prompt again, for one token) returns: the backend is still
// evaluating the prompt. One abandoned while queued gives up its place at
// once.
func TestAbandonedHoldsSlot(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{}), started: make(chan string, 8)}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 1, QueueLength: 8, EvalShare: 4, MaxHold: time.Minute})
	abandon(t, p, be, "abandoned")
	if probe := <-be.started; probe != "abandoned" {
		t.Fatalf("probe sent %q, want the abandoned prompt", probe)
	}
	next := make(chan error, 1)
	go func() { _, err := p.Complete(context.Background(), req("next"), Stream{}); next <- err }()
	waitFor(t, "next queued behind the probe", func() bool { _, q := p.targets[0].gate.stats(); return q[0] == 1 })
	be.release <- struct{}{} // the probe returns: the backend is free
	if got := <-be.started; got != "next" {
		t.Fatalf("started %q after the probe, want next", got)
	}

	// Cancelled while waiting: leaves the queue, and no probe is sent.
	done := make(chan error, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { _, err := p.Complete(ctx2, req("queued"), Stream{}); done <- err }()
	waitFor(t, "queued", func() bool { _, q := p.targets[0].gate.stats(); return q[0] == 1 })
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled in queue: %v", err)
	}
	if _, q := p.targets[0].gate.stats(); q[0] != 0 {
		t.Fatalf("queue %v after the cancel", q)
	}
	close(be.release)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all released", func() bool { r, _ := p.targets[0].gate.stats(); return r == 0 })
	if n := be.calls.Load(); n != 3 {
		t.Fatalf("backend calls %d, want 3 (abandoned, probe, next)", n)
	}
}

func TestValidate(t *testing.T) {
	p := newTestPipeline(t, &scriptBackend{}, DefaultAdmissionConfig())
	neg := -time.Second
	for name, tc := range map[string]struct {
		r    *Request
		want string
	}{
		"no files":   {&Request{}, "repository.files"},
		"no cursor":  {&Request{Context: contextpack.Request{Files: req("a").Context.Files}}, "cursor.path"},
		"budget":     {func() *Request { r := req("a"); r.LatencyBudget = &neg; return r }(), "latency_budget"},
		"long id":    {func() *Request { r := req("a"); r.SessionID = strings.Repeat("s", 300); return r }(), "session_id"},
		"bad utf8":   {func() *Request { r := req("a"); r.Model = "\xff"; return r }(), "model"},
		"both":       {func() *Request { r := req("a"); r.Context.Files[0].Digest = "sha256:x"; return r }(), "has both"},
		"stop utf-8": {func() *Request { r := req("a"); r.Generation.Stop = []string{"ok", "\xc3"}; return r }(), "generation.stop[1]"},
	} {
		_, err := p.Complete(context.Background(), tc.r, Stream{})
		if c := Classify(err); c.Kind != KindInvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (%v), want InvalidArgument naming %s", name, err, c.Kind, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{&contextpack.ArgumentError{Field: "f", Reason: "r"}, KindInvalidArgument},
		{&contextpack.MissingContentError{Paths: []string{"a"}}, KindMissingContent},
		{&contextpack.UnknownSnapshotError{ID: "x"}, KindUnknownSnapshot},
		{fmt.Errorf("%w: x", inference.ErrPromptTooLong), KindFailedPrecondition},
		{&inference.ModelError{Model: "m"}, KindNotFound},
		{fmt.Errorf("%w: x", inference.ErrUnavailable), KindUnavailable},
		{&OverloadError{Reason: "r", RetryAfter: time.Second}, KindResourceExhausted},
		{context.Canceled, KindCanceled},
		{context.DeadlineExceeded, KindDeadlineExceeded},
		{errors.New("mystery"), KindInternal},
	} {
		if got := Classify(tc.err).Kind; got != tc.want {
			t.Errorf("%v: kind %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Slots 0 turns admission off: every request reaches the backend at once.
func TestAdmissionOff(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{})}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 0, QueueLength: 0, EvalShare: 1})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Complete(context.Background(), req("a"), Stream{}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "all five at the backend", func() bool { return be.calls.Load() == 5 })
	close(be.release)
	wg.Wait()
}

// Without admission an abandoned request sends no probe: nothing waits for
// its slot, so a probe would only double the backend requests of an
// editor's superseded keystrokes.
func TestAdmissionOffSendsNoProbe(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{}), started: make(chan string, 8)}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 0, QueueLength: 0, EvalShare: 1, MaxHold: time.Minute})
	abandon(t, p, be, "abandoned")
	p.Close() // waits for probes, had one been sent
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("backend calls %d, want 1 (no probe without admission)", n)
	}
}

// abandon starts a call of prompt, cancels it once it is at the backend
// (before its first token) and checks that it ended Canceled.
func abandon(t *testing.T, p *Pipeline, be *scriptBackend, prompt string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := p.Complete(ctx, req(prompt), Stream{}); done <- err }()
	<-be.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
}

// A session's new keystroke is not refused on arrival because of its own
// past: the slot ahead is held by the probe of the keystroke it
// superseded, and it waits for it (refused only when its latest start
// passes). Another session's request, with the same budget, is refused at
// once on the estimate.
func TestOwnPastNotShed(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{}), started: make(chan string, 8)}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 1, QueueLength: 8, EvalShare: 4, MaxHold: time.Minute})
	p.targets[0].gate.hold = ewma{value: 10 * time.Second} // measured: a slot is held 10 s; the estimate is 5 s
	budget := 2 * time.Second

	first := make(chan error, 1)
	go func() { _, err := p.Complete(context.Background(), withSession(req("a"), "s"), Stream{}); first <- err }()
	if got := <-be.started; got != "a" {
		t.Fatalf("started %q, want a", got)
	}
	next := make(chan error, 1)
	go func() {
		r := withSession(req("b"), "s")
		r.LatencyBudget = &budget
		res, err := p.Complete(context.Background(), r, Stream{})
		if err == nil && (len(res.Candidates) != 1 || res.Candidates[0].Text != "x") {
			err = fmt.Errorf("result %+v", res)
		}
		next <- err
	}()
	if err := <-first; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("superseded call: %v", err)
	}
	if probe := <-be.started; probe != "a" {
		t.Fatalf("probe sent %q, want the abandoned prompt", probe)
	}
	waitFor(t, "the session's next keystroke queued behind its probe", func() bool {
		_, q := p.targets[0].gate.stats()
		return q[Interactive] == 1
	})

	other := withSession(req("c"), "t")
	other.LatencyBudget = &budget
	var oe *OverloadError
	if _, err := p.Complete(context.Background(), other, Stream{}); !errors.As(err, &oe) || oe.waited {
		t.Fatalf("another session's request behind the probe: %v, want refused at once", err)
	}

	be.release <- struct{}{} // the probe returns: the backend is free
	if got := <-be.started; got != "b" {
		t.Fatalf("started %q after the probe, want b", got)
	}
	be.release <- struct{}{}
	if err := <-next; err != nil {
		t.Fatalf("the session's next keystroke: %v", err)
	}
	waitFor(t, "all released", func() bool { r, _ := p.targets[0].gate.stats(); return r == 0 })
	if n := be.calls.Load(); n != 3 {
		t.Fatalf("backend calls %d, want 3 (a, its probe, b)", n)
	}
	if len(p.targets[0].gate.held) != 0 {
		t.Fatalf("slots still counted per session: %v", p.targets[0].gate.held)
	}
}

// A keystroke that supersedes one still in flight while the backend has no
// free slot waits BurstWait before it queues: the next keystroke of the
// burst supersedes it there, and it never reaches the backend. With a free
// slot it starts at once.
func TestBurstWait(t *testing.T) {
	be := &scriptBackend{text: "x", release: make(chan struct{}), started: make(chan string, 8)}
	p := newTestPipeline(t, be, AdmissionConfig{Slots: 1, QueueLength: 8, EvalShare: 4, MaxHold: time.Minute, BurstWait: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := func(text string) chan error {
		ch := make(chan error, 1)
		go func() { _, err := p.Complete(ctx, withSession(req(text), "s"), Stream{}); ch <- err }()
		return ch
	}
	a := call("a")
	if got := <-be.started; got != "a" {
		t.Fatalf("started %q, want a", got)
	}
	b := call("ab") // supersedes a: a is abandoned, its probe takes the slot
	if err := <-a; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("a: %v", err)
	}
	if got := <-be.started; got != "a" {
		t.Fatalf("probe %q, want a", got)
	}
	time.Sleep(20 * time.Millisecond)
	if _, q := p.targets[0].gate.stats(); q[Interactive] != 0 {
		t.Fatalf("b queued during its burst wait: %v", q)
	}
	c := call("abc") // the user typed on: b goes without reaching the backend
	if err := <-b; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("b: %v", err)
	}
	select {
	case got := <-be.started:
		t.Fatalf("%q reached the backend during a burst wait", got)
	case <-time.After(20 * time.Millisecond):
	}
	// Wide enough: the same burst with a free slot starts at once.
	p2 := newTestPipeline(t, be, AdmissionConfig{Slots: 2, QueueLength: 8, EvalShare: 4, MaxHold: time.Minute, BurstWait: time.Minute})
	d := make(chan error, 1)
	go func() { _, err := p2.Complete(context.Background(), withSession(req("d"), "s2"), Stream{}); d <- err }()
	if got := <-be.started; got != "d" {
		t.Fatalf("started %q, want d", got)
	}
	e := make(chan error, 1)
	go func() { _, err := p2.Complete(context.Background(), withSession(req("de"), "s2"), Stream{}); e <- err }()
	if err := <-d; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("d: %v", err)
	}
	// d's probe and e: one of them takes the other slot at once.
	got := []string{<-be.started, <-be.started}
	sort.Strings(got)
	if got[0] != "d" || got[1] != "de" {
		t.Fatalf("started %v, want d's probe and de", got)
	}
	close(be.release)
	if err := <-e; err != nil {
		t.Fatalf("e: %v", err)
	}
	cancel() // c is still in its burst wait: its caller goes away
	if err := <-c; !errors.Is(err, context.Canceled) {
		t.Fatalf("c: %v", err)
	}
	if n := be.calls.Load(); n != 5 {
		t.Fatalf("backend calls %d, want 5 (a and its probe, d, its probe and de: neither b nor c)", n)
	}
}

// One cold sample (a model load, an empty cache) does not take over the
// estimate: from the 200 ms prior, a first time to first token of 1.2 s
// moves it a fifth of the way, and later samples pull it back.
func TestEWMAColdSample(t *testing.T) {
	g := newGate(DefaultAdmissionConfig())
	g.ttft.add(1200 * time.Millisecond)
	if got := g.expectedTTFT(); got != 400*time.Millisecond {
		t.Fatalf("after a cold 1.2 s sample: %v, want 400ms", got)
	}
	for range 10 {
		g.ttft.add(300 * time.Millisecond)
	}
	if got := g.expectedTTFT(); got < 300*time.Millisecond || got > 320*time.Millisecond {
		t.Fatalf("after ten 300 ms samples: %v, want about 300ms", got)
	}
}

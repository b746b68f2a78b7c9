package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference"
	"go.uber.org/zap/zaptest"
)

// failing is a scriptBackend that fails every generation with err while
// err is set (ErrNotSent: nobody listens there).
type failing struct {
	scriptBackend
	err atomic.Pointer[error]
}

func (b *failing) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	if e := b.err.Load(); e != nil {
		b.calls.Add(1)
		return nil, *e
	}
	return b.scriptBackend.Generate(ctx, req, d)
}

func (b *failing) fail(err error) { b.err.Store(&err) }

// errNotSent is what inference returns when it cannot connect.
var errNotSent = fmt.Errorf("%w (%w): dial tcp: connection refused", inference.ErrUnavailable, inference.ErrNotSent)

func newRouted(t *testing.T, routing Routing, adm AdmissionConfig, backends ...Backend) *Pipeline {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Routing = routing
	var ts []Target
	for i, b := range backends {
		ts = append(ts, Target{Name: fmt.Sprintf("b%d", i), Backend: b, Admission: adm})
	}
	p, err := NewRouted(cfg, textBuilder{}, ts, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// fileReq is a request in repository repo with the cursor in path.
func fileReq(repo, path string) *Request {
	r := req("def f(")
	r.Context.RepoName = repo
	r.Context.Files[0].Path, r.Context.Cursor.Path = path, path
	return r
}

// firstOnB0 is a request whose first choice of b0 and b1 is b0.
func firstOnB0() *Request {
	for i := 0; ; i++ {
		if r := fileReq("r", fmt.Sprintf("f%d.py", i)); weight("b0", routeKey(r)) > weight("b1", routeKey(r)) {
			return r
		}
	}
}

func served(t *testing.T, p *Pipeline, r *Request) string {
	t.Helper()
	res, err := p.Complete(context.Background(), r, Stream{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Backend
}

// Rendezvous hashing: a repository and file always reach the same backend;
// files spread over the backends about evenly; taking a backend out moves
// only its own files, and each of them to the backend next in its order.
func TestRendezvous(t *testing.T) {
	names := []string{"b0", "b1", "b2", "b3"}
	count := map[string]int{}
	const files = 4000
	for i := range files {
		key := fmt.Sprintf("repo\x00src/file%d.py", i)
		best, second := "", ""
		for _, n := range names {
			if best == "" || weight(n, key) > weight(best, key) {
				best, second = n, best
			} else if second == "" || weight(n, key) > weight(second, key) {
				second = n
			}
		}
		count[best]++
		// Without best, the same hash picks second: nothing else moves.
		var without string
		for _, n := range names {
			if n != best && (without == "" || weight(n, key) > weight(without, key)) {
				without = n
			}
		}
		if without != second {
			t.Fatalf("%q: next after %s is %s, but without it %s", key, best, second, without)
		}
	}
	for _, n := range names {
		if d := math.Abs(float64(count[n]) - files/4); d > 0.1*files/4 {
			t.Errorf("backend %s has %d of %d files; want about %d", n, count[n], files, files/4)
		}
	}
	if weight("b0", "r\x00a.py") != 0x452553bbccf7c9d6 { // stable across processes and releases: replicas agree
		t.Errorf("weight(b0, r/a.py) = %#x changed", weight("b0", "r\x00a.py"))
	}
}

func TestAffinityKeepsASessionOnOneBackend(t *testing.T) {
	bs := []*scriptBackend{{text: "x"}, {text: "x"}, {text: "x"}}
	p := newRouted(t, RouteAffinity, DefaultAdmissionConfig(), bs[0], bs[1], bs[2])
	seen := map[string]bool{}
	for f := range 12 {
		r := fileReq("repo", fmt.Sprintf("pkg/f%d.py", f))
		b := served(t, p, r)
		for range 3 {
			if again := served(t, p, fileReq("repo", r.Context.Cursor.Path)); again != b {
				t.Fatalf("%s: %s, then %s", r.Context.Cursor.Path, b, again)
			}
		}
		seen[b] = true
	}
	if len(seen) != 3 {
		t.Errorf("12 files reached %d of 3 backends", len(seen))
	}
}

func TestRoundRobin(t *testing.T) {
	p := newRouted(t, RouteRoundRobin, DefaultAdmissionConfig(), &scriptBackend{text: "x"}, &scriptBackend{text: "x"})
	a, b := served(t, p, fileReq("r", "a.py")), served(t, p, fileReq("r", "a.py"))
	if a == b {
		t.Fatalf("round-robin sent the same file to %s twice in a row", a)
	}
}

// Bounded load: when the first backend's slots and queue are full, the
// request goes to the next in its order at once; when every backend is
// full it is refused (RESOURCE_EXHAUSTED) with the earliest retry.
func TestBoundedLoadSpills(t *testing.T) {
	busy := &scriptBackend{text: "x", release: make(chan struct{})}
	other := &scriptBackend{text: "y", release: make(chan struct{})}
	adm := DefaultAdmissionConfig()
	adm.QueueLength = 0 // full as soon as the slot is taken
	p := newRouted(t, RouteAffinity, adm, busy, other)
	// A file whose first choice is b0.
	r := firstOnB0()
	done := make(chan *Result, 2)
	go func() { res, _ := p.Complete(context.Background(), r, Stream{}); done <- res }()
	waitFor(t, "b0's slot taken", func() bool { return busy.calls.Load() == 1 })
	go func() {
		res, _ := p.Complete(context.Background(), fileReq("r", r.Context.Cursor.Path), Stream{})
		done <- res
	}()
	waitFor(t, "the second at b1", func() bool { return other.calls.Load() == 1 })
	_, err := p.Complete(context.Background(), fileReq("r", r.Context.Cursor.Path), Stream{})
	var ov *OverloadError
	if !errors.As(err, &ov) || Classify(err).Kind != KindResourceExhausted {
		t.Fatalf("third with both full: %v, want an OverloadError", err)
	}
	close(busy.release)
	close(other.release)
	a, b := <-done, <-done
	if a.Backend == b.Backend {
		t.Fatalf("both served by %s", a.Backend)
	}
	s := p.Stats()
	if s.Backends[0].SpilledFull != 2 || s.Backends[1].SpilledFull != 0 {
		t.Fatalf("spills %+v", s.Backends)
	}
}

// A backend nobody listens on: the request goes on to the next backend,
// the backend is tried last until a health check that began after the
// failure says it serves, and then it gets its sessions back.
func TestFailoverAndRejoin(t *testing.T) {
	b0, b1 := &failing{scriptBackend: scriptBackend{text: "x"}}, &scriptBackend{text: "y"}
	p := newRouted(t, RouteAffinity, DefaultAdmissionConfig(), b0, b1)
	r := firstOnB0()
	if got := served(t, p, r); got != "b0" {
		t.Fatalf("served by %s", got)
	}
	b0.fail(errNotSent)
	before := time.Now()
	if got := served(t, p, r); got != "b1" {
		t.Fatalf("with b0 unreachable: served by %s", got)
	}
	calls := b0.calls.Load()
	if got := served(t, p, r); got != "b1" || b0.calls.Load() != calls {
		t.Fatalf("b0 tried again before health said it serves (served by %s)", got)
	}
	p.SetHealth("b0", true, before) // a check that began before the failure
	if got := served(t, p, r); got != "b1" || b0.calls.Load() != calls {
		t.Fatalf("an older check brought b0 back (served by %s)", got)
	}
	b0.err.Store(nil)
	p.SetHealth("b0", true, time.Now())
	if got := served(t, p, r); got != "b0" {
		t.Fatalf("after b0 came back: served by %s", got)
	}
	// Health alone takes a backend out, and brings it back.
	p.SetHealth("b0", false, time.Now())
	if got := served(t, p, r); got != "b1" {
		t.Fatalf("b0 down: served by %s", got)
	}
	p.SetHealth("b0", true, time.Now())
	if got := served(t, p, r); got != "b0" {
		t.Fatalf("b0 up again: served by %s", got)
	}
	s := p.Stats()
	if b := s.Backends[0]; b.NotSent != 1 || b.SpilledUnreachable != 1 || b.SpilledDown != 3 || !b.Up {
		t.Fatalf("b0 stats %+v", b)
	}
}

// A backend error other than not reaching it is the request's answer:
// the backend may have evaluated it (or be about to).
func TestNoFailoverOnBackendError(t *testing.T) {
	b0, b1 := &failing{scriptBackend: scriptBackend{text: "x"}}, &scriptBackend{text: "y"}
	p := newRouted(t, RouteRoundRobin, DefaultAdmissionConfig(), b0, b1)
	b0.fail(fmt.Errorf("%w: stream cut", inference.ErrUnavailable))
	var errs int
	for range 4 {
		if _, err := p.Complete(context.Background(), fileReq("r", "a.py"), Stream{}); err != nil {
			if Classify(err).Kind != KindUnavailable {
				t.Fatalf("err %v", err)
			}
			errs++
		}
	}
	if errs != 2 || b1.calls.Load() != 2 {
		t.Fatalf("%d errors, b1 %d calls; want 2 and 2", errs, b1.calls.Load())
	}
}

// When no backend serves, a request still goes to one (for its honest
// UNAVAILABLE), and one that no backend reaches fails UNAVAILABLE.
func TestAllDown(t *testing.T) {
	b0, b1 := &failing{}, &failing{}
	p := newRouted(t, RouteAffinity, DefaultAdmissionConfig(), b0, b1)
	p.SetHealth("b0", false, time.Now())
	p.SetHealth("b1", false, time.Now())
	b0.fail(errNotSent)
	b1.fail(errNotSent)
	_, err := p.Complete(context.Background(), fileReq("r", "a.py"), Stream{})
	if Classify(err).Kind != KindUnavailable || b0.calls.Load()+b1.calls.Load() != 2 {
		t.Fatalf("err %v after %d calls", err, b0.calls.Load()+b1.calls.Load())
	}
}

// Backends serve the models they list; a model none lists is NOT_FOUND.
func TestRouteByModel(t *testing.T) {
	cfg := DefaultConfig()
	p, err := NewRouted(cfg, textBuilder{}, []Target{
		{Name: "small", Backend: &scriptBackend{text: "x"}, Admission: cfg.Admission, Models: []string{"m"}},
		{Name: "big", Backend: &scriptBackend{text: "x"}, Admission: cfg.Admission, Models: []string{"big"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, model := range []string{"m", "big"} {
		for f := range 4 {
			r := fileReq("r", fmt.Sprintf("f%d.py", f))
			r.Model = model
			want := map[string]string{"m": "small", "big": "big"}[model]
			if got := served(t, p, r); got != want {
				t.Fatalf("model %s served by %s", model, got)
			}
		}
	}
	r := fileReq("r", "a.py")
	r.Model = "other"
	if _, err := p.Complete(context.Background(), r, Stream{}); Classify(err).Kind != KindNotFound {
		t.Fatalf("unknown model: %v", err)
	}
}

// A prompt built for the first backend's context skips a backend whose
// context is too small for it.
type smallCtx struct{ scriptBackend }

func (*smallCtx) ContextTokens(string) int { return 12 }

func TestSkipsBackendTooSmall(t *testing.T) {
	big := &scriptBackend{text: "x", release: make(chan struct{})}
	small := &smallCtx{scriptBackend{text: "y"}}
	adm := DefaultAdmissionConfig()
	adm.QueueLength = 0
	p := newRouted(t, RouteAffinity, adm, big, small)
	r := firstOnB0()
	done := make(chan error, 1)
	go func() { _, err := p.Complete(context.Background(), r, Stream{}); done <- err }()
	waitFor(t, "b0's slot taken", func() bool { return big.calls.Load() == 1 })
	// b0 is full; b1's context (12) cannot hold the prompt (10) and 16
	// tokens to generate.
	_, err := p.Complete(context.Background(), fileReq("r", r.Context.Cursor.Path), Stream{})
	if Classify(err).Kind != KindResourceExhausted || small.calls.Load() != 0 {
		t.Fatalf("err %v, %d calls at b1", err, small.calls.Load())
	}
	close(big.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := NewRouted(DefaultConfig(), textBuilder{}, []Target{{Name: "a", Backend: big}, {Name: "a", Backend: small}}, nil); err == nil {
		t.Fatal("repeated names accepted")
	}
	if _, err := NewRouted(DefaultConfig(), textBuilder{}, []Target{{Name: "a", Backend: big, Admission: AdmissionConfig{Slots: -1}}}, nil); err == nil {
		t.Fatal("bad admission accepted")
	}
}

// Bounded loads: with every slot of its first choice taken, a request
// waits there only while that backend holds less than LoadBound times
// its share of the load; beyond, it goes to the next backend (which has
// room). With the bound off it waits at its first choice.
func TestLoadBound(t *testing.T) {
	for _, bound := range []float64{1.25, 0} {
		b0 := &scriptBackend{text: "x", release: make(chan struct{})}
		b1 := &scriptBackend{text: "y", release: make(chan struct{})}
		cfg := DefaultConfig()
		cfg.LoadBound = bound
		adm := DefaultAdmissionConfig() // one slot each, a queue of 64
		p, err := NewRouted(cfg, textBuilder{}, []Target{{Name: "b0", Backend: b0, Admission: adm}, {Name: "b1", Backend: b1, Admission: adm}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := firstOnB0()
		results := make(chan *Result, 3)
		send := func() {
			go func() {
				res, err := p.Complete(context.Background(), fileReq("r", r.Context.Cursor.Path), Stream{})
				if err != nil {
					t.Error(err)
				}
				results <- res
			}()
		}
		send()
		waitFor(t, "b0's slot taken", func() bool { return b0.calls.Load() == 1 })
		send() // load 1 of b0's bound ceil(1.25 * 1 * 2/2) = 2: it waits at b0
		waitFor(t, "one queued at b0", func() bool { _, q := p.targets[0].gate.stats(); return q[Interactive] == 1 })
		send() // load 2 of ceil(1.25 * 1 * 3/2) = 2: over, to b1
		if bound > 0 {
			waitFor(t, "the third at b1", func() bool { return b1.calls.Load() == 1 })
		} else {
			waitFor(t, "two queued at b0", func() bool { _, q := p.targets[0].gate.stats(); return q[Interactive] == 2 })
		}
		close(b0.release)
		close(b1.release)
		by := map[string]int{}
		for range 3 {
			by[(<-results).Backend]++
		}
		p.Close()
		if bound > 0 && (by["b0"] != 2 || by["b1"] != 1 || p.Stats().Backends[0].SpilledLoad != 1) {
			t.Errorf("bound %v: served %v, stats %+v", bound, by, p.Stats().Backends[0])
		}
		if bound == 0 && by["b0"] != 3 {
			t.Errorf("bound off: served %v", by)
		}
	}
	if err := (Config{MaxFiles: 1, MaxIDBytes: 1, MaxSessions: 1, Admission: DefaultAdmissionConfig(), LoadBound: 0.5}).Validate(); err == nil {
		t.Error("LoadBound 0.5 accepted")
	}
}

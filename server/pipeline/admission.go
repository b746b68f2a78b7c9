package pipeline

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// AdmissionConfig bounds the generations sent to the backend.
type AdmissionConfig struct {
	// Slots is the number of generations in flight at the backend: its
	// parallelism (Ollama's OLLAMA_NUM_PARALLEL, 1 by default). More would
	// wait in the backend's own queue, where infill can neither order nor
	// shed them, and where cancelling them wedges Ollama v0.24.0.
	Slots int
	// QueueLength bounds the requests waiting per class; a request beyond
	// it is refused at once.
	QueueLength int
	// EvalShare guarantees evaluation traffic one start in every EvalShare
	// while both classes wait, so an editor goes first but a benchmark
	// is never starved.
	EvalShare int
	// MaxHold caps how long a request abandoned while the backend was still
	// evaluating its prompt keeps its slot (the backend finishes that
	// evaluation whatever the client does; a probe tells when it is over).
	MaxHold time.Duration
	// BurstWait holds back a request that superseded its session's request
	// still in flight (the user is typing faster than completions come)
	// while the backend has no free slot: it waits this long before it
	// queues, so that a burst of keystrokes costs the backend its last one
	// only, and the slots go to the pauses. 0: never.
	BurstWait time.Duration
}

// DefaultAdmissionConfig returns the defaults for one local Ollama.
func DefaultAdmissionConfig() AdmissionConfig {
	return AdmissionConfig{Slots: 1, QueueLength: 64, EvalShare: 4, MaxHold: 10 * time.Second, BurstWait: 100 * time.Millisecond}
}

// Validate reports a configuration that cannot work.
func (c AdmissionConfig) Validate() error {
	if c.Slots < 0 || c.QueueLength < 0 || c.EvalShare < 1 || c.MaxHold < 0 || c.BurstWait < 0 {
		return fmt.Errorf("pipeline: admission needs Slots >= 0, QueueLength >= 0, EvalShare >= 1, MaxHold >= 0, BurstWait >= 0 (got %+v)", c)
	}
	return nil
}

// OverloadError refuses a request that cannot start in time, or finds its
// queue full: the caller should retry after RetryAfter.
type OverloadError struct {
	Reason     string
	RetryAfter time.Duration
	// waited: the request waited in the queue until it could no longer
	// start in time (not refused at once: another backend is no help).
	waited bool
}

func (e *OverloadError) Error() string { return "overloaded: " + e.Reason }

// ErrOverloaded matches every *OverloadError with errors.Is.
var ErrOverloaded = errors.New("overloaded")

// Is makes errors.Is(err, ErrOverloaded) true.
func (e *OverloadError) Is(target error) bool { return target == ErrOverloaded }

// gate admits generations to one backend: at most Slots at once, waiting
// requests ordered by class and then deadline. Its estimates (how long a
// slot is held, how long the backend takes to the first token) are
// exponentially weighted averages of what it measured.
type gate struct {
	cfg AdmissionConfig
	now func() time.Time

	mu      sync.Mutex
	running int
	queues  [2]waitQueue // by Class
	seq     uint64
	// evalSkipped counts interactive starts since evaluation last started
	// while evaluation waited.
	evalSkipped int
	hold, ttft  ewma
	// held counts, per session key, the slots its requests hold: the
	// session's past, since a new request of a session supersedes the one
	// before (see acquire).
	held map[string]int
}

func newGate(cfg AdmissionConfig) *gate {
	return &gate{cfg: cfg, now: time.Now, held: map[string]int{},
		hold: ewma{value: 500 * time.Millisecond}, ttft: ewma{value: 200 * time.Millisecond}}
}

// ticket is one admitted request's slot.
type ticket struct {
	g       *gate
	granted time.Time
	first   time.Duration // time to the first token after the grant; 0 before it
	once    sync.Once
	session string // the session key of the request it was granted to; "" none
}

// waiter is a queued request.
type waiter struct {
	class    Class
	deadline time.Time // latest start; zero: none
	seq      uint64
	index    int // in its queue's heap; -1 once out of it
	session  string
	ready    chan *ticket
}

// acquire waits for a slot for a request of session (its key; "" none).
// latest is the latest useful start (zero: none): a request that the
// measured queue cannot start by then is refused at once, and one still
// waiting then is refused then.
//
// Except when what is ahead is the session's own past: nothing else waits
// and a slot is held by this session's earlier request, which this one
// superseded (latest wins): usually the probe of that keystroke abandoned
// before its first token, whose prompt the backend is still evaluating. The estimate (half a measured hold) says nothing about
// that evaluation, which shares its head with this request's prompt and
// fills the cache this request needs; refusing there would shed every
// keystroke of a lone typist on a slow backend (measured: text at 7% of
// pauses, against 68% without admission). Such a request waits, and is
// refused only if its latest start comes first.
func (g *gate) acquire(ctx context.Context, class Class, latest time.Time, session string) (*ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	now := g.now()
	if g.cfg.Slots == 0 { // admission off: count only (nobody waits, so no session's past either)
		g.running++
		g.mu.Unlock()
		return &ticket{g: g, granted: now}, nil
	}
	idle := g.queues[Interactive].Len() == 0 && g.queues[Evaluation].Len() == 0
	if g.running < g.cfg.Slots && idle {
		g.grantedLocked(session)
		g.mu.Unlock()
		return &ticket{g: g, granted: now, session: session}, nil
	}
	ownPast := idle && session != "" && g.held[session] > 0
	wait := g.estimateLocked(class, latest)
	if q := &g.queues[class]; q.Len() >= g.cfg.QueueLength {
		g.mu.Unlock()
		return nil, &OverloadError{Reason: fmt.Sprintf("%d %s requests already waiting", g.cfg.QueueLength, class), RetryAfter: wait}
	}
	if !latest.IsZero() && now.Add(wait).After(latest) && !ownPast {
		g.mu.Unlock()
		return nil, &OverloadError{Reason: fmt.Sprintf("the backend cannot start it before its deadline (expected wait %v)",
			wait.Round(time.Millisecond)), RetryAfter: wait}
	}
	g.seq++
	w := &waiter{class: class, deadline: latest, seq: g.seq, session: session, ready: make(chan *ticket, 1)}
	heap.Push(&g.queues[class], w)
	g.mu.Unlock()

	var expired <-chan time.Time
	if !latest.IsZero() {
		t := time.NewTimer(latest.Sub(now))
		defer t.Stop()
		expired = t.C
	}
	select {
	case t := <-w.ready:
		return t, nil
	case <-ctx.Done():
		if t := g.leave(w); t != nil {
			t.release(false) // granted as it gave up: pass the slot on
		}
		return nil, ctx.Err()
	case <-expired:
		if t := g.leave(w); t != nil {
			return t, nil // granted just in time
		}
		return nil, &OverloadError{Reason: "it could not start before its deadline", RetryAfter: g.estimate(class), waited: true}
	}
}

// leave takes w out of its queue; when it was granted meanwhile, it
// returns the ticket.
func (g *gate) leave(w *waiter) *ticket {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.index >= 0 {
		heap.Remove(&g.queues[w.class], w.index)
		return nil
	}
	return <-w.ready
}

// contended says whether a new request would have to wait: admission is
// on, and every slot is taken or someone waits.
func (g *gate) contended() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg.Slots > 0 && (g.running >= g.cfg.Slots || g.queues[Interactive].Len()+g.queues[Evaluation].Len() > 0)
}

// estimate is the wait a new request of class would have now.
func (g *gate) estimate(class Class) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.estimateLocked(class, time.Time{})
}

// estimateLocked is the expected wait of a new request of class with
// latest start latest, from the measured hold time of a slot: half a hold
// until the first slot frees (on average), then a hold for each further
// round of Slots requests that would start before it.
func (g *gate) estimateLocked(class Class, latest time.Time) time.Duration {
	if g.running < g.cfg.Slots && g.queues[Interactive].Len()+g.queues[Evaluation].Len() == 0 {
		return 0
	}
	ahead := 0
	for _, w := range g.queues[class].ws {
		if latest.IsZero() || (!w.deadline.IsZero() && !w.deadline.After(latest)) {
			ahead++
		}
	}
	if class == Evaluation {
		ahead += g.queues[Interactive].Len()
	}
	hold := g.hold.get()
	return hold/2 + time.Duration(ahead/max(g.cfg.Slots, 1))*hold
}

// firstToken records the time from the grant to the first token.
func (t *ticket) firstToken() {
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	if t.first == 0 {
		t.first = max(t.g.now().Sub(t.granted), time.Nanosecond)
		t.g.ttft.add(t.first)
	}
}

// grantedLocked counts a slot taken by a request of session.
func (g *gate) grantedLocked(session string) {
	g.running++
	if session != "" {
		g.held[session]++
	}
}

// expectedTTFT is the measured time from a grant to the first token.
func (g *gate) expectedTTFT() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ttft.get()
}

// release gives the slot back. measured says whether the hold time is a
// sample of a generation's (not of a request that gave up at once).
func (t *ticket) release(measured bool) {
	t.once.Do(func() {
		g := t.g
		g.mu.Lock()
		defer g.mu.Unlock()
		if measured {
			g.hold.add(g.now().Sub(t.granted))
		}
		if t.session != "" {
			if g.held[t.session]--; g.held[t.session] <= 0 {
				delete(g.held, t.session)
			}
		}
		g.running--
		g.grantLocked()
	})
}

// grantLocked hands free slots to waiters: interactive first, except that
// evaluation gets one start in every EvalShare while both wait.
func (g *gate) grantLocked() {
	for g.cfg.Slots > 0 && g.running < g.cfg.Slots {
		qi, qe := &g.queues[Interactive], &g.queues[Evaluation]
		var q *waitQueue
		switch {
		case qi.Len() > 0 && qe.Len() > 0:
			if g.evalSkipped >= g.cfg.EvalShare-1 {
				q, g.evalSkipped = qe, 0
			} else {
				q = qi
				g.evalSkipped++
			}
		case qi.Len() > 0:
			q = qi
		case qe.Len() > 0:
			q, g.evalSkipped = qe, 0
		default:
			return
		}
		w := heap.Pop(q).(*waiter)
		g.grantedLocked(w.session)
		w.ready <- &ticket{g: g, granted: g.now(), session: w.session}
	}
}

// load reports the generations under way and requests waiting (both
// classes), and the slots.
func (g *gate) load() (load, slots int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running + g.queues[0].Len() + g.queues[1].Len(), g.cfg.Slots
}

// stats reports slots in use and requests waiting per class.
func (g *gate) stats() (running int, queued [2]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, [2]int{g.queues[0].Len(), g.queues[1].Len()}
}

// waitQueue is a heap of waiters: earliest latest start first, no
// deadline last, then arrival order.
type waitQueue struct{ ws []*waiter }

func (q *waitQueue) Len() int { return len(q.ws) }
func (q *waitQueue) Less(i, j int) bool {
	a, b := q.ws[i], q.ws[j]
	switch {
	case a.deadline.IsZero() != b.deadline.IsZero():
		return !a.deadline.IsZero()
	case !a.deadline.Equal(b.deadline):
		return a.deadline.Before(b.deadline)
	}
	return a.seq < b.seq
}
func (q *waitQueue) Swap(i, j int) {
	q.ws[i], q.ws[j] = q.ws[j], q.ws[i]
	q.ws[i].index, q.ws[j].index = i, j
}
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.index = len(q.ws)
	q.ws = append(q.ws, w)
}
func (q *waitQueue) Pop() any {
	n := len(q.ws) - 1
	w := q.ws[n]
	q.ws[n], q.ws = nil, q.ws[:n]
	w.index = -1
	return w
}

// ewma is an exponentially weighted moving average of durations, starting
// from a prior (its zero-sample value). The first sample gets the same
// weight as every later one: it is often the coldest (the model loading,
// an empty cache), and taken whole it pushed the expected time to a first
// token past a 1 s latency budget, so that every request that had to wait
// was refused until faster samples came, which only started requests give.
type ewma struct {
	value time.Duration
}

func (e *ewma) add(d time.Duration) {
	const alpha = 0.2
	e.value = time.Duration(alpha*float64(d) + (1-alpha)*float64(e.value))
}

func (e *ewma) get() time.Duration { return e.value }

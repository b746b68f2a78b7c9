package inference

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// WatchdogConfig bounds a generation the backend stops answering. Ollama
// sends its response headers with the first token, so the first-token bound
// is also the response-header bound of a generation.
//
// The defaults leave a real model room. Measured with the tiny test model
// on the 2-core machine shared with other work (bench/storm -prompt-eval,
// REPORT.md): a first token after 0.1-1 s for a short prompt once loaded; a
// model load of 7-8 s under load; prompt evaluation from 1,200 tokens/s (139
// tokens) down to 160/s (2,600 tokens) and 63/s (4,096 tokens: 65 s) at a
// load average of 16. A real Qwen2.5-Coder 1.5B on a GPU evaluates
// thousands of tokens per second; on a laptop CPU a few hundred, less for
// long prompts, and a 7B there can drop to 20-50: set PromptTokensPerSecond
// below the slowest rate the backend shows for the longest prompts it gets.
// A bound that is too tight ends honest generations with ErrUnavailable and
// makes the server's health restart the model's runner.
type WatchdogConfig struct {
	// FirstTokenBase is the first-token bound of an empty prompt: it
	// covers connecting, loading the model when it is not loaded (Ollama
	// loads on demand and reloads after KeepAlive) and the ~100 ms every
	// request spends re-reading the model's metadata.
	FirstTokenBase time.Duration
	// PromptTokensPerSecond is the slowest prompt evaluation the bound
	// allows: each prompt token adds 1/PromptTokensPerSecond seconds.
	PromptTokensPerSecond float64
	// TokenGap ends a generation that has had no message from the backend
	// for this long after its first token.
	TokenGap time.Duration
	// LoadAllowance is added to the first-token bound of a request for a
	// model the backend has not answered for within the keep-alive (or
	// ever): Ollama loads a model on demand, and a load on a busy machine
	// took 7 s for the tiny model here; a real model from disk takes
	// longer. A wedge needs traffic, so it never meets this allowance.
	LoadAllowance time.Duration
	// ResponseHeaderTimeout bounds the backend's answer to the calls that
	// are not generations (version, model info).
	ResponseHeaderTimeout time.Duration
}

// DefaultWatchdogConfig returns the defaults described on WatchdogConfig.
func DefaultWatchdogConfig() WatchdogConfig {
	return WatchdogConfig{
		FirstTokenBase:        15 * time.Second,
		PromptTokensPerSecond: 50,
		TokenGap:              10 * time.Second,
		LoadAllowance:         time.Minute,
		ResponseHeaderTimeout: 10 * time.Second,
	}
}

// Validate reports bounds that cannot work.
func (c WatchdogConfig) Validate() error {
	if c.FirstTokenBase <= 0 || c.TokenGap <= 0 || c.ResponseHeaderTimeout <= 0 {
		return errors.New("inference: Watchdog FirstTokenBase, TokenGap and ResponseHeaderTimeout must be > 0")
	}
	if c.LoadAllowance < 0 {
		return errors.New("inference: Watchdog LoadAllowance must be >= 0")
	}
	if !(c.PromptTokensPerSecond > 0) { // also NaN
		return fmt.Errorf("inference: Watchdog PromptTokensPerSecond %v must be > 0", c.PromptTokensPerSecond)
	}
	return nil
}

// FirstToken is the first-token bound of a prompt of n tokens.
func (c WatchdogConfig) FirstToken(n int) time.Duration {
	return c.FirstTokenBase + time.Duration(float64(n)/c.PromptTokensPerSecond*float64(time.Second))
}

// StallError is ErrUnavailable for a generation the watchdog ended: the
// backend sent nothing for it for Waited.
type StallError struct {
	// Model the generation was for (a wedge is its runner's).
	Model string
	// Tokens received before the stall; 0 means no first token.
	Tokens int
	Waited time.Duration
}

func (e *StallError) Error() string {
	waited := e.Waited.Round(100 * time.Millisecond)
	if e.Tokens > 0 {
		return fmt.Sprintf("backend stalled: no token for %s after %d", waited, e.Tokens)
	}
	return fmt.Sprintf("backend stalled: no first token for %s", waited)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *StallError) Is(target error) bool { return target == ErrUnavailable }

// Activity is what generations have seen of the backend, for a health check
// that must not add load while generations are answered and must notice
// when they are not (see Ollama.Activity).
type Activity struct {
	// LastProgress is the last time the backend sent a message for any
	// generation or Probe; zero if never.
	LastProgress time.Time
	// Unanswered is when a generation last ended (cancelled or failed)
	// without a single message from the backend, if that happened after
	// LastProgress; zero otherwise. A backend that stopped answering while
	// its clients gave up early shows here and nowhere else.
	Unanswered time.Time
	// InFlight is the number of generations under way.
	InFlight int
	// Stalled is the watchdog's verdict (a *StallError): a generation went
	// past its bound while nothing progressed and no generation sent
	// before it was still within its own. Nil again once the backend sends
	// anything.
	Stalled error
	// Unreachable is when a generation last failed to connect to the
	// backend (ErrNotSent), if that happened after LastProgress; zero
	// otherwise. Unlike a generation that went unanswered, this is no
	// sign of a busy backend: nothing listens there.
	Unreachable time.Time
}

// tracker keeps the backend's Activity and the watchdogs' bounds. Every
// message from the backend touches it (an atomic store); generations
// register once each.
type tracker struct {
	lastProgress atomic.Int64 // unix ns
	unanswered   atomic.Int64 // unix ns
	stalled      atomic.Pointer[StallError]
	unreachable  atomic.Int64 // unix ns
	unloading    atomic.Int32 // Reload calls under way
	models       sync.Map     // model name → *atomic.Int64, its last answer (unix ns)

	mu   sync.Mutex
	gens map[*watch]struct{}
}

// model returns the last-answer time of model.
func (t *tracker) model(name string) *atomic.Int64 {
	if v, ok := t.models.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := t.models.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// cold reports whether the backend has not answered for model within
// keepAlive (or ever), so that it may have to load it first.
func (t *tracker) cold(model string, keepAlive time.Duration, now time.Time) bool {
	ns := t.model(model).Load()
	return ns == 0 || now.Sub(time.Unix(0, ns)) >= keepAlive
}

func (t *tracker) progress(now time.Time) {
	t.lastProgress.Store(now.UnixNano())
	if t.stalled.Load() != nil {
		t.stalled.Store(nil)
	}
}

func (t *tracker) activity() Activity {
	a := Activity{}
	if ns := t.lastProgress.Load(); ns != 0 {
		a.LastProgress = time.Unix(0, ns)
	}
	if ns := t.unanswered.Load(); ns != 0 && ns > t.lastProgress.Load() {
		a.Unanswered = time.Unix(0, ns)
	}
	if s := t.stalled.Load(); s != nil {
		a.Stalled = s
	}
	if ns := t.unreachable.Load(); ns != 0 && ns > t.lastProgress.Load() {
		a.Unreachable = time.Unix(0, ns)
	}
	t.mu.Lock()
	a.InFlight = len(t.gens)
	t.mu.Unlock()
	return a
}

// watch is one backend request's watchdog (nil: none): a timer that ends
// the request when its bound passes, paused while the caller's callback
// runs (a slow client is not a stalled backend).
//
// A request still waiting for its first token when its bound passes waits
// on if the backend is busy: it answered some generation within the last
// bound, or a generation sent earlier is still within its own bound (a long
// prompt under evaluation). The request is then waiting its turn behind
// live work (Ollama queues what it cannot run at once), which is for
// admission to bound, not a stall; it is ended once the backend has been
// silent for a bound. A request that stops after its first token is ended
// whatever the others do.
type watch struct {
	t           *tracker
	cfg         WatchdogConfig
	model       string
	modelAnswer *atomic.Int64 // the model's last answer
	cancel      func()
	registered  time.Time

	mu       sync.Mutex
	timer    *time.Timer
	bound    time.Duration // the current bound: first token, then TokenGap
	since    time.Time     // when the current wait began
	armed    time.Time     // when the deadline was last set
	deadline time.Time     // zero while paused
	tokens   int
	answered bool
	stopped  bool
	fired    *StallError
}

// start registers a watchdog for a request of promptTokens and arms it;
// cancel ends the request, cold adds the load allowance. Call stop when the
// request is over.
func (t *tracker) start(cfg WatchdogConfig, model string, promptTokens int, cold bool, cancel func()) *watch {
	now := time.Now()
	w := &watch{t: t, cfg: cfg, model: model, modelAnswer: t.model(model), cancel: cancel, registered: now,
		bound: cfg.FirstToken(promptTokens), since: now, armed: now}
	if cold {
		w.bound += cfg.LoadAllowance
	}
	w.deadline = now.Add(w.bound)
	t.mu.Lock()
	if t.gens == nil {
		t.gens = map[*watch]struct{}{}
	}
	t.gens[w] = struct{}{}
	t.mu.Unlock()
	w.mu.Lock()
	w.timer = time.AfterFunc(w.bound, w.fire)
	w.mu.Unlock()
	return w
}

// answer records that the backend answered the request (its response
// headers) without changing the bound: Ollama sends them with the first
// token, another server may send them at once.
func (w *watch) answer() {
	if w == nil {
		return
	}
	w.heard()
	w.mu.Unlock()
}

// heard records that the backend answered now and locks w.
func (w *watch) heard() {
	now := time.Now()
	w.t.progress(now)
	w.modelAnswer.Store(now.UnixNano())
	w.mu.Lock()
	w.answered = true
}

// message records a message from the backend (token says whether it
// carried text) and pauses the watchdog until resume.
func (w *watch) message(token bool) {
	if w == nil {
		return
	}
	w.heard()
	if token {
		w.tokens++
	}
	w.timer.Stop()
	w.deadline = time.Time{}
	w.mu.Unlock()
}

// resume re-arms the watchdog for the next message after the caller has
// handled one: TokenGap once a token came; before that (a blank line or a
// message without text) the first-token bound goes on from where it was.
func (w *watch) resume() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil || w.stopped {
		return
	}
	now := time.Now()
	if w.tokens > 0 {
		w.bound, w.since = w.cfg.TokenGap, now
	}
	w.armed = now
	left := w.bound - now.Sub(w.since)
	if w.tokens > 0 || left <= 0 {
		left = w.bound
	}
	w.deadline = now.Add(left)
	w.timer.Reset(left)
}

func (w *watch) fire() {
	now := time.Now()
	w.mu.Lock()
	if w.deadline.IsZero() || now.Before(w.deadline) || w.fired != nil {
		w.mu.Unlock() // paused or re-armed meanwhile
		return
	}
	tokens, since, bound := w.tokens, w.since, w.bound
	w.mu.Unlock()

	until := w.t.busyUntil(w, bound, now)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline.IsZero() || w.fired != nil {
		return // a message came meanwhile
	}
	if !until.IsZero() && tokens == 0 {
		w.armed, w.deadline = now, until
		w.timer.Reset(until.Sub(now))
		return
	}
	w.fired = &StallError{Model: w.model, Tokens: tokens, Waited: now.Sub(since)}
	if until.IsZero() {
		w.t.stalled.Store(w.fired)
	}
	w.cancel()
}

// busyUntil reports until when the backend counts as busy for w (zero: it
// is not): it answered some generation within the last bound (busy until
// that answer is a bound old), or a generation sent before w is still
// within its own bound (busy until that one's deadline). Generations sent
// after w do not count: under steady load on a wedged backend there is
// always a newer one within its bound.
func (t *tracker) busyUntil(w *watch, bound time.Duration, now time.Time) time.Time {
	var until time.Time
	if ns := t.lastProgress.Load(); ns != 0 {
		if u := time.Unix(0, ns).Add(bound); u.After(now) {
			until = u
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for o := range t.gens {
		if o == w || !o.registered.Before(w.registered) {
			continue
		}
		o.mu.Lock()
		if d := o.deadline; !d.IsZero() && d.After(now) && d.After(until) {
			until = d
		}
		o.mu.Unlock()
	}
	return until
}

// stop disarms the watchdog and returns its verdict (nil if it did not
// fire). Calls after the first only return the verdict.
func (w *watch) stop() *StallError {
	w.mu.Lock()
	w.timer.Stop()
	w.deadline = time.Time{}
	fired, answered, stopped := w.fired, w.answered, w.stopped
	w.stopped = true
	w.mu.Unlock()
	if stopped {
		return fired
	}
	w.t.mu.Lock()
	delete(w.t.gens, w)
	w.t.mu.Unlock()
	if !answered {
		w.t.unanswered.Store(time.Now().UnixNano())
	}
	return fired
}

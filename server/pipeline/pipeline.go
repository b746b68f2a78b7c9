// Package pipeline owns what one completion does, whatever transport it came
// in on: validate the request, build the prompt (contextpack), generate
// (inference) and return the result, or stream it through callbacks. The gRPC
// handlers and every HTTP dialect are thin adapters over Pipeline.Complete:
// they decode into a Request, call it, map its errors with Classify and encode
// the Result. Work that must reach every surface (admission, latest-wins,
// metrics, several backends) belongs here.
//
// The package imports no transport: no grpc, no net/http, no status codes.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/internal/logctx"
	"go.uber.org/zap"
)

// Builder assembles prompts (contextpack.Builder).
type Builder interface {
	Build(ctx context.Context, req contextpack.Request) (*contextpack.Prompt, error)
}

// Backend generates completions (inference.Ollama).
type Backend interface {
	Generate(ctx context.Context, req inference.Request, onDelta inference.DeltaFunc) (*inference.Result, error)
	Model(name string) string
	ContextTokens(model string) int
	MaxTokens(n int) int
	// CheckOptions reports generation options out of range
	// (*inference.OptionError) before any work is done for a request.
	CheckOptions(req *inference.Request) error
}

// Config bounds what one request may ask for and how many run at once.
type Config struct {
	// MaxFiles caps files per request.
	MaxFiles int
	// MaxIDBytes bounds client and session ids, which every call logs.
	MaxIDBytes int
	// MaxSessions bounds the sessions whose last completion is kept for
	// typed-through reuse.
	MaxSessions int
	// Admission bounds the generations sent to the backend New is given,
	// and the requests waiting for it (NewRouted's targets bring their
	// own).
	Admission AdmissionConfig
	// Routing orders the backends a request may go to.
	Routing Routing
	// LoadBound passes over a backend whose slots are all taken once its
	// load (generations and requests waiting for it) reaches LoadBound
	// times its share of the load of all the backends, by slots
	// (consistent hashing with bounded loads, Mirrokni, Thorup and
	// Zadimoghaddam 2018); the request goes to the next backend in its
	// order. 0: a backend is passed over only when its admission refuses
	// at once (slots and queue full).
	LoadBound float64
	// Edit configures edit prediction (PredictEdit).
	Edit EditConfig
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxFiles: 20000, MaxIDBytes: 256, MaxSessions: 4096, Admission: DefaultAdmissionConfig(), LoadBound: 1.25,
		Edit: DefaultEditConfig()}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxFiles < 1 || c.MaxIDBytes < 1 || c.MaxSessions < 1 {
		return fmt.Errorf("pipeline: MaxFiles (%d), MaxIDBytes (%d) and MaxSessions (%d) must be >= 1",
			c.MaxFiles, c.MaxIDBytes, c.MaxSessions)
	}
	if c.Routing != RouteAffinity && c.Routing != RouteRoundRobin {
		return fmt.Errorf("pipeline: unknown routing %d", c.Routing)
	}
	if !(c.LoadBound == 0 || c.LoadBound >= 1) {
		return fmt.Errorf("pipeline: LoadBound %v: want 0 (off) or at least 1", c.LoadBound)
	}
	if err := c.Edit.Validate(); err != nil {
		return err
	}
	return c.Admission.Validate()
}

// Class is the kind of traffic a request belongs to.
type Class int

// Traffic classes.
const (
	// Interactive: an editor waiting on a keystroke.
	Interactive Class = iota
	// Evaluation: a benchmark or harness run.
	Evaluation
)

func (c Class) String() string {
	if c == Evaluation {
		return "evaluation"
	}
	return "interactive"
}

// Generation holds the generation options of a request; nil pointers mean
// the backend's defaults.
type Generation struct {
	// MaxTokens per candidate; 0 means the server's default.
	MaxTokens   int
	Temperature *float32
	TopP        *float32
	TopK        *int
	Seed        *int64
	// Stop strings on top of the model's stop set.
	Stop []string
	// Candidates to make; 0 means 1.
	Candidates int
	// WarmOnly evaluates the prompt into the backend's cache and generates
	// nothing (llama.cpp server's n_predict 0: editors send it to warm the
	// cache with new cross-file context before the user's next keystroke).
	WarmOnly bool
	// MinIndent ends generation at the first line after the first that is
	// indented less (llama.cpp server's n_indent; inference.Request).
	MinIndent int
	// LineBudget ends generation at the first newline once this long has
	// passed since the first text (llama.cpp server's t_max_predict_ms:
	// unlike LatencyBudget the first line is always whole); 0: none.
	LineBudget time.Duration
}

// Request is one completion request, as every surface decodes it.
type Request struct {
	// Repository and cursor, as contextpack takes them (TokenBudget and
	// MaxNewTokens are set by the pipeline).
	Context contextpack.Request
	// TokenBudget caps prompt plus generation below the model's context; 0
	// means the model's context.
	TokenBudget int
	Generation  Generation
	// Model names the backend model; "" means the server's default.
	Model string
	// ClientID and SessionID identify the caller (logged, never code).
	ClientID, SessionID string
	// LatencyBudget, when set, ends generation after that long from the
	// start of the call and returns the partial text (not an error).
	LatencyBudget *time.Duration
	// Class is the traffic class.
	Class Class
	// Surface names the transport and dialect ("grpc", "llama.cpp", ...) for
	// logs.
	Surface string

	// prompt, when set, builds the prompt instead of the Builder: an edit
	// prediction's (PredictEdit), which has its own session key and no
	// typed-through.
	prompt func(ctx context.Context, req contextpack.Request) (*contextpack.Prompt, error)
}

// Start is what is known once the prompt is built, before any text.
type Start struct {
	RequestID string
	Model     string
	Manifest  contextpack.Manifest
	Snapshot  string
	Assembly  time.Duration
}

// Stream receives a completion as it happens; either func may be nil. An
// error from either ends the call with that error.
type Stream struct {
	OnStart func(Start) error
	// OnDelta receives generated text of a candidate as it arrives.
	OnDelta func(candidate int, text string) error
}

// Result is a finished completion.
type Result struct {
	RequestID  string
	Model      string
	Candidates []inference.Candidate
	// PromptTokens is what the backend reported evaluating;
	// PlannedPromptTokens is infill's exact count of the prompt.
	PromptTokens        int
	PlannedPromptTokens int
	CompletionTokens    int
	// Manifest says what went into the prompt, with a warning when the
	// backend's count disagreed with the plan.
	Manifest contextpack.Manifest
	// Snapshot names the request's whole file list (a later base).
	Snapshot string
	// CachedPromptTokens is what the backend reported reusing from its
	// prompt cache (0 where it does not say).
	CachedPromptTokens int
	// Backend names the backend that generated it ("" when Reused).
	Backend string
	// Reused says the text is the rest of the session's previous
	// completion, which the user typed the start of: no backend call.
	Reused bool
	// QueueWait is how long the request waited for a backend slot.
	Assembly, QueueWait, TimeToFirstToken, Total, PromptEval time.Duration
}

// Pipeline runs completions. Safe for concurrent use.
type Pipeline struct {
	cfg      Config
	builder  Builder
	targets  []*target
	rr       atomic.Uint64 // round-robin's turn
	log      *zap.Logger
	obs      Observer
	sessions *sessions
	inflight [2]atomic.Int64 // Complete calls under way, by Class

	// Probes of abandoned requests run in the background until Close.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgMu     sync.Mutex
	bg       sync.WaitGroup
	closed   bool
}

// Option adjusts New.
type Option func(*Pipeline)

// WithObserver has the pipeline tell obs what each completion did.
func WithObserver(obs Observer) Option { return func(p *Pipeline) { p.obs = obs } }

// DefaultTarget names the backend of a pipeline made by New.
const DefaultTarget = "default"

// New returns a pipeline over builder and one backend, admitted by
// cfg.Admission and named DefaultTarget; log may be nil.
func New(cfg Config, builder Builder, backend Backend, log *zap.Logger, opts ...Option) (*Pipeline, error) {
	if backend == nil {
		return nil, fmt.Errorf("pipeline: Builder and Backend are required")
	}
	return NewRouted(cfg, builder, []Target{{Name: DefaultTarget, Backend: backend, Admission: cfg.Admission}}, log, opts...)
}

// NewRouted returns a pipeline over builder and several backends, each
// with its own admission, among which requests are routed by
// cfg.Routing. The first target's backend decides what every target
// shares: the default model and the limits of generation options.
func NewRouted(cfg Config, builder Builder, targets []Target, log *zap.Logger, opts ...Option) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if builder == nil || len(targets) == 0 {
		return nil, fmt.Errorf("pipeline: Builder and Backend are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	p := &Pipeline{cfg: cfg, builder: builder, log: log, obs: nopObserver{}, sessions: newSessions(cfg.MaxSessions)}
	seen := map[string]bool{}
	for _, t := range targets {
		switch {
		case t.Backend == nil:
			return nil, fmt.Errorf("pipeline: backend %q is nil", t.Name)
		case t.Name == "" || seen[t.Name]:
			return nil, fmt.Errorf("pipeline: backend name %q is empty or repeated", t.Name)
		}
		if err := t.Admission.Validate(); err != nil {
			return nil, fmt.Errorf("backend %q: %w", t.Name, err)
		}
		seen[t.Name] = true
		p.targets = append(p.targets, &target{Target: t, gate: newGate(t.Admission)})
	}
	for _, o := range opts {
		o(p)
	}
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	p.bgCtx, p.bgCancel = context.WithCancel(context.Background())
	return p, nil
}

// Backend returns the first backend (the one New was given).
func (p *Pipeline) Backend() Backend { return p.targets[0].Backend }

// Complete runs one completion. With a Stream it reports the start and the
// text as it is generated. ctx carries the caller's cancellation into the
// backend: a cancelled ctx stops generation at once and returns ctx.Err().
//
// A request that names a session cancels the session's call still in
// flight (latest wins), and is answered without the backend when the user
// typed the start of the session's last completion (typed-through). Every
// other request waits for a backend slot (admission); one that cannot
// start before its deadline or latency budget is refused at once with an
// *OverloadError.
func (p *Pipeline) Complete(ctx context.Context, req *Request, st Stream) (*Result, error) {
	start := time.Now()
	class := req.Class
	if class != Evaluation {
		class = Interactive
	}
	p.inflight[class].Add(1)
	defer p.inflight[class].Add(-1)
	o := Outcome{Surface: req.Surface, Class: class}
	res, err := p.run(ctx, req, st, start, &o)
	o.Err, o.Cause, o.Shed, o.Total = err, cause(ctx, err, res), errors.Is(err, ErrOverloaded), time.Since(start)
	if res != nil {
		o.Reused, o.CompletionTokens = res.Reused, res.CompletionTokens
	}
	p.obs.Completed(o)
	return res, err
}

// run is Complete after the bookkeeping: o gets the stages reached.
func (p *Pipeline) run(ctx context.Context, req *Request, st Stream, start time.Time, o *Outcome) (*Result, error) {
	if err := p.validate(req); err != nil {
		return nil, err
	}
	key := sessionKey(req)
	burst := false
	if key != "" {
		var end func()
		ctx, end, burst = p.sessions.begin(ctx, key)
		defer end()
	}
	res, err := p.complete(ctx, req, st, key, burst, start, o)
	if err != nil && errors.Is(context.Cause(ctx), ErrSuperseded) && errors.Is(err, context.Canceled) {
		return nil, ErrSuperseded
	}
	return res, err
}

func (p *Pipeline) complete(ctx context.Context, req *Request, st Stream, key string, burst bool, start time.Time, o *Outcome) (*Result, error) {
	shared := p.targets[0].Backend // the default model and the option limits
	model := shared.Model(req.Model)
	g := req.Generation
	ireq := inference.Request{
		Model: model, MaxTokens: g.MaxTokens, Stop: g.Stop, Candidates: g.Candidates,
		Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, Seed: g.Seed,
		WarmOnly: g.WarmOnly, MinIndent: g.MinIndent, LineBudget: g.LineBudget,
	}
	if g.WarmOnly { // one token is generated (and dropped): reserve just that
		ireq.MaxTokens, ireq.Candidates = 1, 1
	}
	if err := shared.CheckOptions(&ireq); err != nil {
		return nil, err
	}
	order, first, err := p.route(req, model)
	if err != nil {
		return nil, err
	}
	// The prompt is built for the context of the backend tried first; one
	// it moves on to must hold it.
	maxTokens := order[0].Backend.MaxTokens(ireq.MaxTokens)
	budget := order[0].Backend.ContextTokens(model)
	if b := req.TokenBudget; b > 0 && b < budget {
		budget = b
	}
	creq := req.Context
	creq.TokenBudget, creq.MaxNewTokens = budget, maxTokens
	build := p.builder.Build
	if req.prompt != nil {
		build = req.prompt
	}
	prompt, err := build(ctx, creq)
	if err != nil {
		return nil, err
	}
	assembly := time.Since(start)
	o.Assembled, o.Assembly = true, assembly
	id := RequestID(ctx)
	logctx.Debug(ctx, p.log, "prompt", zap.Int("tokens", prompt.Tokens), zap.String("text", prompt.Text))
	if st.OnStart != nil {
		if err := st.OnStart(Start{RequestID: id, Model: model, Manifest: prompt.Manifest,
			Snapshot: prompt.Snapshot, Assembly: assembly}); err != nil {
			return nil, err
		}
	}
	single := ireq.Candidates <= 1
	if key != "" && single && req.prompt == nil {
		if e, rest, ok := p.sessions.typedThrough(key, model, prompt.Cursor); ok {
			return p.reuse(ctx, e, rest, prompt, st, assembly, start, o)
		}
	}
	if !first.routable() && first != order[0] {
		first.spilled[spillDown].Add(1)
	}

	var ttft time.Duration
	onDelta := func(i int, text string) error {
		if ttft == 0 {
			ttft = time.Since(start)
			o.TimeToFirstToken = ttft
		}
		if st.OnDelta == nil {
			return nil
		}
		return st.OnDelta(i, text)
	}
	ireq.Prompt, ireq.PromptTokens, ireq.MaxTokens = prompt.Text, prompt.Tokens, maxTokens
	// A keystroke that superseded one still in flight, while the backend
	// has no free slot: wait a moment before queueing. If the user types
	// on, the next keystroke supersedes this one before it costs a slot;
	// the last of the burst (a pause) goes on.
	if bw := p.cfg.Admission.BurstWait; burst && bw > 0 && req.Class != Evaluation && first.gate.contended() {
		t := time.NewTimer(bw)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	// Each backend in order: wait for one of its slots, unless its
	// admission refuses at once (bounded load: the next one gets the
	// request) or the request cannot reach it (the next one gets it: the
	// backend evaluated nothing).
	var refused, lastErr error
	var wait time.Duration
	// Bounded load: a backend over its share of the load is passed over
	// for now, and tried (without the bound) only when every other
	// refused.
	pending, bound := order, p.cfg.LoadBound > 0 && len(order) > 1
	var later []*target
	for {
		if len(pending) == 0 {
			if len(later) == 0 {
				break
			}
			pending, later, bound = later, nil, false
		}
		t := pending[0]
		pending = pending[1:]
		if bound && p.overBound(t, order) {
			later = append(later, t)
			if t == first {
				first.spilled[spillLoad].Add(1)
			}
			continue
		}
		if prompt.Tokens+maxTokens > t.Backend.ContextTokens(model) {
			lastErr = fmt.Errorf("%w: %d prompt tokens + %d to generate > num_ctx %d of backend %q",
				inference.ErrPromptTooLong, prompt.Tokens, maxTokens, t.Backend.ContextTokens(model), t.Name)
			continue
		}
		tk, w, err := p.admit(ctx, t, req, key, start)
		wait += w
		o.Queued, o.QueueWait = true, wait
		var ov *OverloadError
		if errors.As(err, &ov) && !ov.waited {
			if refused == nil || ov.RetryAfter < refused.(*OverloadError).RetryAfter {
				refused = ov
			}
			if t == first {
				first.spilled[spillFull].Add(1)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		ireq.Budget = 0
		if lb := req.LatencyBudget; lb != nil {
			if ireq.Budget = *lb - time.Since(start); ireq.Budget <= 0 {
				ireq.Budget = time.Nanosecond // spent already: return what there is
			}
		}
		res, err := p.generate(ctx, t, tk, ireq, onDelta, &ttft)
		if err != nil && ttft == 0 && ctx.Err() == nil && errors.Is(err, inference.ErrNotSent) {
			t.notSent.Add(1)
			if !errors.Is(err, inference.ErrRestarting) { // health knows of a restart
				t.unreachable.Store(time.Now().UnixNano())
			}
			if t == first {
				first.spilled[spillUnreachable].Add(1)
			}
			logctx.From(ctx, p.log).Warn("backend not reached, trying the next", zap.String("backend", t.Name), zap.Error(err))
			lastErr = err
			continue
		}
		if err != nil {
			return nil, err
		}
		return p.finish(req, key, model, prompt, res, t, id, assembly, wait, ttft, start, single), nil
	}
	if refused != nil {
		return nil, refused
	}
	return nil, lastErr
}

// admit waits for a slot of t. The latest useful start leaves the
// measured time to a first token before the deadline or the end of the
// latency budget.
func (p *Pipeline) admit(ctx context.Context, t *target, req *Request, key string, start time.Time) (*ticket, time.Duration, error) {
	var latest time.Time
	if d, ok := ctx.Deadline(); ok {
		latest = d
	}
	if lb := req.LatencyBudget; lb != nil && (latest.IsZero() || start.Add(*lb).Before(latest)) {
		latest = start.Add(*lb)
	}
	if !latest.IsZero() {
		latest = latest.Add(-t.gate.expectedTTFT())
	}
	queued := time.Now()
	tk, err := t.gate.acquire(ctx, req.Class, latest, key)
	return tk, time.Since(queued), err
}

// generate runs ireq on t with the slot tk and gives the slot back.
func (p *Pipeline) generate(ctx context.Context, t *target, tk *ticket, ireq inference.Request,
	onDelta inference.DeltaFunc, ttft *time.Duration) (*inference.Result, error) {
	done := false
	defer func() {
		if !done { // Generate panicked: the slot must not leak with it
			tk.release(false)
		}
	}()
	first := true
	res, err := t.Backend.Generate(ctx, ireq, func(i int, text string) error {
		if first {
			first = false
			tk.firstToken()
		}
		return onDelta(i, text)
	})
	done = true
	switch {
	case err == nil:
		t.ok.Add(1)
	case ctx.Err() != nil:
		t.cancelled.Add(1)
	case !errors.Is(err, inference.ErrNotSent):
		t.failed.Add(1)
	}
	// Abandoned before its first token by the client, a newer keystroke or
	// the budget: the backend may still be evaluating the prompt. A backend
	// error (down, stalled, restarting) is not that: health deals with it.
	abandoned := *ttft == 0 && (ctx.Err() != nil || budgetHit(res))
	p.release(ctx, t, tk, abandoned, ireq)
	return res, err
}

// finish makes the Result of a generation and remembers it for the
// session's typed-through.
func (p *Pipeline) finish(req *Request, key, model string, prompt *contextpack.Prompt, res *inference.Result, t *target,
	id string, assembly, wait, ttft time.Duration, start time.Time, single bool) *Result {
	// Ollama v0.24.0 reports the whole prompt in prompt_eval_count, also
	// when its KV cache served most of it (measured: 1,604 tokens both cold
	// and warm), so the count can be checked against the plan.
	manifest := prompt.Manifest
	manifest.Warnings = append([]string(nil), manifest.Warnings...)
	manifest.CheckEvaluated(res.PromptEvalTokens)
	if key != "" && req.prompt == nil {
		if c := res.Candidates; single && len(c) == 1 && c[0].Finish != inference.FinishBudget && c[0].Text != "" {
			p.sessions.remember(&typedEntry{key: key, model: model, cursor: prompt.Cursor, completion: c[0].Text, finish: c[0].Finish})
		} else {
			p.sessions.forget(key)
		}
	}
	return &Result{
		RequestID:           id,
		Model:               res.Model,
		Candidates:          res.Candidates,
		PromptTokens:        res.PromptEvalTokens,
		PlannedPromptTokens: prompt.Tokens,
		CompletionTokens:    res.CompletionTokens(),
		CachedPromptTokens:  res.CachedPromptTokens,
		Backend:             t.Name,
		Manifest:            manifest,
		Snapshot:            prompt.Snapshot,
		Assembly:            assembly,
		QueueWait:           wait,
		TimeToFirstToken:    ttft,
		Total:               time.Since(start),
		PromptEval:          res.PromptEval,
	}
}

// budgetHit says whether a generation ended on its latency budget.
func budgetHit(res *inference.Result) bool {
	return res != nil && len(res.Candidates) > 0 && res.Candidates[len(res.Candidates)-1].Finish == inference.FinishBudget
}

// release gives the slot back. A request that ended before its first token
// (cancelled, superseded, out of budget) may leave the backend evaluating
// its prompt: Ollama v0.24.0 goes on with an evaluation under way after the
// client went away (bench/loadbench/REPORT.md has the figures; it gives no
// sign of being busy). The slot stays taken until a probe says the backend
// is free: the prompt's cursor-independent head (the repository context,
// up to and including <|fim_prefix|>), for one token. The backend starts it
// only once the abandoned evaluation is over; the head is a token-exact
// prefix of the prompt (it ends with a special token),
// so what the probe evaluates is what the session's next keystroke needs
// in the cache anyway, and the cache keeps the head for it. The probe is
// bounded by MaxHold.
func (p *Pipeline) release(ctx context.Context, tg *target, t *ticket, abandoned bool, ireq inference.Request) {
	if !abandoned || t.g.cfg.Slots == 0 {
		// Without admission (Slots 0) no request waits for a slot, so a
		// probe would only be one more backend request per abandoned one.
		t.release(!abandoned)
		return
	}
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if p.closed {
		t.release(false)
		return
	}
	p.bg.Add(1)
	// The probe logs as part of the request it stands in for.
	fields := logctx.Fields(ctx)
	go func() {
		defer p.bg.Done()
		ctx, cancel := context.WithTimeout(logctx.With(p.bgCtx, fields...), p.cfg.Admission.MaxHold)
		defer cancel()
		probe := ireq
		probe.MaxTokens, probe.Candidates, probe.Budget, probe.Stop = 1, 1, 0, nil
		if i := strings.Index(probe.Prompt, contextpack.FIMPrefix); i >= 0 {
			probe.Prompt = probe.Prompt[:i+len(contextpack.FIMPrefix)]
		}
		begin := time.Now()
		_, err := tg.Backend.Generate(ctx, probe, func(int, string) error { return nil })
		logctx.Debug(ctx, p.log, "abandoned request's slot released", zap.Duration("probe", time.Since(begin)), zap.Error(err))
		t.release(false)
	}()
}

// Close stops the probes of abandoned requests and waits for them.
func (p *Pipeline) Close() {
	p.bgMu.Lock()
	p.closed = true
	p.bgMu.Unlock()
	p.bgCancel()
	p.bg.Wait()
}

// reuse answers a typed-through request: the rest of the session's last
// completion, at once.
func (p *Pipeline) reuse(ctx context.Context, e *typedEntry, rest string, prompt *contextpack.Prompt,
	st Stream, assembly time.Duration, start time.Time, o *Outcome) (*Result, error) {
	if st.OnDelta != nil {
		if err := st.OnDelta(0, rest); err != nil {
			return nil, err
		}
	}
	ttft := time.Since(start)
	o.TimeToFirstToken = ttft
	return &Result{
		RequestID:           RequestID(ctx),
		Model:               e.model,
		Candidates:          []inference.Candidate{{Index: 0, Text: rest, Finish: e.finish}},
		PlannedPromptTokens: prompt.Tokens,
		Manifest:            prompt.Manifest,
		Snapshot:            prompt.Snapshot,
		Reused:              true,
		Assembly:            assembly,
		TimeToFirstToken:    ttft,
		Total:               ttft,
	}, nil
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id, which the pipeline
// reports in Start and Result, and which every line logged for the call
// carries (as the field request_id, through internal/logctx).
func WithRequestID(ctx context.Context, id string) context.Context {
	return logctx.With(context.WithValue(ctx, requestIDKey{}, id), zap.String("request_id", id))
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

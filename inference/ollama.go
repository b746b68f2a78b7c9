package inference

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/infill-dev/infill/internal/logctx"
	"github.com/ollama/ollama/api"
	"go.uber.org/zap"
)

// Config configures the Ollama backend.
type Config struct {
	// URL of the Ollama server.
	URL string
	// DefaultModel is used when a request names none.
	DefaultModel string
	// ContextTokens is num_ctx, sent with every request. Ollama reloads the
	// model whenever num_ctx changes, so it is one fixed value per model:
	// this one, unless ModelContextTokens names the model.
	ContextTokens      int
	ModelContextTokens map[string]int
	// DefaultMaxTokens is used when a request asks for 0; MaxTokensLimit
	// caps what a request may ask for.
	DefaultMaxTokens int
	MaxTokensLimit   int
	// MaxCandidates caps candidates per request.
	MaxCandidates int
	// KeepAlive keeps the model loaded between requests.
	KeepAlive time.Duration
	// ConnectTimeout bounds dialling the backend (not the stream).
	ConnectTimeout time.Duration
	// Watchdog bounds a generation the backend stops answering.
	Watchdog WatchdogConfig
}

// DefaultConfig returns defaults for a local Ollama with a Qwen2.5-Coder
// base model.
func DefaultConfig() Config {
	return Config{
		URL:              "http://127.0.0.1:11434",
		DefaultModel:     "qwen2.5-coder:1.5b-base",
		ContextTokens:    8192,
		DefaultMaxTokens: 128,
		MaxTokensLimit:   4096,
		MaxCandidates:    8,
		KeepAlive:        30 * time.Minute,
		ConnectTimeout:   5 * time.Second,
		Watchdog:         DefaultWatchdogConfig(),
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("inference: URL %q is not an http(s) URL", c.URL)
	}
	if c.DefaultModel == "" {
		return errors.New("inference: DefaultModel is empty")
	}
	if c.ContextTokens < 64 {
		return fmt.Errorf("inference: ContextTokens %d < 64", c.ContextTokens)
	}
	for m, n := range c.ModelContextTokens {
		if n < 64 {
			return fmt.Errorf("inference: ModelContextTokens[%q] = %d < 64", m, n)
		}
	}
	if c.DefaultMaxTokens < 1 || c.MaxTokensLimit < c.DefaultMaxTokens {
		return fmt.Errorf("inference: need 1 <= DefaultMaxTokens (%d) <= MaxTokensLimit (%d)", c.DefaultMaxTokens, c.MaxTokensLimit)
	}
	if c.MaxCandidates < 1 {
		return fmt.Errorf("inference: MaxCandidates %d < 1", c.MaxCandidates)
	}
	if c.KeepAlive < 0 || c.ConnectTimeout <= 0 {
		return errors.New("inference: KeepAlive must be >= 0 and ConnectTimeout > 0")
	}
	return c.Watchdog.Validate()
}

// Ollama generates completions with an Ollama server. Safe for concurrent
// use.
type Ollama struct {
	cfg    Config
	base   *url.URL
	http   *http.Client // generations: the watchdog bounds them
	client *api.Client  // the cold calls (version, show), with a header timeout
	admin  *api.Client  // Reload's calls: a model load answers late, its ctx bounds it
	log    *zap.Logger
	track  tracker
}

// NewOllama returns a backend for cfg; log may be nil.
func NewOllama(cfg Config, log *zap.Logger) (*Ollama, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	u, _ := url.Parse(cfg.URL)
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// Ollama sends a generation's headers with its first token, after
		// the prompt evaluation: the watchdog's first-token bound, which
		// grows with the prompt, is the header timeout there.
		ResponseHeaderTimeout: 0,
	}}
	cold := &http.Client{Transport: &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Watchdog.ResponseHeaderTimeout,
	}}
	return &Ollama{cfg: cfg, base: u, http: hc, client: api.NewClient(u, cold), admin: api.NewClient(u, hc), log: log}, nil
}

// Model returns the model a request for name uses.
func (o *Ollama) Model(name string) string {
	if name == "" {
		return o.cfg.DefaultModel
	}
	return name
}

// ContextTokens returns num_ctx for a model.
func (o *Ollama) ContextTokens(model string) int {
	if n, ok := o.cfg.ModelContextTokens[o.Model(model)]; ok {
		return n
	}
	return o.cfg.ContextTokens
}

// MaxTokens returns the generation budget a request for n tokens gets.
func (o *Ollama) MaxTokens(n int) int {
	if n <= 0 {
		return o.cfg.DefaultMaxTokens
	}
	return n
}

// Ping checks that the backend answers (its version). A backend can answer
// it and still generate nothing; Probe tells.
func (o *Ollama) Ping(ctx context.Context) error {
	if _, err := o.client.Version(ctx); err != nil {
		return classify(err, "")
	}
	return nil
}

// probePrompt is one token for every Qwen2.5 vocabulary.
const probePrompt = "\n"

// Probe checks that the backend generates: one token of a one-token prompt
// with the default model, sent like any generation (the configured num_ctx
// and keep-alive, so it never reloads the model). It costs a short
// generation and, on a backend with one slot, the cached prompt prefix of
// the last request, so a health check runs it only when generations are not
// showing the backend's health already (Activity).
func (o *Ollama) Probe(ctx context.Context) error {
	_, err := o.Generate(ctx, Request{Prompt: probePrompt, PromptTokens: 1, MaxTokens: 1}, nil)
	return err
}

// ErrRestarting (ErrUnavailable) refuses a generation while Reload restarts
// a stalled model's runner.
var ErrRestarting = fmt.Errorf("%w: restarting the model's runner after a stall", ErrUnavailable)

// Reload restarts model's runner ("" the default model): it asks the
// backend to unload the model (keep_alive 0), waits until the backend no
// longer lists it as running, and loads it again with the num_ctx and
// keep-alive generations use. Measured on Ollama v0.24.0 (scripts/storm): a
// runner wedged by the cancel storm is restored this way, without
// restarting Ollama. Ollama unloads only once no request holds the runner,
// and a request that reaches it meanwhile sets its keep-alive again, so
// Generate refuses work (ErrRestarting) until Reload returns; requests
// still on the wedged runner end within their watchdog bound. The load is
// bounded by ctx, not by the watchdog: a load can take longer than a first
// token may. ctx bounds the whole.
func (o *Ollama) Reload(ctx context.Context, model string) error {
	model = o.Model(model)
	o.track.unloading.Add(1)
	defer o.track.unloading.Add(-1)
	stream := false
	load := func(keepAlive time.Duration, opts map[string]any) error {
		err := o.admin.Generate(ctx, &api.GenerateRequest{Model: model, Stream: &stream,
			KeepAlive: &api.Duration{Duration: keepAlive}, Options: opts},
			func(api.GenerateResponse) error { return nil })
		if err == nil {
			err = ctx.Err() // the api client reports a cancelled call as nil
		}
		if err != nil {
			return classify(err, model)
		}
		return nil
	}
	if err := load(0, nil); err != nil {
		return err
	}
	for {
		ps, err := o.client.ListRunning(ctx)
		if err == nil && !running(ps, model) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: model %q still loaded: %v", ErrUnavailable, model, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The next probe, not this load, shows that the new runner generates.
	return load(o.cfg.KeepAlive, map[string]any{"num_ctx": o.ContextTokens(model)})
}

// running reports whether ps lists model (Ollama adds ":latest" to a name
// without a tag).
func running(ps *api.ProcessResponse, model string) bool {
	for _, m := range ps.Models {
		if m.Name == model || m.Model == model || m.Name == model+":latest" {
			return true
		}
	}
	return false
}

// Activity reports what generations have seen of the backend: when it last
// sent anything, whether a generation since ended unanswered, and the
// watchdog's verdict. It costs a few atomic loads.
func (o *Ollama) Activity() Activity { return o.track.activity() }

// CheckModel reports whether the backend has the model.
func (o *Ollama) CheckModel(ctx context.Context, model string) error {
	model = o.Model(model)
	if _, err := o.client.Show(ctx, &api.ShowRequest{Model: model}); err != nil {
		return classify(err, model)
	}
	return nil
}

// Generate makes req.Candidates completions of req.Prompt, one backend
// request each (Ollama has no n), calling onDelta with text as it arrives.
// A cancelled ctx stops generation at the backend and returns ctx.Err().
// When req.Budget passes, generation stops and the partial result is
// returned with FinishBudget (no error).
func (o *Ollama) Generate(ctx context.Context, req Request, onDelta DeltaFunc) (*Result, error) {
	start := time.Now()
	model := o.Model(req.Model)
	if req.WarmOnly {
		req.MaxTokens, req.Candidates = 1, 1
	}
	if err := o.check(&req, model); err != nil {
		return nil, err
	}
	if o.track.unloading.Load() > 0 {
		return nil, ErrRestarting
	}
	var deadline time.Time
	if req.Budget > 0 {
		deadline = start.Add(req.Budget)
	}
	res := &Result{Model: model}
	for i := 0; i < req.Candidates; i++ {
		c, m, err := o.generateOne(ctx, req, model, i, deadline, start, res, onDelta)
		if err != nil {
			return nil, err
		}
		res.Candidates = append(res.Candidates, c)
		if i == 0 {
			res.PromptEvalTokens, res.PromptEval = m.PromptEvalCount, m.PromptEvalDuration
		}
		if c.Finish == FinishBudget {
			break // no time left for further candidates
		}
	}
	res.Total = time.Since(start)
	return res, nil
}

func (o *Ollama) check(req *Request, model string) error {
	if err := o.CheckOptions(req); err != nil {
		return err
	}
	if req.Candidates <= 0 {
		req.Candidates = 1
	}
	req.MaxTokens = o.MaxTokens(req.MaxTokens)
	if n := o.ContextTokens(model); req.PromptTokens+req.MaxTokens > n {
		return fmt.Errorf("%w: %d prompt tokens + %d to generate > num_ctx %d of %q",
			ErrPromptTooLong, req.PromptTokens, req.MaxTokens, n, model)
	}
	return nil
}

// CheckOptions reports a generation option of req out of range, as an
// *OptionError, before any work is done for the request (Generate checks
// again). NaN is out of every range.
func (o *Ollama) CheckOptions(req *Request) error {
	bad := func(field, format string, args ...any) error {
		return &OptionError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if n := o.MaxTokens(req.MaxTokens); n > o.cfg.MaxTokensLimit {
		return bad("max_tokens", "%d exceeds the limit %d", n, o.cfg.MaxTokensLimit)
	}
	if req.Candidates > o.cfg.MaxCandidates {
		return bad("candidates", "%d exceeds the limit %d", req.Candidates, o.cfg.MaxCandidates)
	}
	if t := req.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		return bad("temperature", "%v outside [0, 2]", *t)
	}
	if p := req.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return bad("top_p", "%v outside (0, 1]", *p)
	}
	if k := req.TopK; k != nil && *k < 0 {
		return bad("top_k", "%d is negative", *k)
	}
	if req.MinIndent < 0 {
		return bad("min_indent", "%d is negative", req.MinIndent)
	}
	if req.LineBudget < 0 {
		return bad("line_budget", "%v is negative", req.LineBudget)
	}
	for i, s := range req.Stop {
		if s == "" {
			return bad(fmt.Sprintf("stop[%d]", i), "is empty")
		}
	}
	return nil
}

// errStopped ends a stream from inside the callback once a stop matched.
var errStopped = errors.New("stop matched")

func (o *Ollama) generateOne(ctx context.Context, req Request, model string, idx int,
	deadline, start time.Time, res *Result, onDelta DeltaFunc) (Candidate, api.Metrics, error) {
	genCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := o.track.start(o.cfg.Watchdog, model, req.PromptTokens, o.track.cold(model, o.cfg.KeepAlive, time.Now()), cancel)
	defer w.stop()
	var budgetHit atomic.Bool
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline), func() { budgetHit.Store(true); cancel() })
		defer t.Stop()
	}
	var seed int64
	if req.Seed != nil {
		seed = *req.Seed
	}
	opts := map[string]any{
		"num_ctx":     o.ContextTokens(model),
		"num_predict": req.MaxTokens,
		"temperature": float32(0),
		"seed":        seed + int64(idx),
		"stop":        QwenStops,
	}
	if req.Temperature != nil {
		opts["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		opts["top_p"] = *req.TopP
	}
	if req.TopK != nil && *req.TopK > 0 {
		opts["top_k"] = *req.TopK
	}
	stream, no := true, false
	greq := &api.GenerateRequest{
		Model:     model,
		Prompt:    req.Prompt,
		Raw:       true, // Ollama drops Suffix when raw: the prompt has the FIM tokens
		Stream:    &stream,
		Truncate:  &no, // an over-long prompt is an error, never silently cut
		Shift:     &no,
		KeepAlive: &api.Duration{Duration: o.cfg.KeepAlive},
		Options:   opts,
	}
	c := Candidate{Index: idx}
	sm := newStopMatcher(QwenStops, req.Stop)
	indent := indentStop{min: req.MinIndent}
	var firstText time.Time // when the candidate's first text arrived (LineBudget)
	// stops applies the request's stop conditions beyond stop strings to
	// text the stop matcher let through.
	stops := func(s string, reason FinishReason) (string, FinishReason) {
		if keep, hit := indent.feed(s); hit {
			return s[:keep], FinishStopSequence
		}
		if reason == FinishUnknown && req.LineBudget > 0 && strings.Contains(s, "\n") &&
			time.Since(firstText) > req.LineBudget {
			return s, FinishBudget
		}
		return s, reason
	}
	var text strings.Builder
	var metrics api.Metrics
	var done bool
	var doneReason string
	var cbErr error
	// Text that arrived together goes out as one delta: pending holds text
	// while the backend's next message is already buffered (a client
	// slower than generation, or the last token and the final message).
	pending := 0 // bytes at the end of text not yet given to onDelta
	emit := func(s string, more bool) error {
		if s != "" && res.TimeToFirstToken == 0 {
			res.TimeToFirstToken = time.Since(start)
		}
		text.WriteString(s)
		pending += len(s)
		if more || pending == 0 || onDelta == nil {
			return nil
		}
		t := text.String()
		d := t[len(t)-pending:]
		pending = 0
		if err := onDelta(idx, d); err != nil {
			cbErr = err
			return err
		}
		return nil
	}
	err := generateStream(genCtx, o.http, o.base, greq, w, func(r api.GenerateResponse, more bool) error {
		if req.WarmOnly {
			r.Response = "" // the prompt is in the cache; the token is not wanted
		}
		if r.Response != "" {
			c.Tokens++
			if firstText.IsZero() {
				firstText = time.Now()
			}
			s, reason := stops(sm.feed(r.Response))
			if reason != FinishUnknown {
				more = false // the stream ends here
			}
			if err := emit(s, more); err != nil {
				return err
			}
			if reason != FinishUnknown {
				c.Finish = reason
				return errStopped
			}
		} else if !more {
			if err := emit("", false); err != nil {
				return err
			}
		}
		if r.Done {
			done, doneReason, metrics = true, r.DoneReason, r.Metrics
		}
		return nil
	})
	stall := w.stop()
	switch {
	case cbErr != nil:
		return c, metrics, cbErr
	case ctx.Err() != nil:
		// The client went away; whatever the read reported, say so.
		return c, metrics, ctx.Err()
	case errors.Is(err, errStopped):
	case stall != nil && !done:
		o.log.Warn("backend stalled", zap.String("model", model), zap.Error(stall))
		return c, metrics, stall
	case budgetHit.Load() && !done:
		c.Finish = FinishBudget
		s, _ := stops(sm.flush(), FinishBudget)
		if e := emit(s, false); e != nil {
			return c, metrics, e
		}
	case err != nil:
		return c, metrics, classify(err, model)
	case !done:
		return c, metrics, fmt.Errorf("%w: no final message after %d tokens of candidate %d", ErrIncomplete, c.Tokens, idx)
	default:
		s, reason := stops(sm.flush(), FinishUnknown)
		if e := emit(s, false); e != nil {
			return c, metrics, e
		}
		c.Finish = FinishStop
		if doneReason == "length" {
			c.Finish = FinishLength
		}
		if reason == FinishStopSequence { // the indentation rule cut the held text
			c.Finish = reason
		}
		if metrics.EvalCount > 0 {
			c.Tokens = metrics.EvalCount
		}
		if req.WarmOnly {
			c.Finish, c.Tokens = FinishLength, 0
		}
	}
	c.Text = text.String()
	logctx.Debug(ctx, o.log, "candidate done", zap.String("model", model), zap.Int("candidate", idx),
		zap.Stringer("finish", c.Finish), zap.Int("tokens", c.Tokens),
		zap.Int("prompt_eval", metrics.PromptEvalCount))
	return c, metrics, nil
}

// classify maps an error from the Ollama client to this package's errors.
func classify(err error, model string) error {
	var se api.StatusError
	if errors.As(err, &se) {
		msg := strings.ToLower(se.ErrorMessage)
		switch {
		case se.StatusCode == http.StatusNotFound || strings.Contains(msg, "not found"):
			return &ModelError{Model: model, Hint: fmt.Sprintf("pull it with `ollama pull %s` (or create it from a GGUF with `ollama create`)", model)}
		case strings.Contains(msg, "input length exceeds"):
			return fmt.Errorf("%w: %s", ErrPromptTooLong, se.ErrorMessage)
		case se.StatusCode >= 500 || se.StatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %s", ErrUnavailable, se.Error())
		default:
			return fmt.Errorf("%w: backend rejected the request: %s", ErrInvalidRequest, se.Error())
		}
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w: backend requires authorization (%s)", ErrUnavailable, ae.Status)
	}
	if strings.Contains(err.Error(), "input length exceeds") {
		return fmt.Errorf("%w: %v", ErrPromptTooLong, err)
	}
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// An error the server sent in the middle of a stream.
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

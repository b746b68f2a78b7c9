package inference

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

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
	// Token, when set, is sent as a bearer token with every request (a
	// backend behind an authenticating proxy, a vLLM started with
	// --api-key). Never logged.
	Token string `json:"-"`
	// ServedNames maps a model name (as requests and DefaultModel name it)
	// to the name this backend serves it under, for engines that name the
	// same weights differently (vLLM: the Hugging Face id); a model not
	// listed is sent as it is.
	ServedNames map[string]string
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

// Ollama generates completions with an Ollama server through its native
// API (/api/generate). Safe for concurrent use.
type Ollama struct {
	core
	base   *url.URL
	http   *http.Client // generations: the watchdog bounds them
	client *api.Client  // the cold calls (version, show), with a header timeout
	admin  *api.Client  // Reload's calls: a model load answers late, its ctx bounds it
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
	hc, cold := newClients(cfg)
	o := &Ollama{base: u, http: hc, client: api.NewClient(u, cold), admin: api.NewClient(u, hc)}
	o.core = core{cfg: cfg, log: log, hint: func(model string) string {
		return fmt.Sprintf("pull it with `ollama pull %s` (or create it from a GGUF with `ollama create`)", model)
	}}
	return o, nil
}

// Ping checks that the backend answers (its version). A backend can answer
// it and still generate nothing; Probe tells.
func (o *Ollama) Ping(ctx context.Context) error {
	if _, err := o.client.Version(ctx); err != nil {
		return o.classify(err, "")
	}
	return nil
}

// Probe checks that the backend generates: one token of a one-token prompt
// with the default model, sent like any generation (the configured num_ctx
// and keep-alive, so it never reloads the model). It costs a short
// generation and, on a backend with one slot, the cached prompt prefix of
// the last request, so a health check runs it only when generations are not
// showing the backend's health already (Activity).
func (o *Ollama) Probe(ctx context.Context) error { return o.probe(ctx, o.stream) }

// ErrRestarting (ErrUnavailable, ErrNotSent) refuses a generation while
// Reload restarts a stalled model's runner.
var ErrRestarting error = &notSentError{err: errors.New("restarting the model's runner after a stall")}

// Reload restarts model's runner ("" the default model): it asks the
// backend to unload the model (keep_alive 0), waits until the backend no
// longer lists it as running, and loads it again with the num_ctx and
// keep-alive generations use. Measured on Ollama v0.24.0 (bench/storm): a
// runner wedged by the cancel storm is restored this way, without
// restarting Ollama. Ollama unloads only once no request holds the runner,
// and a request that reaches it meanwhile sets its keep-alive again, so
// Generate refuses work (ErrRestarting) until Reload returns; requests
// still on the wedged runner end within their watchdog bound. The load is
// bounded by ctx, not by the watchdog: a load can take longer than a first
// token may. ctx bounds the whole.
func (o *Ollama) Reload(ctx context.Context, model string) error {
	model = o.Model(model)
	name := o.served(model)
	o.track.unloading.Add(1)
	defer o.track.unloading.Add(-1)
	stream := false
	load := func(keepAlive time.Duration, opts map[string]any) error {
		err := o.admin.Generate(ctx, &api.GenerateRequest{Model: name, Stream: &stream,
			KeepAlive: &api.Duration{Duration: keepAlive}, Options: opts},
			func(api.GenerateResponse) error { return nil })
		if err == nil {
			err = ctx.Err() // the api client reports a cancelled call as nil
		}
		if err != nil {
			return o.classify(err, model)
		}
		return nil
	}
	if err := load(0, nil); err != nil {
		return err
	}
	for {
		ps, err := o.client.ListRunning(ctx)
		if err == nil && !running(ps, name) {
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

// CheckModel reports whether the backend has model ("" the default
// model): nil, a *ModelError (ErrModelNotFound) saying how to get it, or
// ErrUnavailable when the backend does not answer. It reads the backend's
// model list (/api/tags), which loads no model and costs the backend a few
// small file reads, so a health check can ask it on every tick (/api/show
// parses the model file: 100 ms for the tiny model).
func (o *Ollama) CheckModel(ctx context.Context, model string) error {
	model = o.Model(model)
	list, err := o.client.List(ctx)
	if err != nil {
		return o.classifyList(err)
	}
	want := o.served(model)
	for _, m := range list.Models {
		if sameModel(m.Name, want) || sameModel(m.Model, want) {
			return nil
		}
	}
	return &ModelError{Model: model, Hint: o.hint(model)}
}

// Generate makes req.Candidates completions of req.Prompt, one backend
// request each (Ollama has no n), calling onDelta with text as it arrives.
// A cancelled ctx stops generation at the backend and returns ctx.Err().
// When req.Budget passes, generation stops and the partial result is
// returned with FinishBudget (no error).
func (o *Ollama) Generate(ctx context.Context, req Request, onDelta DeltaFunc) (*Result, error) {
	return o.generate(ctx, req, onDelta, o.stream)
}

// stream is the streamFunc of /api/generate.
func (o *Ollama) stream(ctx context.Context, req *Request, model string, idx int, w *watch, fn func(message, bool) error) error {
	var seed int64
	if req.Seed != nil {
		seed = *req.Seed
	}
	opts := map[string]any{
		"num_ctx":     o.ContextTokens(req.Model),
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
	return generateStream(ctx, o.http, o.base, greq, w, func(r api.GenerateResponse, more bool) error {
		return fn(message{Text: r.Response, Done: r.Done, DoneReason: r.DoneReason,
			PromptEvalCount: r.PromptEvalCount, PromptEval: r.PromptEvalDuration, EvalCount: r.EvalCount}, more)
	})
}

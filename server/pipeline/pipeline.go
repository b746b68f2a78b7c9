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
	"fmt"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
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

// Config bounds what one request may ask for.
type Config struct {
	// MaxFiles caps files per request.
	MaxFiles int
	// MaxIDBytes bounds client and session ids, which every call logs.
	MaxIDBytes int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{MaxFiles: 20000, MaxIDBytes: 256} }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxFiles < 1 || c.MaxIDBytes < 1 {
		return fmt.Errorf("pipeline: MaxFiles (%d) and MaxIDBytes (%d) must be >= 1", c.MaxFiles, c.MaxIDBytes)
	}
	return nil
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
	Snapshot                                      string
	Assembly, TimeToFirstToken, Total, PromptEval time.Duration
}

// Pipeline runs completions. Safe for concurrent use.
type Pipeline struct {
	cfg     Config
	builder Builder
	backend Backend
	log     *zap.Logger
}

// New returns a pipeline over builder and backend; log may be nil.
func New(cfg Config, builder Builder, backend Backend, log *zap.Logger) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if builder == nil || backend == nil {
		return nil, fmt.Errorf("pipeline: Builder and Backend are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Pipeline{cfg: cfg, builder: builder, backend: backend, log: log}, nil
}

// Backend returns the backend the pipeline generates with.
func (p *Pipeline) Backend() Backend { return p.backend }

// Complete runs one completion. With a Stream it reports the start and the
// text as it is generated. ctx carries the caller's cancellation into the
// backend: a cancelled ctx stops generation at once and returns ctx.Err().
func (p *Pipeline) Complete(ctx context.Context, req *Request, st Stream) (*Result, error) {
	start := time.Now()
	if err := p.validate(req); err != nil {
		return nil, err
	}
	model := p.backend.Model(req.Model)
	g := req.Generation
	ireq := inference.Request{
		Model: model, MaxTokens: g.MaxTokens, Stop: g.Stop, Candidates: g.Candidates,
		Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, Seed: g.Seed,
	}
	if err := p.backend.CheckOptions(&ireq); err != nil {
		return nil, err
	}
	maxTokens := p.backend.MaxTokens(ireq.MaxTokens)
	budget := p.backend.ContextTokens(model)
	if b := req.TokenBudget; b > 0 && b < budget {
		budget = b
	}
	creq := req.Context
	creq.TokenBudget, creq.MaxNewTokens = budget, maxTokens
	prompt, err := p.builder.Build(ctx, creq)
	if err != nil {
		return nil, err
	}
	assembly := time.Since(start)
	id := RequestID(ctx)
	p.log.Debug("prompt", zap.String("request_id", id), zap.Int("tokens", prompt.Tokens), zap.String("text", prompt.Text))
	if st.OnStart != nil {
		if err := st.OnStart(Start{RequestID: id, Model: model, Manifest: prompt.Manifest,
			Snapshot: prompt.Snapshot, Assembly: assembly}); err != nil {
			return nil, err
		}
	}
	var ttft time.Duration
	onDelta := func(i int, text string) error {
		if ttft == 0 {
			ttft = time.Since(start)
		}
		if st.OnDelta == nil {
			return nil
		}
		return st.OnDelta(i, text)
	}
	ireq.Prompt, ireq.PromptTokens, ireq.MaxTokens = prompt.Text, prompt.Tokens, maxTokens
	if lb := req.LatencyBudget; lb != nil {
		if ireq.Budget = *lb - assembly; ireq.Budget <= 0 {
			ireq.Budget = time.Nanosecond // spent already: return what there is
		}
	}
	res, err := p.backend.Generate(ctx, ireq, onDelta)
	if err != nil {
		return nil, err
	}
	// Ollama v0.24.0 reports the whole prompt in prompt_eval_count, also
	// when its KV cache served most of it (measured: 1,604 tokens both cold
	// and warm), so the count can be checked against the plan.
	manifest := prompt.Manifest
	manifest.Warnings = append([]string(nil), manifest.Warnings...)
	manifest.CheckEvaluated(res.PromptEvalTokens)
	return &Result{
		RequestID:           id,
		Model:               res.Model,
		Candidates:          res.Candidates,
		PromptTokens:        res.PromptEvalTokens,
		PlannedPromptTokens: prompt.Tokens,
		CompletionTokens:    res.CompletionTokens(),
		Manifest:            manifest,
		Snapshot:            prompt.Snapshot,
		Assembly:            assembly,
		TimeToFirstToken:    ttft,
		Total:               time.Since(start),
		PromptEval:          res.PromptEval,
	}, nil
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id, which the pipeline
// reports in Start and Result and logs.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

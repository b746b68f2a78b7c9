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

// core is what every kind of backend shares: the configuration's limits
// (model, context, token and option checks), the watchdog's tracker and
// the generation loop (candidates, the stop set and llama.cpp's stop rules,
// the latency budget, deltas, and the backend's quirks turned into
// errors). A kind supplies only how one candidate is requested and its
// stream read (a streamFunc), so both kinds behave the same for the
// pipeline.
type core struct {
	cfg   Config
	log   *zap.Logger
	track tracker
	// hint says how to get a model the backend lacks.
	hint func(model string) string
}

// message is one message of a candidate's stream, whatever its wire form
// (an Ollama NDJSON line, an OpenAI server-sent event).
type message struct {
	Text string
	// Done: the backend finished the candidate; the counts below are
	// known only then.
	Done       bool
	DoneReason string // "stop", "length"
	// PromptEvalCount and PromptEval are what the backend reported
	// evaluating, EvalCount what it generated, CachedPromptTokens what it
	// reused from its cache (0 where it does not say).
	PromptEvalCount    int
	PromptEval         time.Duration
	EvalCount          int
	CachedPromptTokens int
}

// streamFunc requests candidate idx of req from the backend (model is
// the model's name as the backend knows it) and calls fn with each
// message; more reports that the next message has arrived already, so
// that text that arrived together goes out as one delta. w, the request's
// watchdog, hears of every message and is paused while fn runs.
type streamFunc func(ctx context.Context, req *Request, model string, idx int, w *watch, fn func(m message, more bool) error) error

// Model returns the model a request for name uses.
func (c *core) Model(name string) string {
	if name == "" {
		return c.cfg.DefaultModel
	}
	return name
}

// served is the name the backend knows model by.
func (c *core) served(model string) string {
	if n, ok := c.cfg.ServedNames[model]; ok {
		return n
	}
	return model
}

// ContextTokens returns num_ctx for a model.
func (c *core) ContextTokens(model string) int {
	if n, ok := c.cfg.ModelContextTokens[c.Model(model)]; ok {
		return n
	}
	return c.cfg.ContextTokens
}

// MaxTokens returns the generation budget a request for n tokens gets.
func (c *core) MaxTokens(n int) int {
	if n <= 0 {
		return c.cfg.DefaultMaxTokens
	}
	return n
}

// Activity reports what generations have seen of the backend: when it last
// sent anything, whether a generation since ended unanswered or could not
// reach it, and the watchdog's verdict. It costs a few atomic loads.
func (c *core) Activity() Activity { return c.track.activity() }

// probePrompt is one token for every Qwen2.5 vocabulary.
const probePrompt = "\n"

// probe runs a one-token generation of a one-token prompt with the default
// model, sent like any generation (see Ollama.Probe).
func (c *core) probe(ctx context.Context, stream streamFunc) error {
	_, err := c.generate(ctx, Request{Prompt: probePrompt, PromptTokens: 1, MaxTokens: 1}, nil, stream)
	return err
}

// CheckOptions reports a generation option of req out of range, as an
// *OptionError, before any work is done for the request (Generate checks
// again). NaN is out of every range.
func (c *core) CheckOptions(req *Request) error {
	bad := func(field, format string, args ...any) error {
		return &OptionError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if n := c.MaxTokens(req.MaxTokens); n > c.cfg.MaxTokensLimit {
		return bad("max_tokens", "%d exceeds the limit %d", n, c.cfg.MaxTokensLimit)
	}
	if req.Candidates > c.cfg.MaxCandidates {
		return bad("candidates", "%d exceeds the limit %d", req.Candidates, c.cfg.MaxCandidates)
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

func (c *core) check(req *Request, model string) error {
	if err := c.CheckOptions(req); err != nil {
		return err
	}
	if req.Candidates <= 0 {
		req.Candidates = 1
	}
	req.MaxTokens = c.MaxTokens(req.MaxTokens)
	if n := c.ContextTokens(model); req.PromptTokens+req.MaxTokens > n {
		return fmt.Errorf("%w: %d prompt tokens + %d to generate > num_ctx %d of %q",
			ErrPromptTooLong, req.PromptTokens, req.MaxTokens, n, model)
	}
	return nil
}

// generate makes req.Candidates completions of req.Prompt, one backend
// request each, calling onDelta with text as it arrives (see
// Ollama.Generate).
func (c *core) generate(ctx context.Context, req Request, onDelta DeltaFunc, stream streamFunc) (*Result, error) {
	start := time.Now()
	model := c.Model(req.Model)
	if req.WarmOnly {
		req.MaxTokens, req.Candidates = 1, 1
	}
	if err := c.check(&req, model); err != nil {
		return nil, err
	}
	if c.track.unloading.Load() > 0 {
		return nil, ErrRestarting
	}
	var deadline time.Time
	if req.Budget > 0 {
		deadline = start.Add(req.Budget)
	}
	res := &Result{Model: model}
	for i := 0; i < req.Candidates; i++ {
		cand, m, err := c.generateOne(ctx, &req, model, i, deadline, start, res, onDelta, stream)
		if err != nil {
			return nil, err
		}
		res.Candidates = append(res.Candidates, cand)
		if i == 0 {
			res.PromptEvalTokens, res.PromptEval, res.CachedPromptTokens = m.PromptEvalCount, m.PromptEval, m.CachedPromptTokens
		}
		if cand.Finish == FinishBudget {
			break // no time left for further candidates
		}
	}
	res.Total = time.Since(start)
	return res, nil
}

// errStopped ends a stream from inside the callback once a stop matched.
var errStopped = errors.New("stop matched")

func (c *core) generateOne(ctx context.Context, req *Request, model string, idx int,
	deadline, start time.Time, res *Result, onDelta DeltaFunc, stream streamFunc) (Candidate, message, error) {
	genCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.track.start(c.cfg.Watchdog, model, req.PromptTokens, c.track.cold(model, c.cfg.KeepAlive, time.Now()), cancel)
	defer w.stop()
	var budgetHit atomic.Bool
	if !deadline.IsZero() {
		t := time.AfterFunc(time.Until(deadline), func() { budgetHit.Store(true); cancel() })
		defer t.Stop()
	}
	cand := Candidate{Index: idx}
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
	var final message
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
	err := stream(genCtx, req, c.served(model), idx, w, func(m message, more bool) error {
		if req.WarmOnly {
			m.Text = "" // the prompt is in the cache; the token is not wanted
		}
		if m.Text != "" {
			cand.Tokens++
			if firstText.IsZero() {
				firstText = time.Now()
			}
			s, reason := stops(sm.feed(m.Text))
			if reason != FinishUnknown {
				more = false // the stream ends here
			}
			if err := emit(s, more); err != nil {
				return err
			}
			if reason != FinishUnknown {
				cand.Finish = reason
				return errStopped
			}
		} else if !more {
			if err := emit("", false); err != nil {
				return err
			}
		}
		if m.Done {
			final = m
		}
		return nil
	})
	stall := w.stop()
	switch {
	case cbErr != nil:
		return cand, final, cbErr
	case ctx.Err() != nil:
		// The client went away; whatever the read reported, say so.
		return cand, final, ctx.Err()
	case errors.Is(err, errStopped):
	case stall != nil && !final.Done:
		c.log.Warn("backend stalled", zap.String("model", model), zap.Error(stall))
		return cand, final, stall
	case budgetHit.Load() && !final.Done:
		cand.Finish = FinishBudget
		s, _ := stops(sm.flush(), FinishBudget)
		if e := emit(s, false); e != nil {
			return cand, final, e
		}
	case err != nil:
		err = c.classify(err, model)
		if errors.Is(err, ErrNotSent) {
			c.track.unreachable.Store(time.Now().UnixNano())
		}
		return cand, final, err
	case !final.Done:
		return cand, final, fmt.Errorf("%w: no final message after %d tokens of candidate %d", ErrIncomplete, cand.Tokens, idx)
	default:
		s, reason := stops(sm.flush(), FinishUnknown)
		if e := emit(s, false); e != nil {
			return cand, final, e
		}
		cand.Finish = FinishStop
		if final.DoneReason == "length" {
			cand.Finish = FinishLength
		}
		if reason == FinishStopSequence { // the indentation rule cut the held text
			cand.Finish = reason
		}
		if final.EvalCount > 0 {
			cand.Tokens = final.EvalCount
		}
		if req.WarmOnly {
			cand.Finish, cand.Tokens = FinishLength, 0
		}
	}
	cand.Text = text.String()
	logctx.Debug(ctx, c.log, "candidate done", zap.String("model", model), zap.Int("candidate", idx),
		zap.Stringer("finish", cand.Finish), zap.Int("tokens", cand.Tokens),
		zap.Int("prompt_eval", final.PromptEvalCount), zap.Int("cached", final.CachedPromptTokens))
	return cand, final, nil
}

// classify maps an error from a backend's client to this package's errors.
func (c *core) classify(err error, model string) error {
	var se api.StatusError
	if errors.As(err, &se) {
		msg := strings.ToLower(se.ErrorMessage)
		switch {
		case se.StatusCode == http.StatusNotFound || strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist"):
			return &ModelError{Model: model, Hint: c.hint(model)}
		case tooLong(msg):
			return fmt.Errorf("%w: %s", ErrPromptTooLong, se.ErrorMessage)
		case se.StatusCode >= 500 || se.StatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %s", ErrUnavailable, se.Error())
		case se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%w: backend refused infill's credentials (%s)", ErrUnavailable, se.Error())
		default:
			return fmt.Errorf("%w: backend rejected the request: %s", ErrInvalidRequest, se.Error())
		}
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w: backend requires authorization (%s)", ErrUnavailable, ae.Status)
	}
	if tooLong(strings.ToLower(err.Error())) {
		return fmt.Errorf("%w: %v", ErrPromptTooLong, err)
	}
	if notConnected(err) {
		return &notSentError{err: err}
	}
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// An error the server sent in the middle of a stream.
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// classifyList maps an error of a model list call (CheckModel): whatever
// the backend answered, it is unavailable (a 404 there is a wrong URL or
// another server, not a missing model).
func (c *core) classifyList(err error) error {
	if ce := c.classify(err, ""); errors.Is(ce, ErrUnavailable) {
		return ce
	}
	return fmt.Errorf("%w: listing its models: %v", ErrUnavailable, err)
}

// sameModel reports whether a model list's name is the model asked for:
// Ollama adds ":latest" to a name without a tag and ignores case.
func sameModel(listed, model string) bool {
	norm := func(s string) string {
		if !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
			s += ":latest"
		}
		return strings.ToLower(s)
	}
	return listed != "" && norm(listed) == norm(model)
}

// tooLong reports a backend's message (lower case) saying that the prompt
// does not fit the model's context: Ollama's, vLLM's ("maximum context
// length"), SGLang's ("longer than the model's context length") and
// llama.cpp server's ("exceeds the available context size").
func tooLong(msg string) bool {
	return strings.Contains(msg, "input length exceeds") || strings.Contains(msg, "context length") ||
		strings.Contains(msg, "context size")
}

// notConnected reports an error that happened before the request reached
// the backend: connecting to it failed.
func notConnected(err error) bool {
	var oe *net.OpError
	return (errors.As(err, &oe) && oe.Op == "dial") || errors.Is(err, syscall.ECONNREFUSED)
}

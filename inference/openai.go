package inference

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
)

// OpenAI generates completions with a server that speaks OpenAI's
// /v1/completions with a raw prompt: vLLM, SGLang, llama.cpp's server,
// Ollama's own /v1. It sends the rendered Qwen prompt as it is, streams
// the answer as server-sent events and behaves for the pipeline as Ollama
// does (the same limits, stop set and stop rules, watchdog, error kinds).
// What differs is what the protocol cannot say: num_ctx and keep-alive are
// the server's own settings (Config.ContextTokens must match the context
// the server was started with, so that infill refuses a prompt that would
// not fit rather than have the server cut it), and there is no runner to
// restart. Safe for concurrent use.
type OpenAI struct {
	core
	completions, models string // endpoint URLs
	http, cold          *http.Client
}

// NewOpenAI returns a backend for cfg, whose URL is the server's base
// (http://host:8000, with or without /v1); log may be nil.
func NewOpenAI(cfg Config, log *zap.Logger) (*OpenAI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	u, _ := url.Parse(cfg.URL)
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	hc, cold := newClients(cfg)
	o := &OpenAI{completions: u.JoinPath("/v1/completions").String(), models: u.JoinPath("/v1/models").String(),
		http: hc, cold: cold}
	o.core = core{cfg: cfg, log: log, hint: func(model string) string {
		return "the backend does not serve it (its /v1/models lists what it serves; map names with the backend's models=NAME=SERVED)"
	}}
	return o, nil
}

// Ping checks that the server answers (GET /v1/models). A server can
// answer it and still generate nothing; Probe tells.
func (o *OpenAI) Ping(ctx context.Context) error {
	_, err := o.listModels(ctx)
	return err
}

// CheckModel reports whether the server serves model ("" the default
// model) under its served name: nil, a *ModelError (ErrModelNotFound), or
// ErrUnavailable when the server does not answer. It reads /v1/models, as
// Ping does.
func (o *OpenAI) CheckModel(ctx context.Context, model string) error {
	model = o.Model(model)
	ids, err := o.listModels(ctx)
	if err != nil {
		return err
	}
	want := o.served(model)
	for _, id := range ids {
		if sameModel(id, want) {
			return nil
		}
	}
	return &ModelError{Model: model, Hint: o.hint(model)}
}

// listModels returns the ids /v1/models lists.
func (o *OpenAI) listModels(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.models, nil)
	if err != nil {
		return nil, err
	}
	resp, err := o.cold.Do(req)
	if err != nil {
		return nil, o.classify(err, "")
	}
	defer resp.Body.Close()
	if resp.StatusCode >= http.StatusBadRequest {
		return nil, o.classifyList(statusError(resp))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("%w: its /v1/models answer: %v", ErrUnavailable, err)
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	return ids, nil
}

// Probe checks that the server generates: one token of a one-token prompt
// with the default model (see Ollama.Probe).
func (o *OpenAI) Probe(ctx context.Context) error { return o.probe(ctx, o.stream) }

// Generate makes req.Candidates completions of req.Prompt, one request
// each with seed+i (as Ollama's: n would share one seed), calling onDelta
// with text as it arrives. A cancelled ctx closes the connection, which
// stops the server's generation, and returns ctx.Err(). When req.Budget
// passes, generation stops and the partial result is returned with
// FinishBudget (no error).
func (o *OpenAI) Generate(ctx context.Context, req Request, onDelta DeltaFunc) (*Result, error) {
	return o.generate(ctx, req, onDelta, o.stream)
}

// qwenStopIDs are QwenStops' token ids, for servers that match stop
// strings on text with special tokens left out (vLLM, SGLang: their
// stop_token_ids extension; others ignore the field).
var qwenStopIDs = []int{151643, 151645, 151659, 151660, 151661, 151662, 151663, 151664}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	Model         string   `json:"model"`
	Prompt        string   `json:"prompt"`
	MaxTokens     int      `json:"max_tokens"`
	Temperature   float32  `json:"temperature"`
	TopP          *float32 `json:"top_p,omitempty"`
	TopK          *int     `json:"top_k,omitempty"`
	Seed          int64    `json:"seed"`
	Stop          []string `json:"stop"`
	StopTokenIDs  []int    `json:"stop_token_ids"`
	Stream        bool     `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// completionChunk is one streamed event (or a whole answer, for a server
// that does not stream).
type completionChunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// Timings are llama.cpp server's.
	Timings *struct {
		PromptN  int     `json:"prompt_n"`
		PromptMS float64 `json:"prompt_ms"`
		CacheN   int     `json:"cache_n"`
	} `json:"timings"`
	Error  json.RawMessage `json:"error"`
	Object string          `json:"object"`
}

// stream is the streamFunc of /v1/completions.
func (o *OpenAI) stream(ctx context.Context, req *Request, model string, idx int, w *watch, fn func(message, bool) error) error {
	body := completionRequest{Model: model, Prompt: req.Prompt, MaxTokens: req.MaxTokens, TopP: req.TopP,
		Stop: QwenStops, StopTokenIDs: qwenStopIDs, Stream: true}
	body.StreamOptions.IncludeUsage = true
	if req.Temperature != nil {
		body.Temperature = *req.Temperature // else 0: greedy (OpenAI's default is 1)
	}
	if req.TopK != nil && *req.TopK > 0 {
		body.TopK = req.TopK
	}
	if req.Seed != nil {
		body.Seed = *req.Seed
	}
	body.Seed += int64(idx)
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.completions, bytes.NewReader(b))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	markRetryable(hreq)
	resp, err := o.http.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w.answer()
	if resp.StatusCode >= http.StatusBadRequest {
		return statusError(resp)
	}
	var d decoder
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		// A server that answered without streaming: one whole answer.
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxLine))
		if err != nil {
			return err
		}
		w.message(true)
		if err := d.event("", data, fn, false); err != nil {
			return err
		}
		return d.end(fn)
	}
	err = readEvents(resp.Body, func(event string, data []byte, more bool) error {
		switch string(bytes.TrimSpace(data)) {
		case "[DONE]":
			w.message(false)
			d.done = true
			return errDone
		case "":
			return nil // an empty event (a keep-alive)
		}
		d.text = false
		if err := d.parse(event, data); err != nil {
			return err
		}
		w.message(d.text)
		if err := d.emit(fn, more); err != nil {
			return err
		}
		w.resume()
		return nil
	})
	if errors.Is(err, errDone) {
		err = nil
	}
	if err != nil {
		return err
	}
	return d.end(fn)
}

// errDone ends the event loop at data: [DONE].
var errDone = errors.New("[DONE]")

// decoder turns a completion's events into messages: text as it comes,
// and one final message with the finish reason and usage once the stream
// says it is over ([DONE], or its end after a finish reason).
type decoder struct {
	chunk  completionChunk
	text   bool // the last event carried text
	finish string
	final  message
	done   bool // [DONE] came
}

// parse reads one event's data into d.
func (d *decoder) parse(event string, data []byte) error {
	d.chunk = completionChunk{}
	if err := json.Unmarshal(data, &d.chunk); err != nil {
		if event == "error" {
			return fmt.Errorf("backend sent an error event: %s", bytes.TrimSpace(data))
		}
		return fmt.Errorf("backend sent a malformed event: %w", err)
	}
	c := &d.chunk
	if event == "error" || (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error" {
		msg := errorMessage(data)
		if msg == "" {
			msg = string(bytes.TrimSpace(data))
		}
		return fmt.Errorf("backend sent an error in the stream: %s", msg)
	}
	if len(c.Choices) > 0 {
		d.text = c.Choices[0].Text != ""
		if f := c.Choices[0].FinishReason; f != nil && *f != "" {
			d.finish = *f
		}
	}
	if u := c.Usage; u != nil {
		d.final.PromptEvalCount, d.final.EvalCount = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			d.final.CachedPromptTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	if t := c.Timings; t != nil {
		d.final.PromptEval = time.Duration(t.PromptMS * float64(time.Millisecond))
		if d.final.CachedPromptTokens == 0 {
			d.final.CachedPromptTokens = t.CacheN
		}
		if d.final.PromptEvalCount == 0 {
			d.final.PromptEvalCount = t.PromptN + t.CacheN
		}
	}
	return nil
}

// emit passes the parsed event's text on (every event goes to fn, so that
// text held back while more was buffered is flushed).
func (d *decoder) emit(fn func(message, bool) error, more bool) error {
	m := message{}
	if len(d.chunk.Choices) > 0 {
		m.Text = d.chunk.Choices[0].Text
	}
	return fn(m, more)
}

// event is parse and emit.
func (d *decoder) event(event string, data []byte, fn func(message, bool) error, more bool) error {
	if err := d.parse(event, data); err != nil {
		return err
	}
	return d.emit(fn, more)
}

// end sends the final message once the stream said it finished; a stream
// that ended with neither [DONE] nor a finish reason sends none (the
// caller reports it incomplete).
func (d *decoder) end(fn func(message, bool) error) error {
	if !d.done && d.finish == "" {
		return nil
	}
	d.final.Done = true
	d.final.DoneReason = d.finish
	if d.final.DoneReason == "" {
		d.final.DoneReason = "stop"
	}
	return fn(d.final, false)
}

// readEvents reads server-sent events from r and calls fn with each
// event's type ("" for the default, message) and data (its data lines
// joined by newlines); more reports that the next event has arrived
// already. Comments and the id and retry fields are skipped; llama.cpp
// server's non-standard "error:" line is an error event. An event longer
// than maxLine is an error.
func readEvents(r io.Reader, fn func(event string, data []byte, more bool) error) error {
	var data []byte
	event, has := "", false
	dispatch := func(br *bufio.Reader) error {
		if !has {
			event = ""
			return nil
		}
		more := false
		if br != nil {
			if n := br.Buffered(); n > 0 {
				next, _ := br.Peek(n) // what is buffered already: never blocks
				more = bytes.Contains(next, []byte("\n\n")) || bytes.Contains(next, []byte("\n\r\n"))
			}
		}
		err := fn(event, data, more)
		data, event, has = data[:0], "", false
		return err
	}
	err := eachLine(r, func(line []byte, br *bufio.Reader) error {
		line = bytes.TrimRight(line, "\r\n")
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) == 0:
			return dispatch(br)
		case len(field) == 0: // a comment
		case string(field) == "data":
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, value...), true
			if len(data) > maxLine {
				return fmt.Errorf("backend sent an event over %d bytes", maxLine)
			}
		case string(field) == "event":
			event = string(value)
		case string(field) == "error":
			event, data, has = "error", append(data[:0], value...), true
		}
		return nil
	})
	if err != nil {
		return err
	}
	return dispatch(nil) // an event the stream ended without its blank line
}

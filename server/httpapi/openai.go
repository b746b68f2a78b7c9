package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// The OpenAI-compatible surface: POST /v1/completions (the legacy
// completions API that Continue's "openai" provider, Twinny's "lmstudio"
// provider, llama.vscode's use_openai_endpoint mode and the official OpenAI
// clients send, with suffix for fill-in-the-middle) and GET /v1/models.
// Tabby's plugins post to the same path; a body with "segments" is Tabby's
// (tabby.go).
//
// Fields honoured: model, prompt (a string or a one-string array), suffix,
// max_tokens, temperature, top_p, n, stop (a string or an array), seed,
// stream, stream_options.include_usage. Knowingly ignored: echo, logprobs
// (always null), best_of, presence_penalty, frequency_penalty, logit_bias,
// user. Where they differ from OpenAI, infill's defaults win, as they do on
// every surface: no max_tokens means the server's --max-tokens (not 16), no
// temperature means greedy (not 1). Sampling without a seed draws one, as
// OpenAI does, so that repeated requests differ (Tabby's agent asks for
// more choices that way).
//
// A prompt that a plugin has already rendered in Qwen2.5-Coder's or
// StarCoder's fill-in-the-middle format, with no suffix field (Continue,
// Twinny and llama.vscode do this), is taken apart again (splitFIMPrompt):
// infill builds its own prompt from the prefix, suffix, file path,
// repository name and snippets it carried, ranked with infill's own context.

// v1Body is a POST /v1/completions body, OpenAI's or Tabby's: both are
// decoded at once, and segments tells them apart.
type v1Body struct {
	// OpenAI
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Suffix        *string         `json:"suffix"`
	MaxTokens     *int            `json:"max_tokens"`
	N             *int            `json:"n"`
	Stop          json.RawMessage `json:"stop"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`

	// Both
	Temperature *float32 `json:"temperature"`
	TopP        *float32 `json:"top_p"`
	Seed        *int64   `json:"seed"`

	// Tabby
	Language string         `json:"language"`
	Segments *tabbySegments `json:"segments"`
	Mode     string         `json:"mode"`
}

// registerV1 adds the /v1 paths: OpenAI's and Tabby's.
func (h *Handler) registerV1() {
	h.route("/v1/completions", dialectOpenAI, map[string]http.HandlerFunc{http.MethodPost: h.v1Completions})
	models := h.openAIModels(time.Now().Unix())
	h.route("/v1/models", dialectOpenAI, map[string]http.HandlerFunc{http.MethodGet: models})
	h.registerTabby()
}

// v1Completions serves POST /v1/completions in the dialect its body speaks.
func (h *Handler) v1Completions(w http.ResponseWriter, r *http.Request) {
	var b v1Body
	if err := decodeJSON(r, &b); err != nil {
		writeError(w, r, dialectOpenAI, err)
		return
	}
	if b.Segments != nil {
		setDialect(r, dialectTabby)
		h.tabbyComplete(w, r, &b)
		return
	}
	if prompt, err := promptText(b.Prompt); err == nil && b.Suffix == nil {
		if z, ok := parseZetaPrompt(prompt); ok {
			h.openAIZeta(w, r, &b, z) // Zed's Zeta requests (zed.go)
			return
		}
	}
	f, err := b.openAIRequest(h.cfg.ContextTokens)
	if err != nil {
		writeError(w, r, dialectOpenAI, err)
		return
	}
	created := time.Now().Unix()
	if b.Stream {
		h.openAIStream(w, r, f, created, b.StreamOptions != nil && b.StreamOptions.IncludeUsage)
		return
	}
	res, err := h.complete(r.Context(), f, "openai", pipeline.Stream{})
	if err != nil {
		writeError(w, r, dialectOpenAI, err)
		return
	}
	out := openAICompletion{ID: completionID(r), Object: "text_completion", Created: created, Model: res.Model,
		Choices: make([]openAIChoice, len(res.Candidates)), Usage: usageOf(res)}
	for i, c := range res.Candidates {
		fr := finishReason(c.Finish)
		out.Choices[i] = openAIChoice{Text: c.Text, Index: c.Index, FinishReason: &fr}
	}
	writeJSON(w, http.StatusOK, out)
}

// openAIRequest turns an OpenAI body into a fimRequest. max_tokens is
// lowered to a quarter of the model's context (ctxTokens): Continue asks
// for 4096 whatever the model, which would leave little room for the
// repository context, and a completion never needs that much;
// finish_reason "length" tells the client when the cap was reached. -1
// (Twinny's "no limit") means the server's default.
func (b *v1Body) openAIRequest(ctxTokens int) (*fimRequest, error) {
	prompt, err := promptText(b.Prompt)
	if err != nil {
		return nil, err
	}
	f := &fimRequest{Model: b.Model}
	switch p, ok := splitFIMPrompt(prompt); {
	case b.Suffix != nil:
		f.Prefix, f.Suffix = prompt, *b.Suffix
	case ok:
		f.Prefix, f.Suffix, f.Path, f.RepoName, f.Extra = p.prefix, p.suffix, p.path, p.repo, p.extra
	default:
		f.Prefix = prompt
	}
	stop, err := stopList(b.Stop)
	if err != nil {
		return nil, err
	}
	f.Generation = pipeline.Generation{Temperature: b.Temperature, TopP: b.TopP, Seed: b.Seed, Stop: stop}
	switch n := b.MaxTokens; {
	case n == nil, *n == -1: // Twinny's "no limit": the server's default
	case *n < 0:
		return nil, badRequest("max_tokens", "max_tokens must not be negative")
	default:
		f.Generation.MaxTokens = min(*n, maxTokensCap(ctxTokens))
	}
	if b.N != nil {
		if *b.N < 1 {
			return nil, badRequest("n", "n must be at least 1")
		}
		f.Generation.Candidates = *b.N
	}
	drawSeed(&f.Generation)
	return f, nil
}

// drawSeed gives a sampling request without a seed a random one: the
// backend's default seed is fixed, so repeated requests would otherwise
// return the same text, where OpenAI's and Tabby's servers vary.
func drawSeed(g *pipeline.Generation) {
	if g.Seed == nil && g.Temperature != nil && *g.Temperature > 0 {
		s := rand.Int64N(1 << 31)
		g.Seed = &s
	}
}

// promptText reads OpenAI's prompt: a string, or an array of one string.
// Token arrays and several prompts at once are refused.
func promptText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", badRequest("prompt", "prompt is required (or, for Tabby's API, segments)")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return "", badRequest("prompt", "prompt must be one string; %d prompts in one request are not supported", len(list))
		}
		return list[0], nil
	}
	return "", badRequest("prompt", "prompt must be a string (token arrays are not supported)")
}

// stopList reads OpenAI's stop: null, a string or an array of strings.
func stopList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list, nil
	}
	return nil, badRequest("stop", "stop must be a string or an array of strings")
}

// fimParts is what a client-rendered FIM prompt carried.
type fimParts struct {
	prefix, suffix, path, repo string
	extra                      []snippet
}

// fimFormat names the control tokens of a fill-in-the-middle format.
type fimFormat struct{ prefix, suffix, middle, fileSep, repoName string }

// fimFormats are the formats clients render: Qwen2.5-Coder's (Continue for
// a model named "*qwen*coder*", Twinny's "codeqwen", llama.vscode's
// openai_prompt_template) and StarCoder's (Continue and Twinny for several
// other model names).
var fimFormats = [...]fimFormat{
	{contextpack.FIMPrefix, contextpack.FIMSuffix, contextpack.FIMMiddle, contextpack.FileSep, contextpack.RepoName},
	{"<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>", "<repo_name>"},
}

// splitFIMPrompt takes apart a prompt a client rendered as
//
//	[<|repo_name|>NAME\n] [TEXT] (<|file_sep|>PATH\nTEXT)* [<|file_sep|>PATH\n]
//	<|fim_prefix|>PREFIX<|fim_suffix|>SUFFIX<|fim_middle|>
//
// (Continue's qwenMultifileFimTemplate; the plain form is everyone's): a
// file section with no text names the cursor file, the others are
// snippets, as is text before the first separator (llama.vscode's
// "Context:" block). It reports false unless the prompt ends with the
// middle token and holds the prefix and suffix tokens before it; the last
// ones are taken, so source code that mentions the tokens is cut only if
// it is in the prefix or suffix of a prompt that really is FIM.
func splitFIMPrompt(p string) (fimParts, bool) {
	for _, m := range fimFormats {
		body, ok := strings.CutSuffix(p, m.middle)
		if !ok {
			continue
		}
		j := strings.LastIndex(body, m.suffix)
		if j < 0 {
			continue
		}
		i := strings.LastIndex(body[:j], m.prefix)
		if i < 0 {
			continue
		}
		out := fimParts{prefix: body[i+len(m.prefix) : j], suffix: body[j+len(m.suffix):]}
		out.readHead(body[:i], m)
		return out, true
	}
	return fimParts{}, false
}

// readHead reads the repository name, snippets and cursor path before the
// prefix token.
func (out *fimParts) readHead(head string, m fimFormat) {
	if rest, ok := strings.CutPrefix(head, m.repoName); ok {
		name, after, _ := strings.Cut(rest, "\n")
		out.repo, head = strings.TrimSpace(name), after
	}
	sections := strings.Split(head, m.fileSep)
	if strings.TrimSpace(sections[0]) != "" {
		out.extra = append(out.extra, snippet{Text: strings.TrimSpace(sections[0])})
	}
	for k, sec := range sections[1:] {
		path, text, _ := strings.Cut(sec, "\n")
		if !plausiblePath(path) {
			path, text = "", sec
		}
		text = strings.TrimRight(text, "\n")
		if strings.TrimSpace(text) == "" {
			if k == len(sections)-2 && path != "" {
				out.path = path // the section just before the prefix: the cursor file
			}
			continue
		}
		out.extra = append(out.extra, snippet{Path: path, Text: text})
	}
}

// plausiblePath reports whether the first line of a file section is a
// path (Twinny puts comments there instead).
func plausiblePath(s string) bool {
	return s != "" && len(s) <= 1024 && !strings.ContainsAny(s, " \t\r")
}

// openAICompletion is a completion and each streamed chunk of one.
type openAICompletion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []openAIChoice `json:"choices"`
	Usage   *openAIUsage   `json:"usage,omitempty"`
}

type openAIChoice struct {
	Text         string    `json:"text"`
	Index        int       `json:"index"`
	Logprobs     *struct{} `json:"logprobs"` // always null
	FinishReason *string   `json:"finish_reason"`
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// usageOf reports the backend's prompt count, or infill's exact count of
// the prompt where the backend reported none.
func usageOf(res *pipeline.Result) *openAIUsage {
	p := res.PromptTokens
	if p == 0 {
		p = res.PlannedPromptTokens
	}
	return &openAIUsage{PromptTokens: p, CompletionTokens: res.CompletionTokens, TotalTokens: p + res.CompletionTokens}
}

// finishReason maps infill's finish reasons to OpenAI's: a stop token or
// stop string is "stop"; max_tokens and a latency budget are "length"
// (the text was cut short, not finished).
func finishReason(f inference.FinishReason) string {
	switch f {
	case inference.FinishLength, inference.FinishBudget:
		return "length"
	}
	return "stop"
}

// completionID is the response id: the request id (X-Request-Id, and the
// log line's) with OpenAI's prefix.
func completionID(r *http.Request) string { return "cmpl-" + pipeline.RequestID(r.Context()) }

// openAIStream answers with server-sent events as OpenAI does: a chunk per
// piece of text, a chunk with each candidate's finish_reason, the usage
// chunk when asked for, then "data: [DONE]". Headers wait for the first
// text, so an error before it (a bad option, the backend down) still gets
// its HTTP status; an error after it is an {"error": ...} event, which the
// OpenAI clients and Continue raise.
func (h *Handler) openAIStream(w http.ResponseWriter, r *http.Request, f *fimRequest, created int64, includeUsage bool) {
	sw := &sseWriter{w: w}
	id := completionID(r)
	model := ""
	chunk := func(choices []openAIChoice, usage *openAIUsage) openAICompletion {
		return openAICompletion{ID: id, Object: "text_completion", Created: created, Model: model, Choices: choices, Usage: usage}
	}
	res, err := h.complete(r.Context(), f, "openai", pipeline.Stream{
		OnStart: func(s pipeline.Start) error { model = s.Model; return nil },
		OnDelta: func(i int, text string) error {
			return sw.event(chunk([]openAIChoice{{Text: text, Index: i}}, nil))
		},
	})
	if err != nil {
		h.streamFailed(w, r, sw, dialectOpenAI, err)
		return
	}
	model = res.Model
	for _, c := range res.Candidates {
		fr := finishReason(c.Finish)
		if err := sw.event(chunk([]openAIChoice{{Index: c.Index, FinishReason: &fr}}, nil)); err != nil {
			return
		}
	}
	if includeUsage {
		if err := sw.event(chunk([]openAIChoice{}, usageOf(res))); err != nil {
			return
		}
	}
	_ = sw.done()
}

// streamFailed reports err: as an HTTP error while nothing is written,
// else as an error event. A client that went away gets nothing.
func (h *Handler) streamFailed(w http.ResponseWriter, r *http.Request, sw *sseWriter, d dialect, err error) {
	if !sw.started {
		writeError(w, r, d, err)
		return
	}
	infoOf(r).err = err
	if r.Context().Err() != nil {
		return
	}
	p := toProblem(err)
	e := streamError{Message: p.msg, Type: p.typ}
	if p.param != "" {
		e.Param = &p.param
	}
	_ = sw.event(struct {
		Error streamError `json:"error"`
	}{e})
}

// streamError is an error event's body: OpenAI's error object (code is
// always null).
type streamError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// sseWriter writes server-sent events, sending the headers with the first.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
}

var (
	dataColon        = []byte("data:")
	dataColonEscaped = []byte(`data\u003a`)
)

// event writes v as one "data:" event and flushes it. Inside the JSON,
// "data:" is written with its colon escaped (the same JSON): Twinny finds
// an event's JSON with line.split("data:")[1], which a completion holding
// "data:" (a Python annotation, a YAML key) would cut short.
func (s *sseWriter) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = bytes.ReplaceAll(b, dataColon, dataColonEscaped)
	return s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// done writes OpenAI's end of stream.
func (s *sseWriter) done() error { return s.write([]byte("data: [DONE]\n\n")) }

func (s *sseWriter) write(b []byte) error {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// openAIModels serves GET /v1/models: OpenAI's list with the one model
// the server completes with by default, and its context size
// (context_length, which llama.vscode reads).
func (h *Handler) openAIModels(created int64) http.HandlerFunc {
	type model struct {
		ID            string `json:"id"`
		Object        string `json:"object"`
		Created       int64  `json:"created"`
		OwnedBy       string `json:"owned_by"`
		ContextLength int    `json:"context_length"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{ID: h.cfg.DefaultModel, Object: "model", Created: created, OwnedBy: "infill", ContextLength: h.cfg.ContextTokens}}}
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, body) }
}

package httpapi

// The llama.cpp server dialect (tools/server in github.com/ggml-org/llama.cpp),
// as llama.vim and llama.vscode use it: POST /infill, GET /health, GET /props.
// What each request field does here is tabled in docs/api.md ("llama.cpp /infill");
// the fields the plugins send and infill knowingly ignores are
// listed there too.

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

func (h *Handler) registerLlamaCpp() {
	last := &lastCursor{}
	h.route("/infill", dialectLlamaCpp, map[string]http.HandlerFunc{http.MethodPost: func(w http.ResponseWriter, r *http.Request) {
		h.infill(w, r, last)
	}})
	h.route("/health", dialectLlamaCpp, map[string]http.HandlerFunc{http.MethodGet: h.llamaHealth})
	h.route("/props", dialectLlamaCpp, map[string]http.HandlerFunc{http.MethodGet: h.llamaProps})
}

// infillRequest is a llama.cpp /infill body: the fields infill uses. Any
// other field (id_slot, cache_prompt, samplers, t_max_prompt_ms, model,
// lora, input_extra items' "time", ...) is accepted and ignored.
type infillRequest struct {
	InputPrefix string `json:"input_prefix"`
	InputSuffix string `json:"input_suffix"`
	InputExtra  []struct {
		Filename string `json:"filename"`
		Text     string `json:"text"`
	} `json:"input_extra"`
	// Prompt is the text before the cursor on its line (llama.cpp puts it
	// after FIM_MID; here it ends the prefix, which is the same text).
	Prompt         string   `json:"prompt"`
	NPredict       *int     `json:"n_predict"`
	NIndent        int      `json:"n_indent"`
	NCmpl          int      `json:"n_cmpl"`
	Stop           []string `json:"stop"`
	Temperature    *float32 `json:"temperature"`
	TopK           *int     `json:"top_k"`
	TopP           *float32 `json:"top_p"`
	Seed           *int64   `json:"seed"`
	Stream         bool     `json:"stream"`
	TMaxPredictMS  int64    `json:"t_max_predict_ms"`
	ResponseFields []string `json:"response_fields"`
}

// lastCursor remembers the text around the cursor of the last completion
// asked of /infill. The plugins' warm-ups (n_predict 0) send new cross-file
// context with no cursor: infill chooses context for a cursor and puts it
// in the prompt before the cursor's file, so a warm-up is only worth its
// backend time when it builds the prompt the next keystroke will build,
// which is the last cursor's with the new context. Without one it would
// evaluate a near-empty prompt and, worse, push the last prompt out of
// Ollama's cache. One server serves one editor in the plugins' design, so
// one cursor is kept.
type lastCursor struct {
	mu             sync.Mutex
	prefix, suffix string
	ok             bool
}

func (l *lastCursor) set(prefix, suffix string) {
	l.mu.Lock()
	l.prefix, l.suffix, l.ok = prefix, suffix, true
	l.mu.Unlock()
}

func (l *lastCursor) get() (prefix, suffix string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prefix, l.suffix, l.ok
}

func (h *Handler) infill(w http.ResponseWriter, r *http.Request, last *lastCursor) {
	var q infillRequest
	if err := decodeJSON(r, &q); err != nil {
		writeError(w, r, dialectLlamaCpp, err)
		return
	}
	f := h.fromInfill(&q)
	switch {
	case !f.Generation.WarmOnly:
		last.set(f.Prefix, f.Suffix)
	case f.Prefix == "" && f.Suffix == "":
		prefix, suffix, ok := last.get()
		if !ok { // nothing to warm yet: answer at once, leave the backend's cache alone
			res := &pipeline.Result{Model: h.cfg.DefaultModel, Candidates: []inference.Candidate{{Finish: inference.FinishLength}}}
			writeJSON(w, http.StatusOK, selectFields(h.infillResult(res, res.Candidates[0], &q, false), q.ResponseFields))
			return
		}
		f.Prefix, f.Suffix = prefix, suffix
	}
	if q.Stream {
		h.infillStream(w, r, &q, f)
		return
	}
	res, err := h.complete(r.Context(), f, dialectLlamaCpp.String(), pipeline.Stream{})
	if err != nil {
		writeError(w, r, dialectLlamaCpp, err)
		return
	}
	out := make([]any, len(res.Candidates))
	for i, c := range res.Candidates {
		out[i] = selectFields(h.infillResult(res, c, &q, false), q.ResponseFields)
	}
	if len(out) == 1 {
		writeJSON(w, http.StatusOK, out[0])
		return
	}
	writeJSON(w, http.StatusOK, out) // n_cmpl > 1: an array, as llama.cpp answers it
}

// fromInfill maps the llama.cpp fields onto infill's request.
func (h *Handler) fromInfill(q *infillRequest) *fimRequest {
	f := &fimRequest{Prefix: q.InputPrefix + q.Prompt, Suffix: q.InputSuffix, Class: pipeline.Interactive}
	for _, e := range q.InputExtra {
		f.Extra = append(f.Extra, snippet{Path: e.Filename, Text: e.Text})
	}
	g := &f.Generation
	switch n := q.NPredict; {
	case n == nil: // the server's default
	case *n == 0:
		g.WarmOnly = true
	default:
		g.MaxTokens = h.pluginMaxTokens(*n)
	}
	g.MinIndent = max(q.NIndent, 0)
	if q.TMaxPredictMS > 0 {
		g.LineBudget = time.Duration(q.TMaxPredictMS) * time.Millisecond
	}
	g.Stop = nonEmpty(q.Stop)
	g.TopP = q.TopP
	if t := q.Temperature; t != nil {
		g.Temperature = new(float32)
		*g.Temperature = max(*t, 0) // llama.cpp: temperature <= 0 is greedy
	}
	if k := q.TopK; k != nil && *k > 0 { // llama.cpp: top_k <= 0 disables it
		g.TopK = k
	}
	if s := q.Seed; s != nil && *s >= 0 { // llama.cpp: -1 is a random seed
		g.Seed = s
	}
	// n_cmpl candidates differ only when sampling; greedy ones would be n
	// copies of one completion, each costing a whole generation here
	// (Ollama makes one per request), so a greedy request gets one.
	if q.NCmpl > 1 && g.Temperature != nil && *g.Temperature > 0 {
		g.Candidates = q.NCmpl
	}
	return f
}

// pluginMaxTokens is the generation limit for a plugin's n_predict or
// num_predict n. Both servers treat the value as a ceiling and never refuse
// it, while infill refuses what does not fit the context, so it is lowered
// to a quarter of the context. "No limit" (negative) is the server's
// default (--max-tokens): a completion is not worth waiting for the
// context to fill.
func (h *Handler) pluginMaxTokens(n int) int {
	if n < 0 {
		return 0
	}
	return min(n, maxTokensCap(h.cfg.ContextTokens))
}

// maxTokensCap is the most a plugin's request generates: a quarter of the
// context, which leaves the rest to the prompt and its repository context
// (every HTTP dialect lowers larger asks to it).
func maxTokensCap(contextTokens int) int { return max(contextTokens/4, 1) }

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// infillStream answers stream:true as llama.cpp does: one server-sent event
// per piece of text ("data: {...}\n\n", stop false), then a final event per
// candidate with stop true, the timings and, as in llama.cpp's stream mode,
// empty content. Headers go out with the first event, so an error before
// any text still gets its status; an error after it is an "error: {...}"
// event, as llama.cpp writes it.
func (h *Handler) infillStream(w http.ResponseWriter, r *http.Request, q *infillRequest, f *fimRequest) {
	ev := &streamWriter{w: w, contentType: "text/event-stream"}
	planned, deltas := 0, map[int]int{}
	res, err := h.complete(r.Context(), f, dialectLlamaCpp.String(), pipeline.Stream{
		OnStart: func(s pipeline.Start) error { planned = s.Manifest.PromptTokens; return nil },
		OnDelta: func(i int, text string) error {
			deltas[i]++
			return ev.send("data: ", infillPartial{Index: i, Content: text, Tokens: []int{}, IDSlot: 0,
				TokensPredicted: deltas[i], TokensEvaluated: planned}, "\n\n")
		},
	})
	if err != nil {
		failStream(w, r, dialectLlamaCpp, ev.started, err, func(p problem) {
			_ = ev.send("error: ", map[string]any{"code": p.status, "message": p.msg, "type": p.typ}, "\n\n")
		})
		return
	}
	for _, c := range res.Candidates {
		if ev.send("data: ", selectFields(h.infillResult(res, c, q, true), q.ResponseFields), "\n\n") != nil {
			return
		}
	}
}

// failStream reports err of a streamed answer: before anything went out,
// as an ordinary error in d's style; after, as the dialect writes an error
// into its stream (inStream), unless the client has gone away.
func failStream(w http.ResponseWriter, r *http.Request, d dialect, started bool, err error, inStream func(problem)) {
	if !started {
		writeError(w, r, d, err)
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	p := toProblem(err)
	if p.status >= 500 {
		infoOf(r).err = err
	}
	inStream(p)
}

// streamWriter writes a streamed answer, one JSON value per message
// (server-sent events for llama.cpp, NDJSON for Ollama), flushing each and
// sending the headers with the first, so that an error before any text
// still gets its status.
type streamWriter struct {
	w           http.ResponseWriter
	contentType string
	started     bool
	buf         bytes.Buffer
}

// send writes v as compact JSON between before and after.
func (s *streamWriter) send(before string, v any, after string) error {
	if !s.started {
		s.started = true
		hd := s.w.Header()
		hd.Set("Content-Type", s.contentType)
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	s.buf.Reset()
	s.buf.WriteString(before)
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	s.buf.Truncate(s.buf.Len() - 1) // Encode's newline
	s.buf.WriteString(after)
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
	return nil
}

// infillPartial is a streamed piece of text, named as llama.cpp names it.
// tokens (token ids) is always empty: Ollama does not report them.
type infillPartial struct {
	Index           int    `json:"index"`
	Content         string `json:"content"`
	Tokens          []int  `json:"tokens"`
	Stop            bool   `json:"stop"`
	IDSlot          int    `json:"id_slot"`
	TokensPredicted int    `json:"tokens_predicted"`
	TokensEvaluated int    `json:"tokens_evaluated"`
}

// infillResult is a finished completion, named and ordered as llama.cpp's
// final response (its "prompt", the rendered prompt with the repository's
// code, is left out).
type infillResult struct {
	Index              int                `json:"index"`
	Content            string             `json:"content"`
	Tokens             []int              `json:"tokens"`
	IDSlot             int                `json:"id_slot"`
	Stop               bool               `json:"stop"`
	Model              string             `json:"model"`
	TokensPredicted    int                `json:"tokens_predicted"`
	TokensEvaluated    int                `json:"tokens_evaluated"`
	GenerationSettings generationSettings `json:"generation_settings"`
	HasNewLine         bool               `json:"has_new_line"`
	Truncated          bool               `json:"truncated"`
	StopType           string             `json:"stop_type"`
	StoppingWord       string             `json:"stopping_word"`
	TokensCached       int                `json:"tokens_cached"`
	Timings            infillTimings      `json:"timings"`
}

// generationSettings are the settings the completion ran with, as far as
// plugins read them (llama.vscode reads n_ctx).
type generationSettings struct {
	NCtx          int      `json:"n_ctx"`
	NPredict      int      `json:"n_predict"`
	Model         string   `json:"model"`
	Seed          int64    `json:"seed"`
	Temperature   float32  `json:"temperature"`
	TopK          int      `json:"top_k"`
	TopP          float32  `json:"top_p"`
	Stop          []string `json:"stop"`
	NIndent       int      `json:"n_indent"`
	TMaxPredictMS int64    `json:"t_max_predict_ms"`
	Stream        bool     `json:"stream"`
}

// infillTimings are llama.cpp's timings. Rates are 0, never NaN or an
// infinity, when a duration is 0 (Go's encoder refuses those, and
// llama.cpp sends them as null, which broke llama.vim's status line).
type infillTimings struct {
	PromptN             int     `json:"prompt_n"`
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
}

func (h *Handler) infillResult(res *pipeline.Result, c inference.Candidate, q *infillRequest, stream bool) infillResult {
	evaluated := res.PromptTokens
	if evaluated == 0 {
		evaluated = res.PlannedPromptTokens
	}
	var predicted time.Duration
	if res.TimeToFirstToken > 0 {
		predicted = res.Total - res.TimeToFirstToken
	}
	g := f32(q.Temperature, 0)
	out := infillResult{
		Index: c.Index, Content: c.Text, Tokens: []int{}, Stop: true, Model: res.Model,
		TokensPredicted: c.Tokens, TokensEvaluated: evaluated,
		GenerationSettings: generationSettings{
			NCtx: h.cfg.ContextTokens, NPredict: -1, Model: res.Model, Temperature: max(g, 0),
			TopP: f32(q.TopP, 1), Stop: nonEmpty(q.Stop), NIndent: max(q.NIndent, 0),
			TMaxPredictMS: max(q.TMaxPredictMS, 0), Stream: q.Stream,
		},
		HasNewLine:   strings.Contains(c.Text, "\n"),
		StopType:     stopType(c.Finish),
		TokensCached: evaluated + c.Tokens,
		Timings: infillTimings{
			PromptN: evaluated, PromptMS: ms(res.PromptEval),
			PromptPerTokenMS: ratio(ms(res.PromptEval), float64(evaluated)),
			PromptPerSecond:  ratio(1000*float64(evaluated), ms(res.PromptEval)),
			PredictedN:       c.Tokens, PredictedMS: ms(predicted),
			PredictedPerTokenMS: ratio(ms(predicted), float64(c.Tokens)),
			PredictedPerSecond:  ratio(1000*float64(c.Tokens), ms(predicted)),
		},
	}
	if out.GenerationSettings.Stop == nil {
		out.GenerationSettings.Stop = []string{}
	}
	if q.NPredict != nil {
		out.GenerationSettings.NPredict = *q.NPredict
	}
	if q.TopK != nil {
		out.GenerationSettings.TopK = max(*q.TopK, 0)
	}
	if q.Seed != nil {
		out.GenerationSettings.Seed = max(*q.Seed, 0)
	}
	if stream {
		out.Content = "" // the text went out in the partial events
	}
	return out
}

func f32(p *float32, def float32) float32 {
	if p == nil {
		return def
	}
	return *p
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ratio is a/b rounded to 3 decimals, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

// stopType names why a candidate ended, as llama.cpp's stop_type does.
func stopType(f inference.FinishReason) string {
	switch f {
	case inference.FinishStop:
		return "eos"
	case inference.FinishStopSequence: // a stop string, or the n_indent rule
		return "word"
	case inference.FinishLength, inference.FinishBudget:
		return "limit"
	}
	return "none"
}

// selectFields applies llama.cpp's response_fields: the response holds only
// the fields named, in that order, a nested field under its whole path
// ("timings/prompt_n"); missing fields are left out. Without
// response_fields the whole result goes out.
//
// The flattened timings are whole numbers: llama.vim reads them with
// str2float(), which in Neovim 0.7 fails on a JSON float (E806: using Float
// as a String) and breaks the completion display, while a whole number (or
// a string) works in every Vim and Neovim.
func selectFields(res infillResult, fields []string) any {
	if len(fields) == 0 {
		return res
	}
	b, _ := json.Marshal(res)
	var all map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	_ = dec.Decode(&all)
	out := orderedObject{}
	seen := map[string]bool{}
	for _, path := range fields {
		if seen[path] {
			continue
		}
		seen[path] = true
		v, ok := lookup(all, path)
		if !ok {
			continue
		}
		if n, isNum := v.(json.Number); isNum && strings.HasPrefix(path, "timings/") {
			if x, err := n.Float64(); err == nil {
				v = json.Number(fmtInt(math.Round(x)))
			}
		}
		out = append(out, field{path, v})
	}
	return out
}

func fmtInt(x float64) string {
	b, _ := json.Marshal(int64(x))
	return string(b)
}

func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, "/") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// orderedObject is a JSON object whose keys keep their order.
type orderedObject []field

type field struct {
	key string
	val any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(f.key); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		if err := enc.Encode(f.val); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// llamaHealth answers GET /health as llama.cpp does once its model is
// loaded, or 503 with the reason while no backend serves the default model
// (WithHealth). It needs no token: Kubernetes probes it.
func (h *Handler) llamaHealth(w http.ResponseWriter, r *http.Request) {
	if err := h.backendDown(); err != nil {
		writeError(w, r, dialectLlamaCpp, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// llamaProps answers GET /props with the fields plugins read
// (default_generation_settings.n_ctx: llama.vscode sizes requests by it).
func (h *Handler) llamaProps(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{
			"id": 0, "id_task": -1, "n_ctx": h.cfg.ContextTokens, "speculative": false, "is_processing": false,
			"params": map[string]any{"n_predict": -1, "temperature": 0, "top_k": 0, "top_p": 1, "stop": []string{}, "stream": false},
		},
		"total_slots":   1,
		"model_path":    h.cfg.DefaultModel,
		"modalities":    map[string]bool{"vision": false, "audio": false},
		"build_info":    "infill " + h.cfg.Version,
		"is_sleeping":   false,
		"chat_template": "",
	})
}

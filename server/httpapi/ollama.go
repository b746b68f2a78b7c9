package httpapi

// The Ollama dialect (API of github.com/ollama/ollama v0.24.0, the version
// go.mod pins), as Continue's and Twinny's "ollama" providers use it:
// POST /api/generate for fill-in-the-middle, GET /api/tags, GET
// /api/version, POST /api/show. Other Ollama endpoints (chat, embeddings,
// model management) answer 501 in Ollama's error style: infill does
// fill-in-the-middle only, and passing them through to the backend is not
// safe (a request with another num_ctx makes Ollama reload the model that
// the completions use). docs/api.md ("Ollama /api/generate") tables what each field
// does.

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// ollamaAPIVersion is the Ollama release whose API this surface follows,
// reported by GET /api/version (clients compare it against the features
// they need).
const ollamaAPIVersion = "0.24.0"

// ollamaFIMTemplate is what /api/show reports as the model's template: the
// Qwen2.5-Coder fill-in-the-middle template of Ollama's library models.
// Continue decides that a model can fill in the middle when the template
// mentions .Suffix, and then sends prefix and suffix apart.
const ollamaFIMTemplate = `{{- if .Suffix }}<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>{{- else }}{{ .Prompt }}{{- end }}`

func (h *Handler) registerOllama() {
	started := time.Now().UTC().Truncate(time.Second)
	h.route("/api/generate", dialectOllama, map[string]http.HandlerFunc{http.MethodPost: h.ollamaGenerate})
	h.route("/api/tags", dialectOllama, map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		h.ollamaTags(w, r, started)
	}})
	h.route("/api/version", dialectOllama, map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": ollamaAPIVersion})
	}})
	h.route("/api/show", dialectOllama, map[string]http.HandlerFunc{http.MethodPost: func(w http.ResponseWriter, r *http.Request) {
		h.ollamaShow(w, r, started)
	}})
	h.handle("/api/", dialectOllama, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, dialectOllama, &httpError{status: http.StatusNotImplemented, msg: fmt.Sprintf(
			"infill does not serve %s: it answers fill-in-the-middle completions only (POST /api/generate "+
				"with a suffix, or a prompt in a FIM template); send chat, embedding and model requests to Ollama itself", r.URL.Path)})
	})
}

// ollamaGenerateRequest is an /api/generate body: the fields infill uses.
// raw, keep_alive, context, system, template, format, images, think and the
// other options (num_ctx, num_thread, mirostat, ...) are accepted and
// ignored.
type ollamaGenerateRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	Suffix string `json:"suffix"`
	Stream *bool  `json:"stream"`
	// Options holds the model options infill honours.
	Options struct {
		NumPredict  *int     `json:"num_predict"`
		Temperature *float32 `json:"temperature"`
		TopP        *float32 `json:"top_p"`
		TopK        *int     `json:"top_k"`
		Seed        *int64   `json:"seed"`
		Stop        []string `json:"stop"`
	} `json:"options"`
}

func (h *Handler) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var q ollamaGenerateRequest
	if err := decodeJSON(r, &q); err != nil {
		writeError(w, r, dialectOllama, err)
		return
	}
	model := q.Model
	if model == "" {
		model = h.cfg.DefaultModel
	}
	stream := q.Stream == nil || *q.Stream // Ollama streams unless told not to
	if q.Prompt == "" && q.Suffix == "" {
		// Ollama loads the model and answers at once; clients use it to
		// preload. The backend's model stays loaded by infill's keep_alive.
		writeJSON(w, http.StatusOK, api.GenerateResponse{Model: model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: "load"})
		return
	}
	if z, ok := parseZetaPrompt(q.Prompt); ok && q.Suffix == "" {
		h.ollamaZeta(w, r, &q, z, model, stream) // Zed's Zeta requests (zed.go)
		return
	}
	f, err := fromOllama(&q)
	if err != nil {
		writeError(w, r, dialectOllama, err)
		return
	}
	f.Model = q.Model
	g := &f.Generation
	if n := q.Options.NumPredict; n != nil {
		limit := *n
		if limit <= 0 {
			limit = -1 // Ollama: 0 and negative mean no limit (llama.cpp: negative)
		}
		g.MaxTokens = h.pluginMaxTokens(limit)
	}
	if t := q.Options.Temperature; t != nil {
		g.Temperature = t
	}
	g.TopP = q.Options.TopP
	if k := q.Options.TopK; k != nil && *k > 0 {
		g.TopK = k
	}
	if s := q.Options.Seed; s != nil && *s >= 0 {
		g.Seed = s
	}
	g.Stop = nonEmpty(q.Options.Stop)

	nd := &streamWriter{w: w, contentType: "application/x-ndjson"}
	var res *pipeline.Result
	if stream {
		res, err = h.complete(r.Context(), f, dialectOllama.String(), pipeline.Stream{
			OnDelta: func(_ int, text string) error {
				return nd.send("", api.GenerateResponse{Model: model, CreatedAt: time.Now().UTC(), Response: text}, "\n")
			},
		})
	} else {
		res, err = h.complete(r.Context(), f, dialectOllama.String(), pipeline.Stream{})
	}
	if err != nil {
		failStream(w, r, dialectOllama, nd.started, err, func(p problem) {
			_ = nd.send("", map[string]string{"error": p.msg}, "\n") // as Ollama reports an error mid-stream
		})
		return
	}
	final := ollamaFinal(model, res)
	if !stream {
		final.Response = res.Candidates[0].Text
		writeJSON(w, http.StatusOK, final)
		return
	}
	_ = nd.send("", final, "\n")
}

// ollamaFinal is the last message of a generation, with Ollama's counts
// and durations (prompt_eval_count is what Ollama reported evaluating).
func ollamaFinal(model string, res *pipeline.Result) api.GenerateResponse {
	c := res.Candidates[0]
	reason := "stop"
	if c.Finish == inference.FinishLength {
		reason = "length"
	}
	var eval time.Duration
	if res.TimeToFirstToken > 0 {
		eval = res.Total - res.TimeToFirstToken
	}
	return api.GenerateResponse{
		Model: model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: reason,
		Metrics: api.Metrics{
			TotalDuration: res.Total, PromptEvalCount: res.PromptTokens, PromptEvalDuration: res.PromptEval,
			EvalCount: c.Tokens, EvalDuration: eval,
		},
	}
}

// fromOllama finds the text around the cursor in an /api/generate request.
// With a suffix, prompt is the prefix (as Continue sends it; its
// repository-level context before its separator becomes context files).
// Without one, the plugin rendered a fill-in-the-middle template itself
// (Twinny always does, Continue when it thinks the model cannot), which
// splitFIMPrompt (Qwen's and StarCoder's tokens, shared with /v1) or
// splitCodeLlama takes apart, or Qwen's repository format with no FIM
// tokens (Twinny's "repository level"): the end of its last file is the
// cursor. Twinny's header and opened files are read out of what they give
// (readTwinny). A prompt in no template is plain generation, which is not
// infill's job: 400.
func fromOllama(q *ollamaGenerateRequest) (*fimRequest, error) {
	f := &fimRequest{Class: pipeline.Interactive}
	if q.Suffix != "" {
		// raw is ignored: infill always renders the prompt itself, while
		// Ollama drops the suffix of a raw request.
		f.Prefix, f.Suffix = q.Prompt, q.Suffix
		if head, prefix, ok := strings.Cut(q.Prompt, continueRepoSeparator); ok {
			var p fimParts
			p.readHead(head, fimFormats[0])
			f.Prefix, f.Path, f.RepoName, f.Extra = prefix, p.path, p.repo, p.extra
		}
		return f, nil
	}
	p, ok := splitFIMPrompt(q.Prompt)
	if !ok {
		p, ok = splitCodeLlama(q.Prompt)
	}
	if !ok {
		p, ok = splitRepoLevel(q.Prompt)
	}
	if !ok {
		return nil, badRequest("suffix", "infill does fill-in-the-middle only: send the text after the cursor in "+
			"\"suffix\" (or a prompt in Qwen's, StarCoder's or CodeLlama's fill-in-the-middle template); "+
			"send plain generation to Ollama itself")
	}
	f.Prefix, f.Suffix, f.Path, f.RepoName = p.prefix, p.suffix, p.path, p.repo
	readTwinny(f, p.extra)
	return f, nil
}

// continueRepoSeparator is what Continue's Qwen multi-file template puts
// between the repository-level context and the prefix.
const continueRepoSeparator = "<|system_separator_istruction_repository_level|>"

// splitCodeLlama takes apart CodeLlama's "<PRE> {prefix} <SUF>{suffix} <MID>"
// (the template of Twinny's default FIM provider, which also puts a space
// after <SUF>) as splitFIMPrompt does the others: the prompt ends with the
// middle token, the last <SUF> and <PRE> before it are taken, and text
// before <PRE> is context.
func splitCodeLlama(prompt string) (fimParts, bool) {
	body, ok := strings.CutSuffix(strings.TrimRight(prompt, " "), "<MID>")
	j := strings.LastIndex(body, "<SUF>")
	if !ok || j < 0 {
		return fimParts{}, false
	}
	i := strings.LastIndex(body[:j], "<PRE>")
	if i < 0 {
		return fimParts{}, false
	}
	out := fimParts{
		prefix: strings.TrimSuffix(strings.TrimPrefix(body[i+len("<PRE>"):j], " "), " "),
		suffix: strings.TrimSuffix(body[j+len("<SUF>"):], " "),
	}
	if head := strings.TrimSpace(body[:i]); head != "" {
		out.extra = []snippet{{Text: head}}
	}
	return out, true
}

// splitRepoLevel reads Qwen's repository format with no FIM tokens,
// "<|repo_name|>name\n" and "<|file_sep|>path\ntext" per file: the last
// file's text is the prefix of its end, the others are context.
func splitRepoLevel(prompt string) (fimParts, bool) {
	m := fimFormats[0]
	i := strings.LastIndex(prompt, m.fileSep)
	if i < 0 || !(strings.HasPrefix(prompt, m.repoName) || strings.HasPrefix(prompt, m.fileSep)) {
		return fimParts{}, false
	}
	var out fimParts
	out.readHead(prompt[:i], m)
	path, prefix, _ := strings.Cut(prompt[i+len(m.fileSep):], "\n")
	if path = strings.TrimSpace(path); plausiblePath(path) {
		out.path = path
	}
	out.prefix = prefix
	return out, true
}

// readTwinny sets f's context files from a client-rendered prompt's
// snippets, reading what Twinny (src/extension/providers/completion.ts)
// writes there: its opened files as "// File: path" / "// Content:"
// chunks in the language's comment (named snippets here), and a header
// naming the cursor file ("Language: Python (python)", "File uri:
// file:///a/b.py (python)"), either as a file section of its own (Qwen's
// format) or at the top of the prefix (the others).
func readTwinny(f *fimRequest, extra []snippet) {
	header := func(m []string) {
		f.Extra = append(f.Extra, contextSnippets(m[1])...)
		f.Path, f.Language = fileURIPath(m[2]), m[3]
	}
	for _, s := range extra {
		switch m := twinnyHeader.FindStringSubmatch("\n" + s.Text + "\n"); {
		case s.Path != "":
			f.Extra = append(f.Extra, s)
		case m != nil:
			header(m)
		default:
			f.Extra = append(f.Extra, contextSnippets(s.Text)...)
		}
	}
	if m := twinnyHeader.FindStringSubmatch(f.Prefix); m != nil {
		header(m)
		f.Prefix = f.Prefix[len(m[0]):]
	}
}

// twinnyHeader is Twinny's prompt header (completion.ts getPromptHeader):
// "<comment> Language: Python (python) <end>" and
// "<comment> File uri: file:///a/b.py (python) <end>", after its file
// context.
var twinnyHeader = regexp.MustCompile(`(?s)^(.*?)\s*\n[^\n]*? Language: [^\n]*\n[^\n]*? File uri: (\S+) \(([^()\s]*)\)[^\n]*\n`)

func fileURIPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return uri
}

// twinnyFile starts a file in Twinny's opened-files context
// (completion.ts getFileInteractionContext).
var twinnyFile = regexp.MustCompile(`(?m)^[^\n]*?// File: (\S+)[ \t]*\n[ \t]*// Content: ?\n ?`)

// contextSnippets is context text a plugin put before the prefix: Twinny's
// opened files ("// File: path" then "// Content:" and the text) each
// become a snippet of that file, other text one snippet without a name.
func contextSnippets(text string) []snippet {
	locs := twinnyFile.FindAllStringSubmatchIndex(text, -1)
	var out []snippet
	before := text
	if len(locs) > 0 {
		before = text[:locs[0][0]]
	}
	if strings.TrimSpace(before) != "" {
		out = append(out, snippet{Text: before})
	}
	for i, l := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := strings.TrimRight(text[l[1]:end], " \n")
		if i == len(locs)-1 { // Twinny wraps the whole context in the language's comment
			for _, closer := range []string{"'''", "*/", "-->"} {
				body = strings.TrimRight(strings.TrimSuffix(body, closer), " \n")
			}
		}
		out = append(out, snippet{Path: text[l[2]:l[3]], Text: body})
	}
	return out
}

func (h *Handler) ollamaModel(modified time.Time) api.ListModelResponse {
	return api.ListModelResponse{
		Name: h.cfg.DefaultModel, Model: h.cfg.DefaultModel, ModifiedAt: modified,
		Details: api.ModelDetails{Format: "gguf", Family: "qwen2", Families: []string{"qwen2"}},
	}
}

// ollamaTags lists the model infill completes with (Continue and Twinny
// offer the names they find here).
func (h *Handler) ollamaTags(w http.ResponseWriter, r *http.Request, modified time.Time) {
	writeJSON(w, http.StatusOK, api.ListResponse{Models: []api.ListModelResponse{h.ollamaModel(modified)}})
}

// ollamaShow describes infill's model so that plugins send
// fill-in-the-middle requests: a template with .Suffix (Continue's test),
// the "insert" capability (Ollama's), and num_ctx among the parameters
// (Continue sizes its prompts by it).
func (h *Handler) ollamaShow(w http.ResponseWriter, r *http.Request, modified time.Time) {
	var q api.ShowRequest
	if err := decodeJSON(r, &q); err != nil {
		writeError(w, r, dialectOllama, err)
		return
	}
	name := q.Model
	if name == "" {
		name = q.Name
	}
	if name != "" && strings.TrimSuffix(name, ":latest") != strings.TrimSuffix(h.cfg.DefaultModel, ":latest") {
		writeError(w, r, dialectOllama, &httpError{status: http.StatusNotFound,
			msg: fmt.Sprintf("model '%s' not found: infill completes with %q", name, h.cfg.DefaultModel)})
		return
	}
	m := h.ollamaModel(modified)
	writeJSON(w, http.StatusOK, api.ShowResponse{
		Parameters: fmt.Sprintf("num_ctx %d", h.cfg.ContextTokens),
		Template:   ollamaFIMTemplate,
		Details:    m.Details,
		ModelInfo: map[string]any{
			"general.architecture": "qwen2", "qwen2.context_length": h.cfg.ContextTokens,
		},
		Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityInsert},
		ModifiedAt:   modified,
	})
}

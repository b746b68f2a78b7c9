package httpapi

// Zed's edit predictions (docs/edit-prediction.md, docs/editors.md): its
// "ollama" provider posts /api/generate and its "open_ai_compatible_api"
// provider posts /v1/completions, both with a raw prompt. For a Zeta model
// the prompt is Zeta's (### Instruction / ### User Edits / ### User
// Excerpt with the editable region marked): infill reads the edits, the
// excerpt, the region and the cursor back out of it, predicts the edit
// with its own prompt (the repository's context from the workspace the
// path lies in) and answers in the shape Zed reads, the region between
// Zeta's markers with the edit made (the region unchanged for no edit:
// Zed diffs the answer against its region). Other formats are
// fill-in-the-middle prompts, completions as every plugin's.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/server/pipeline"
	"github.com/infill-dev/infill/server/workspace"
)

// EditPredictor predicts edits (pipeline.Pipeline). A Completer that is
// one serves Zed's Zeta requests.
type EditPredictor interface {
	PredictEdit(ctx context.Context, req *pipeline.EditRequest, st pipeline.Stream) (*pipeline.EditResult, error)
}

// Zeta's prompt, as Zed renders it (crates/zeta_prompt, zeta1).
const (
	zetaInstruction    = "### Instruction:\n"
	zetaEditsHeader    = "### User Edits:\n\n"
	zetaExcerptHeader  = "\n\n### User Excerpt:\n\n"
	zetaResponseHeader = "\n\n### Response:\n"
	zetaRegionStart    = "<|editable_region_start|>"
	zetaRegionEnd      = "<|editable_region_end|>"
	zetaCursor         = "<|user_cursor_is_here|>"
	zetaFileStart      = "<|start_of_file|>\n"
)

// zetaPrompt is what a Zeta prompt carries.
type zetaPrompt struct {
	edits []pipeline.RecentEdit
	path  string
	// text is the excerpt without its markers; cursor and region are in
	// it (the region Zed will diff the answer against).
	text        string
	cursor      int
	region      pipeline.Span
	startOfFile bool
}

// parseZetaPrompt reads a Zeta prompt; false when p is not one (exactly
// one region with the cursor in it, in a fenced excerpt named by its
// path).
func parseZetaPrompt(p string) (*zetaPrompt, bool) {
	if !strings.HasPrefix(p, zetaInstruction) {
		return nil, false
	}
	i := strings.Index(p, zetaEditsHeader)
	j := strings.LastIndex(p, zetaExcerptHeader)
	k := strings.LastIndex(strings.TrimRight(p, " \n")+"\n", zetaResponseHeader)
	if i < 0 || j < i || k < j {
		return nil, false
	}
	fence, body, ok := strings.Cut(p[j+len(zetaExcerptHeader):k], "\n")
	body, closed := strings.CutSuffix(body, "\n```")
	if !ok || !closed || !strings.HasPrefix(fence, "```") {
		return nil, false
	}
	z := &zetaPrompt{path: strings.TrimSpace(strings.TrimPrefix(fence, "```"))}
	body, z.startOfFile = strings.CutPrefix(body, zetaFileStart)
	if strings.Count(body, zetaRegionStart) != 1 || strings.Count(body, zetaRegionEnd) != 1 || strings.Count(body, zetaCursor) != 1 {
		return nil, false
	}
	before, rest, _ := strings.Cut(body, zetaRegionStart)
	region, after, ok := strings.Cut(rest, zetaRegionEnd)
	region = strings.TrimSuffix(strings.TrimPrefix(region, "\n"), "\n")
	c := strings.Index(region, zetaCursor)
	if !ok || c < 0 {
		return nil, false
	}
	region = region[:c] + region[c+len(zetaCursor):]
	z.text = before + region + after
	z.region = pipeline.Span{Start: len(before), End: len(before) + len(region)}
	z.cursor = len(before) + c
	z.edits = zetaEvents(p[i+len(zetaEditsHeader) : j])
	return z, true
}

// zetaEvents reads Zeta's events: "User edited {path}:\n```diff\n{diff}\n```"
// each ("User renamed …" lines carry no diff and are passed over).
func zetaEvents(s string) []pipeline.RecentEdit {
	var out []pipeline.RecentEdit
	const head, open, shut = "User edited ", ":\n```diff\n", "\n```"
	for {
		i := strings.Index(s, head)
		if i < 0 || (i > 0 && s[i-1] != '\n') {
			return out
		}
		s = s[i+len(head):]
		path, rest, ok := strings.Cut(s, open)
		if !ok || strings.Contains(path, "\n") {
			return out
		}
		diff, after, ok := strings.Cut(rest, shut)
		if !ok {
			return out
		}
		out = append(out, pipeline.RecentEdit{Path: path, Diff: diff})
		s = after
	}
}

// zetaAnswer is the result as a Zeta model's output reads once Zed has cut
// it at the end marker: the region, with the edit made, after the start
// marker (the region itself when there is no edit).
func zetaAnswer(res *pipeline.EditResult) string {
	region := res.File[res.Region.Start:res.Region.End]
	if e := res.Edit; e != nil {
		region = res.File[res.Region.Start:e.Start] + e.Text + res.File[e.End:res.Region.End]
	}
	return zetaRegionStart + "\n" + region + "\n" + zetaRegionEnd
}

// predictZeta predicts the edit a Zeta prompt asks for: the excerpt is the
// cursor file (with the workspace of its path as the repository, the
// path tried without its first element too: Zed names files from its
// worktree's root), the region and the cursor Zed's, the events the
// recent edits (the workspace's own recent changes when there are none).
func (h *Handler) predictZeta(ctx context.Context, z *zetaPrompt, model string, g pipeline.Generation, surface string) (*pipeline.EditResult, error) {
	ep, ok := h.pipe.(EditPredictor)
	if !ok {
		return nil, &httpError{status: http.StatusNotImplemented, msg: "this server does not predict edits"}
	}
	path := z.path
	if h.ws != nil {
		if w, _, err := h.ws.Resolve(path); err == nil && w == nil {
			if _, rest, ok := strings.Cut(path, "/"); ok {
				if w, _, err := h.ws.Resolve(rest); err == nil && w != nil {
					path = rest
				}
			}
		}
	}
	g.Stop = nil // Zeta's end marker, which infill's prompt stops on
	f := &fimRequest{Prefix: z.text[:z.cursor], Suffix: z.text[z.cursor:], Path: path, Model: model, Generation: g,
		Class: pipeline.Interactive}
	req, snap, err := h.toPipeline(f, surface)
	if err != nil {
		return nil, err
	}
	edits := z.edits
	if len(edits) == 0 && snap != nil {
		if w, _, err := h.ws.Resolve(path); err == nil && w != nil {
			for _, e := range w.RecentEdits() {
				edits = append(edits, pipeline.RecentEdit(e))
			}
		}
	}
	region := z.region
	ereq := &pipeline.EditRequest{Request: *req, RecentEdits: edits, Format: pipeline.EditFormatZeta, Region: &region, Partial: !z.startOfFile}
	return retryMissing(req.Context.Files, snap, func() (*pipeline.EditResult, error) {
		return ep.PredictEdit(ctx, ereq, pipeline.Stream{})
	})
}

// retryMissing runs call; when the builder does not hold some workspace
// files sent as digests (the first request, or after eviction), it runs it
// once more with their content.
func retryMissing[T any](files []contextpack.File, snap *workspace.Snapshot, call func() (T, error)) (T, error) {
	res, err := call()
	var me *contextpack.MissingContentError
	if snap != nil && errors.As(err, &me) && withContent(files, snap, me.Paths) {
		res, err = call()
	}
	return res, err
}

// ollamaZeta answers a Zeta prompt posted to /api/generate.
func (h *Handler) ollamaZeta(w http.ResponseWriter, r *http.Request, q *ollamaGenerateRequest, z *zetaPrompt, model string, stream bool) {
	var g pipeline.Generation
	if n := q.Options.NumPredict; n != nil && *n > 0 { // 0 and less: no limit, the server's
		g.MaxTokens = h.pluginMaxTokens(*n)
	}
	g.Temperature, g.TopP, g.Seed = q.Options.Temperature, q.Options.TopP, q.Options.Seed
	res, err := h.predictZeta(r.Context(), z, q.Model, g, dialectOllama.String())
	if err != nil {
		writeError(w, r, dialectOllama, err)
		return
	}
	final := ollamaFinal(model, &res.Result)
	answer := zetaAnswer(res)
	if !stream {
		final.Response = answer
		writeJSON(w, http.StatusOK, final)
		return
	}
	nd := &streamWriter{w: w, contentType: "application/x-ndjson"}
	if err := nd.send("", api.GenerateResponse{Model: model, CreatedAt: time.Now().UTC(), Response: answer}, "\n"); err == nil {
		_ = nd.send("", final, "\n")
	}
}

// openAIZeta answers a Zeta prompt posted to /v1/completions.
func (h *Handler) openAIZeta(w http.ResponseWriter, r *http.Request, b *v1Body, z *zetaPrompt) {
	g := pipeline.Generation{Temperature: b.Temperature, TopP: b.TopP, Seed: b.Seed}
	if n := b.MaxTokens; n != nil && *n > 0 {
		g.MaxTokens = min(*n, maxTokensCap(h.cfg.ContextTokens))
	}
	res, err := h.predictZeta(r.Context(), z, b.Model, g, "openai")
	if err != nil {
		writeError(w, r, dialectOpenAI, err)
		return
	}
	fr := finishReason(res.Candidates[0].Finish)
	out := openAICompletion{ID: completionID(r), Object: "text_completion", Created: time.Now().Unix(), Model: res.Model,
		Choices: []openAIChoice{{Text: zetaAnswer(res), FinishReason: &fr}}, Usage: usageOf(&res.Result)}
	if !b.Stream {
		writeJSON(w, http.StatusOK, out)
		return
	}
	sw := &sseWriter{w: w}
	last := out
	last.Choices = []openAIChoice{{FinishReason: &fr}}
	out.Choices[0].FinishReason, out.Usage, last.Usage = nil, nil, nil
	if sw.event(out) == nil && sw.event(last) == nil {
		_ = sw.done()
	}
}

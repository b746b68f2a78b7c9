package pipeline

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/internal/editregion"
	"github.com/infill-dev/infill/internal/errkind"
)

// Edit prediction (docs/edit-prediction.md): PredictEdit turns the recent
// edits, the cursor and the repository into a prompt in an edit model's
// own format (Zeta's or Instinct's, editformat.go) with contextpack's
// cross-file context under the budget (editprompt.go), generates through
// the same admission, latest-wins, cancellation and latency budget as
// Complete, and reads the model's rewrite of the editable region back
// into the smallest edit, or no edit with the reason (editparse.go).

// EditFormat is the prompt format of an edit-prediction model.
type EditFormat int

// Edit prompt formats.
const (
	// EditFormatUnspecified: by the model's name, else EditConfig.Format.
	EditFormatUnspecified EditFormat = iota
	// EditFormatZeta is Zed's Zeta (zed-industries/zeta).
	EditFormatZeta
	// EditFormatInstinct is Continue's Instinct (continuedev/instinct).
	EditFormatInstinct
)

var editFormatNames = [...]string{"", "zeta", "instinct"}

func (f EditFormat) String() string {
	if f >= 0 && int(f) < len(editFormatNames) {
		return editFormatNames[f]
	}
	return "EditFormat(" + strconv.Itoa(int(f)) + ")"
}

// ParseEditFormat reads "zeta" or "instinct".
func ParseEditFormat(s string) (EditFormat, error) {
	for i, n := range editFormatNames {
		if n != "" && strings.EqualFold(s, n) {
			return EditFormat(i), nil
		}
	}
	return 0, fmt.Errorf("unknown edit prompt format %q: want zeta or instinct", s)
}

// EditFormatForModel is the format a model's name says: a name (its last
// path element, before any ":tag") containing "zeta" is Zeta's, one
// containing "instinct" Instinct's (Zed's Ollama provider tells Zeta
// models the same way); EditFormatUnspecified otherwise.
func EditFormatForModel(model string) EditFormat {
	base := strings.ToLower(path.Base(model))
	base, _, _ = strings.Cut(base, ":")
	switch {
	case strings.Contains(base, "zeta"):
		return EditFormatZeta
	case strings.Contains(base, "instinct"):
		return EditFormatInstinct
	}
	return EditFormatUnspecified
}

// EditConfig configures edit prediction.
type EditConfig struct {
	// Format is the prompt format of a request that names none and whose
	// model's name says none.
	Format EditFormat
	// MaxTokens is the generation budget of a request that sets none: the
	// region rewritten (Zeta also repeats the excerpt before it).
	MaxTokens int
	// HistoryTokens caps the recent edits' share of the prompt (newest
	// kept first).
	HistoryTokens int
	// MaxRecentEdits and MaxDiffBytes bound what a request may send.
	MaxRecentEdits int
	MaxDiffBytes   int
}

// DefaultEditConfig returns the defaults: Zeta, 512 tokens to generate,
// 1,024 tokens of history, at most 64 recent edits of 64 KiB each.
func DefaultEditConfig() EditConfig {
	return EditConfig{Format: EditFormatZeta, MaxTokens: 512, HistoryTokens: 1024, MaxRecentEdits: 64, MaxDiffBytes: 64 << 10}
}

// Validate reports a configuration that cannot work.
func (c EditConfig) Validate() error {
	if c.Format != EditFormatZeta && c.Format != EditFormatInstinct {
		return fmt.Errorf("pipeline: edit format %v: want zeta or instinct", c.Format)
	}
	if c.MaxTokens < 1 || c.HistoryTokens < 0 || c.MaxRecentEdits < 0 || c.MaxDiffBytes < 1 {
		return fmt.Errorf("pipeline: edit MaxTokens (%d) and MaxDiffBytes (%d) must be >= 1, HistoryTokens (%d) and MaxRecentEdits (%d) >= 0",
			c.MaxTokens, c.MaxDiffBytes, c.HistoryTokens, c.MaxRecentEdits)
	}
	return nil
}

// RecentEdit is one change the user made: a unified diff of a file (hunks
// with "@@ -a,b +c,d @@" headers; "---"/"+++" lines optional).
type RecentEdit struct {
	// Path is relative to the repository root.
	Path string
	Diff string
	// Time is when the change was made; zero when unknown.
	Time time.Time
}

// Span is the byte range [Start, End) of a text.
type Span = editregion.Span

// EditRequest is one edit prediction, as every surface decodes it.
type EditRequest struct {
	// Request is the repository, cursor, budget, generation, model, ids,
	// latency budget and class, as for a completion; Generation.Candidates
	// must be at most 1.
	Request
	// RecentEdits are the user's changes, oldest first.
	RecentEdits []RecentEdit
	// Format is the prompt format; EditFormatUnspecified chooses by the
	// model's name, else EditConfig.Format.
	Format EditFormat
	// Region, when set, is the editable region the caller chose (byte
	// offsets in the cursor file, holding the cursor): Zed's, whose answer
	// it diffs against its own region. nil: the format's region around the
	// cursor.
	Region *Span
	// FormatWindow says that the excerpt around a caller's Region is the
	// format's excerpt around the cursor, widened to hold the region (a
	// next-edit benchmark's task: the whole file, its region chosen by the
	// format's rule, editregion). Otherwise the cursor file is the
	// excerpt (Zed's requests send theirs).
	FormatWindow bool
	// Partial says the cursor file holds only part of the file (an
	// editor's excerpt): Zeta's prompt then does not mark its start as the
	// start of the file.
	Partial bool
}

// PredictedEdit replaces Span of the cursor file with Text.
type PredictedEdit struct {
	Path string
	Span
	Text string
}

// EditResult is a finished edit prediction.
type EditResult struct {
	// Result is the generation's: Candidates[0].Text is the model's output
	// as it came (PredictEditResponse.raw_output) and its finish reason.
	Result
	Format EditFormat
	// Edit is the smallest edit that turns the region into the model's
	// rewrite of it; nil when there is none, and NoEditReason says why.
	Edit         *PredictedEdit
	NoEditReason string
	// Region is the editable region; Path and File the cursor file and its
	// text, which the spans index.
	Region Span
	Path   string
	File   string
}

// PromptCounter counts a finished raw prompt exactly
// (contextpack.Builder.CountPrompt): the builder of a pipeline that
// predicts edits implements it.
type PromptCounter interface {
	CountPrompt(text string) int
}

// ErrNoEditPrediction: the pipeline's builder cannot count prompts
// (FAILED_PRECONDITION).
var ErrNoEditPrediction = errkind.New(errkind.FailedPrecondition,
	"edit prediction needs a prompt builder that counts prompts (contextpack.Builder)")

// PredictEdit predicts the next edit. It runs as Complete does (the same
// validation, routing, admission, cancellation and latency budget; a
// request naming a session cancels the session's edit prediction still in
// flight, not its completions), with the prompt in the edit model's format
// and no typed-through reuse. With a Stream it reports the start and the
// model's output as it is generated. A latency budget that ends the
// generation before the region is rewritten whole gives no edit, with the
// partial output.
func (p *Pipeline) PredictEdit(ctx context.Context, req *EditRequest, st Stream) (*EditResult, error) {
	if err := p.validateEdit(req); err != nil {
		return nil, err
	}
	counter, ok := p.builder.(PromptCounter)
	if !ok {
		return nil, ErrNoEditPrediction
	}
	format := req.Format
	if format == EditFormatUnspecified {
		format = EditFormatForModel(p.targets[0].Backend.Model(req.Model))
	}
	if format == EditFormatUnspecified {
		format = p.cfg.Edit.Format
	}
	f := editFormats[format]
	r := req.Request
	r.Generation.Stop = append(append([]string(nil), r.Generation.Stop...), f.stops()...)
	if r.Generation.MaxTokens == 0 {
		r.Generation.MaxTokens = p.cfg.Edit.MaxTokens
	}
	var in *editInput
	r.prompt = func(ctx context.Context, creq contextpack.Request) (*contextpack.Prompt, error) {
		fim, err := p.builder.Build(ctx, creq)
		if err != nil {
			return nil, err
		}
		var prompt *contextpack.Prompt
		in, prompt, err = p.editPrompt(f, req, fim, creq.TokenBudget-creq.MaxNewTokens, counter)
		return prompt, err
	}
	res, err := p.Complete(ctx, &r, st)
	if err != nil {
		return nil, err
	}
	out := &EditResult{Result: *res, Format: format, Region: in.region, Path: in.path, File: in.text}
	c := res.Candidates[0]
	newRegion, reason := f.parse(in, c.Text, c.Finish)
	if reason == "" {
		out.Edit, reason = in.edit(newRegion)
	}
	out.NoEditReason = reason
	return out, nil
}

// validateEdit checks a completion's fields and what an edit request
// adds: the candidates, the format, the recent edits and the region's
// shape. Fields are named as in infill.v1.PredictEditRequest.
func (p *Pipeline) validateEdit(req *EditRequest) error {
	for i, e := range req.RecentEdits { // text first, as checkText does for the rest
		field := "recent_edits[" + strconv.Itoa(i) + "]"
		if !utf8.ValidString(e.Path) {
			return notText(field+".path", e.Path)
		}
		if !utf8.ValidString(e.Diff) {
			return notText(field+".diff", e.Diff)
		}
	}
	if err := p.validate(&req.Request); err != nil {
		return err
	}
	cfg := p.cfg.Edit
	switch {
	case req.Generation.Candidates > 1:
		return Invalid("generation.candidates", "an edit prediction makes one candidate")
	case req.Generation.WarmOnly:
		return Invalid("generation", "an edit prediction cannot be a warm-up")
	case req.Format < EditFormatUnspecified || req.Format > EditFormatInstinct:
		return Invalid("format", fmt.Sprintf("unknown value %d", req.Format))
	case len(req.RecentEdits) > cfg.MaxRecentEdits:
		return Invalid("recent_edits", fmt.Sprintf("%d edits exceed the limit of %d", len(req.RecentEdits), cfg.MaxRecentEdits))
	case req.Region != nil && (req.Region.Start < 0 || req.Region.End < req.Region.Start):
		return Invalid("region", fmt.Sprintf("[%d, %d) is not a range", req.Region.Start, req.Region.End))
	}
	for i, e := range req.RecentEdits {
		field := "recent_edits[" + strconv.Itoa(i) + "]"
		switch {
		case e.Path == "" || strings.ContainsAny(e.Path, "\r\n"):
			return Invalid(field+".path", "must be a path: not empty, no line break")
		case len(e.Diff) > cfg.MaxDiffBytes:
			return Invalid(field+".diff", fmt.Sprintf("%d bytes, more than %d", len(e.Diff), cfg.MaxDiffBytes))
		}
	}
	return nil
}

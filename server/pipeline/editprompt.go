package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/internal/editregion"
)

// editInput is what an edit prompt shows: the cursor file, its editable
// region and excerpt, and the recent edits and cross-file context that
// fit the budget.
type editInput struct {
	path   string
	text   string // the cursor file's text
	cursor int
	// region is the editable region and window the excerpt around it
	// (window holds region, region holds the cursor); both are whole
	// lines, from a line's start to a line's end before its line break,
	// unless the caller chose the region (EditRequest.Region).
	region, window Span
	partial        bool
	// edits are the recent edits shown, oldest first, their diffs reduced
	// to hunks (editHunks); context the cross-file sections shown, in
	// contextpack's order (least relevant first).
	edits   []RecentEdit
	context []contextpack.ContextSnippet
}

// editPrompt renders f's prompt for req from the FIM prompt contextpack
// built for it (fim: the cursor file as resolved, and the cross-file
// context), within budget tokens: the instructions and the excerpt are
// always there (ErrBudget when even they do not fit, after the excerpt
// was cut to the region), then the recent edits, newest first, up to
// EditConfig.HistoryTokens, then the context, most relevant first, in
// what is left. The count is exact: the finished prompt is counted and,
// should the estimates have been short, the least relevant context and
// then the oldest edits leave until it fits.
func (p *Pipeline) editPrompt(f editFormat, req *EditRequest, fim *contextpack.Prompt, budget int,
	count PromptCounter) (*editInput, *contextpack.Prompt, error) {
	cur := fim.Cursor
	in := &editInput{path: cur.Path, text: cur.Text, cursor: cur.Offset, partial: req.Partial}
	if r := req.Region; r != nil {
		if r.End > len(cur.Text) || cur.Offset < r.Start || cur.Offset > r.End {
			return nil, nil, Invalid("region", fmt.Sprintf("[%d, %d) must lie in the cursor file (%d bytes) and hold the cursor (%d)",
				r.Start, r.End, len(cur.Text), cur.Offset))
		}
		in.region, in.window = *r, Span{Start: 0, End: len(cur.Text)}
		if req.FormatWindow {
			in.window = f.shape().Window(cur.Text, cur.Offset, *r)
		}
	} else {
		in.region, in.window = f.shape().Around(cur.Text, cur.Offset)
	}
	base := count.CountPrompt(f.render(in))
	if base > budget && in.window != in.region {
		in.window = in.region
		base = count.CountPrompt(f.render(in))
	}
	if base > budget {
		return nil, nil, fmt.Errorf("%w: the edit prompt's instructions and excerpt take %d tokens, the budget leaves %d",
			contextpack.ErrBudget, base, budget)
	}

	used := base
	var edits []RecentEdit
	history := 0
	for i := len(req.RecentEdits) - 1; i >= 0; i-- {
		e := req.RecentEdits[i]
		if e.Diff = editHunks(e.Diff); e.Diff == "" {
			continue
		}
		n := count.CountPrompt(tokenizer.Neutralize(e.Path+"\n"+e.Diff)) + editEntryTokens
		if history+n > p.cfg.Edit.HistoryTokens || used+n > budget {
			break
		}
		history += n
		used += n
		edits = append(edits, e)
	}
	slices.Reverse(edits)
	in.edits = edits
	var context []contextpack.ContextSnippet
	for i := len(fim.Context) - 1; i >= 0; i-- {
		c := fim.Context[i]
		if n := c.Tokens + count.CountPrompt(tokenizer.Neutralize(c.Path)) + editEntryTokens; used+n <= budget {
			used += n
			context = append(context, c)
		}
	}
	slices.Reverse(context)
	in.context = context

	text := f.render(in)
	tokens := count.CountPrompt(text)
	for tokens > budget {
		switch {
		case len(in.context) > 0:
			in.context = in.context[1:]
		case len(in.edits) > 0:
			in.edits = in.edits[1:]
		default:
			return nil, nil, fmt.Errorf("%w: the edit prompt takes %d tokens, the budget leaves %d", contextpack.ErrBudget, tokens, budget)
		}
		text = f.render(in)
		tokens = count.CountPrompt(text)
	}
	prompt := &contextpack.Prompt{Text: text, Tokens: tokens, Snapshot: fim.Snapshot, Cursor: fim.Cursor, Context: in.context,
		Manifest: editManifest(fim.Manifest, in, tokens, budget-base, len(req.RecentEdits))}
	return in, prompt, nil
}

// editEntryTokens is more than the wrapping of one history entry or
// context section costs in either format ("User edited file …", fences,
// markers): an estimate for choosing; the finished prompt is counted.
const editEntryTokens = 16

// editManifest is the FIM prompt's manifest made the edit prompt's: the
// excerpt instead of the FIM window, the context sections the edit prompt
// left out marked so, its exact count, and a warning for recent edits left
// out.
func editManifest(m contextpack.Manifest, in *editInput, tokens, contextBudget, sent int) contextpack.Manifest {
	shown := map[string]bool{}
	out := m
	out.PromptTokens, out.ContextBudget, out.ContextTokens = tokens, contextBudget, 0
	for _, c := range in.context {
		shown[c.Path] = true
		out.ContextTokens += c.Tokens
	}
	first, last := editregion.LineOf(in.text, in.window.Start), editregion.LineOf(in.text, in.window.End)
	rfirst, rlast := editregion.LineOf(in.text, in.region.Start), editregion.LineOf(in.text, in.region.End)
	out.Sources = []contextpack.Source{{Kind: contextpack.SourcePrefix, Path: in.path, StartLine: first + 1, EndLine: last + 1,
		Included: true, Reason: fmt.Sprintf("cursor file excerpt; editable region lines %d-%d", rfirst+1, rlast+1)}}
	for _, s := range m.Sources {
		switch s.Kind {
		case contextpack.SourcePrefix, contextpack.SourceSuffix, contextpack.SourceScopeHeader:
			continue // the FIM window's; the excerpt stands for it
		}
		if s.Included && !shown[s.Path] {
			s.Included, s.Reason = false, s.Reason+"; left out of the edit prompt (budget)"
		}
		out.Sources = append(out.Sources, s)
	}
	out.Warnings = slices.Clone(m.Warnings)
	if n := len(in.edits); n < sent {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d recent edits left out of the edit prompt (history budget or empty diffs)", sent-n, sent))
	}
	return out
}

// editHunks reduces a unified diff to its hunks: lines before the first
// "@@" header ("diff --git", "Index:", "---", "+++", "===") go, and so do
// the final newlines. A diff without a hunk header is kept as it is (a
// client's own shorthand).
func editHunks(diff string) string {
	diff = strings.ReplaceAll(diff, "\r\n", "\n")
	if i := strings.Index(diff, "@@"); i > 0 && (diff[i-1] == '\n') {
		diff = diff[i:]
	}
	return strings.TrimRight(diff, "\n")
}

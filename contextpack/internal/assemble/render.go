package assemble

import (
	"fmt"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Qwen2.5-Coder control tokens used in prompts (contextpack exports them).
const (
	FIMPrefix = "<|fim_prefix|>"
	FIMSuffix = "<|fim_suffix|>"
	FIMMiddle = "<|fim_middle|>"
	RepoName  = "<|repo_name|>"
	FileSep   = "<|file_sep|>"
)

// Result is an assembled prompt: its text, exact token count and
// manifest.
type Result struct {
	Text             string
	Tokens           int
	TokenBudget      int
	GenerationTokens int
	ContextBudget    int
	ContextTokens    int
	Sources          []Source
	Warnings         []string
	// CursorText is the cursor file's whole text.
	CursorText string
	// Context is the cross-file context of the head, one entry per file
	// section in prompt order (least relevant first).
	Context []Snippet
}

// Snippet is one file's section of a prompt's cross-file context: its
// path and its text as rendered (line ranges with elision lines between
// them, special-token text neutralised, ending with a newline), without
// the file separator and path line; Tokens counts Text.
type Snippet struct {
	Path   string
	Text   string
	Tokens int
}

// Source is one piece of context that was considered (a manifest
// line).
type Source struct {
	Kind SourceKind
	Path string
	// startLine and endLine are 1-based and inclusive; 0 for a whole file.
	StartLine, EndLine int
	Tokens             int
	Included           bool
	Reason             string
	Score              float64
}

// OverBudgetError is an assembly whose count exceeds its budget: a bug in
// the accounting, never a real case.
type OverBudgetError struct {
	Tokens, Budget int
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("internal accounting error (%d tokens for %d)", e.Tokens, e.Budget)
}

// renderHead writes the prompt up to the cursor file's path line (for the
// repository-level format): the repository name, the stable tier and the
// cursor tier, least relevant first. It depends on the selection alone.
//
//	<|repo_name|>name
//	<|file_sep|>path      stable tier: imported files, least relevant first
//	...
//	<|file_sep|>path      cursor tier: fused snippets, least relevant first
//	...
//	<|file_sep|>target
func (as *Assembly) renderHead() {
	s := &as.sel
	s.headDone = true
	if !as.repoLevel {
		return
	}
	p := as.params
	var sb strings.Builder
	tokens, context := 0, 0
	if as.input.RepoName != "" {
		sb.WriteString(RepoName)
		sb.WriteString(p.Neutral(as.input.RepoName))
		sb.WriteString("\n")
		tokens += 1 + p.Counter.plain(as.input.RepoName+"\n")
	}
	var snippets []Snippet
	writeBlock := func(sl *index.File, rs []LineRange) {
		sb.WriteString(FileSep)
		sb.WriteString(p.Neutral(sl.Path))
		sb.WriteString("\n")
		var text strings.Builder
		writeRanges(&text, p.Neutral, sl.Analysis, rs, -1, -1)
		sb.WriteString(text.String())
		body := p.Counter.rangesTokens(sl.Analysis, rs, -1, -1)
		snippets = append(snippets, Snippet{Path: sl.Path, Text: text.String(), Tokens: body})
		n := as.headTokens(sl) + body
		tokens += n
		context += n
	}
	for i := len(s.stable) - 1; i >= 0; i-- {
		writeBlock(s.stable[i].file, s.stable[i].ranges)
	}
	bls := make([]*block, 0, len(s.blocks))
	for _, bl := range s.blocks {
		bls = append(bls, bl)
	}
	slices.SortFunc(bls, func(x, y *block) int {
		if x.best != y.best {
			if x.best < y.best {
				return -1
			}
			return 1
		}
		return strings.Compare(x.file.Path, y.file.Path)
	})
	for _, bl := range bls {
		writeBlock(bl.file, bl.ranges)
	}
	sb.WriteString(FileSep)
	sb.WriteString(p.Neutral(as.input.Cursor.Path))
	sb.WriteString("\n")
	tokens += as.headTokens(as.input.Cursor)
	s.head, s.headTokens, s.headContext, s.headSnippets = sb.String(), tokens, context, snippets
}

// render writes the prompt and the manifest: the head (renderHead), then
// the cursor file's fill-in-the-middle block,
//
//	<|fim_prefix|>[same-file context, scope headers, elisions]prefix<|fim_suffix|>suffix[same-file context]<|fim_middle|>
//
// Everything before the target depends on the cursor file and the
// repository only (stable tier) or on the region around the cursor
// (cursor tier), so a keystroke changes the prompt from the cursor on and
// the backend's prompt cache keeps the rest.
func (as *Assembly) render() (*Result, error) {
	p := as.params
	a := as.text
	s := &as.sel
	var sb strings.Builder
	sb.Grow(len(a.Content)/2 + 4096)
	res := &Result{TokenBudget: as.input.TokenBudget, GenerationTokens: as.input.MaxNewTokens, ContextBudget: as.contextBudget}
	sb.WriteString(s.head)
	tokens := s.headTokens
	res.ContextTokens = s.headContext
	psl := as.prefixFirstLine()
	sb.WriteString(FIMPrefix)
	above := as.aboveRanges(s.above)
	writeRanges(&sb, p.Neutral, a, above, -1, psl)
	pre := a.Content[as.window.preStart:as.input.Offset]
	sb.WriteString(p.Neutral(pre))
	sb.WriteString(FIMSuffix)
	sb.WriteString(p.Neutral(a.Content[as.input.Offset:as.window.sufEnd]))
	below := mergeRanges(s.below)
	writeRanges(&sb, p.Neutral, a, below, as.windowLines.Last+1, -1)
	sb.WriteString(FIMMiddle)
	local := p.Counter.rangesTokens(a, above, -1, psl) + as.window.preTokens + as.window.sufTokens +
		p.Counter.rangesTokens(a, below, as.windowLines.Last+1, -1)
	tokens += 3 + local
	res.ContextTokens += local - as.window.preTokens - as.window.sufTokens - as.window.headerTokens
	if tokens > as.input.PromptBudget {
		// The accounting above is exact by construction; this guards the
		// budget promise against a bug rather than a real case.
		return nil, &OverBudgetError{Tokens: tokens, Budget: as.input.PromptBudget}
	}

	// Manifest.
	t := as.input.Cursor
	pre0 := Source{Kind: SourcePrefix, Path: t.Path, StartLine: int(psl) + 1, EndLine: int(as.cursorLine) + 1,
		Tokens: as.window.preTokens, Included: true, Reason: "cursor file"}
	if as.window.preCut {
		pre0.Reason = fmt.Sprintf("cursor file, cut at line %d to fit the local budget of %d tokens", psl+1, as.localLimit)
		if as.window.preTotal >= 0 {
			pre0.Reason += fmt.Sprintf(" (whole prefix %d tokens)", as.window.preTotal)
		}
	}
	suf0 := Source{Kind: SourceSuffix, Path: t.Path, StartLine: int(as.cursorLine) + 1, EndLine: int(as.windowLines.Last) + 1,
		Tokens: as.window.sufTokens, Included: true, Reason: "cursor file"}
	if as.window.sufCut {
		suf0.Reason = fmt.Sprintf("cursor file, cut after line %d to fit the local budget", as.windowLines.Last+1)
	}
	res.Sources = make([]Source, 0, 2+len(as.window.headers)+len(s.considered))
	res.Sources = append(res.Sources, pre0, suf0)
	for _, h := range as.window.headers {
		res.Sources = append(res.Sources, Source{Kind: SourceScopeHeader, Path: t.Path, StartLine: int(h.First) + 1,
			EndLine: int(h.Last) + 1, Tokens: p.Counter.rangeTokens(a, h.First, h.Last), Included: true,
			Reason: "header of an enclosing scope above the cut prefix"})
	}
	for _, c := range s.considered {
		src := Source{Kind: c.kind, Path: c.file.Path, Tokens: c.tokens, Included: c.included, Reason: c.reason, Score: c.score}
		if !c.whole && len(c.ranges) > 0 {
			src.StartLine, src.EndLine = int(c.ranges[0].First)+1, int(c.ranges[len(c.ranges)-1].Last)+1
		}
		res.Sources = append(res.Sources, src)
	}
	if a.Note != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s; no scope headers or definitions from it", t.Path, a.Note))
	}
	res.Text, res.Tokens, res.CursorText, res.Context = sb.String(), tokens, a.Content, s.headSnippets
	return res, nil
}

// writeRanges renders what rangesTokens counts.
func writeRanges(sb *strings.Builder, neutral func(string) string, a *syntax.Analysis, rs []LineRange, lead, trail int32) {
	if len(rs) == 0 {
		return
	}
	if lead >= 0 && rs[0].First > lead {
		sb.WriteString(elisionLine(a, lineIndent(a, rs[0].First)))
	}
	for i, r := range rs {
		if i > 0 && r.First > rs[i-1].Last+1 {
			sb.WriteString(elisionLine(a, lineIndent(a, r.First)))
		}
		sb.WriteString(neutral(rangeTextNL(a, r.First, r.Last)))
	}
	if last := rs[len(rs)-1]; trail >= 0 && trail > last.Last+1 {
		sb.WriteString(elisionLine(a, lineIndent(a, trail)))
	}
}

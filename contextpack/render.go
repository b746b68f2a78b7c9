package contextpack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// asmResult is an assembled prompt: its text, exact token count and
// manifest.
type asmResult struct {
	text             string
	tokens           int
	tokenBudget      int
	generationTokens int
	contextBudget    int
	contextTokens    int
	sources          []asmSource
	warnings         []string
	// cursorText is the cursor file's whole text.
	cursorText string
}

// asmSource is one piece of context that was considered (a manifest
// line).
type asmSource struct {
	kind srcKind
	path string
	// startLine and endLine are 1-based and inclusive; 0 for a whole file.
	startLine, endLine int
	tokens             int
	included           bool
	reason             string
	score              float64
}

// overBudgetError is an assembly whose count exceeds its budget: a bug in
// the accounting, never a real case.
type overBudgetError struct {
	tokens, budget int
}

func (e *overBudgetError) Error() string {
	return fmt.Sprintf("internal accounting error (%d tokens for %d)", e.tokens, e.budget)
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
func (as *assembly) renderHead() {
	s := &as.sel
	s.headDone = true
	if !as.repoLevel {
		return
	}
	p := as.params
	var sb strings.Builder
	tokens, context := 0, 0
	if as.in.repoName != "" {
		sb.WriteString(RepoName)
		sb.WriteString(p.neutral(as.in.repoName))
		sb.WriteString("\n")
		tokens += 1 + p.counter.plain(as.in.repoName+"\n")
	}
	writeBlock := func(sl *index.File, rs []lineRange) {
		sb.WriteString(FileSep)
		sb.WriteString(p.neutral(sl.Path))
		sb.WriteString("\n")
		writeRanges(&sb, p.neutral, sl.Analysis, rs, -1, -1)
		n := as.headTokens(sl) + p.counter.rangesTokens(sl.Analysis, rs, -1, -1)
		tokens += n
		context += n
	}
	for i := len(s.stable) - 1; i >= 0; i-- {
		writeBlock(s.stable[i].sl, s.stable[i].ranges)
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
	sb.WriteString(p.neutral(as.in.cursor.Path))
	sb.WriteString("\n")
	tokens += as.headTokens(as.in.cursor)
	s.head, s.headTokens, s.headContext = sb.String(), tokens, context
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
func (as *assembly) render() (*asmResult, error) {
	p := as.params
	a := as.text
	s := &as.sel
	var sb strings.Builder
	sb.Grow(len(a.Content)/2 + 4096)
	res := &asmResult{tokenBudget: as.in.tokenBudget, generationTokens: as.in.maxNewTokens, contextBudget: as.contextBudget}
	sb.WriteString(s.head)
	tokens := s.headTokens
	res.contextTokens = s.headContext
	psl := as.prefixFirstLine()
	sb.WriteString(FIMPrefix)
	above := as.aboveRanges(s.above)
	writeRanges(&sb, p.neutral, a, above, -1, psl)
	pre := a.Content[as.window.preStart:as.in.offset]
	sb.WriteString(p.neutral(pre))
	sb.WriteString(FIMSuffix)
	sb.WriteString(p.neutral(a.Content[as.in.offset:as.window.sufEnd]))
	below := mergeRanges(s.below)
	writeRanges(&sb, p.neutral, a, below, as.windowLines.e+1, -1)
	sb.WriteString(FIMMiddle)
	local := p.counter.rangesTokens(a, above, -1, psl) + as.window.preTokens + as.window.sufTokens +
		p.counter.rangesTokens(a, below, as.windowLines.e+1, -1)
	tokens += 3 + local
	res.contextTokens += local - as.window.preTokens - as.window.sufTokens - as.window.headerTokens
	if tokens > as.in.promptBudget {
		// The accounting above is exact by construction; this guards the
		// budget promise against a bug rather than a real case.
		return nil, &overBudgetError{tokens: tokens, budget: as.in.promptBudget}
	}

	// Manifest.
	t := as.in.cursor
	pre0 := asmSource{kind: srcKindPrefix, path: t.Path, startLine: int(psl) + 1, endLine: int(as.cursorLine) + 1,
		tokens: as.window.preTokens, included: true, reason: "cursor file"}
	if as.window.preCut {
		pre0.reason = fmt.Sprintf("cursor file, cut at line %d to fit the local budget of %d tokens", psl+1, as.localLimit)
		if as.window.preTotal >= 0 {
			pre0.reason += fmt.Sprintf(" (whole prefix %d tokens)", as.window.preTotal)
		}
	}
	suf0 := asmSource{kind: srcKindSuffix, path: t.Path, startLine: int(as.cursorLine) + 1, endLine: int(as.windowLines.e) + 1,
		tokens: as.window.sufTokens, included: true, reason: "cursor file"}
	if as.window.sufCut {
		suf0.reason = fmt.Sprintf("cursor file, cut after line %d to fit the local budget", as.windowLines.e+1)
	}
	res.sources = make([]asmSource, 0, 2+len(as.window.headers)+len(s.considered))
	res.sources = append(res.sources, pre0, suf0)
	for _, h := range as.window.headers {
		res.sources = append(res.sources, asmSource{kind: srcKindScopeHeader, path: t.Path, startLine: int(h.s) + 1,
			endLine: int(h.e) + 1, tokens: p.counter.rangeTokens(a, h.s, h.e), included: true,
			reason: "header of an enclosing scope above the cut prefix"})
	}
	for _, c := range s.considered {
		src := asmSource{kind: c.kind, path: c.sl.Path, tokens: c.tokens, included: c.included, reason: c.reason, score: c.score}
		if !c.whole && len(c.ranges) > 0 {
			src.startLine, src.endLine = int(c.ranges[0].s)+1, int(c.ranges[len(c.ranges)-1].e)+1
		}
		res.sources = append(res.sources, src)
	}
	if a.Note != "" {
		res.warnings = append(res.warnings, fmt.Sprintf("%s: %s; no scope headers or definitions from it", t.Path, a.Note))
	}
	res.text, res.tokens, res.cursorText = sb.String(), tokens, a.Content
	return res, nil
}

// writeRanges renders what rangesTokens counts.
func writeRanges(sb *strings.Builder, neutral func(string) string, a *syntax.Analysis, rs []lineRange, lead, trail int32) {
	if len(rs) == 0 {
		return
	}
	if lead >= 0 && rs[0].s > lead {
		sb.WriteString(elisionLine(a, lineIndent(a, rs[0].s)))
	}
	for i, r := range rs {
		if i > 0 && r.s > rs[i-1].e+1 {
			sb.WriteString(elisionLine(a, lineIndent(a, r.s)))
		}
		sb.WriteString(neutral(rangeTextNL(a, r.s, r.e)))
	}
	if last := rs[len(rs)-1]; trail >= 0 && trail > last.e+1 {
		sb.WriteString(elisionLine(a, lineIndent(a, trail)))
	}
}

package contextpack

import (
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// render writes the prompt and the manifest. Repository-level layout:
//
//	<|repo_name|>name
//	<|file_sep|>path      stable tier: imported files, least relevant first
//	...
//	<|file_sep|>path      cursor tier: fused snippets, least relevant first
//	...
//	<|file_sep|>target
//	<|fim_prefix|>[same-file context, scope headers, elisions]prefix<|fim_suffix|>suffix[same-file context]<|fim_middle|>
//
// Everything before the target depends on the cursor file and the
// repository only (stable tier) or on the region around the cursor
// (cursor tier), so a keystroke changes the prompt from the cursor on and
// the backend's prompt cache keeps the rest.
func (as *assembly) render() (*Prompt, error) {
	b := as.b
	a := as.a
	var sb strings.Builder
	sb.Grow(len(a.content)/2 + 4096)
	tokens := 0
	m := Manifest{TokenBudget: as.budget, GenerationTokens: as.req.MaxNewTokens, ContextBudget: as.ctxBudget}
	sm := &as.r.selected
	if memo := as.selected && sm.ok && sm.key == as.selKey; memo && sm.headOK {
		// The same selection renders the same files before the target.
		sb.WriteString(sm.head)
		tokens += sm.headTokens
		m.ContextTokens += sm.headContext
	} else if as.repoLevel {
		if as.req.RepoName != "" {
			sb.WriteString(RepoName)
			sb.WriteString(b.neutral(as.req.RepoName))
			sb.WriteString("\n")
			tokens += 1 + b.count.plain(as.req.RepoName+"\n")
		}
		writeBlock := func(sl *slot, rs []lineRange) {
			sb.WriteString(FileSep)
			sb.WriteString(b.neutral(sl.path))
			sb.WriteString("\n")
			b.writeRanges(&sb, sl.an, rs, -1, -1)
			n := as.headTokens(sl) + b.rangesTokens(sl.an, rs, -1, -1)
			tokens += n
			m.ContextTokens += n
		}
		for i := len(as.t1) - 1; i >= 0; i-- {
			writeBlock(as.t1[i].sl, as.t1[i].ranges)
		}
		bls := make([]*block, 0, len(as.blocks))
		for _, bl := range as.blocks {
			bls = append(bls, bl)
		}
		slices.SortFunc(bls, func(x, y *block) int {
			if x.best != y.best {
				if x.best < y.best {
					return -1
				}
				return 1
			}
			return strings.Compare(x.sl.path, y.sl.path)
		})
		for _, bl := range bls {
			writeBlock(bl.sl, bl.ranges)
		}
		sb.WriteString(FileSep)
		sb.WriteString(b.neutral(as.t.path))
		sb.WriteString("\n")
		tokens += as.headTokens(as.t)
		if memo {
			sm.head, sm.headTokens, sm.headContext, sm.headOK = strings.Clone(sb.String()), tokens, m.ContextTokens, true
		}
	}
	psl := as.psl()
	sb.WriteString(FIMPrefix)
	above := as.aboveRanges(as.above)
	b.writeRanges(&sb, a, above, -1, psl)
	pre := a.content[as.win.preStart:as.off]
	sb.WriteString(b.neutral(pre))
	sb.WriteString(FIMSuffix)
	sb.WriteString(b.neutral(a.content[as.off:as.win.sufEnd]))
	below := mergeRanges(as.below)
	b.writeRanges(&sb, a, below, as.wl.e+1, -1)
	sb.WriteString(FIMMiddle)
	local := b.rangesTokens(a, above, -1, psl) + as.win.preTokens + as.win.sufTokens +
		b.rangesTokens(a, below, as.wl.e+1, -1)
	tokens += 3 + local
	m.ContextTokens += local - as.win.preTokens - as.win.sufTokens - as.win.headerTokens
	m.PromptTokens = tokens
	if tokens > as.promptBudget {
		// The accounting above is exact by construction; this guards the
		// budget promise against a bug rather than a real case.
		b.log.Error("contextpack: prompt over budget", append([]zap.Field{zap.Int("tokens", tokens), zap.Int("budget", as.promptBudget)}, as.logFields...)...)
		return nil, fmt.Errorf("%w: internal accounting error (%d tokens for %d)", ErrBudget, tokens, as.promptBudget)
	}

	// Manifest.
	pre0 := Source{Kind: SourcePrefix, Path: as.t.path, StartLine: int(psl) + 1, EndLine: int(as.cl) + 1,
		Tokens: as.win.preTokens, Included: true, Reason: "cursor file"}
	if as.win.preCut {
		pre0.Reason = fmt.Sprintf("cursor file, cut at line %d to fit the local budget of %d tokens", psl+1, as.limit)
		if as.win.preTotal >= 0 {
			pre0.Reason += fmt.Sprintf(" (whole prefix %d tokens)", as.win.preTotal)
		}
	}
	suf0 := Source{Kind: SourceSuffix, Path: as.t.path, StartLine: int(as.cl) + 1, EndLine: int(as.wl.e) + 1,
		Tokens: as.win.sufTokens, Included: true, Reason: "cursor file"}
	if as.win.sufCut {
		suf0.Reason = fmt.Sprintf("cursor file, cut after line %d to fit the local budget", as.wl.e+1)
	}
	m.Sources = append(m.Sources, pre0, suf0)
	for _, h := range as.win.headers {
		m.Sources = append(m.Sources, Source{Kind: SourceScopeHeader, Path: as.t.path, StartLine: int(h.s) + 1,
			EndLine: int(h.e) + 1, Tokens: b.rangeTokens(a, h.s, h.e), Included: true,
			Reason: "header of an enclosing scope above the cut prefix"})
	}
	for _, c := range as.all {
		s := Source{Kind: c.kind, Path: c.sl.path, Tokens: c.tokens, Included: c.included, Reason: c.reason, Score: c.score}
		if !c.whole && len(c.ranges) > 0 {
			s.StartLine, s.EndLine = int(c.ranges[0].s)+1, int(c.ranges[len(c.ranges)-1].e)+1
		}
		m.Sources = append(m.Sources, s)
	}
	if a.note != "" {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: %s; no scope headers or definitions from it", as.t.path, a.note))
	}
	return &Prompt{Text: sb.String(), Tokens: tokens, Manifest: m,
		Cursor: CursorText{Path: as.t.path, Text: a.content, Offset: as.off}}, nil
}

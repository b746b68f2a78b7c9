package assemble

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// packCursorTier fuses definitions, similar windows (from the memos'
// search) and the imports left over from the stable tier (pool) by
// reciprocal rank, and packs them into what is left of the context budget.
func (as *Assembly) packCursorTier(pool []*Candidate) {
	found := as.memos.Search(as.searchQuery())
	as.sel.fileRank = found.fileRank
	var lists [3][]*Candidate
	lists[srcDef], lists[srcSim] = found.definitions, found.similar
	lists[srcImp] = pool
	byKey := map[string]*Candidate{}
	var fused []*Candidate
	for src, list := range lists {
		for i, c := range list {
			if prev := byKey[c.key]; prev != nil {
				prev.rank[src] = i + 1
				continue
			}
			c.rank[src] = i + 1
			byKey[c.key] = c
			fused = append(fused, c)
		}
	}
	k := as.params.Weights.RRFK
	w := [3]float64{as.params.Weights.Definition, as.params.Weights.Similar, as.params.Weights.Imports}
	for _, c := range fused {
		s := 0.0
		for src, r := range c.rank {
			if r > 0 {
				s += w[src] / (k + float64(r))
			}
		}
		if ir := as.sel.importRank[c.file]; ir > 0 && c.rank[srcImp] == 0 && as.input.Strategy == StrategyFused {
			s += w[srcImp] / (k + float64(ir))
		}
		if fr := as.sel.fileRank[c.file]; fr > 0 && as.input.Strategy == StrategyFused {
			s += as.params.Weights.File / (k + float64(fr))
		}
		c.score = s * as.topicWeight(c.file)
	}
	slices.SortStableFunc(fused, func(x, y *Candidate) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		if c := strings.Compare(x.file.Path, y.file.Path); c != 0 {
			return c
		}
		return int(x.ranges[0].First - y.ranges[0].First)
	})
	var pinned []*Candidate
	if as.input.Strategy != StrategySimilarOnly {
		pinned = as.cursorDefs()
	}
	for i, c := range pinned {
		if len(fused) > 0 {
			c.score = fused[0].score // its block ranks first for expandBlocks
		}
		if prev := byKey[c.key]; prev != nil {
			prev.label = c.label
			pinned[i] = prev
			fused = slices.DeleteFunc(fused, func(x *Candidate) bool { return x == prev })
		}
	}
	remaining := as.contextBudget - as.sel.contextUsed
	perFile := map[*index.File]int{}
	next := as.picker(fused)
	for {
		c, first := (*Candidate)(nil), len(pinned) > 0
		if first {
			c, pinned = pinned[0], pinned[1:]
		} else if c = next(); c == nil {
			break
		}
		as.sel.considered = append(as.sel.considered, c)
		why := c.fusedWhy()
		if first {
			why = "first slot: " + why
		}
		if tooLong(rangesBytes(c.file.Analysis, c.ranges), remaining) {
			c.reason = "dropped: far larger than the budget left (not counted); " + why
			continue
		}
		c.tokens = as.params.Counter.rangesTokens(c.file.Analysis, c.ranges, -1, -1)
		switch {
		case c.file == as.input.Cursor && overlaps(c.ranges, as.windowLines):
			c.reason = "dropped: inside the prefix/suffix window; " + why
			continue
		case as.sel.stableWhole[c.file] || covered(c.ranges, as.sel.stableRanges[c.file]):
			c.reason = "dropped: already in the stable tier; " + why
			continue
		}
		cost, commit := as.cursorTierCost(c)
		// The cap counts the pieces that cost tokens: a piece already
		// shown is free, and an imported file's whole or outline is
		// the file's one piece, never capped.
		if cost > 0 && c.kind != SourceImport && !first && perFile[c.file] >= as.params.MaxSnippetsPerFile {
			c.reason = fmt.Sprintf("dropped: %d snippets from this file already (cap); %s", as.params.MaxSnippetsPerFile, why)
			continue
		}
		if cost > remaining {
			c.reason = fmt.Sprintf("dropped: needs %d tokens, %d left; %s", cost, remaining, why)
			continue
		}
		commit()
		remaining -= cost
		as.sel.contextUsed += cost
		if cost > 0 {
			perFile[c.file]++
		}
		c.included, c.tier, c.tokens = true, 2, cost
		c.reason = "cursor tier: " + why
		as.noteIncluded(c)
	}
}

// cursorTierCost is what adding c to the cursor tier costs, and the
// function that adds it: same-file ranges for the cursor file, else its
// file's block (a new block pays its path line).
func (as *Assembly) cursorTierCost(c *Candidate) (int, func()) {
	if c.file == as.input.Cursor {
		var ab, be []LineRange
		for _, r := range c.ranges {
			if r.Last < as.windowLines.First {
				ab = append(ab, r)
			} else {
				be = append(be, r)
			}
		}
		above, below := append(slices.Clone(as.sel.above), ab...), append(slices.Clone(as.sel.below), be...)
		n := as.extrasTokens(above, below)
		return n - as.sel.extraTokens, func() {
			as.sel.above, as.sel.below, as.sel.extraTokens = above, below, n
		}
	}
	bl := as.sel.blocks[c.file]
	nb := bl == nil
	if nb {
		bl = &block{file: c.file, headTokens: as.headTokens(c.file)}
	}
	rs := mergeRanges(append(slices.Clone(bl.ranges), c.ranges...))
	n := as.params.Counter.rangesTokens(c.file.Analysis, rs, -1, -1)
	cost := n - bl.tokens
	if nb {
		cost += bl.headTokens
	}
	return cost, func() {
		bl.ranges, bl.tokens = rs, n
		bl.best = max(bl.best, c.score)
		bl.snippets++
		as.sel.blocks[c.file] = bl
	}
}

// topicWeight is Weights.OffTopic for context off the cursor file's topic
// (a test file for code outside tests, prose for code), else 1.
func (as *Assembly) topicWeight(f *index.File) float64 {
	cur := as.input.Cursor
	if isTestPath(f.Path) && !isTestPath(cur.Path) ||
		f.Analysis.Lang == syntax.LangPlain && cur.Analysis.Lang != syntax.LangPlain && isProsePath(f.Path) {
		return as.params.Weights.OffTopic
	}
	return 1
}

// fusedWhy is the manifest's account of a fused candidate:
// "<label>, fused <score> (ranks def <n>, similar <n>, import <n>)".
// Reasons are written for every candidate on every request, so this
// avoids fmt.
func (c *Candidate) fusedWhy() string {
	b := make([]byte, 0, len(c.label)+64)
	b = append(b, c.label...)
	b = append(b, ", fused "...)
	b = strconv.AppendFloat(b, c.score, 'f', 4, 64)
	b = append(b, " (ranks def "...)
	b = strconv.AppendInt(b, int64(c.rank[srcDef]), 10)
	b = append(b, ", similar "...)
	b = strconv.AppendInt(b, int64(c.rank[srcSim]), 10)
	b = append(b, ", import "...)
	b = strconv.AppendInt(b, int64(c.rank[srcImp]), 10)
	b = append(b, ')')
	return string(b)
}

// picker returns the candidates one by one: in fused order, or, with
// Diversity > 0, by maximal marginal relevance: among the next few, the one
// whose fused score times (share of its identifiers that the prompt does
// not show yet)^Diversity is highest, so near-duplicates of the window or
// of what is already included wait their turn.
func (as *Assembly) picker(fused []*Candidate) func() *Candidate {
	d := as.params.Diversity
	if d <= 0 {
		i := 0
		return func() *Candidate {
			if i == len(fused) {
				return nil
			}
			i++
			return fused[i-1]
		}
	}
	as.sel.shown = map[syntax.Term]bool{}
	addText := func(s string, lang syntax.Lang) {
		syntax.ScanIdents(s, lang, func(id string, _ int) bool {
			as.sel.shown[syntax.HashIdent(id)] = true
			return true
		})
	}
	addText(as.text.Content[as.window.preStart:as.window.sufEnd], as.text.Lang)
	for _, c := range as.sel.stable {
		as.noteIncluded(c)
	}
	ids := make(map[*Candidate][]syntax.Term, len(fused))
	for _, c := range fused {
		set := map[syntax.Term]bool{}
		for _, r := range c.ranges {
			syntax.ScanIdents(c.file.Analysis.RangeText(r.First, r.Last), c.file.Analysis.Lang, func(id string, _ int) bool {
				set[syntax.HashIdent(id)] = true
				return true
			})
		}
		ts := make([]syntax.Term, 0, len(set))
		for t := range set {
			ts = append(ts, t)
		}
		ids[c] = ts
	}
	rem := slices.Clone(fused)
	const lookahead = 24
	return func() *Candidate {
		if len(rem) == 0 {
			return nil
		}
		best, bestV := 0, -1.0
		for i, c := range rem[:min(len(rem), lookahead)] {
			novel := 0
			for _, t := range ids[c] {
				if !as.sel.shown[t] {
					novel++
				}
			}
			frac := float64(novel+1) / float64(len(ids[c])+1)
			if v := c.score * math.Pow(frac, d); v > bestV {
				best, bestV = i, v
			}
		}
		c := rem[best]
		rem = slices.Delete(rem, best, best+1)
		return c
	}
}

// noteIncluded records the identifiers of included context (for Diversity).
func (as *Assembly) noteIncluded(c *Candidate) {
	if as.sel.shown == nil {
		return
	}
	for _, r := range c.ranges {
		syntax.ScanIdents(c.file.Analysis.RangeText(r.First, r.Last), c.file.Analysis.Lang, func(id string, _ int) bool {
			as.sel.shown[syntax.HashIdent(id)] = true
			return true
		})
	}
}

// expandBlocks spends context budget that packing left over on showing
// the files of the cursor tier whole, most relevant first.
func (as *Assembly) expandBlocks() {
	remaining := as.contextBudget - as.sel.contextUsed
	if remaining < 32 || len(as.sel.blocks) == 0 {
		return
	}
	bls := make([]*block, 0, len(as.sel.blocks))
	for _, bl := range as.sel.blocks {
		bls = append(bls, bl)
	}
	slices.SortFunc(bls, func(x, y *block) int {
		if x.best != y.best {
			if x.best > y.best {
				return -1
			}
			return 1
		}
		return strings.Compare(x.file.Path, y.file.Path)
	})
	for _, bl := range bls {
		a := bl.file.Analysis
		whole := wholeRanges(a)
		// Code averages 3-4 bytes per token; a file over 6 bytes per token
		// of room is not worth counting.
		if len(whole) == 0 || rangesBytes(a, whole) > 6*(remaining+bl.tokens) {
			continue
		}
		n := as.params.Counter.rangesTokens(a, whole, -1, -1)
		cost := n - bl.tokens
		if cost <= 0 || cost > remaining {
			continue
		}
		c := &Candidate{file: bl.file, kind: SourceSimilar, ranges: whole, whole: true, included: true, tier: 2,
			tokens: cost, score: bl.best, reason: "cursor tier: file expanded to whole with budget left"}
		as.sel.considered = append(as.sel.considered, c)
		bl.ranges, bl.tokens = whole, n
		remaining -= cost
		as.sel.contextUsed += cost
	}
}

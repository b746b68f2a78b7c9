package contextpack

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// rankingQuery asks for the order of the cursor file's imports.
type rankingQuery struct {
	index  index.View
	cursor *index.File
	// used are the cursor file's identifiers: its typing view's and the
	// complete ones typed before the cursor on its line (lineIdents).
	used       syntax.IdentCounts
	lineIdents string
}

// importRanking is the cursor file's imports in rank order; resolved are
// all the files its imports resolved to, ranked or not.
type importRanking struct {
	imports  []index.ImportHit
	resolved []*index.File
}

// rankImports orders the imported files by how many of their definitions
// the cursor file names (explicit imports first on ties), which depends on
// the cursor file only, not on the cursor position; the order comes from
// the memos (rankImportsFor).
//
// The cursor file's identifiers are its typing view's and the complete ones
// typed before the cursor on its line (lineIdents): a call being typed
// ranks the file that defines it.
func (as *assembly) rankImports() {
	a := as.in.cursor.Analysis // the view's: the same while the cursor stays on its line
	as.sel.used = a.Identifiers()
	if as.lineIdents != "" {
		as.sel.used = maps.Clone(as.sel.used)
		for _, id := range strings.Fields(as.lineIdents) {
			as.sel.used[id]++
		}
	}
	rk := as.memos.importRanking(rankingQuery{index: as.index, cursor: as.in.cursor, used: as.sel.used, lineIdents: as.lineIdents})
	as.sel.imports = rk.imports
	for i, h := range as.sel.imports {
		as.sel.importRank[h.File] = i + 1
	}
}

// rankImportsFor resolves q's cursor file's imports and orders them by how
// many distinct definition names the cursor file uses, explicit imports
// first on ties.
func rankImportsFor(q rankingQuery) *importRanking {
	hits := q.index.ResolveImports(q.cursor)
	resolved := make([]*index.File, len(hits))
	for i, h := range hits {
		resolved[i] = h.File
	}
	type scored struct {
		h     index.ImportHit
		score float64
	}
	rs := make([]scored, 0, len(hits))
	for _, h := range hits {
		bits, names := h.File.Analysis.UsedDefs(q.used)
		s := float64(names)
		if h.Explicit {
			s += 0.5
		} else if s == 0 {
			continue // same package, nothing used from it
		}
		h.Used = bits
		rs = append(rs, scored{h, s})
	}
	slices.SortStableFunc(rs, func(x, y scored) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		return x.h.Order - y.h.Order
	})
	ranked := make([]index.ImportHit, len(rs))
	for i, x := range rs {
		ranked[i] = x.h
	}
	return &importRanking{imports: ranked, resolved: resolved}
}

// candidatesQuery asks for the candidates of the cursor file's ranked
// imports.
type candidatesQuery struct {
	params     *asmParams
	memos      asmMemos
	index      index.View
	cursor     *index.File
	lineIdents string
	imports    []index.ImportHit
	used       syntax.IdentCounts
}

// importCandidates are the candidates of the ranked imports (at most
// maxCandidates).
func importCandidates(q candidatesQuery) []*candidate {
	n := min(len(q.imports), q.params.maxCandidates)
	cs := make([]*candidate, 0, n)
	for i, h := range q.imports[:n] {
		cs = append(cs, importCandidate(q, h, i+1))
	}
	return cs
}

// importCandidate shows an imported file whole when it is small enough,
// else as an outline of its definitions.
func importCandidate(q candidatesQuery, h index.ImportHit, rank int) *candidate {
	p := q.params
	a := h.File.Analysis
	c := &candidate{sl: h.File, kind: srcKindImport}
	c.rank[srcImp] = rank
	// Code averages 3-4 bytes per token: a file over 5 bytes per allowed
	// token is shown as its outline without counting it whole.
	if len(a.Content) <= 5*p.maxImportFileTokens {
		if rs := wholeRanges(a); len(rs) > 0 {
			if n := p.counter.rangesTokens(a, rs, -1, -1); n <= p.maxImportFileTokens {
				c.ranges, c.whole, c.tokens, c.label = rs, true, n, "whole file"
			}
		}
	}
	if !c.whole {
		o := q.memos.outline(outlineQuery{counter: p.counter, file: a, used: q.used, usedDefs: h.Used, limit: p.maxImportFileTokens})
		c.ranges, c.tokens = o.ranges, o.tokens
		c.outline, c.label = true, "outline"
	}
	c.key = rangesKey(h.File, c.ranges)
	return c
}

// outlineQuery asks for an imported file's outline.
type outlineQuery struct {
	counter  *counter
	file     *syntax.Analysis
	used     syntax.IdentCounts
	usedDefs []uint64 // bit i: file.defs[i].name is in used (syntax.Analysis.UsedDefs)
	limit    int
}

// outline is a file's outline and its tokens.
type outline struct {
	ranges []lineRange
	tokens int
}

// outlineOf lists the headers of a file's top-level definitions and of
// the methods of top-level types (not fields) within the limit, those whose
// names the cursor file uses first.
func outlineOf(q outlineQuery) outline {
	rs := outlineRanges(q.counter, q.file, q.used, q.limit)
	return outline{ranges: rs, tokens: q.counter.rangesTokens(q.file, rs, -1, -1)}
}

func outlineRanges(c *counter, a *syntax.Analysis, used syntax.IdentCounts, limit int) []lineRange {
	type h struct {
		r    lineRange
		used bool
	}
	var hs []h
	for i := range a.Defs {
		d := &a.Defs[i]
		if d.Parent >= 0 && (a.Defs[d.Parent].Parent >= 0 || d.Kind != syntax.KindMethod && d.Kind != syntax.KindFunction) {
			continue
		}
		s, e, ok := a.Trim(d.Start, d.HeaderEnd)
		if !ok {
			continue
		}
		hs = append(hs, h{lineRange{s, e}, used.Has(d.Name)})
	}
	slices.SortStableFunc(hs, func(x, y h) int {
		if x.used != y.used {
			if x.used {
				return -1
			}
			return 1
		}
		return 0
	})
	var rs []lineRange
	total := 0
	for _, x := range hs {
		n := c.rangeTokens(a, x.r.s, x.r.e) + 2 // with a share of elision lines
		if total+n > limit {
			continue
		}
		total += n
		rs = append(rs, x.r)
	}
	return mergeRanges(rs)
}

// packStableTier fills the stable tier with imported files in rank order
// and returns those that did not fit, for the cursor tier.
func (as *assembly) packStableTier() []*candidate {
	limit := int(float64(as.contextBudget) * as.params.importShare)
	switch as.in.strategy {
	case asmImportsOnly:
		limit = as.contextBudget
	case asmDefinitionsOnly, asmSimilarOnly:
		return nil
	}
	s := &as.sel
	cands := as.memos.importCandidates(candidatesQuery{params: as.params, memos: as.memos, index: as.index,
		cursor: as.in.cursor, lineIdents: as.lineIdents, imports: s.imports, used: s.used})
	var pool []*candidate
	for i, c := range cands {
		if len(c.ranges) == 0 {
			c.reason = "dropped: nothing to show (no definitions in a large file)"
			s.considered = append(s.considered, c)
			continue
		}
		cost := as.headTokens(c.sl) + c.tokens
		if s.contextUsed+cost <= limit {
			c.included, c.tier, c.tokens = true, 1, cost
			c.reason = "import #" + strconv.Itoa(i+1) + ", " + c.label + " (stable tier)"
			s.contextUsed += cost
			s.stable = append(s.stable, c)
			s.considered = append(s.considered, c)
			if c.whole {
				s.stableWhole[c.sl] = true
			}
			s.stableRanges[c.sl] = c.ranges
			continue
		}
		pool = append(pool, c)
	}
	return pool
}

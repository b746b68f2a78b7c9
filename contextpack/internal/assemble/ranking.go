package assemble

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// RankingQuery asks for the order of the cursor file's imports.
type RankingQuery struct {
	Index  index.View
	Cursor *index.File
	// Used are the cursor file's identifiers: its typing view's and the
	// complete ones typed before the cursor on its line (lineIdents).
	Used       syntax.IdentCounts
	LineIdents string
}

// Ranking is the cursor file's imports in rank order; resolved are
// all the files its imports resolved to, ranked or not.
type Ranking struct {
	Imports  []RankedImport
	Resolved []*index.File
}

// RankedImport is an imported file and the definitions of it that the
// cursor file names.
type RankedImport struct {
	index.ImportHit
	UsedDefs []uint64 // syntax.Analysis.UsedDefs
}

// rankImports orders the imported files by how many of their definitions
// the cursor file names (explicit imports first on ties), which depends on
// the cursor file only, not on the cursor position; the order comes from
// the memos (RankImports).
//
// The cursor file's identifiers are its typing view's and the complete ones
// typed before the cursor on its line (lineIdents): a call being typed
// ranks the file that defines it.
func (as *Assembly) rankImports() {
	a := as.input.Cursor.Analysis // the view's: the same while the cursor stays on its line
	as.sel.used = a.Identifiers()
	if as.lineIdents != "" {
		as.sel.used = maps.Clone(as.sel.used)
		for _, id := range strings.Fields(as.lineIdents) {
			as.sel.used[id]++
		}
	}
	rk := as.memos.ImportRanking(RankingQuery{Index: as.index, Cursor: as.input.Cursor, Used: as.sel.used, LineIdents: as.lineIdents})
	as.sel.imports = rk.Imports
	for i, h := range as.sel.imports {
		as.sel.importRank[h.File] = i + 1
	}
}

// RankImports resolves q's cursor file's imports and orders them by how
// many distinct definition names the cursor file uses, explicit imports
// first on ties.
func RankImports(q RankingQuery) *Ranking {
	hits := q.Index.ResolveImports(q.Cursor)
	resolved := make([]*index.File, len(hits))
	for i, h := range hits {
		resolved[i] = h.File
	}
	type scored struct {
		h     RankedImport
		score float64
	}
	rs := make([]scored, 0, len(hits))
	for _, h := range hits {
		bits, names := h.File.Analysis.UsedDefs(q.Used)
		s := float64(names)
		if h.Explicit {
			s += 0.5
		} else if s == 0 {
			continue // same package, nothing used from it
		}
		rs = append(rs, scored{RankedImport{h, bits}, s})
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
	ranked := make([]RankedImport, len(rs))
	for i, x := range rs {
		ranked[i] = x.h
	}
	return &Ranking{Imports: ranked, Resolved: resolved}
}

// CandidatesQuery asks for the candidates of the cursor file's ranked
// imports.
type CandidatesQuery struct {
	params     *Params
	memos      Memos
	Index      index.View
	Cursor     *index.File
	LineIdents string
	imports    []RankedImport
	used       syntax.IdentCounts
}

// ImportCandidates are the candidates of the ranked imports (at most
// maxCandidates).
func ImportCandidates(q CandidatesQuery) []*Candidate {
	n := min(len(q.imports), q.params.MaxCandidates)
	cs := make([]*Candidate, 0, n)
	for i, h := range q.imports[:n] {
		cs = append(cs, importCandidate(q, h, i+1))
	}
	return cs
}

// importCandidate shows an imported file whole when it is small enough,
// else as an outline of its definitions.
func importCandidate(q CandidatesQuery, h RankedImport, rank int) *Candidate {
	p := q.params
	a := h.File.Analysis
	c := &Candidate{file: h.File, kind: SourceImport}
	c.rank[srcImp] = rank
	// Code averages 3-4 bytes per token: a file over 5 bytes per allowed
	// token is shown as its outline without counting it whole.
	if len(a.Content) <= 5*p.MaxImportFileTokens {
		if rs := wholeRanges(a); len(rs) > 0 {
			if n := p.Counter.rangesTokens(a, rs, -1, -1); n <= p.MaxImportFileTokens {
				c.ranges, c.whole, c.tokens, c.label = rs, true, n, "whole file"
			}
		}
	}
	if !c.whole {
		o := q.memos.Outline(OutlineQuery{Counter: p.Counter, File: a, Used: q.used, UsedDefs: h.UsedDefs, Limit: p.MaxImportFileTokens})
		c.ranges, c.tokens = o.Ranges, o.Tokens
		c.outline, c.label = true, "outline"
	}
	c.key = rangesKey(h.File, c.ranges)
	return c
}

// OutlineQuery asks for an imported file's outline.
type OutlineQuery struct {
	Counter  *Counter
	File     *syntax.Analysis
	Used     syntax.IdentCounts
	UsedDefs []uint64 // bit i: file.defs[i].name is in used (syntax.Analysis.UsedDefs)
	Limit    int
}

// Outline is a file's outline and its tokens.
type Outline struct {
	Ranges []LineRange
	Tokens int
}

// OutlineOf lists the headers of a file's top-level definitions and of
// the methods of top-level types (not fields) within the limit, those whose
// names the cursor file uses first.
func OutlineOf(q OutlineQuery) Outline {
	rs := outlineRanges(q.Counter, q.File, q.Used, q.Limit)
	return Outline{Ranges: rs, Tokens: q.Counter.rangesTokens(q.File, rs, -1, -1)}
}

func outlineRanges(c *Counter, a *syntax.Analysis, used syntax.IdentCounts, limit int) []LineRange {
	type h struct {
		r    LineRange
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
		hs = append(hs, h{LineRange{s, e}, used.Has(d.Name)})
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
	var rs []LineRange
	total := 0
	for _, x := range hs {
		n := c.rangeTokens(a, x.r.First, x.r.Last) + 2 // with a share of elision lines
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
func (as *Assembly) packStableTier() []*Candidate {
	limit := int(float64(as.contextBudget) * as.params.ImportShare)
	switch as.input.Strategy {
	case StrategyImportsOnly:
		limit = as.contextBudget
	case StrategyDefinitionsOnly, StrategySimilarOnly:
		return nil
	}
	s := &as.sel
	cands := as.memos.ImportCandidates(CandidatesQuery{params: as.params, memos: as.memos, Index: as.index,
		Cursor: as.input.Cursor, LineIdents: as.lineIdents, imports: s.imports, used: s.used})
	var pool []*Candidate
	for i, c := range cands {
		if len(c.ranges) == 0 {
			c.reason = "dropped: nothing to show (no definitions in a large file)"
			s.considered = append(s.considered, c)
			continue
		}
		cost := as.headTokens(c.file) + c.tokens
		if s.contextUsed+cost <= limit {
			c.included, c.tier, c.tokens = true, 1, cost
			c.reason = "import #" + strconv.Itoa(i+1) + ", " + c.label + " (stable tier)"
			s.contextUsed += cost
			s.stable = append(s.stable, c)
			s.considered = append(s.considered, c)
			if c.whole {
				s.stableWhole[c.file] = true
			}
			s.stableRanges[c.file] = c.ranges
			continue
		}
		pool = append(pool, c)
	}
	return pool
}

package contextpack

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// Strategy selects how context is chosen. Build uses StrategyFused; the
// others are baselines and ablations for the quality tool
// (contextpack/cmd/cpquality). All share the cursor-file window, the budget
// split and the prompt format, so they differ only in what context they
// pick.
type Strategy int

const (
	// StrategyFused is infill's assembler: imported files in a stable tier,
	// then definitions, similar windows and imports fused by reciprocal
	// rank.
	StrategyFused Strategy = iota
	// StrategyNone is the file-level prompt: prefix and suffix only.
	StrategyNone
	// StrategyExecRepoBench ranks whole files by import hits plus BM25
	// similarity to the cursor file (normalised), packs them most relevant
	// first, cutting the first that does not fit at a line boundary, and
	// puts the most relevant next to the cursor file.
	StrategyExecRepoBench
	// StrategyJaccard takes from each other file its window most similar
	// (Jaccard over identifiers) to the 20 lines before the cursor, best
	// first (Copilot's neighbouring-tab snippets).
	StrategyJaccard
	// StrategyImportsOnly, StrategyDefinitionsOnly and StrategySimilarOnly
	// are the fused assembler with one source.
	StrategyImportsOnly
	StrategyDefinitionsOnly
	StrategySimilarOnly
)

var strategyNames = map[Strategy]string{
	StrategyFused: "fused", StrategyNone: "none", StrategyExecRepoBench: "execrepobench",
	StrategyJaccard: "jaccard", StrategyImportsOnly: "imports", StrategyDefinitionsOnly: "definitions",
	StrategySimilarOnly: "similar",
}

func (s Strategy) String() string {
	if n, ok := strategyNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ParseStrategy returns the strategy named by String.
func ParseStrategy(name string) (Strategy, error) {
	for s, n := range strategyNames {
		if n == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("contextpack: unknown strategy %q", name)
}

// BuildStrategy is Build with another way of choosing context.
func (b *Builder) BuildStrategy(ctx context.Context, req Request, s Strategy) (*Prompt, error) {
	if _, ok := strategyNames[s]; !ok {
		return nil, &ArgumentError{Field: "strategy", Reason: fmt.Sprintf("unknown strategy %d", int(s))}
	}
	return b.build(ctx, req, s)
}

// packExecRepoBench is StrategyExecRepoBench.
func (as *assembly) packExecRepoBench() {
	r, t := as.r, as.t
	explicit := map[*slot]bool{}
	for _, h := range r.resolveImports(t) {
		if h.explicit {
			explicit[h.sl] = true
		}
	}
	q := t.an.fileTerms()
	qm := make(map[term]int, len(q))
	for _, x := range q {
		qm[x.t] = int(x.tf)
	}
	df := r.fileDocFreq()
	n := float64(len(r.files))
	var avgdl float64
	for _, sl := range r.slots {
		if sl != nil {
			avgdl += float64(sl.an.fileLen())
		}
	}
	avgdl = max(1, avgdl/n)
	type scored struct {
		sl    *slot
		bm25  float64
		score float64
	}
	var ss []scored
	maxBM := 0.0
	for _, sl := range r.slots {
		if sl == nil || sl == t {
			continue
		}
		s := 0.0
		dl := float64(sl.an.fileLen())
		for _, x := range sl.an.fileTerms() {
			qtf, ok := qm[x.t]
			if !ok {
				continue
			}
			d := float64(df[x.t])
			idf := math.Log(1 + (n-d+0.5)/(d+0.5))
			tf := float64(x.tf)
			s += idf * float64(qtf) * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avgdl))
		}
		ss = append(ss, scored{sl: sl, bm25: s})
		maxBM = max(maxBM, s)
	}
	for i := range ss {
		if maxBM > 0 {
			ss[i].score = ss[i].bm25 / maxBM
		}
		if explicit[ss[i].sl] {
			ss[i].score++
		}
	}
	slices.SortFunc(ss, func(x, y scored) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		return strings.Compare(x.sl.path, y.sl.path)
	})
	remaining := as.ctxBudget
	for i, s := range ss {
		if i >= as.b.cfg.MaxCandidates || remaining < 16 {
			break
		}
		rs := wholeRanges(s.sl.an)
		if len(rs) == 0 || s.score == 0 {
			continue
		}
		c := &candidate{sl: s.sl, kind: SourceSimilar, ranges: rs, whole: true, score: s.score,
			label: fmt.Sprintf("whole file, import hit + normalised BM25 %.3f", s.score)}
		head := as.headTokens(s.sl)
		cost := head + as.b.rangesTokens(s.sl.an, rs, -1, -1)
		if cost > remaining {
			// The first file that does not fit is cut at a line boundary.
			end := rs[0].s - 1
			used := head
			for end+1 <= rs[0].e {
				n := as.b.rangeTokens(s.sl.an, rs[0].s, end+1)
				if head+n > remaining {
					break
				}
				end, used = end+1, head+n
			}
			if end < rs[0].s {
				c.reason = "dropped: does not fit"
				as.all = append(as.all, c)
				break
			}
			c.ranges, c.whole, cost = []lineRange{{rs[0].s, end}}, false, used
		}
		c.included, c.tokens, c.reason = true, cost, c.label
		as.all = append(as.all, c)
		as.blocks[s.sl] = &block{sl: s.sl, ranges: c.ranges, tokens: cost - head, head: head, best: s.score}
		remaining -= cost
		as.ctxUsed += cost
		if !c.whole {
			break
		}
	}
}

// packJaccard is StrategyJaccard.
func (as *assembly) packJaccard() {
	r, t, a := as.r, as.t, as.a
	q := map[term]bool{}
	for i := max(0, as.cl-19); i <= as.cl; i++ {
		line := a.lineText(i)
		if i == as.cl {
			line = a.content[a.lines[i]:as.off]
		}
		scanIdents(line, a.lang, func(id string, _ int) bool {
			q[hashIdent(id)] = true
			return true
		})
	}
	if len(q) == 0 {
		return
	}
	best := map[*slot]scoredChunk{}
	for id := range r.chunks {
		cr := &r.chunks[id]
		if cr.dead {
			continue
		}
		sl := r.slots[cr.slot]
		if sl == t {
			continue
		}
		c := &sl.an.chunks[cr.idx]
		inter := 0
		for _, x := range c.terms {
			if q[x.t] {
				inter++
			}
		}
		if inter == 0 {
			continue
		}
		j := float64(inter) / float64(len(c.terms)+len(q)-inter)
		if b, ok := best[sl]; !ok || j > b.score {
			best[sl] = scoredChunk{uint32(id), j}
		}
	}
	hits := make([]scoredChunk, 0, len(best))
	for _, h := range best {
		hits = append(hits, h)
	}
	slices.SortFunc(hits, func(x, y scoredChunk) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		return strings.Compare(r.slots[r.chunks[x.chunk].slot].path, r.slots[r.chunks[y.chunk].slot].path)
	})
	remaining := as.ctxBudget
	for i, h := range hits {
		if i >= as.b.cfg.MaxCandidates {
			break
		}
		cr := r.chunks[h.chunk]
		sl := r.slots[cr.slot]
		ch := &sl.an.chunks[cr.idx]
		s, e, ok := sl.an.trim(ch.start, ch.end)
		if !ok {
			continue
		}
		rs := []lineRange{{s, e}}
		c := &candidate{sl: sl, kind: SourceSimilar, ranges: rs, score: h.score,
			label: fmt.Sprintf("best Jaccard window %.3f", h.score)}
		head := as.headTokens(sl)
		n := as.b.rangesTokens(sl.an, rs, -1, -1)
		c.tokens = head + n
		as.all = append(as.all, c)
		if head+n > remaining {
			c.reason = "dropped: does not fit"
			continue
		}
		c.included, c.reason = true, c.label
		as.blocks[sl] = &block{sl: sl, ranges: rs, tokens: n, head: head, best: h.score}
		remaining -= head + n
		as.ctxUsed += head + n
	}
}

// fileTerms is the file's identifier frequencies (for whole-file BM25).
func (a *analysis) fileTerms() []termTF {
	a.ftOnce.Do(func() {
		m := map[term]int{}
		scanIdents(a.content, a.lang, func(id string, _ int) bool {
			m[hashIdent(id)]++
			a.ftLen++
			return true
		})
		a.ft = make([]termTF, 0, len(m))
		for t, n := range m {
			a.ft = append(a.ft, termTF{t, uint16(min(n, 65535))})
		}
		slices.SortFunc(a.ft, func(x, y termTF) int { return int(x.t) - int(y.t) })
	})
	return a.ft
}

func (a *analysis) fileLen() int {
	a.fileTerms()
	return a.ftLen
}

// fileDocFreq is the number of files that contain each term, built on
// first use and kept current by add/remove afterwards.
func (r *repoIndex) fileDocFreq() map[term]int32 {
	if r.fileDF == nil {
		r.fileDF = map[term]int32{}
		for _, sl := range r.slots {
			if sl != nil {
				r.fileDFAdd(sl.an, 1)
			}
		}
	}
	return r.fileDF
}

func (r *repoIndex) fileDFAdd(a *analysis, d int32) {
	for _, x := range a.fileTerms() {
		r.fileDF[x.t] += d
		if r.fileDF[x.t] <= 0 {
			delete(r.fileDF, x.t)
		}
	}
}

type fileTermsCache struct {
	ftOnce sync.Once
	ft     []termTF
	ftLen  int
}

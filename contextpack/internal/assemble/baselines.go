package assemble

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// packExecRepoBench is the ExecRepoBench baseline: whole files ranked by
// import hits plus BM25 similarity to the cursor file (normalised), packed
// most relevant first, the first that does not fit cut at a line
// boundary.
func (as *Assembly) packExecRepoBench() {
	r, t := as.index, as.input.Cursor
	explicit := map[*index.File]bool{}
	for _, h := range r.ResolveImports(t) {
		if h.Explicit {
			explicit[h.File] = true
		}
	}
	q := t.Analysis.FileTerms()
	qm := make(map[syntax.Term]int, len(q))
	for _, x := range q {
		qm[x.Term] = int(x.Count)
	}
	df := r.FileDocFreq()
	n := float64(r.NumFiles())
	var avgdl float64
	for sl := range r.AllFiles() {
		avgdl += float64(sl.Analysis.FileLength())
	}
	avgdl = max(1, avgdl/n)
	type scored struct {
		sl    *index.File
		bm25  float64
		score float64
	}
	var ss []scored
	maxBM := 0.0
	for sl := range r.AllFiles() {
		if sl == t {
			continue
		}
		s := 0.0
		dl := float64(sl.Analysis.FileLength())
		for _, x := range sl.Analysis.FileTerms() {
			qtf, ok := qm[x.Term]
			if !ok {
				continue
			}
			d := float64(df[x.Term])
			idf := math.Log(1 + (n-d+0.5)/(d+0.5))
			tf := float64(x.Count)
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
		return strings.Compare(x.sl.Path, y.sl.Path)
	})
	remaining := as.contextBudget
	for i, s := range ss {
		if i >= as.params.MaxCandidates || remaining < 16 {
			break
		}
		rs := wholeRanges(s.sl.Analysis)
		if len(rs) == 0 || s.score == 0 {
			continue
		}
		c := &Candidate{file: s.sl, kind: SourceSimilar, ranges: rs, whole: true, score: s.score,
			label: fmt.Sprintf("whole file, import hit + normalised BM25 %.3f", s.score)}
		head := as.headTokens(s.sl)
		cost := head + as.params.Counter.rangesTokens(s.sl.Analysis, rs, -1, -1)
		if cost > remaining {
			// The first file that does not fit is cut at a line boundary.
			end := rs[0].First - 1
			used := head
			for end+1 <= rs[0].Last {
				n := as.params.Counter.rangeTokens(s.sl.Analysis, rs[0].First, end+1)
				if head+n > remaining {
					break
				}
				end, used = end+1, head+n
			}
			if end < rs[0].First {
				c.reason = "dropped: does not fit"
				as.sel.considered = append(as.sel.considered, c)
				break
			}
			c.ranges, c.whole, cost = []LineRange{{rs[0].First, end}}, false, used
		}
		c.included, c.tokens, c.reason = true, cost, c.label
		as.sel.considered = append(as.sel.considered, c)
		as.sel.blocks[s.sl] = &block{file: s.sl, ranges: c.ranges, tokens: cost - head, headTokens: head, best: s.score}
		remaining -= cost
		as.sel.contextUsed += cost
		if !c.whole {
			break
		}
	}
}

// packJaccard is the Copilot-style baseline: from each other file its
// window most similar (Jaccard over identifiers) to the 20 lines before the
// cursor, best first.
func (as *Assembly) packJaccard() {
	r, t, a := as.index, as.input.Cursor, as.text
	q := map[syntax.Term]bool{}
	for i := max(0, as.cursorLine-19); i <= as.cursorLine; i++ {
		line := a.LineText(i)
		if i == as.cursorLine {
			line = a.Content[a.Lines[i]:as.input.Offset]
		}
		syntax.ScanIdents(line, a.Lang, func(id string, _ int) bool {
			q[syntax.HashIdent(id)] = true
			return true
		})
	}
	if len(q) == 0 {
		return
	}
	best := map[*index.File]index.ScoredChunk{}
	for id := range r.NumChunks() {
		cr := r.Chunk(uint32(id))
		if cr.Dead {
			continue
		}
		sl := r.FileByID(cr.File)
		if sl == t {
			continue
		}
		c := &sl.Analysis.Chunks[cr.Chunk]
		inter := 0
		for _, x := range c.Terms {
			if q[x.Term] {
				inter++
			}
		}
		if inter == 0 {
			continue
		}
		j := float64(inter) / float64(len(c.Terms)+len(q)-inter)
		if b, ok := best[sl]; !ok || j > b.Score {
			best[sl] = index.ScoredChunk{Chunk: uint32(id), Score: j}
		}
	}
	hits := make([]index.ScoredChunk, 0, len(best))
	for _, h := range best {
		hits = append(hits, h)
	}
	slices.SortFunc(hits, func(x, y index.ScoredChunk) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(r.FileByID(r.Chunk(x.Chunk).File).Path, r.FileByID(r.Chunk(y.Chunk).File).Path)
	})
	remaining := as.contextBudget
	for i, h := range hits {
		if i >= as.params.MaxCandidates {
			break
		}
		cr := r.Chunk(h.Chunk)
		sl := r.FileByID(cr.File)
		ch := &sl.Analysis.Chunks[cr.Chunk]
		s, e, ok := sl.Analysis.Trim(ch.Start, ch.End)
		if !ok {
			continue
		}
		rs := []LineRange{{s, e}}
		c := &Candidate{file: sl, kind: SourceSimilar, ranges: rs, score: h.Score,
			label: fmt.Sprintf("best Jaccard window %.3f", h.Score)}
		head := as.headTokens(sl)
		n := as.params.Counter.rangesTokens(sl.Analysis, rs, -1, -1)
		c.tokens = head + n
		as.sel.considered = append(as.sel.considered, c)
		if head+n > remaining {
			c.reason = "dropped: does not fit"
			continue
		}
		c.included, c.reason = true, c.label
		as.sel.blocks[sl] = &block{file: sl, ranges: rs, tokens: n, headTokens: head, best: h.Score}
		remaining -= head + n
		as.sel.contextUsed += head + n
	}
}

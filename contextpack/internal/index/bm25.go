package index

import (
	"math"
	"slices"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// maxPostingsPerQuery bounds the postings one similarity query visits.
const maxPostingsPerQuery = 60000

// ScoredChunk is a BM25 hit.
type ScoredChunk struct {
	Chunk uint32
	Score float64
}

// bm25 scores live chunks against query terms (term → frequency in the
// query) and returns the k best for which keep is true, best first; ties
// are broken by path and line so the result does not depend on the order
// in which files were indexed. fileScore, when not nil, receives the sum
// of each file's window scores (by file id).
//
// Terms in more than half of the windows, or in more than a tenth of a
// large index, add little (low idf) but cost the most, so they are left
// out; when the other terms find no window to keep (a small repository of
// near-identical files, a query of everyday words), the common ones rank
// the windows instead: leaving them out then would leave the context empty.
func (r *Index) bm25(q map[syntax.Term]int, k int, keep func(sl *File, c *syntax.Chunk) bool, fileScore map[uint32]float64) []ScoredChunk {
	if r.liveChunks == 0 || len(q) == 0 {
		return nil
	}
	n := float64(r.liveChunks)
	var rare, common []syntax.Term
	for t := range q {
		switch df := float64(r.docFreq[t]); {
		case df > 0 && df <= n/2 && (df <= n/10 || df <= 64):
			rare = append(rare, t)
		case df > 0:
			common = append(common, t)
		}
	}
	hits := r.bm25Terms(q, rare, k, keep, fileScore)
	if len(hits) == 0 && len(common) > 0 {
		clear(fileScore)
		hits = r.bm25Terms(q, common, k, keep, fileScore)
	}
	return hits
}

// bm25Terms is bm25 over the query terms in terms, rarest first, within a
// postings budget that bounds the work on repositories with a small
// vocabulary.
func (r *Index) bm25Terms(q map[syntax.Term]int, terms []syntax.Term, k int, keep func(sl *File, c *syntax.Chunk) bool, fileScore map[uint32]float64) []ScoredChunk {
	if len(terms) == 0 {
		return nil
	}
	const k1, b = 1.2, 0.75
	n := float64(r.liveChunks)
	avgdl := float64(r.liveLength) / n
	if avgdl <= 0 {
		avgdl = 1
	}
	if cap(r.scratch) < len(r.chunks) {
		r.scratch = make([]float32, len(r.chunks), len(r.chunks)+len(r.chunks)/4)
	}
	r.scratch = r.scratch[:len(r.chunks)]
	r.touched = r.touched[:0]
	slices.SortFunc(terms, func(x, y syntax.Term) int {
		if dx, dy := r.docFreq[x], r.docFreq[y]; dx != dy {
			return int(dx) - int(dy)
		}
		return int(x) - int(y)
	})
	budget := maxPostingsPerQuery
	for _, t := range terms {
		list := r.postings[t]
		if budget -= len(list); budget < 0 && len(r.touched) > 0 {
			break
		}
		df := float64(r.docFreq[t])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := idf * (1 + math.Log(float64(q[t])))
		dead := 0
		for _, p := range list {
			c := &r.chunks[p.chunk]
			if c.Dead {
				dead++
				continue
			}
			tf := float64(p.count)
			s := w * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(c.Length)/avgdl))
			if r.scratch[p.chunk] == 0 {
				r.touched = append(r.touched, p.chunk)
			}
			r.scratch[p.chunk] += float32(s)
		}
		if dead > 0 && dead*4 > len(list) {
			live := slices.DeleteFunc(list, func(p posting) bool { return r.chunks[p.chunk].Dead })
			r.deadPostings -= len(list) - len(live)
			r.postings[t] = live
		}
	}
	// Top k by a bounded heap whose root is the worst kept hit.
	worse := func(x, y ScoredChunk) bool { // x ranks below y
		if x.Score != y.Score {
			return x.Score < y.Score
		}
		cx, cy := r.chunks[x.Chunk], r.chunks[y.Chunk]
		if px, py := r.byID[cx.File].Path, r.byID[cy.File].Path; px != py {
			return px > py
		}
		return cx.Chunk > cy.Chunk
	}
	h := make([]ScoredChunk, 0, k)
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if l+1 < len(h) && worse(h[l+1], h[l]) {
				m = l + 1
			}
			if !worse(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for _, id := range r.touched {
		sc := ScoredChunk{id, float64(r.scratch[id])}
		r.scratch[id] = 0
		if fileScore != nil {
			fileScore[r.chunks[id].File] += sc.Score
		}
		if len(h) == k && !worse(h[0], sc) {
			continue
		}
		c := r.chunks[id]
		sl := r.byID[c.File]
		if !keep(sl, &sl.Analysis.Chunks[c.Chunk]) {
			continue
		}
		if len(h) < k {
			h = append(h, sc)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !worse(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		h[0] = sc
		down(0)
	}
	slices.SortFunc(h, func(x, y ScoredChunk) int {
		if worse(y, x) {
			return -1
		}
		if worse(x, y) {
			return 1
		}
		return 0
	})
	return h
}

package assemble

import (
	"math"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// SearchQuery asks for the cursor-dependent candidates: definitions of the
// identifiers around the cursor and the windows most similar to that code.
type SearchQuery struct {
	params      *Params
	index       index.View
	cursor      *index.File
	text        *syntax.Analysis // the cursor file with its own text
	cursorLine  int32
	windowLines LineRange // the prefix/suffix window's lines, whose hits are left out
	strategy    Strategy
	importRank  map[*index.File]int // the ranked imports (read only)
}

// SearchKey is everything a search reads besides the index's state, which
// version stands for: the cursor file and its view's analysis, the cursor
// line (which fixes the query region and leaves its own line out) and the
// prefix/suffix window's lines.
//
// It leaves out the ranked imports: a search reads only whether a file
// whose definition it scores is among them, and such a file defines a name
// of the query region, so the view already makes it a used (ranked)
// import whatever is typed on the cursor's line. A search that read a
// file's rank itself would need the line's identifiers in the key
// (SelectionKey has them).
type SearchKey struct {
	cursor      *index.File
	view        *syntax.Analysis
	version     uint64
	cursorLine  int32
	windowLines LineRange
	strategy    Strategy
}

func (q SearchQuery) Key() SearchKey {
	return SearchKey{cursor: q.cursor, view: q.cursor.Analysis, version: q.index.Version(), cursorLine: q.cursorLine,
		windowLines: q.windowLines, strategy: q.strategy}
}

// SearchResult is what a search found, best first.
type SearchResult struct {
	definitions []*Candidate
	similar     []*Candidate
	fileRank    map[*index.File]int // read only; nil unless the file weight is set
}

// Clone copies the candidates (the packing writes to them); fileRank is
// shared.
func (r *SearchResult) Clone() *SearchResult {
	return &SearchResult{definitions: CloneCandidates(r.definitions), similar: CloneCandidates(r.similar), fileRank: r.fileRank}
}

// MemBytes estimates what keeping r costs.
func (r *SearchResult) MemBytes() int64 { return int64(len(r.definitions)+len(r.similar)) * 160 }

func (as *Assembly) searchQuery() SearchQuery {
	return SearchQuery{params: as.params, index: as.index, cursor: as.input.Cursor, text: as.text, cursorLine: as.cursorLine,
		windowLines: as.windowLines, strategy: as.input.Strategy, importRank: as.sel.importRank}
}

// Search runs q: the query region's identifiers (locals excluded) looked up
// in the definitions index, and its windows scored by BM25.
func Search(q SearchQuery) *SearchResult {
	var res SearchResult
	reg, ids, inCode := q.query()
	if q.strategy != StrategySimilarOnly {
		res.definitions = q.defCandidates(ids, inCode, q.localsIn(reg))
	}
	if q.strategy != StrategyDefinitionsOnly {
		res.similar, res.fileRank = q.simCandidates(ids)
	}
	return &res
}

// localsIn is the set of parameters and local variables declared from the
// start of the function enclosing the cursor to the end of reg.
func (q *SearchQuery) localsIn(reg LineRange) map[syntax.Term]bool {
	a := q.text
	from := reg.First
	for i := range a.Defs {
		d := &a.Defs[i]
		if d.Start > q.cursorLine {
			break
		}
		if d.End >= q.cursorLine && (d.Kind == syntax.KindFunction || d.Kind == syntax.KindMethod) {
			from = min(from, d.Start)
		}
	}
	out := map[syntax.Term]bool{}
	i, _ := slices.BinarySearchFunc(a.Locals, from, func(l syntax.Local, line int32) int { return int(l.Line - line) })
	for ; i < len(a.Locals) && a.Locals[i].Line <= reg.Last; i++ {
		out[a.Locals[i].Term] = true
	}
	return out
}

// isTestPath reports test files by the usual naming conventions of the
// languages contextpack parses: Go's *_test.go, Python's test_*.py,
// *_test.py and conftest.py, JavaScript/TypeScript's *.test.* and
// *.spec.* and __tests__/, Java's *Test.java, *Tests.java, *IT.java and
// src/test/, C/C++'s *_test.c* and *_unittest.c*, and test, tests and
// testdata directories (Rust's integration tests among them).
func isTestPath(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	stem := base
	if i := strings.IndexByte(base, '.'); i > 0 {
		stem = base[:i]
	}
	return strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "_unittest") || strings.HasPrefix(base, "test_") ||
		base == "conftest.py" || strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") ||
		strings.HasSuffix(base, "Test.java") || strings.HasSuffix(base, "Tests.java") || strings.HasSuffix(base, "IT.java") ||
		hasDir(p, "tests") || hasDir(p, "test") || hasDir(p, "testdata") || hasDir(p, "__tests__")
}

// hasDir reports whether path p has a directory named dir.
func hasDir(p, dir string) bool {
	for {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return false
		}
		if p[:i] == dir {
			return true
		}
		p = p[i+1:]
	}
}

// isProsePath reports documentation by its name: README, CHANGELOG and
// the like, and Markdown, reStructuredText, AsciiDoc and text files (the
// caller checks that the file is plain text: readme.go is code).
func isProsePath(p string) bool {
	base := strings.ToLower(p[strings.LastIndexByte(p, '/')+1:])
	for _, ext := range []string{".md", ".markdown", ".rst", ".adoc", ".txt"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	for _, name := range []string{"readme", "changelog", "changes", "license", "copying", "notice", "authors", "contributing"} {
		if base == name || strings.HasPrefix(base, name+".") {
			return true
		}
	}
	return false
}

// defCandidates looks up the region's identifiers that occur in its code
// (locals excluded) in the definitions index: a name only a comment or a
// string mentions is not one the code uses.
func (q *SearchQuery) defCandidates(ids map[string]float64, inCode map[string]bool, locals map[syntax.Term]bool) []*Candidate {
	r, t := q.index, q.cursor
	testTarget, builtTarget := isTestPath(t.Path), t.BuildOutput
	names := make([]string, 0, len(ids))
	for n := range ids {
		if inCode[n] && !locals[syntax.HashIdent(n)] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	type hit struct {
		ref   index.DefRef
		score float64
	}
	var hits []hit
	const maxRefs = 6
	for _, name := range names {
		all := r.Definitions(name)
		if len(all) == 0 {
			continue
		}
		refs := make([]index.DefRef, 0, len(all))
		for _, ref := range all {
			sl := r.FileByID(ref.File)
			if (testTarget || !isTestPath(sl.Path)) && (builtTarget || !sl.BuildOutput) {
				refs = append(refs, ref)
			}
		}
		if len(refs) > maxRefs {
			var near []index.DefRef
			for _, ref := range refs {
				sl := r.FileByID(ref.File)
				if q.importRank[sl] > 0 || sl.Dir == t.Dir {
					near = append(near, ref)
				}
			}
			refs = near
		}
		if len(refs) == 0 || len(refs) > maxRefs {
			continue // too ambiguous to help
		}
		base := (1 + math.Log1p(ids[name])) / math.Sqrt(float64(len(refs)))
		for _, ref := range refs {
			sl := r.FileByID(ref.File)
			d := &sl.Analysis.Defs[ref.Def]
			if sl == t && d.Start <= q.windowLines.Last && d.End >= q.windowLines.First {
				continue // visible in the window already
			}
			if d.Kind.IsMember() && (d.Parent < 0 || !sl.Analysis.Defs[d.Parent].Kind.IsScope()) {
				continue // a field of an anonymous type: no context to show
			}
			loc := 1.0
			switch {
			case sl == t:
			case q.importRank[sl] > 0:
				loc *= 2
			case sl.Dir == t.Dir:
				loc *= 1.5
			}
			hits = append(hits, hit{ref, base * loc})
		}
	}
	slices.SortFunc(hits, func(x, y hit) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		px, py := r.FileByID(x.ref.File).Path, r.FileByID(y.ref.File).Path
		if c := strings.Compare(px, py); c != 0 {
			return c
		}
		return int(x.ref.Def - y.ref.Def)
	})
	var out []*Candidate
	seen := map[string]bool{}
	texts := map[uint64]bool{} // normalised text of the definitions kept
	for _, h := range hits {
		if len(out) >= q.params.MaxCandidates {
			break
		}
		sl := r.FileByID(h.ref.File)
		d := &sl.Analysis.Defs[h.ref.Def]
		rs := defRanges(q.params, sl.Analysis, h.ref.Def)
		if len(rs) == 0 {
			continue
		}
		key := rangesKey(sl, rs)
		if seen[key] {
			continue
		}
		seen[key] = true
		if th := normalisedHash(sl.Analysis, rs); texts[th] {
			continue // the same definition in another file (generated or copied code)
		} else {
			texts[th] = true
		}
		out = append(out, &Candidate{file: sl, kind: SourceDefinition, ranges: rs, key: key, score: h.score,
			label: d.Kind.String() + " " + d.Name})
	}
	return out
}

// simCandidates are the windows most similar (BM25) to the query region,
// and, with a file weight, the files ranked by the summed similarity of
// their windows. A window of another file is shown with the
// SimilarTailLines that follow it (what follows the code that matches the
// cursor's is the likeliest model of what follows the cursor), or as the
// whole file when it is half of a small file (smallFileWhole).
func (q *SearchQuery) simCandidates(ids map[string]float64) ([]*Candidate, map[*index.File]int) {
	qt := make(map[syntax.Term]int, len(ids))
	for n, c := range ids {
		qt[syntax.HashIdent(n)] += max(1, int(c+0.5))
	}
	wl, t := q.windowLines, q.cursor
	var fileScore map[uint32]float64
	if q.params.Weights.File > 0 {
		fileScore = map[uint32]float64{}
	}
	builtTarget := t.BuildOutput
	hits := q.index.Similar(qt, 2*q.params.MaxCandidates, func(sl *index.File, c *syntax.Chunk) bool {
		if sl == t {
			return c.Start > wl.Last || c.End < wl.First
		}
		return builtTarget || !sl.BuildOutput
	}, fileScore)
	var fileRank map[*index.File]int
	if fileScore != nil {
		fileRank = q.rankFiles(fileScore)
	}
	var out []*Candidate
	taken := map[*index.File][]LineRange{}
	var kept []*syntax.Chunk
hits:
	for _, h := range hits {
		if len(out) >= q.params.MaxCandidates {
			break
		}
		cr := q.index.Chunk(h.Chunk)
		sl := q.index.FileByID(cr.File)
		c := &sl.Analysis.Chunks[cr.Chunk]
		other := sl != t
		end := c.End
		if other {
			end = min(end+int32(q.params.SimilarTailLines), sl.Analysis.NumLines()-1)
		}
		s, e, ok := sl.Analysis.Trim(c.Start, end)
		if !ok {
			continue
		}
		rg := LineRange{s, e}
		if overlaps(taken[sl], rg) {
			continue // a shifted copy of a better window
		}
		for _, k := range kept {
			if nearDuplicate(k.Terms, c.Terms) {
				continue hits // a copy of a better window, from another file
			}
		}
		kept = append(kept, c)
		rs, label := []LineRange{rg}, "similar window"
		if other {
			if whole := smallFileWhole(sl.Analysis, c); whole != nil && whole[0] != rg {
				rs, label = whole, "similar file (whole: at most twice its window)"
			}
		}
		taken[sl] = append(taken[sl], rs...)
		out = append(out, &Candidate{file: sl, kind: SourceSimilar, ranges: rs, key: rangesKey(sl, rs),
			score: h.Score, label: label})
	}
	return out, fileRank
}

// smallFileWhole returns the whole of a's ranges when a is at most twice
// as long as its window c, else nil: a window that is half of a small file
// or more leaves out the part that most often holds what the model needs
// next (the rest of the function, the sibling method), for few tokens more.
// (Not for the cursor file: its windows are same-file context around the
// prefix/suffix window.)
func smallFileWhole(a *syntax.Analysis, c *syntax.Chunk) []LineRange {
	if (c.End-c.Start+1)*2 < a.NumLines() {
		return nil
	}
	return wholeRanges(a)
}

// rankFiles ranks the files other than the cursor file by the summed
// similarity of their windows to the query (a file-level relevance signal
// for the fusion, obtained from the same BM25 pass).
func (q *SearchQuery) rankFiles(score map[uint32]float64) map[*index.File]int {
	type fs struct {
		sl *index.File
		s  float64
	}
	var xs []fs
	for id, s := range score {
		if sl := q.index.FileByID(id); sl != nil && sl != q.cursor {
			xs = append(xs, fs{sl, s})
		}
	}
	slices.SortFunc(xs, func(x, y fs) int {
		if x.s != y.s {
			if x.s > y.s {
				return -1
			}
			return 1
		}
		return strings.Compare(x.sl.Path, y.sl.Path)
	})
	rank := make(map[*index.File]int, min(len(xs), 64))
	for i, x := range xs[:min(len(xs), 64)] {
		rank[x.sl] = i + 1
	}
	return rank
}

// nearDupJaccard is the weighted Jaccard similarity of two windows'
// identifier counts from which the lower-ranked one is a near-duplicate.
const nearDupJaccard = 0.8

// nearDuplicate reports whether two windows' identifier counts (sorted by
// term) have a weighted Jaccard similarity (Σ min / Σ max) of at least
// nearDupJaccard: the same code repeated in sibling files, give or take a
// name.
func nearDuplicate(x, y []syntax.TermCount) bool {
	var inter, union int
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case j == len(y) || i < len(x) && x[i].Term < y[j].Term:
			union += int(x[i].Count)
			i++
		case i == len(x) || y[j].Term < x[i].Term:
			union += int(y[j].Count)
			j++
		default:
			inter += int(min(x[i].Count, y[j].Count))
			union += int(max(x[i].Count, y[j].Count))
			i++
			j++
		}
	}
	return union > 0 && float64(inter) >= nearDupJaccard*float64(union)
}

// normalisedHash hashes the text of a's ranges with runs of white space
// made one space (FNV-1a), so copies that differ in indentation or line
// breaks hash alike.
func normalisedHash(a *syntax.Analysis, rs []LineRange) uint64 {
	h := uint64(14695981039346656037)
	space := false
	for _, r := range rs {
		s := a.RangeText(r.First, r.Last)
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				space = true
				continue
			}
			if space {
				h = (h ^ ' ') * 1099511628211
				space = false
			}
			h = (h ^ uint64(c)) * 1099511628211
		}
		space = true
	}
	return h
}

package contextpack

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"weak"

	"go.uber.org/zap"
)

// assembly is one Build after the repository index is current. It runs
// with the index locked.
type assembly struct {
	b            *Builder
	r            *repoIndex
	t            *slot
	req          *Request
	off          int
	budget       int
	promptBudget int
	strategy     Strategy
	logFields    []zap.Field // the call's (internal/logctx)

	a         *analysis
	cl        int32
	repoLevel bool
	overhead  int
	avail     int
	limit     int // local budget
	win       window
	wl        lineRange // lines of the window
	ctxBudget int
	ctxUsed   int

	used     identCounts // identifiers of the cursor file
	imports  []importHit
	impRank  map[*slot]int
	fileRank map[*slot]int // files by summed window similarity

	t1       []*candidate // stable tier, most relevant first
	t1Whole  map[*slot]bool
	t1Ranges map[*slot][]lineRange
	all      []*candidate
	seen     map[term]bool // identifiers the prompt shows (Diversity only)
	blocks   map[*slot]*block
	above    []lineRange // same-file context above the window
	below    []lineRange // and below it
	extras   int         // tokens of above and below (beyond the headers)

	selKey   selectionKey // with selected: the selection's memo key
	selected bool
	lineIDs  string // lineIdents
}

// lineIdents lists, sorted and space-separated, the identifiers typed on
// the cursor's line before the cursor that are complete (something follows
// them), which the typing view leaves out. They change a few times per
// line, not at every keystroke.
func (as *assembly) lineIdents() string {
	if as.t.real == nil {
		return "" // the line is empty
	}
	line := as.a.content[as.a.lines[as.cl]:as.off]
	var ids []string
	scanIdents(line, as.a.lang, func(id string, off int) bool {
		if off+len(id) < len(line) {
			ids = append(ids, id)
		}
		return true
	})
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), " ")
}

// block is the cursor-dependent context from one file.
type block struct {
	sl     *slot
	ranges []lineRange
	tokens int // content
	head   int // file separator and path line
	best   float64
	n      int
}

func (as *assembly) run() (*Prompt, error) {
	b := as.b
	cfg := &b.cfg
	as.a = as.t.an
	if as.t.real != nil {
		as.a = as.t.an.withText(as.t.real.content, as.t.viewLine)
	}
	as.cl = as.a.lineOf(as.off)
	as.repoLevel = (as.req.RepoName != "" || len(as.req.Files) > 1) && as.strategy != StrategyNone
	if as.repoLevel {
		as.overhead = 1 + b.count.plain(as.t.path+"\n") + 3
		if as.req.RepoName != "" {
			as.overhead += 1 + b.count.plain(as.req.RepoName+"\n")
		}
		if as.promptBudget-as.overhead < cfg.MinPromptTokens {
			as.repoLevel = false // paths do not fit; plain FIM still does
		}
	}
	if !as.repoLevel {
		as.overhead = 3
	}
	as.avail = as.promptBudget - as.overhead
	others := as.repoLevel && len(as.r.files) > 1
	as.limit = as.avail
	if others {
		as.limit = int(float64(as.avail) * cfg.LocalShare)
	}
	as.win = b.localWindow(as.a, as.off, as.limit)
	as.wl = as.win.lines(as.a, as.off)
	if others {
		local := as.win.preTokens + as.win.sufTokens + as.win.headerTokens
		q := cfg.ContextQuantum
		as.ctxBudget = max(0, (as.avail-local)/q*q)
	}
	as.blocks = map[*slot]*block{}
	as.t1Whole = map[*slot]bool{}
	as.t1Ranges = map[*slot][]lineRange{}
	as.impRank = map[*slot]int{}
	if as.ctxBudget > 0 {
		switch as.strategy {
		case StrategyExecRepoBench:
			as.packExecRepoBench()
		case StrategyJaccard:
			as.packJaccard()
		default:
			as.lineIDs = as.lineIdents()
			key := as.selectionKey()
			as.selKey, as.selected = key, true
			if m := &as.r.selected; m.ok && m.key == key {
				m.restore(as)
				break
			}
			as.rankImports()
			pool := as.packTier1()
			if as.strategy != StrategyImportsOnly {
				as.packTier2(pool)
			}
			if as.strategy == StrategyFused {
				as.expandBlocks()
			}
			as.r.selected.save(key, as)
		}
		as.growWindow()
	}
	return as.render()
}

// localTokens is the cursor file's part: prefix, suffix, headers and
// same-file context.
func (as *assembly) localTokens() int {
	return as.win.preTokens + as.win.sufTokens + as.win.headerTokens + as.extras
}

// psl is the first line of the kept prefix; sel+1 the line after the kept
// suffix.
func (as *assembly) psl() int32 { return as.a.lineOf(as.win.preStart) }

func (as *assembly) aboveRanges(extra []lineRange) []lineRange {
	return mergeRanges(append(slices.Clone(as.win.headers), extra...))
}

// extrasTokens is what same-file ranges add to the window's tokens.
func (as *assembly) extrasTokens(above, below []lineRange) int {
	n := 0
	if len(above) > 0 {
		n += as.b.rangesTokens(as.a, as.aboveRanges(above), -1, as.psl()) - as.win.headerTokens
	}
	if len(below) > 0 {
		n += as.b.rangesTokens(as.a, mergeRanges(below), as.wl.e+1, -1)
	}
	return n
}

// rankImports orders the imported files by how many of their definitions
// the cursor file names (explicit imports first on ties), which depends on
// the cursor file only, not on the cursor position. The order is memoized
// in the index until a file changes or the cursor moves to another file;
// while the cursor file alone is typed in, it carries over to the new
// version when nothing the order depends on changed (reusable).
//
// The cursor file's identifiers are its typing view's and the complete ones
// typed before the cursor on its line (lineIdents): a call being typed
// ranks the file that defines it.
func (as *assembly) rankImports() {
	a := as.t.an // the view's: the same while the cursor stays on its line
	as.used = a.identSet()
	if as.lineIDs != "" {
		as.used = maps.Clone(as.used)
		for _, id := range strings.Fields(as.lineIDs) {
			as.used[id]++
		}
	}
	m := &as.r.ranked
	switch {
	case m.t == as.t && m.an == a && m.lineIDs == as.lineIDs && m.version == as.r.version:
	case m.lineIDs == as.lineIDs && m.reusable(as.r, as.t, a):
		m.an, m.version = a, as.r.version
	default:
		imports, resolved := as.r.rankImports(as.t, as.used)
		*m = rankedImports{t: as.t, an: a, lineIDs: as.lineIDs, version: as.r.version, imports: imports, resolved: resolved}
	}
	as.imports = m.imports
	for i, h := range as.imports {
		as.impRank[h.sl] = i + 1
	}
}

// reusable reports whether the order memoized for version m.an of the
// cursor file t holds for its next version a: every index update since
// m's version changed t alone, a came from m.an by one edit, a imports
// what m.an did, and no identifier that appeared or disappeared with the
// edit names a definition of a file the imports resolved to (so every
// file's used definitions are as they were).
func (m *rankedImports) reusable(r *repoIndex, t *slot, a *analysis) bool {
	if m.t != t || m.an == nil || r.onlyEdited != t || m.version < r.onlySince ||
		a.memo.flipsFrom != weak.Make(m.an) || !sameImports(m.an.imports, a.imports) {
		return false
	}
	for _, id := range a.memo.flips {
		for _, sl := range m.resolved {
			if sl.an.defines(id) {
				return false
			}
		}
	}
	return true
}

// sameImports compares import statements by what they import, not where.
func sameImports(x, y []importRef) bool {
	return slices.EqualFunc(x, y, func(p, q importRef) bool {
		return p.kind == q.kind && p.spec == q.spec && slices.Equal(p.names, q.names)
	})
}

// rankImports resolves t's imports and orders them by how many distinct
// definition names t uses (used), explicit imports first on ties; resolved
// lists every file the imports resolved to.
func (r *repoIndex) rankImports(t *slot, used identCounts) (ranked []importHit, resolved []*slot) {
	hits := r.resolveImports(t)
	resolved = make([]*slot, len(hits))
	for i, h := range hits {
		resolved[i] = h.sl
	}
	type scored struct {
		h     importHit
		score float64
	}
	rs := make([]scored, 0, len(hits))
	for _, h := range hits {
		bits, names := h.sl.an.usedDefs(used)
		s := float64(names)
		if h.explicit {
			s += 0.5
		} else if s == 0 {
			continue // same package, nothing used from it
		}
		h.used = bits
		rs = append(rs, scored{h, s})
	}
	slices.SortStableFunc(rs, func(x, y scored) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		return x.h.order - y.h.order
	})
	ranked = make([]importHit, len(rs))
	for i, x := range rs {
		ranked[i] = x.h
	}
	return ranked, resolved
}

func (as *assembly) headTokens(sl *slot) int { return 1 + as.b.count.plain(sl.path+"\n") }

// importCandidates are the candidates of the ranked imports, memoized
// with the ranking for the cursor file's analysis (the same on one line)
// and identifiers.
func (as *assembly) importCandidates() []*candidate {
	m := &as.r.ranked
	if m.cands == nil || m.candsAn != as.t.an || m.candsVersion != as.r.version || m.candsIDs != as.lineIDs {
		cs := make([]*candidate, 0, min(len(as.imports), as.b.cfg.MaxCandidates))
		for i, h := range as.imports[:min(len(as.imports), as.b.cfg.MaxCandidates)] {
			cs = append(cs, as.importCandidate(h, i+1))
		}
		m.cands, m.candsAn, m.candsVersion, m.candsIDs = cs, as.t.an, as.r.version, as.lineIDs
	}
	return cloneCandidates(m.cands)
}

// importCandidate shows an imported file whole when it is small enough,
// else as an outline of its definitions.
func (as *assembly) importCandidate(h importHit, rank int) *candidate {
	b := as.b
	a := h.sl.an
	c := &candidate{sl: h.sl, kind: SourceImport}
	c.rank[srcImp] = rank
	// Code averages 3-4 bytes per token: a file over 5 bytes per allowed
	// token is shown as its outline without counting it whole.
	if len(a.content) <= 5*b.cfg.MaxImportFileTokens {
		if rs := wholeRanges(a); len(rs) > 0 {
			if n := b.rangesTokens(a, rs, -1, -1); n <= b.cfg.MaxImportFileTokens {
				c.ranges, c.whole, c.tokens, c.label = rs, true, n, "whole file"
			}
		}
	}
	if !c.whole {
		c.ranges, c.tokens = b.outline(a, as.used, h.used, b.cfg.MaxImportFileTokens)
		c.outline, c.label = true, "outline"
	}
	c.key = rangesKey(h.sl, c.ranges)
	return c
}

// packTier1 fills the stable tier with imported files in rank order and
// returns those that did not fit, for the cursor tier.
func (as *assembly) packTier1() []*candidate {
	limit := int(float64(as.ctxBudget) * as.b.cfg.ImportShare)
	switch as.strategy {
	case StrategyImportsOnly:
		limit = as.ctxBudget
	case StrategyDefinitionsOnly, StrategySimilarOnly:
		return nil
	}
	var pool []*candidate
	for i, c := range as.importCandidates() {
		if len(c.ranges) == 0 {
			c.reason = "dropped: nothing to show (no definitions in a large file)"
			as.all = append(as.all, c)
			continue
		}
		cost := as.headTokens(c.sl) + c.tokens
		if as.ctxUsed+cost <= limit {
			c.included, c.tier, c.tokens = true, 1, cost
			c.reason = "import #" + strconv.Itoa(i+1) + ", " + c.label + " (stable tier)"
			as.ctxUsed += cost
			as.t1 = append(as.t1, c)
			as.all = append(as.all, c)
			if c.whole {
				as.t1Whole[c.sl] = true
			}
			as.t1Ranges[c.sl] = c.ranges
			continue
		}
		pool = append(pool, c)
	}
	return pool
}

// queryRegion is the code the cursor-dependent sources look at: the
// enclosing function when it is short enough, else a window of lines
// aligned to 8-line steps so that it moves only every few lines.
func (as *assembly) queryRegion() lineRange {
	a, cl := as.a, as.cl
	ql := int32(as.b.cfg.QueryLines)
	var best *def
	for i := range a.defs {
		d := &a.defs[i]
		if d.start > cl {
			break
		}
		if d.end >= cl && (d.kind == kindFunction || d.kind == kindMethod) {
			best = d
		}
	}
	if best != nil && best.end-best.start+1 <= 2*ql {
		return lineRange{best.start, best.end}
	}
	const step = 8
	base := cl / step * step
	return lineRange{max(0, base-ql*3/4), min(a.numLines()-1, base+step-1+ql/4)}
}

// queryIdents weighs the identifiers of the query region, leaving out the
// cursor line (it changes on every keystroke; excluding it keeps the
// cursor-dependent context stable while typing) and names defined inside
// the region (locals). An occurrence counts more when it is called or
// looks like a type (capitalised) than when it is a bare lower-case word.
func (as *assembly) queryIdents(reg lineRange) map[string]float64 {
	a := as.a
	q := map[string]float64{}
	for i := reg.s; i <= reg.e; i++ {
		if i == as.cl {
			continue
		}
		line := a.lineText(i)
		scanIdents(line, a.lang, func(id string, off int) bool {
			w := 0.5
			end := off + len(id)
			switch {
			case end < len(line) && line[end] == '(':
				w = 1.5
			case off > 0 && line[off-1] == '.':
				w = 1
			case id[0] >= 'A' && id[0] <= 'Z':
				w = 1
			}
			q[id] += w
			return true
		})
	}
	for i := range a.defs {
		d := &a.defs[i]
		if d.start > reg.s && d.start <= reg.e {
			delete(q, d.name)
		}
	}
	return q
}

// localsIn is the set of parameters and local variables declared from the
// start of the function enclosing the cursor to the end of reg.
func (as *assembly) localsIn(reg lineRange) map[term]bool {
	a := as.a
	from := reg.s
	for i := range a.defs {
		d := &a.defs[i]
		if d.start > as.cl {
			break
		}
		if d.end >= as.cl && (d.kind == kindFunction || d.kind == kindMethod) {
			from = min(from, d.start)
		}
	}
	out := map[term]bool{}
	i, _ := slices.BinarySearchFunc(a.locals, from, func(l localRef, line int32) int { return int(l.line - line) })
	for ; i < len(a.locals) && a.locals[i].line <= reg.e; i++ {
		out[a.locals[i].t] = true
	}
	return out
}

// isTestPath reports test files by the usual naming conventions.
func isTestPath(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") ||
		strings.HasSuffix(base, "_test.py") || strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") ||
		strings.HasSuffix(base, "Test.java") || strings.HasSuffix(base, "Tests.java") ||
		strings.Contains(p, "/tests/") || strings.HasPrefix(p, "tests/") || strings.Contains(p, "/test/") ||
		strings.HasPrefix(p, "test/") || strings.Contains(p, "/testdata/")
}

// defCandidates looks up the region's identifiers (locals excluded) in the
// definitions index.
func (as *assembly) defCandidates(q map[string]float64, locals map[term]bool) []*candidate {
	r, t := as.r, as.t
	testTarget := isTestPath(t.path)
	names := make([]string, 0, len(q))
	for n := range q {
		if !locals[hashIdent(n)] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	type hit struct {
		ref   defRef
		score float64
	}
	var hits []hit
	const maxRefs = 6
	for _, name := range names {
		all := r.defs[name]
		if len(all) == 0 {
			continue
		}
		refs := make([]defRef, 0, len(all))
		for _, ref := range all {
			if testTarget || !isTestPath(r.slots[ref.slot].path) {
				refs = append(refs, ref)
			}
		}
		if len(refs) > maxRefs {
			var near []defRef
			for _, ref := range refs {
				sl := r.slots[ref.slot]
				if as.impRank[sl] > 0 || sl.dir == t.dir {
					near = append(near, ref)
				}
			}
			refs = near
		}
		if len(refs) == 0 || len(refs) > maxRefs {
			continue // too ambiguous to help
		}
		base := (1 + math.Log1p(q[name])) / math.Sqrt(float64(len(refs)))
		for _, ref := range refs {
			sl := r.slots[ref.slot]
			d := &sl.an.defs[ref.def]
			if sl == t && d.start <= as.wl.e && d.end >= as.wl.s {
				continue // visible in the window already
			}
			if d.kind.isMember() && (d.parent < 0 || !sl.an.defs[d.parent].kind.isScope()) {
				continue // a field of an anonymous type: no context to show
			}
			loc := 1.0
			switch {
			case sl == t:
			case as.impRank[sl] > 0:
				loc *= 2
			case sl.dir == t.dir:
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
		px, py := r.slots[x.ref.slot].path, r.slots[y.ref.slot].path
		if c := strings.Compare(px, py); c != 0 {
			return c
		}
		return int(x.ref.def - y.ref.def)
	})
	var out []*candidate
	seen := map[string]bool{}
	for _, h := range hits {
		if len(out) >= as.b.cfg.MaxCandidates {
			break
		}
		sl := r.slots[h.ref.slot]
		d := &sl.an.defs[h.ref.def]
		rs := as.b.defRanges(sl.an, h.ref.def)
		if len(rs) == 0 {
			continue
		}
		key := rangesKey(sl, rs)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, &candidate{sl: sl, kind: SourceDefinition, ranges: rs, key: key, score: h.score,
			label: d.kind.String() + " " + d.name})
	}
	return out
}

// simCandidates are the windows most similar (BM25) to the query region.
func (as *assembly) simCandidates(q map[string]float64) []*candidate {
	qt := make(map[term]int, len(q))
	for n, c := range q {
		qt[hashIdent(n)] += max(1, int(c+0.5))
	}
	wl, t := as.wl, as.t
	var fileScore map[uint32]float64
	if as.b.cfg.FileWeight > 0 {
		fileScore = map[uint32]float64{}
	}
	hits := as.r.bm25(qt, 2*as.b.cfg.MaxCandidates, func(sl *slot, c *chunk) bool {
		return sl != t || c.start > wl.e || c.end < wl.s
	}, fileScore)
	if fileScore != nil {
		as.rankFiles(fileScore)
	}
	var out []*candidate
	taken := map[*slot][]lineRange{}
	for _, h := range hits {
		if len(out) >= as.b.cfg.MaxCandidates {
			break
		}
		cr := as.r.chunks[h.chunk]
		sl := as.r.slots[cr.slot]
		c := &sl.an.chunks[cr.idx]
		s, e, ok := sl.an.trim(c.start, c.end)
		if !ok {
			continue
		}
		rg := lineRange{s, e}
		if overlaps(taken[sl], rg) {
			continue // a shifted copy of a better window
		}
		taken[sl] = append(taken[sl], rg)
		rs := []lineRange{rg}
		out = append(out, &candidate{sl: sl, kind: SourceSimilar, ranges: rs, key: rangesKey(sl, rs),
			score: h.score, label: "similar window"})
	}
	return out
}

// rankFiles ranks the files other than the cursor file by the summed
// similarity of their windows to the query (a file-level relevance signal
// for the fusion, obtained from the same BM25 pass).
func (as *assembly) rankFiles(score map[uint32]float64) {
	type fs struct {
		sl *slot
		s  float64
	}
	var xs []fs
	for id, s := range score {
		if sl := as.r.slots[id]; sl != nil && sl != as.t {
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
		return strings.Compare(x.sl.path, y.sl.path)
	})
	as.fileRank = make(map[*slot]int, min(len(xs), 64))
	for i, x := range xs[:min(len(xs), 64)] {
		as.fileRank[x.sl] = i + 1
	}
}

// packTier2 fuses definitions, similar windows and the imports left over
// from the stable tier by reciprocal rank, and packs them into what is
// left of the context budget.
func (as *assembly) packTier2(pool []*candidate) {
	b := as.b
	cfg := &b.cfg
	var lists [3][]*candidate
	key := as.searchKey()
	if m := &as.r.search; m.ok && m.key == key {
		lists[srcDef], lists[srcSim] = cloneCandidates(m.lists[srcDef]), cloneCandidates(m.lists[srcSim])
		as.fileRank = m.fileRank
	} else {
		reg := as.queryRegion()
		q := as.queryIdents(reg)
		if as.strategy != StrategySimilarOnly {
			lists[srcDef] = as.defCandidates(q, as.localsIn(reg))
		}
		if as.strategy != StrategyDefinitionsOnly {
			lists[srcSim] = as.simCandidates(q)
		}
		as.r.searches++
		*m = searchMemo{key: key, ok: true, fileRank: as.fileRank,
			lists: [2][]*candidate{cloneCandidates(lists[srcDef]), cloneCandidates(lists[srcSim])}}
	}
	lists[srcImp] = pool
	byKey := map[string]*candidate{}
	var fused []*candidate
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
	k := cfg.RRFK
	w := [3]float64{cfg.DefinitionWeight, cfg.SimilarWeight, cfg.ImportWeight}
	for _, c := range fused {
		s := 0.0
		for src, r := range c.rank {
			if r > 0 {
				s += w[src] / (k + float64(r))
			}
		}
		if ir := as.impRank[c.sl]; ir > 0 && c.rank[srcImp] == 0 && as.strategy == StrategyFused {
			s += w[srcImp] / (k + float64(ir))
		}
		if fr := as.fileRank[c.sl]; fr > 0 && as.strategy == StrategyFused {
			s += cfg.FileWeight / (k + float64(fr))
		}
		c.score = s
	}
	slices.SortStableFunc(fused, func(x, y *candidate) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		if c := strings.Compare(x.sl.path, y.sl.path); c != 0 {
			return c
		}
		return int(x.ranges[0].s - y.ranges[0].s)
	})
	remaining := as.ctxBudget - as.ctxUsed
	perFile := map[*slot]int{}
	next := as.picker(fused)
	for {
		c := next()
		if c == nil {
			break
		}
		as.all = append(as.all, c)
		why := c.fusedWhy()
		if tooLong(rangesBytes(c.sl.an, c.ranges), remaining) {
			c.reason = "dropped: far larger than the budget left (not counted); " + why
			continue
		}
		c.tokens = b.rangesTokens(c.sl.an, c.ranges, -1, -1)
		switch {
		case c.sl == as.t && overlaps(c.ranges, as.wl):
			c.reason = "dropped: inside the prefix/suffix window; " + why
			continue
		case as.t1Whole[c.sl] || covered(c.ranges, as.t1Ranges[c.sl]):
			c.reason = "dropped: already in the stable tier; " + why
			continue
		case perFile[c.sl] >= cfg.MaxSnippetsPerFile:
			c.reason = fmt.Sprintf("dropped: %d snippets from this file already (cap); %s", cfg.MaxSnippetsPerFile, why)
			continue
		}
		var cost int
		if c.sl == as.t {
			var ab, be []lineRange
			for _, r := range c.ranges {
				if r.e < as.wl.s {
					ab = append(ab, r)
				} else {
					be = append(be, r)
				}
			}
			n := as.extrasTokens(append(slices.Clone(as.above), ab...), append(slices.Clone(as.below), be...))
			cost = n - as.extras
			if cost <= remaining {
				as.above, as.below = append(as.above, ab...), append(as.below, be...)
				as.extras = n
			}
		} else {
			bl := as.blocks[c.sl]
			nb := bl == nil
			if nb {
				bl = &block{sl: c.sl, head: as.headTokens(c.sl)}
			}
			rs := mergeRanges(append(slices.Clone(bl.ranges), c.ranges...))
			n := b.rangesTokens(c.sl.an, rs, -1, -1)
			cost = n - bl.tokens
			if nb {
				cost += bl.head
			}
			if cost <= remaining {
				bl.ranges, bl.tokens = rs, n
				bl.best = max(bl.best, c.score)
				bl.n++
				as.blocks[c.sl] = bl
			}
		}
		if cost > remaining {
			c.reason = fmt.Sprintf("dropped: needs %d tokens, %d left; %s", cost, remaining, why)
			continue
		}
		remaining -= cost
		as.ctxUsed += cost
		perFile[c.sl]++
		c.included, c.tier, c.tokens = true, 2, cost
		c.reason = "cursor tier: " + why
		as.noteIncluded(c)
	}
}

// fusedWhy is the manifest's account of a fused candidate:
// "<label>, fused <score> (ranks def <n>, similar <n>, import <n>)".
// Reasons are written for every candidate on every request, so this
// avoids fmt.
func (c *candidate) fusedWhy() string {
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
func (as *assembly) picker(fused []*candidate) func() *candidate {
	d := as.b.cfg.Diversity
	if d <= 0 {
		i := 0
		return func() *candidate {
			if i == len(fused) {
				return nil
			}
			i++
			return fused[i-1]
		}
	}
	as.seen = map[term]bool{}
	addText := func(s string, lang langID) {
		scanIdents(s, lang, func(id string, _ int) bool {
			as.seen[hashIdent(id)] = true
			return true
		})
	}
	addText(as.a.content[as.win.preStart:as.win.sufEnd], as.a.lang)
	for _, c := range as.t1 {
		as.noteIncluded(c)
	}
	ids := make(map[*candidate][]term, len(fused))
	for _, c := range fused {
		set := map[term]bool{}
		for _, r := range c.ranges {
			scanIdents(c.sl.an.rangeText(r.s, r.e), c.sl.an.lang, func(id string, _ int) bool {
				set[hashIdent(id)] = true
				return true
			})
		}
		ts := make([]term, 0, len(set))
		for t := range set {
			ts = append(ts, t)
		}
		ids[c] = ts
	}
	rem := slices.Clone(fused)
	const lookahead = 24
	return func() *candidate {
		if len(rem) == 0 {
			return nil
		}
		best, bestV := 0, -1.0
		for i, c := range rem[:min(len(rem), lookahead)] {
			novel := 0
			for _, t := range ids[c] {
				if !as.seen[t] {
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
func (as *assembly) noteIncluded(c *candidate) {
	if as.seen == nil {
		return
	}
	for _, r := range c.ranges {
		scanIdents(c.sl.an.rangeText(r.s, r.e), c.sl.an.lang, func(id string, _ int) bool {
			as.seen[hashIdent(id)] = true
			return true
		})
	}
}

// expandBlocks spends context budget that packing left over on showing
// the files of the cursor tier whole, most relevant first.
func (as *assembly) expandBlocks() {
	remaining := as.ctxBudget - as.ctxUsed
	if remaining < 32 || len(as.blocks) == 0 {
		return
	}
	bls := make([]*block, 0, len(as.blocks))
	for _, bl := range as.blocks {
		bls = append(bls, bl)
	}
	slices.SortFunc(bls, func(x, y *block) int {
		if x.best != y.best {
			if x.best > y.best {
				return -1
			}
			return 1
		}
		return strings.Compare(x.sl.path, y.sl.path)
	})
	for _, bl := range bls {
		a := bl.sl.an
		whole := wholeRanges(a)
		// Code averages 3-4 bytes per token; a file over 6 bytes per token
		// of room is not worth counting.
		if len(whole) == 0 || rangesBytes(a, whole) > 6*(remaining+bl.tokens) {
			continue
		}
		n := as.b.rangesTokens(a, whole, -1, -1)
		cost := n - bl.tokens
		if cost <= 0 || cost > remaining {
			continue
		}
		c := &candidate{sl: bl.sl, kind: SourceSimilar, ranges: whole, whole: true, included: true, tier: 2,
			tokens: cost, score: bl.best, reason: "cursor tier: file expanded to whole with budget left"}
		as.all = append(as.all, c)
		bl.ranges, bl.tokens = whole, n
		remaining -= cost
		as.ctxUsed += cost
	}
}

// growWindow gives context budget that nothing used back to a cut
// prefix/suffix window.
func (as *assembly) growWindow() {
	if !as.win.preCut && !as.win.sufCut {
		return
	}
	spare := as.ctxBudget - as.ctxUsed
	if spare < 16 {
		return
	}
	b := as.b
	limit := as.avail - (as.ctxUsed - as.extras)
	nw := b.localWindow(as.a, as.off, limit-as.extras)
	as.win = nw
	as.limit = limit - as.extras
	as.wl = nw.lines(as.a, as.off)
	keep := func(rs []lineRange) []lineRange {
		return slices.DeleteFunc(rs, func(r lineRange) bool { return r.s <= as.wl.e && r.e >= as.wl.s })
	}
	above, below := keep(as.above), keep(as.below)
	n := as.extrasTokens(above, below)
	if nw.preTokens+nw.sufTokens+nw.headerTokens+n+(as.ctxUsed-as.extras) > as.avail {
		above, below, n = nil, nil, 0
	}
	if len(above)+len(below) < len(as.above)+len(as.below) {
		for _, c := range as.all {
			if c.included && c.sl == as.t && !overlapsAll(c.ranges, above, below) {
				c.included = false
				c.reason = "dropped: covered by the prefix/suffix window after it grew; " + c.reason
			}
		}
	}
	as.ctxUsed += n - as.extras
	as.above, as.below, as.extras = above, below, n
}

func rangesBytes(a *analysis, rs []lineRange) int {
	n := 0
	for _, r := range rs {
		n += a.lineEnd(r.e) - int(a.lines[r.s])
	}
	return n
}

// covered reports whether every line of rs is in cover (both merged).
func covered(rs, cover []lineRange) bool {
	if len(cover) == 0 {
		return false
	}
	for _, r := range rs {
		ok := false
		for _, c := range cover {
			if c.s <= r.s && r.e <= c.e {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func overlapsAll(rs, above, below []lineRange) bool {
	for _, r := range rs {
		if !overlaps(above, r) && !overlaps(below, r) {
			return false
		}
	}
	return true
}

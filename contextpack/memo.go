package contextpack

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"weak"
)

// Per-analysis memos for the warm path. An analysis is immutable, so what
// the assembler derives from it alone (or from it and a small key) can be
// kept with it: a repeated request, a cursor move without an edit and the
// import tier while typing then skip the work. Each memo is filled on
// first use, so files that are never a cursor file or an import pay
// nothing.
type analysisMemo struct {
	identsOnce sync.Once
	idents     identCounts // identifiers of the whole file
	identsDone atomic.Bool // idents is set
	// identsFrom, when set, is the previous version of the file, and
	// editLines the lines the edit replaced there (from, oldTo) and wrote
	// here (from, newTo): identSet patches the previous counts.
	identsFrom *analysis
	editLines  [3]int32
	// flips are the identifiers present in exactly one of identsFrom and
	// this version, set when identSet patched identsFrom's counts;
	// flipsFrom names that version without keeping it alive.
	flips     []string
	flipsFrom weak.Pointer[analysis]

	namesOnce sync.Once
	nameOf    []int32 // defs[i] → index of its name among the distinct names
	nNames    int
	nameIdx   map[string]int32 // distinct name → its index

	outMu sync.Mutex
	out   outlineMemo // the last outline computed for this file
}

// outlineMemo is an import outline for one set of used definitions.
type outlineMemo struct {
	used   []uint64 // bit i: defs[i].name is used by the cursor file
	limit  int
	ranges []lineRange
	tokens int
}

// identCounts counts the occurrences of each identifier of a file.
type identCounts map[string]int32

func (c identCounts) has(id string) bool { return c[id] > 0 }

// scanLines adds d for each identifier on lines [from, to] of a; crossed,
// when not nil, gets each identifier whose count went to or from zero.
func (c identCounts) scanLines(a *analysis, from, to int32, d int32, crossed func(id string)) {
	if from > to || from >= a.numLines() {
		return
	}
	scanIdents(a.rangeText(from, min(to, a.numLines()-1)), a.lang, func(id string, _ int) bool {
		was := c[id]
		if n := was + d; n > 0 {
			c[id] = n
		} else {
			delete(c, id)
		}
		if crossed != nil && (was > 0) != (was+d > 0) {
			crossed(id)
		}
		return true
	})
}

// identSet counts the identifiers of the file (keywords excluded), as
// scanIdents finds them. After a keystroke it patches the previous
// version's counts (when that version has them) by re-scanning only the
// edited lines: identifiers never span lines.
func (a *analysis) identSet() identCounts {
	a.memo.identsOnce.Do(func() {
		if prev := a.memo.identsFrom; prev != nil && prev.memo.identsDone.Load() {
			before, m := prev.memo.idents, maps.Clone(prev.memo.idents)
			// An identifier that went to zero and back has not flipped.
			var crossed []string
			note := func(id string) {
				if !slices.Contains(crossed, id) {
					crossed = append(crossed, id)
				}
			}
			l := a.memo.editLines
			m.scanLines(prev, l[0], l[1], -1, note)
			m.scanLines(a, l[0], l[2], 1, note)
			a.memo.idents = m
			a.memo.flips = slices.DeleteFunc(crossed, func(id string) bool { return before.has(id) == m.has(id) })
			a.memo.flipsFrom = weak.Make(prev)
		} else {
			m := identCounts{}
			m.scanLines(a, 0, a.numLines()-1, 1, nil)
			a.memo.idents = m
		}
		a.memo.identsFrom = nil // let the previous version go
		a.memo.identsDone.Store(true)
	})
	return a.memo.idents
}

// defines reports whether a has a definition named name.
func (a *analysis) defines(name string) bool {
	a.defNames()
	_, ok := a.memo.nameIdx[name]
	return ok
}

// defNames numbers the distinct names of the file's definitions.
func (a *analysis) defNames() (nameOf []int32, n int) {
	a.memo.namesOnce.Do(func() {
		idx := make(map[string]int32, len(a.defs))
		a.memo.nameOf = make([]int32, len(a.defs))
		for i := range a.defs {
			k, ok := idx[a.defs[i].name]
			if !ok {
				k = int32(len(idx))
				idx[a.defs[i].name] = k
			}
			a.memo.nameOf[i] = k
		}
		a.memo.nNames = len(idx)
		a.memo.nameIdx = idx
	})
	return a.memo.nameOf, a.memo.nNames
}

// usedDefs marks the definitions of a whose names are in used and counts
// the distinct names marked.
func (a *analysis) usedDefs(used identCounts) (bits []uint64, names int) {
	nameOf, n := a.defNames()
	bits = make([]uint64, (len(a.defs)+63)/64)
	var seen []uint64
	if n > 0 {
		seen = make([]uint64, (n+63)/64)
	}
	for i := range a.defs {
		if !used.has(a.defs[i].name) {
			continue
		}
		bits[i/64] |= 1 << (i % 64)
		k := nameOf[i]
		if seen[k/64]&(1<<(k%64)) == 0 {
			seen[k/64] |= 1 << (k % 64)
			names++
		}
	}
	return bits, names
}

// outline returns outlineRanges(a, used, limit) and its token count,
// from the memo when the same definitions are used as last time.
func (b *Builder) outline(a *analysis, used identCounts, bits []uint64, limit int) ([]lineRange, int) {
	a.memo.outMu.Lock()
	m := a.memo.out
	a.memo.outMu.Unlock()
	if m.limit == limit && m.used != nil && slices.Equal(m.used, bits) {
		return m.ranges, m.tokens
	}
	rs := b.outlineRanges(a, used, limit)
	n := b.rangesTokens(a, rs, -1, -1)
	a.memo.outMu.Lock()
	a.memo.out = outlineMemo{used: bits, limit: limit, ranges: rs, tokens: n}
	a.memo.outMu.Unlock()
	return rs, n
}

// promptKey is everything an assembly reads besides the index's state,
// which version stands for: the cursor file's slot and analysis, the
// cursor offset, the budgets and the strategy. (The repository name is the
// index's own; the file count is the index's.)
type promptKey struct {
	t            *slot
	an           *analysis
	real         *entry // the cursor file's text when an is its view's
	version      uint64
	off          int
	budget       int
	promptBudget int
	maxNew       int
	strategy     Strategy
}

// maxPromptMemo is how many recent prompts an index keeps: enough for a
// few requests at different cursors (or from different clients) to take
// turns without rebuilding.
const maxPromptMemo = 4

// promptMemo holds the latest prompts of an index, newest first. An
// identical request (a re-request after a cancelled keystroke, several
// samples of one benchmark task, a load test) gets a copy instead of a
// new assembly. Guarded by the index's mu.
type promptMemo struct {
	keys    []promptKey
	prompts []*Prompt
	bytes   int64
}

// get returns a copy of the prompt memoized for k.
func (m *promptMemo) get(k promptKey) *Prompt {
	for i := range m.keys {
		if m.keys[i] == k {
			return copyPrompt(m.prompts[i])
		}
	}
	return nil
}

// put remembers p for k, dropping prompts of older versions of the index.
func (m *promptMemo) put(k promptKey, p *Prompt) {
	n := 0
	for i := range m.keys {
		if m.keys[i].version == k.version && n < maxPromptMemo-1 {
			m.keys[n], m.prompts[n] = m.keys[i], m.prompts[i]
			n++
		}
	}
	clear(m.prompts[n:])
	m.keys, m.prompts = m.keys[:n], m.prompts[:n]
	m.keys = append([]promptKey{k}, m.keys...)
	m.prompts = append([]*Prompt{copyPrompt(p)}, m.prompts...)
	m.bytes = 0
	for _, q := range m.prompts {
		m.bytes += int64(len(q.Text)) + int64(len(q.Manifest.Sources))*96
	}
}

// copyPrompt copies p so that callers may change what they get (the
// server appends warnings) without touching the memo.
func copyPrompt(p *Prompt) *Prompt {
	c := *p
	c.Manifest.Sources = slices.Clone(p.Manifest.Sources)
	c.Manifest.Warnings = slices.Clone(p.Manifest.Warnings)
	return &c
}

// searchKey is everything the cursor-dependent search (the definitions
// and similar windows packTier2 fuses) reads besides the index's state:
// the cursor file's slot and view analysis, the cursor line (which fixes
// the query region and leaves its own line out) and the prefix/suffix
// window's lines (whose cursor-file hits are left out).
type searchKey struct {
	t        *slot
	an       *analysis
	version  uint64
	cl       int32
	wl       lineRange
	strategy Strategy
}

// searchMemo is the index's last search: keystrokes on one line repeat it
// (the typing view and the index do not change). Guarded by the index's
// mu. Candidates are copied in and out: the packing writes to them.
type searchMemo struct {
	key      searchKey
	ok       bool
	lists    [2][]*candidate // srcDef, srcSim
	fileRank map[*slot]int   // read only
}

func cloneCandidates(cs []*candidate) []*candidate {
	if cs == nil {
		return nil
	}
	out := make([]*candidate, len(cs))
	vals := make([]candidate, len(cs))
	for i, c := range cs {
		vals[i] = *c
		out[i] = &vals[i]
	}
	return out
}

// selectionKey is everything the context selection (import tier, cursor
// tier, whole-file expansion) reads besides the index's state: the search
// key, the prefix/suffix window's first line and scope headers (same-file
// context is counted against them), the context budget, and the cursor
// line's indentation (an elision line next to the window can take it).
type selectionKey struct {
	search    searchKey
	psl       int32
	headers   string
	ctxBudget int
	indent    string
	lineIDs   string
}

func (as *assembly) searchKey() searchKey {
	return searchKey{t: as.t, an: as.t.an, version: as.r.version, cl: as.cl, wl: as.wl, strategy: as.strategy}
}

func (as *assembly) selectionKey() selectionKey {
	return selectionKey{
		search: as.searchKey(),
		psl:    as.psl(), headers: rangesKey(as.t, as.win.headers), ctxBudget: as.ctxBudget,
		indent: lineIndent(as.a, as.cl), lineIDs: as.lineIDs,
	}
}

// selectionMemo is the index's last context selection: keystrokes on one
// line repeat it, and only the window and the rendering are new. Guarded
// by the index's mu; what the assembly changes afterwards (candidates,
// blocks, same-file ranges) is copied in and out, the maps are read only.
type selectionMemo struct {
	key     selectionKey
	ok      bool
	all     []*candidate
	t1      []int // indexes in all
	blocks  []block
	above   []lineRange
	below   []lineRange
	extras  int
	ctxUsed int

	used     identCounts
	imports  []importHit
	impRank  map[*slot]int
	fileRank map[*slot]int
	t1Whole  map[*slot]bool
	t1Ranges map[*slot][]lineRange
	seen     map[term]bool

	// head is the prompt up to the target's path line, rendered from this
	// selection (render), with its tokens and the context tokens in it.
	head        string
	headTokens  int
	headContext int
	headOK      bool
}

func (m *selectionMemo) save(key selectionKey, as *assembly) {
	at := make(map[*candidate]int, len(as.all))
	for i, c := range as.all {
		at[c] = i
	}
	*m = selectionMemo{key: key, ok: true, all: cloneCandidates(as.all),
		above: slices.Clone(as.above), below: slices.Clone(as.below), extras: as.extras, ctxUsed: as.ctxUsed,
		used: as.used, imports: as.imports, impRank: as.impRank, fileRank: as.fileRank,
		t1Whole: as.t1Whole, t1Ranges: as.t1Ranges, seen: as.seen}
	for _, c := range as.t1 {
		m.t1 = append(m.t1, at[c])
	}
	for _, bl := range as.blocks {
		m.blocks = append(m.blocks, *bl)
	}
}

func (m *selectionMemo) restore(as *assembly) {
	as.all = cloneCandidates(m.all)
	as.t1 = make([]*candidate, len(m.t1))
	for i, k := range m.t1 {
		as.t1[i] = as.all[k]
	}
	as.blocks = make(map[*slot]*block, len(m.blocks))
	for _, bl := range m.blocks {
		c := bl
		as.blocks[bl.sl] = &c
	}
	as.above, as.below = slices.Clone(m.above), slices.Clone(m.below)
	as.extras, as.ctxUsed = m.extras, m.ctxUsed
	as.used, as.imports, as.impRank, as.fileRank = m.used, m.imports, m.impRank, m.fileRank
	as.t1Whole, as.t1Ranges, as.seen = m.t1Whole, m.t1Ranges, m.seen
}

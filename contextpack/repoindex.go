package contextpack

import (
	"math"
	"path"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// repoIndex is the state of one repository as the last request described
// it: which content each path holds, an inverted index of definitions by
// name, and a BM25 index over sliding windows of lines. Requests update it
// incrementally (only changed paths are re-indexed). Guarded by its
// repository's mu (store.go).
type repoIndex struct {
	files   map[string]*slot
	slots   []*slot // by id; nil when free
	freeIDs []uint32
	gen     uint64

	defs map[string][]defRef

	post     map[syntax.Term][]posting
	df       map[syntax.Term]uint32
	chunks   []chunkRef
	live     int   // live chunks
	totalLen int64 // identifiers in live chunks
	livePost int
	deadPost int
	nDefRefs int

	byBase map[string][]*slot    // base name → files
	byDir  map[string][]*slot    // directory → files
	goMods map[string]string     // directory of a go.mod → module path
	fileDF map[syntax.Term]int32 // files per term; nil until a baseline needs it

	scratch []float32
	touched []uint32

	// version counts updates that changed the file set or a file's
	// content; memos of derived results are valid for one version.
	version uint64
	// onlyEdited is the file that every update since version onlySince
	// changed, in place and alone (a file being typed in); nil after any
	// other change.
	onlyEdited *slot
	onlySince  uint64
	// view is the slot that holds a typing view (the cursor file of the
	// last update, see typingView), nil when none does.
	view *slot
}

type slot struct {
	id        uint32
	path      string
	dir, base string
	lang      syntax.Lang
	e         *entry
	an        *syntax.Analysis
	real      *entry // when e is a typing view: the file's content (the view empties line viewLine)
	viewLine  int32
	chunkIDs  []uint32 // an.chunks[i] is r.chunks[chunkIDs[i]]
	gen       uint64
}

type defRef struct {
	slot uint32
	def  int32
}

type posting struct {
	chunk uint32
	tf    uint16
}

type chunkRef struct {
	slot   uint32
	idx    uint32
	length uint32
	dead   bool
}

func newRepoIndex() *repoIndex {
	return &repoIndex{
		files: map[string]*slot{}, defs: map[string][]defRef{}, post: map[syntax.Term][]posting{},
		df: map[syntax.Term]uint32{}, byBase: map[string][]*slot{}, byDir: map[string][]*slot{},
		goMods: map[string]string{},
	}
}

// reqFile is one request file with its resolved content and analysis.
// For the cursor file, e may be its typing view, and real then its
// content.
type reqFile struct {
	path string
	lang syntax.Lang
	e    *entry
	an   *syntax.Analysis
	real *entry
	line int32 // the line the view empties
}

// entries appends e and, when set, real: what a slot or file pins.
func entries(to []*entry, e, real *entry) []*entry {
	if real != nil {
		return append(to, e, real)
	}
	return append(to, e)
}

// update makes the index describe files and returns the entries it now
// references and those it no longer does, for pinning. When whole, files
// are the whole list: paths not in it are removed. Otherwise they replace
// what the index holds at their paths and every other file stays, which
// is the same when the rest of the list is what the index holds.
func (r *repoIndex) update(files []reqFile, whole bool) (add, drop []*entry, changed int) {
	r.gen++
	var edited *slot // the one file changed in place, if that was all
	others := false
	for i := range files {
		f := &files[i]
		sl := r.files[f.path]
		if sl != nil && sl.e == f.e && sl.lang == f.lang {
			if sl.real != f.real {
				// Another text with the same view (a keystroke on the
				// cursor's line): nothing to re-index.
				if sl.real != nil {
					drop = append(drop, sl.real)
				}
				if f.real != nil {
					add = append(add, f.real)
				}
				r.setText(sl, f)
			}
			sl.gen = r.gen
			continue
		}
		if sl != nil && sl.lang == f.lang {
			// New content at a known path (an edit): re-index in place.
			drop, add = entries(drop, sl.e, sl.real), entries(add, f.e, f.real)
			r.replace(sl, f)
			sl.gen = r.gen
			changed++
			others = others || edited != nil
			edited = sl
			continue
		}
		if sl != nil {
			drop = entries(drop, sl.e, sl.real)
			r.remove(sl)
		}
		add = entries(add, f.e, f.real)
		r.add(f).gen = r.gen
		changed++
		others = true
	}
	if whole && len(r.files) > len(files) {
		var gone []*slot
		for _, sl := range r.files {
			if sl.gen != r.gen {
				gone = append(gone, sl)
				drop = entries(drop, sl.e, sl.real)
			}
		}
		r.removeAll(gone)
		changed += len(gone)
		others = others || len(gone) > 0
	}
	if changed > 0 {
		switch {
		case others || edited == nil:
			r.onlyEdited = nil
		case r.onlyEdited != edited:
			r.onlyEdited, r.onlySince = edited, r.version
		}
		r.version++
	}
	if r.deadPost > 1<<16 && r.deadPost > r.livePost {
		r.compact()
	}
	return add, drop, changed
}

func (r *repoIndex) add(f *reqFile) *slot {
	sl := &slot{path: f.path, lang: f.lang, e: f.e, an: f.an, real: f.real, viewLine: f.line}
	if f.real != nil {
		r.view = sl
	}
	sl.dir, sl.base = path.Split(f.path)
	sl.dir = strings.TrimSuffix(sl.dir, "/")
	if n := len(r.freeIDs); n > 0 {
		sl.id = r.freeIDs[n-1]
		r.freeIDs = r.freeIDs[:n-1]
		r.slots[sl.id] = sl
	} else {
		sl.id = uint32(len(r.slots))
		r.slots = append(r.slots, sl)
	}
	r.files[f.path] = sl
	r.byBase[sl.base] = append(r.byBase[sl.base], sl)
	r.byDir[sl.dir] = append(r.byDir[sl.dir], sl)
	r.addDefs(sl)
	r.indexChunks(sl)
	if r.fileDF != nil {
		r.fileDFAdd(f.an, 1)
	}
	if sl.base == "go.mod" {
		if m := goModulePath(f.content()); m != "" {
			r.goMods[sl.dir] = m
		}
	}
	return sl
}

func (r *repoIndex) addDefs(sl *slot) {
	for i := range sl.an.Defs {
		n := sl.an.Defs[i].Name
		r.defs[n] = append(r.defs[n], defRef{sl.id, int32(i)})
	}
	r.nDefRefs += len(sl.an.Defs)
}

func (r *repoIndex) removeDefs(sl *slot) {
	for i := range sl.an.Defs {
		n := sl.an.Defs[i].Name
		refs := r.defs[n]
		refs = slices.DeleteFunc(refs, func(d defRef) bool { return d.slot == sl.id })
		if len(refs) == 0 {
			delete(r.defs, n)
		} else {
			r.defs[n] = refs
		}
	}
	r.nDefRefs -= len(sl.an.Defs)
}

func (r *repoIndex) indexChunks(sl *slot) {
	sl.chunkIDs = make([]uint32, len(sl.an.Chunks))
	for i := range sl.an.Chunks {
		sl.chunkIDs[i] = r.addChunk(sl, i)
	}
}

// addChunk indexes window i of sl's analysis and returns its id.
func (r *repoIndex) addChunk(sl *slot, i int) uint32 {
	c := &sl.an.Chunks[i]
	id := uint32(len(r.chunks))
	r.chunks = append(r.chunks, chunkRef{slot: sl.id, idx: uint32(i), length: c.Length})
	for _, t := range c.Terms {
		r.post[t.Term] = append(r.post[t.Term], posting{id, t.Count})
		r.df[t.Term]++
	}
	r.livePost += len(c.Terms)
	r.totalLen += int64(c.Length)
	r.live++
	return id
}

// dropChunk marks chunk id (window c) dead; its postings go at the next
// compaction or when a query finds a list mostly dead.
func (r *repoIndex) dropChunk(id uint32, c *syntax.Chunk) {
	r.chunks[id].dead = true
	for _, t := range c.Terms {
		if r.df[t.Term] <= 1 {
			delete(r.df, t.Term)
		} else {
			r.df[t.Term]--
		}
	}
	r.livePost -= len(c.Terms)
	r.deadPost += len(c.Terms)
	r.totalLen -= int64(c.Length)
	r.live--
}

// replace re-indexes sl for the new content of its path. Windows the new
// analysis kept from the old one (same lines, same terms: see
// buildChunksFrom) keep their ids and postings, so a keystroke re-indexes
// the few windows around it, not the whole file.
func (r *repoIndex) replace(sl *slot, f *reqFile) {
	old := sl.an
	r.removeDefs(sl)
	if r.fileDF != nil {
		r.fileDFAdd(old, -1)
	}
	oldIDs := sl.chunkIDs
	sl.e, sl.an = f.e, f.an
	r.setText(sl, f)
	r.addDefs(sl)
	if r.fileDF != nil {
		r.fileDFAdd(sl.an, 1)
	}
	oc, nc := old.Chunks, sl.an.Chunks
	same := func(a, b *syntax.Chunk) bool {
		return a.Start == b.Start && a.End == b.End && a.Length == b.Length && len(a.Terms) == len(b.Terms) &&
			len(a.Terms) > 0 && &a.Terms[0] == &b.Terms[0]
	}
	ids := make([]uint32, len(nc))
	i := 0
	for j := range nc {
		for i < len(oc) && oc[i].Start < nc[j].Start {
			r.dropChunk(oldIDs[i], &oc[i])
			i++
		}
		if i < len(oc) && same(&oc[i], &nc[j]) {
			ids[j] = oldIDs[i]
			r.chunks[ids[j]].idx = uint32(j)
			i++
			continue
		}
		if i < len(oc) && oc[i].Start == nc[j].Start {
			r.dropChunk(oldIDs[i], &oc[i])
			i++
		}
		ids[j] = r.addChunk(sl, j)
	}
	for ; i < len(oc); i++ {
		r.dropChunk(oldIDs[i], &oc[i])
	}
	sl.chunkIDs = ids
	if sl.base == "go.mod" {
		delete(r.goMods, sl.dir)
		if m := goModulePath(f.content()); m != "" {
			r.goMods[sl.dir] = m
		}
	}
}

// setText records f's text for sl, whose index content is f's: the file
// itself, or a view and the file's text.
func (r *repoIndex) setText(sl *slot, f *reqFile) {
	sl.real, sl.viewLine = f.real, f.line
	switch {
	case f.real != nil:
		r.view = sl
	case r.view == sl:
		r.view = nil
	}
}

func (r *repoIndex) remove(sl *slot) { r.removeAll([]*slot{sl}) }

// removeAll removes the files of gone. The lists shared by many files
// (definitions by name, files by base name and by directory) are filtered
// once per key, not once per file: a list that drops most of a large
// repository's files took 0.6 s file by file, quadratic in the files
// that share a name or directory.
func (r *repoIndex) removeAll(gone []*slot) {
	if len(gone) == 0 {
		return
	}
	ids := make(map[uint32]bool, len(gone))
	names, bases, dirs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, sl := range gone {
		ids[sl.id] = true
		for i := range sl.an.Defs {
			names[sl.an.Defs[i].Name] = true
		}
		r.nDefRefs -= len(sl.an.Defs)
		bases[sl.base], dirs[sl.dir] = true, true
	}
	for n := range names {
		if refs := slices.DeleteFunc(r.defs[n], func(d defRef) bool { return ids[d.slot] }); len(refs) == 0 {
			delete(r.defs, n)
		} else {
			r.defs[n] = refs
		}
	}
	filter := func(m map[string][]*slot, keys map[string]bool) {
		for k := range keys {
			if v := slices.DeleteFunc(m[k], func(x *slot) bool { return ids[x.id] }); len(v) == 0 {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
	}
	filter(r.byBase, bases)
	filter(r.byDir, dirs)
	for _, sl := range gone {
		if r.fileDF != nil {
			r.fileDFAdd(sl.an, -1)
		}
		for i := range sl.an.Chunks {
			r.dropChunk(sl.chunkIDs[i], &sl.an.Chunks[i])
		}
		if sl.base == "go.mod" {
			delete(r.goMods, sl.dir)
		}
		if r.view == sl {
			r.view = nil
		}
		delete(r.files, sl.path)
		r.slots[sl.id] = nil
		r.freeIDs = append(r.freeIDs, sl.id)
	}
}

// compact rebuilds the chunk table and postings from live files.
func (r *repoIndex) compact() {
	r.chunks = r.chunks[:0:0]
	r.post = make(map[syntax.Term][]posting, len(r.df))
	r.livePost, r.deadPost, r.live, r.totalLen = 0, 0, 0, 0
	r.df = make(map[syntax.Term]uint32, len(r.df))
	for _, sl := range r.slots {
		if sl != nil {
			r.indexChunks(sl)
		}
	}
	r.scratch = nil
}

// memBytes estimates the index's own memory (analyses are accounted to
// their entries).
func (r *repoIndex) memBytes() int64 {
	return int64(r.livePost+r.deadPost)*8*5/4 + int64(len(r.post))*72 + int64(len(r.df))*24 +
		int64(len(r.chunks))*16 + int64(r.nDefRefs)*8 + int64(len(r.defs))*64 +
		int64(len(r.files))*(200) + int64(len(r.scratch))*4
}

func goModulePath(gomod string) string {
	for _, ln := range strings.Split(gomod, "\n") {
		f := strings.Fields(ln)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// maxPostingsPerQuery bounds the postings one similarity query visits.
const maxPostingsPerQuery = 60000

// scoredChunk is a BM25 hit.
type scoredChunk struct {
	chunk uint32
	score float64
}

// bm25 scores live chunks against query terms (term → frequency in the
// query) and returns the k best for which keep is true, best first; ties
// are broken by path and line so the result does not depend on the order
// in which files were indexed. fileScore, when not nil, receives the sum
// of each file's window scores (by slot id).
func (r *repoIndex) bm25(q map[syntax.Term]int, k int, keep func(sl *slot, c *syntax.Chunk) bool, fileScore map[uint32]float64) []scoredChunk {
	if r.live == 0 || len(q) == 0 {
		return nil
	}
	const k1, b = 1.2, 0.75
	n := float64(r.live)
	avgdl := float64(r.totalLen) / n
	if avgdl <= 0 {
		avgdl = 1
	}
	if cap(r.scratch) < len(r.chunks) {
		r.scratch = make([]float32, len(r.chunks), len(r.chunks)+len(r.chunks)/4)
	}
	r.scratch = r.scratch[:len(r.chunks)]
	r.touched = r.touched[:0]
	// Rarest terms first; terms in more than half of the windows, or in
	// more than a tenth of a large index, add little (low idf) but cost the
	// most, and a postings budget bounds the
	// work on repositories with a small vocabulary.
	terms := make([]syntax.Term, 0, len(q))
	for t := range q {
		df := float64(r.df[t])
		if df > 0 && df <= n/2 && (df <= n/10 || df <= 64) {
			terms = append(terms, t)
		}
	}
	slices.SortFunc(terms, func(x, y syntax.Term) int {
		if dx, dy := r.df[x], r.df[y]; dx != dy {
			return int(dx) - int(dy)
		}
		return int(x) - int(y)
	})
	budget := maxPostingsPerQuery
	for _, t := range terms {
		list := r.post[t]
		if budget -= len(list); budget < 0 && len(r.touched) > 0 {
			break
		}
		df := float64(r.df[t])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := idf * (1 + math.Log(float64(q[t])))
		dead := 0
		for _, p := range list {
			c := &r.chunks[p.chunk]
			if c.dead {
				dead++
				continue
			}
			tf := float64(p.tf)
			s := w * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(c.length)/avgdl))
			if r.scratch[p.chunk] == 0 {
				r.touched = append(r.touched, p.chunk)
			}
			r.scratch[p.chunk] += float32(s)
		}
		if dead > 0 && dead*4 > len(list) {
			live := slices.DeleteFunc(list, func(p posting) bool { return r.chunks[p.chunk].dead })
			r.deadPost -= len(list) - len(live)
			r.post[t] = live
		}
	}
	// Top k by a bounded heap whose root is the worst kept hit.
	worse := func(x, y scoredChunk) bool { // x ranks below y
		if x.score != y.score {
			return x.score < y.score
		}
		cx, cy := r.chunks[x.chunk], r.chunks[y.chunk]
		if px, py := r.slots[cx.slot].path, r.slots[cy.slot].path; px != py {
			return px > py
		}
		return cx.idx > cy.idx
	}
	h := make([]scoredChunk, 0, k)
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
		sc := scoredChunk{id, float64(r.scratch[id])}
		r.scratch[id] = 0
		if fileScore != nil {
			fileScore[r.chunks[id].slot] += sc.score
		}
		if len(h) == k && !worse(h[0], sc) {
			continue
		}
		c := r.chunks[id]
		sl := r.slots[c.slot]
		if !keep(sl, &sl.an.Chunks[c.idx]) {
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
	slices.SortFunc(h, func(x, y scoredChunk) int {
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

// fileDocFreq is the number of files that contain each term, built on
// first use and kept current by add/remove afterwards.
func (r *repoIndex) fileDocFreq() map[syntax.Term]int32 {
	if r.fileDF == nil {
		r.fileDF = map[syntax.Term]int32{}
		for _, sl := range r.slots {
			if sl != nil {
				r.fileDFAdd(sl.an, 1)
			}
		}
	}
	return r.fileDF
}

func (r *repoIndex) fileDFAdd(a *syntax.Analysis, d int32) {
	for _, x := range a.FileTerms() {
		r.fileDF[x.Term] += d
		if r.fileDF[x.Term] <= 0 {
			delete(r.fileDF, x.Term)
		}
	}
}

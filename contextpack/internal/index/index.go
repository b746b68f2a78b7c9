package index

import (
	"path"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Index is the state of one repository as the last request described
// it: which content each path holds, an inverted index of definitions by
// name, and a BM25 index over sliding windows of lines. Requests update it
// incrementally (only changed paths are re-indexed). Guarded by its
// repository's lock (store.go).
type Index struct {
	files      map[string]*File
	byID       []*File // by id; nil when free
	freeIDs    []uint32
	generation uint64

	defs map[string][]DefRef

	postings     map[syntax.Term][]posting
	docFreq      map[syntax.Term]uint32
	chunks       []ChunkRef
	liveChunks   int   // live chunks
	liveLength   int64 // identifiers in live chunks
	livePostings int
	deadPostings int
	defRefs      int

	byBase       map[string][]*File    // base name → files
	byDir        map[string][]*File    // directory → files
	goMods       map[string]goModule   // directory of a go.mod → what it says
	jsMap        *jsModuleMap          // derived from package.json and tsconfig files; nil when one changed
	crateRoots   map[string]string     // derived from Cargo.toml files; nil when one changed
	fileDocFreqs map[syntax.Term]int32 // files per term; nil until a baseline needs it

	scratch []float32
	touched []uint32

	// version counts updates that changed the file set or a file's
	// content; memos of derived results are valid for one version.
	version uint64
	// onlyEdited is the file that every update since version onlySince
	// changed, in place and alone (a file being typed in); nil after any
	// other change.
	onlyEdited *File
	onlySince  uint64
	// viewHolder is the file that holds its typing view (the cursor file
	// of the last update, typingview.go), nil when none does.
	viewHolder *File
}

// File is one file of the index: its path, language and analysis (its
// typing view's while it holds one), and where its windows are indexed.
// Updates replace its fields; readers hold the repository's lock.
type File struct {
	id         uint32
	Path       string
	Dir, Base  string
	Lang       syntax.Lang
	indexed    *Content
	Analysis   *syntax.Analysis
	text       *Content // when indexed is a typing view: the file's text (the view empties line viewLine)
	viewLine   int32
	chunkIDs   []uint32 // Analysis.Chunks[i] is the index's chunks[chunkIDs[i]]
	generation uint64
	// BuildOutput: the file says it is a bundler's or compiler's output
	// (IsBuildOutput), set with each analysis.
	BuildOutput bool
}

// IsBuildOutput reports a bundler's or compiler's output by what it says
// of itself: a minified file (name.min.js, name.min.css) or one whose last
// 512 bytes point to its source map ("sourceMappingURL="), as bundlers and
// compilers of JavaScript, TypeScript declarations and CSS write. Its code
// is a copy of sources the repository holds.
func IsBuildOutput(p, content string) bool {
	if strings.Contains(path.Base(p), ".min.") {
		return true
	}
	return strings.Contains(content[max(0, len(content)-512):], "sourceMappingURL=")
}

// DefRef is a definition: Defs[Def] of the analysis of the file with id
// File.
type DefRef struct {
	File uint32
	Def  int32
}

// posting is a window that holds a term, and how often.
type posting struct {
	chunk uint32
	count uint16
}

// ChunkRef is an indexed window: Chunks[Chunk] of the analysis of the
// file with id File.
type ChunkRef struct {
	File   uint32
	Chunk  uint32
	Length uint32
	Dead   bool
}

func newIndex() *Index {
	return &Index{
		files: map[string]*File{}, defs: map[string][]DefRef{}, postings: map[syntax.Term][]posting{},
		docFreq: map[syntax.Term]uint32{}, byBase: map[string][]*File{}, byDir: map[string][]*File{},
		goMods: map[string]goModule{},
	}
}

// RequestFile is one request file with its resolved content and analysis,
// as Update takes it. For the cursor file, Indexed may be its typing view,
// and Text then its text.
type RequestFile struct {
	Path     string
	Lang     syntax.Lang
	Indexed  *Content
	Analysis *syntax.Analysis
	Text     *Content
	ViewLine int32 // the line the view empties
}

// pinned appends indexed and, when set, text: what a file pins.
func pinned(to []*Content, indexed, text *Content) []*Content {
	if text != nil {
		return append(to, indexed, text)
	}
	return append(to, indexed)
}

// Update makes the index describe files and returns the contents it now
// references and those it no longer does, for pinning (Store.Repin).
// When whole, files are the whole list: paths not in it are removed.
// Otherwise they replace what the index holds at their paths and every
// other file stays, which is the same when the rest of the list is what
// the index holds.
func (r *Index) Update(files []RequestFile, whole bool) (add, drop []*Content, changed int) {
	r.generation++
	var edited *File // the one file changed in place, if that was all
	others := false
	for i := range files {
		f := &files[i]
		sl := r.files[f.Path]
		if sl != nil && sl.indexed == f.Indexed && sl.Lang == f.Lang {
			if sl.text != f.Text {
				// Another text with the same view (a keystroke on the
				// cursor's line): nothing to re-index.
				if sl.text != nil {
					drop = append(drop, sl.text)
				}
				if f.Text != nil {
					add = append(add, f.Text)
				}
				r.setText(sl, f)
			}
			sl.generation = r.generation
			continue
		}
		if sl != nil && sl.Lang == f.Lang {
			// New content at a known path (an edit): re-index in place.
			drop, add = pinned(drop, sl.indexed, sl.text), pinned(add, f.Indexed, f.Text)
			r.replace(sl, f)
			sl.generation = r.generation
			changed++
			others = others || edited != nil
			edited = sl
			continue
		}
		if sl != nil {
			drop = pinned(drop, sl.indexed, sl.text)
			r.remove(sl)
		}
		add = pinned(add, f.Indexed, f.Text)
		r.add(f).generation = r.generation
		changed++
		others = true
	}
	if whole && len(r.files) > len(files) {
		var gone []*File
		for _, sl := range r.files {
			if sl.generation != r.generation {
				gone = append(gone, sl)
				drop = pinned(drop, sl.indexed, sl.text)
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
	if r.deadPostings > 1<<16 && r.deadPostings > r.livePostings {
		r.compact()
	}
	return add, drop, changed
}

func (r *Index) add(f *RequestFile) *File {
	sl := &File{Path: f.Path, Lang: f.Lang, indexed: f.Indexed, Analysis: f.Analysis, text: f.Text, viewLine: f.ViewLine,
		BuildOutput: IsBuildOutput(f.Path, f.Analysis.Content)}
	if f.Text != nil {
		r.viewHolder = sl
	}
	sl.Dir, sl.Base = path.Split(f.Path)
	sl.Dir = strings.TrimSuffix(sl.Dir, "/")
	if n := len(r.freeIDs); n > 0 {
		sl.id = r.freeIDs[n-1]
		r.freeIDs = r.freeIDs[:n-1]
		r.byID[sl.id] = sl
	} else {
		sl.id = uint32(len(r.byID))
		r.byID = append(r.byID, sl)
	}
	r.files[f.Path] = sl
	r.byBase[sl.Base] = append(r.byBase[sl.Base], sl)
	r.byDir[sl.Dir] = append(r.byDir[sl.Dir], sl)
	r.addDefs(sl)
	r.indexChunks(sl)
	if r.fileDocFreqs != nil {
		r.fileDFAdd(f.Analysis, 1)
	}
	if sl.Base == "go.mod" {
		if m := parseGoMod(sl.Dir, f.content()); m.path != "" {
			r.goMods[sl.Dir] = m
		}
	}
	r.noteConfig(sl)
	return sl
}

func (r *Index) addDefs(sl *File) {
	for i := range sl.Analysis.Defs {
		n := sl.Analysis.Defs[i].Name
		r.defs[n] = append(r.defs[n], DefRef{sl.id, int32(i)})
	}
	r.defRefs += len(sl.Analysis.Defs)
}

func (r *Index) removeDefs(sl *File) {
	for i := range sl.Analysis.Defs {
		n := sl.Analysis.Defs[i].Name
		refs := r.defs[n]
		refs = slices.DeleteFunc(refs, func(d DefRef) bool { return d.File == sl.id })
		if len(refs) == 0 {
			delete(r.defs, n)
		} else {
			r.defs[n] = refs
		}
	}
	r.defRefs -= len(sl.Analysis.Defs)
}

func (r *Index) indexChunks(sl *File) {
	sl.chunkIDs = make([]uint32, len(sl.Analysis.Chunks))
	for i := range sl.Analysis.Chunks {
		sl.chunkIDs[i] = r.addChunk(sl, i)
	}
}

// addChunk indexes window i of the file's analysis and returns its id.
func (r *Index) addChunk(sl *File, i int) uint32 {
	c := &sl.Analysis.Chunks[i]
	id := uint32(len(r.chunks))
	r.chunks = append(r.chunks, ChunkRef{File: sl.id, Chunk: uint32(i), Length: c.Length})
	for _, t := range c.Terms {
		r.postings[t.Term] = append(r.postings[t.Term], posting{id, t.Count})
		r.docFreq[t.Term]++
	}
	r.livePostings += len(c.Terms)
	r.liveLength += int64(c.Length)
	r.liveChunks++
	return id
}

// dropChunk marks chunk id (window c) dead; its postings go at the next
// compaction or when a query finds a list mostly dead.
func (r *Index) dropChunk(id uint32, c *syntax.Chunk) {
	r.chunks[id].Dead = true
	for _, t := range c.Terms {
		if r.docFreq[t.Term] <= 1 {
			delete(r.docFreq, t.Term)
		} else {
			r.docFreq[t.Term]--
		}
	}
	r.livePostings -= len(c.Terms)
	r.deadPostings += len(c.Terms)
	r.liveLength -= int64(c.Length)
	r.liveChunks--
}

// replace re-indexes the file for the new content of its path. Windows the new
// analysis kept from the old one (same lines, same terms: see
// buildChunksFrom) keep their ids and postings, so a keystroke re-indexes
// the few windows around it, not the whole file.
func (r *Index) replace(sl *File, f *RequestFile) {
	old := sl.Analysis
	r.removeDefs(sl)
	if r.fileDocFreqs != nil {
		r.fileDFAdd(old, -1)
	}
	oldIDs := sl.chunkIDs
	sl.indexed, sl.Analysis = f.Indexed, f.Analysis
	sl.BuildOutput = IsBuildOutput(sl.Path, f.Analysis.Content)
	r.setText(sl, f)
	r.addDefs(sl)
	if r.fileDocFreqs != nil {
		r.fileDFAdd(sl.Analysis, 1)
	}
	oc, nc := old.Chunks, sl.Analysis.Chunks
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
			r.chunks[ids[j]].Chunk = uint32(j)
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
	r.noteConfig(sl)
	if sl.Base == "go.mod" {
		delete(r.goMods, sl.Dir)
		if m := parseGoMod(sl.Dir, f.content()); m.path != "" {
			r.goMods[sl.Dir] = m
		}
	}
}

// setText records f's text for the file, whose indexed content is f's:
// the file itself, or a view and the file's text.
func (r *Index) setText(sl *File, f *RequestFile) {
	sl.text, sl.viewLine = f.Text, f.ViewLine
	switch {
	case f.Text != nil:
		r.viewHolder = sl
	case r.viewHolder == sl:
		r.viewHolder = nil
	}
}

func (r *Index) remove(sl *File) { r.removeAll([]*File{sl}) }

// removeAll removes the files of gone. The lists shared by many files
// (definitions by name, files by base name and by directory) are filtered
// once per key, not once per file: a list that drops most of a large
// repository's files took 0.6 s file by file, quadratic in the files
// that share a name or directory.
func (r *Index) removeAll(gone []*File) {
	if len(gone) == 0 {
		return
	}
	ids := make(map[uint32]bool, len(gone))
	names, bases, dirs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, sl := range gone {
		ids[sl.id] = true
		for i := range sl.Analysis.Defs {
			names[sl.Analysis.Defs[i].Name] = true
		}
		r.defRefs -= len(sl.Analysis.Defs)
		bases[sl.Base], dirs[sl.Dir] = true, true
	}
	for n := range names {
		if refs := slices.DeleteFunc(r.defs[n], func(d DefRef) bool { return ids[d.File] }); len(refs) == 0 {
			delete(r.defs, n)
		} else {
			r.defs[n] = refs
		}
	}
	filter := func(m map[string][]*File, keys map[string]bool) {
		for k := range keys {
			if v := slices.DeleteFunc(m[k], func(x *File) bool { return ids[x.id] }); len(v) == 0 {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
	}
	filter(r.byBase, bases)
	filter(r.byDir, dirs)
	for _, sl := range gone {
		if r.fileDocFreqs != nil {
			r.fileDFAdd(sl.Analysis, -1)
		}
		for i := range sl.Analysis.Chunks {
			r.dropChunk(sl.chunkIDs[i], &sl.Analysis.Chunks[i])
		}
		if sl.Base == "go.mod" {
			delete(r.goMods, sl.Dir)
		}
		r.noteConfig(sl)
		if r.viewHolder == sl {
			r.viewHolder = nil
		}
		delete(r.files, sl.Path)
		r.byID[sl.id] = nil
		r.freeIDs = append(r.freeIDs, sl.id)
	}
}

// compact rebuilds the chunk table and postings from live files.
func (r *Index) compact() {
	r.chunks = r.chunks[:0:0]
	r.postings = make(map[syntax.Term][]posting, len(r.docFreq))
	r.livePostings, r.deadPostings, r.liveChunks, r.liveLength = 0, 0, 0, 0
	r.docFreq = make(map[syntax.Term]uint32, len(r.docFreq))
	for _, sl := range r.byID {
		if sl != nil {
			r.indexChunks(sl)
		}
	}
	r.scratch = nil
}

// MemBytes estimates the index's own memory (analyses are accounted to
// their contents).
func (r *Index) MemBytes() int64 {
	return int64(r.livePostings+r.deadPostings)*8*5/4 + int64(len(r.postings))*72 + int64(len(r.docFreq))*24 +
		int64(len(r.chunks))*16 + int64(r.defRefs)*8 + int64(len(r.defs))*64 +
		int64(len(r.files))*(200) + int64(len(r.scratch))*4
}

// goModule is what a go.mod says about import paths: its module path
// and where its replace directives with a local target point.
type goModule struct {
	path     string
	replaces []goReplace
}

// goReplace maps a module path to a directory of the repository.
type goReplace struct{ module, dir string }

// parseGoMod reads the module path and the local replace directives
// ("replace a/b => ./x", also in a replace block) of the go.mod in dir.
func parseGoMod(dir, gomod string) goModule {
	var m goModule
	inBlock := false
	for _, ln := range strings.Split(gomod, "\n") {
		if i := strings.Index(ln, "//"); i >= 0 {
			ln = ln[:i]
		}
		f := strings.Fields(ln)
		switch {
		case len(f) == 0:
			continue
		case inBlock && f[0] == ")":
			inBlock = false
			continue
		case f[0] == "module" && len(f) >= 2:
			m.path = strings.Trim(f[1], `"`)
			continue
		case f[0] == "replace" && len(f) == 2 && f[1] == "(":
			inBlock = true
			continue
		case f[0] == "replace":
			f = f[1:]
		case !inBlock:
			continue
		}
		// old [version] => new [version]
		k := slices.Index(f, "=>")
		if k < 1 || k+1 >= len(f) {
			continue
		}
		if tgt := f[k+1]; strings.HasPrefix(tgt, "./") || strings.HasPrefix(tgt, "../") {
			m.replaces = append(m.replaces, goReplace{strings.Trim(f[0], `"`), joinDir(dir, tgt)})
		}
	}
	return m
}

// fileDocFreq is the number of files that contain each term, built on
// first use and kept current by add/remove afterwards.
func (r *Index) fileDocFreq() map[syntax.Term]int32 {
	if r.fileDocFreqs == nil {
		r.fileDocFreqs = map[syntax.Term]int32{}
		for _, sl := range r.byID {
			if sl != nil {
				r.fileDFAdd(sl.Analysis, 1)
			}
		}
	}
	return r.fileDocFreqs
}

func (r *Index) fileDFAdd(a *syntax.Analysis, d int32) {
	for _, x := range a.FileTerms() {
		r.fileDocFreqs[x.Term] += d
		if r.fileDocFreqs[x.Term] <= 0 {
			delete(r.fileDocFreqs, x.Term)
		}
	}
}

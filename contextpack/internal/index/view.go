package index

import (
	"iter"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// View is the read-only face of an index that an assembly gets: what
// it holds and the searches it answers. Its searches may tidy the index's
// own derived structures (dead postings, scratch space, file frequencies
// built on first use), never what it holds; the caller holds the
// repository's lock.
type View struct{ index *Index }

func (r *Index) View() View { return View{r} }

// File returns the file at path, nil when there is none.
func (r *Index) File(path string) *File { return r.files[path] }

// Viewing returns the file that holds a typing view, nil when none does.
func (r *Index) Viewing() *File { return r.viewHolder }

// Version counts the updates that changed the file set or a file's
// content: results derived from the index are valid for one version.
func (v View) Version() uint64 { return v.index.version }

// OnlyEdited is the file that every update since version since changed,
// in place and alone (a file being typed in); nil after any other change.
func (v View) OnlyEdited() (f *File, since uint64) { return v.index.onlyEdited, v.index.onlySince }

func (v View) NumFiles() int { return len(v.index.files) }

// FileByID returns the file with id, nil when it is gone.
func (v View) FileByID(id uint32) *File { return v.index.byID[id] }

// AllFiles yields the files in id order.
func (v View) AllFiles() iter.Seq[*File] {
	return func(yield func(*File) bool) {
		for _, sl := range v.index.byID {
			if sl != nil && !yield(sl) {
				return
			}
		}
	}
}

// Definitions lists the definitions named name.
func (v View) Definitions(name string) []DefRef { return v.index.defs[name] }

// NumChunks counts the window ids (dead ones included).
func (v View) NumChunks() int { return len(v.index.chunks) }

// Chunk returns window id, dead or alive.
func (v View) Chunk(id uint32) ChunkRef { return v.index.chunks[id] }

// Similar scores the live windows against query terms (term → frequency
// in the query) by BM25 and returns the k best for which keep is true,
// best first; fileScore, when not nil, receives the sum of each file's
// window scores (by file id).
func (v View) Similar(q map[syntax.Term]int, k int, keep func(sl *File, c *syntax.Chunk) bool, fileScore map[uint32]float64) []ScoredChunk {
	return v.index.bm25(q, k, keep, fileScore)
}

// ResolveImports maps t's import statements to the repository's files
// (imports.go).
func (v View) ResolveImports(t *File) []ImportHit { return v.index.resolveImports(t) }

// FileDocFreq is the number of files that contain each term, made on
// first use and kept current by updates afterwards.
func (v View) FileDocFreq() map[syntax.Term]int32 { return v.index.fileDocFreq() }

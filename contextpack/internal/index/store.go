package index

import (
	"container/list"
	"sync"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
	"go.uber.org/zap"
)

// Content is one file content, remembered by digest, with its analyses.
// Digest and Text never change.
type Content struct {
	Digest string
	Text   string

	// Guarded by store.mu.
	pins    int           // requests in flight and repository indexes
	elem    *list.Element // position in store.lru while unpinned
	size    int64         // accounted bytes
	removed bool          // evicted from the store

	mu       sync.Mutex // guards analyses; held while analysing
	analyses [syntax.NumLangs]*syntax.Analysis
}

// Store is the content store and cache: contents by digest and
// repositories (an index and the caller's record R beside it) by name,
// under one byte cap. Contents pinned by a request or a repository index
// are not evicted; unpinned contents leave least recently used first, then
// idle repositories (which unpins their contents).
type Store[R any] struct {
	log      *zap.Logger
	capBytes int64
	maxRepos int

	mu      sync.Mutex
	used    int64
	entries map[string]*Content
	lru     list.List // unpinned contents, front = most recently used
	repos   map[string]*Repository[R]
	repoLRU list.List // *Repository[R], front = most recently used
}

// Repository is one repository's state in the store: its index and the
// record its user keeps beside it (contextpack's memos), evicted together.
// Index and Record are guarded by the repository's lock; the fields marked
// store by the store's.
type Repository[R any] struct {
	mu     sync.Mutex
	name   string
	inUse  int           // store
	elem   *list.Element // store
	size   int64         // store
	Index  *Index
	Record R
}

// NewStore returns a store of capBytes; it keeps at most maxRepos
// repositories.
func NewStore[R any](capBytes int64, maxRepos int, log *zap.Logger) *Store[R] {
	return &Store[R]{log: log, capBytes: capBytes, maxRepos: maxRepos,
		entries: make(map[string]*Content), repos: make(map[string]*Repository[R])}
}

// contentOverhead is what a content costs beyond its text.
const contentOverhead = 160

// Resolve returns the contents of a request's files, pinned, admitting
// new content. missing lists the indexes of files whose digest is not held.
func (s *Store[R]) Resolve(digests []string, contents []string, has []bool) (es []*Content, missing []int) {
	es = make([]*Content, len(digests))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range digests {
		e := s.entries[d]
		if e == nil {
			if !has[i] {
				missing = append(missing, i)
				continue
			}
			e = &Content{Digest: d, Text: contents[i], size: int64(len(contents[i])) + contentOverhead}
			s.entries[d] = e
			s.used += e.size
			e.elem = s.lru.PushFront(e)
		}
		s.pinLocked(e)
		es[i] = e
	}
	if len(missing) > 0 {
		for _, e := range es {
			if e != nil {
				s.unpinLocked(e)
			}
		}
		return nil, missing
	}
	return es, nil
}

// Text returns the content of digest d, if the store holds it.
func (s *Store[R]) Text(d string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[d]; e != nil {
		return e.Text, true
	}
	return "", false
}

// PinHeld returns the content of digest d pinned, or nil when the store
// does not hold it.
func (s *Store[R]) PinHeld(d string) *Content {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[d]
	if e != nil {
		s.pinLocked(e)
	}
	return e
}

func (s *Store[R]) pinLocked(e *Content) {
	if e.pins == 0 && e.elem != nil {
		s.lru.Remove(e.elem)
		e.elem = nil
	}
	e.pins++
}

func (s *Store[R]) unpinLocked(e *Content) {
	e.pins--
	if e.pins == 0 && !e.removed {
		e.elem = s.lru.PushFront(e)
	}
}

// Unpin releases pins and evicts down to the cap; fields name the call
// (internal/logctx) in what the eviction logs.
func (s *Store[R]) Unpin(es []*Content, fields []zap.Field) {
	s.mu.Lock()
	for _, e := range es {
		if e != nil {
			s.unpinLocked(e)
		}
	}
	s.evictLocked(fields)
	s.mu.Unlock()
}

// Repin moves repository pins: add are newly referenced, drop no longer.
func (s *Store[R]) Repin(add, drop []*Content) {
	s.mu.Lock()
	for _, e := range add {
		s.pinLocked(e)
	}
	for _, e := range drop {
		s.unpinLocked(e)
	}
	s.mu.Unlock()
}

// grow accounts bytes derived from e (its analyses).
func (s *Store[R]) grow(e *Content, delta int64) {
	s.mu.Lock()
	if !e.removed {
		e.size += delta
		s.used += delta
	}
	s.mu.Unlock()
}

func (s *Store[R]) evictLocked(fields []zap.Field) {
	for s.used > s.capBytes {
		if el := s.lru.Back(); el != nil {
			e := el.Value.(*Content)
			s.lru.Remove(el)
			e.elem = nil
			e.removed = true
			delete(s.entries, e.Digest)
			s.used -= e.size
			continue
		}
		if !s.evictRepoLocked(fields) {
			return // everything left is in use by requests in flight
		}
	}
}

// evictRepoLocked drops the least recently used idle repository index.
func (s *Store[R]) evictRepoLocked(fields []zap.Field) bool {
	for el := s.repoLRU.Back(); el != nil; el = el.Prev() {
		r := el.Value.(*Repository[R])
		if r.inUse > 0 {
			continue
		}
		s.repoLRU.Remove(el)
		delete(s.repos, r.name)
		s.used -= r.size
		for _, sl := range r.Index.byID {
			if sl != nil {
				s.unpinLocked(sl.indexed)
				if sl.text != nil {
					s.unpinLocked(sl.text)
				}
			}
		}
		s.log.Debug("contextpack: repository index evicted", append([]zap.Field{zap.String("repo", r.name)}, fields...)...)
		return true
	}
	return false
}

// Lock locks r for a request.
func (r *Repository[R]) Lock() { r.mu.Lock() }

// Unlock unlocks r.
func (r *Repository[R]) Unlock() { r.mu.Unlock() }

// Acquire returns the repository named name, marked in use; a new one has
// an empty index and newRecord's record.
func (s *Store[R]) Acquire(name string, newRecord func() R, fields []zap.Field) *Repository[R] {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[name]
	if r == nil {
		for len(s.repos) >= s.maxRepos && s.evictRepoLocked(fields) {
		}
		r = &Repository[R]{name: name, Index: newIndex(), Record: newRecord()}
		s.repos[name] = r
		r.elem = s.repoLRU.PushFront(r)
	} else {
		s.repoLRU.MoveToFront(r.elem)
	}
	r.inUse++
	return r
}

// Held returns the repository named name when the store holds it, not
// marked in use (for tests).
func (s *Store[R]) Held(name string) *Repository[R] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[name]
}

// Release ends a request's use of r and accounts its new size.
func (s *Store[R]) Release(r *Repository[R], size int64, fields []zap.Field) {
	s.mu.Lock()
	r.inUse--
	if s.repos[r.name] == r {
		s.used += size - r.size
	}
	r.size = size
	s.evictLocked(fields)
	s.mu.Unlock()
}

// Stats is the store's occupancy: contents held, repositories, and bytes
// accounted against the cap.
type Stats struct {
	Entries, Repositories int
	Bytes, CapBytes       int64
}

// Stats reports the store's occupancy.
func (s *Store[R]) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.entries), Repositories: len(s.repos), Bytes: s.used, CapBytes: s.capBytes}
}

// Analysis returns e's analysis in lang, nil when there is none yet.
func (e *Content) Analysis(lang syntax.Lang) *syntax.Analysis {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.analyses[lang]
}

// Analysis returns e's analysis in lang, made by analyze once (e is
// locked meanwhile) and accounted to e.
func (s *Store[R]) Analysis(e *Content, lang syntax.Lang, analyze func(text string) (*syntax.Analysis, error)) (*syntax.Analysis, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := e.analyses[lang]; a != nil {
		return a, nil
	}
	a, err := analyze(e.Text)
	if err != nil {
		return nil, err
	}
	e.analyses[lang] = a
	s.grow(e, a.Bytes)
	return a, nil
}

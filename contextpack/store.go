package contextpack

import (
	"container/list"
	"context"
	"sync"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
	"go.uber.org/zap"
)

// entry is one file content, remembered by digest, with what was derived
// from it. Content and digest never change.
type entry struct {
	digest  string
	content string

	// Guarded by store.mu.
	refs    int           // pins: requests in flight and repository indexes
	elem    *list.Element // position in store.lru while unpinned
	size    int64         // accounted bytes
	removed bool          // evicted from the store

	mu sync.Mutex // guards an; held while analysing
	an [syntax.NumLangs]*syntax.Analysis
}

// store is the content store and cache: entries by digest and repository
// indexes by name, under one byte cap. Entries pinned by a request or a
// repository index are not evicted; unpinned entries leave least recently
// used first, then idle repository indexes (which unpins their entries).
type store struct {
	log      *zap.Logger
	capBytes int64
	maxRepos int

	mu      sync.Mutex
	used    int64
	entries map[string]*entry
	lru     list.List // unpinned entries, front = most recently used
	repos   map[string]*repository
	repoLRU list.List // *repository, front = most recently used
}

// repository is one repository's state in the store: its index and the
// record the Builder keeps beside it (memo.go), evicted together. Guarded
// by mu; the fields marked store are guarded by store.mu.
type repository struct {
	mu     sync.Mutex
	name   string
	inUse  int           // store
	elem   *list.Element // store
	size   int64         // store
	index  *repoIndex
	record *record
}

func newStore(capBytes int64, maxRepos int, log *zap.Logger) *store {
	return &store{log: log, capBytes: capBytes, maxRepos: maxRepos,
		entries: make(map[string]*entry), repos: make(map[string]*repository)}
}

const entryOverhead = 160

// resolve returns the entries for a request's files, pinned, admitting
// new content. missing lists the indexes of files whose digest is not held.
func (s *store) resolve(digests []string, contents []string, has []bool) (es []*entry, missing []int) {
	es = make([]*entry, len(digests))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range digests {
		e := s.entries[d]
		if e == nil {
			if !has[i] {
				missing = append(missing, i)
				continue
			}
			e = &entry{digest: d, content: contents[i], size: int64(len(contents[i])) + entryOverhead}
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

// text returns the content of digest d, if the store holds it.
func (s *store) text(d string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[d]; e != nil {
		return e.content, true
	}
	return "", false
}

// pinHeld returns the entry of digest d pinned, or nil when the store
// does not hold it.
func (s *store) pinHeld(d string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[d]
	if e != nil {
		s.pinLocked(e)
	}
	return e
}

func (s *store) pinLocked(e *entry) {
	if e.refs == 0 && e.elem != nil {
		s.lru.Remove(e.elem)
		e.elem = nil
	}
	e.refs++
}

func (s *store) unpinLocked(e *entry) {
	e.refs--
	if e.refs == 0 && !e.removed {
		e.elem = s.lru.PushFront(e)
	}
}

// unpin releases pins and evicts down to the cap; fields name the call
// (internal/logctx) in what the eviction logs.
func (s *store) unpin(es []*entry, fields []zap.Field) {
	s.mu.Lock()
	for _, e := range es {
		if e != nil {
			s.unpinLocked(e)
		}
	}
	s.evictLocked(fields)
	s.mu.Unlock()
}

// repin moves repository pins: add are newly referenced, drop no longer.
func (s *store) repin(add, drop []*entry) {
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
func (s *store) grow(e *entry, delta int64) {
	s.mu.Lock()
	if !e.removed {
		e.size += delta
		s.used += delta
	}
	s.mu.Unlock()
}

func (s *store) evictLocked(fields []zap.Field) {
	for s.used > s.capBytes {
		if el := s.lru.Back(); el != nil {
			e := el.Value.(*entry)
			s.lru.Remove(el)
			e.elem = nil
			e.removed = true
			delete(s.entries, e.digest)
			s.used -= e.size
			continue
		}
		if !s.evictRepoLocked(fields) {
			return // everything left is in use by requests in flight
		}
	}
}

// evictRepoLocked drops the least recently used idle repository index.
func (s *store) evictRepoLocked(fields []zap.Field) bool {
	for el := s.repoLRU.Back(); el != nil; el = el.Prev() {
		r := el.Value.(*repository)
		if r.inUse > 0 {
			continue
		}
		s.repoLRU.Remove(el)
		delete(s.repos, r.name)
		s.used -= r.size
		for _, sl := range r.index.slots {
			if sl != nil {
				s.unpinLocked(sl.e)
				if sl.real != nil {
					s.unpinLocked(sl.real)
				}
			}
		}
		s.log.Debug("contextpack: repository index evicted", append([]zap.Field{zap.String("repo", r.name)}, fields...)...)
		return true
	}
	return false
}

// repo returns the repository named name, marked in use; a new one has
// an empty index and newRecord's record.
func (s *store) repo(name string, newRecord func() *record, fields []zap.Field) *repository {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[name]
	if r == nil {
		for len(s.repos) >= s.maxRepos && s.evictRepoLocked(fields) {
		}
		r = &repository{name: name, index: newRepoIndex(), record: newRecord()}
		s.repos[name] = r
		r.elem = s.repoLRU.PushFront(r)
	} else {
		s.repoLRU.MoveToFront(r.elem)
	}
	r.inUse++
	return r
}

// releaseRepo ends a request's use of r and accounts its new size.
func (s *store) releaseRepo(r *repository, size int64, fields []zap.Field) {
	s.mu.Lock()
	r.inUse--
	if s.repos[r.name] == r {
		s.used += size - r.size
	}
	r.size = size
	s.evictLocked(fields)
	s.mu.Unlock()
}

// storeStats is the store's occupancy.
type storeStats struct {
	entries, repositories int
	bytes, capBytes       int64
}

func (s *store) stats() storeStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return storeStats{entries: len(s.entries), repositories: len(s.repos), bytes: s.used, capBytes: s.capBytes}
}

// maxTreeBytes bounds the files whose syntax trees are kept for
// incremental parsing (a tree takes roughly ten times its file's size).
const maxTreeBytes = 256 << 10

// analysisFor returns e's analysis in lang, computing it once. A non-empty
// treeKey (repository and path) parses incrementally from the tree of the
// path's previous version when the tree cache has it, and keeps the new
// tree for the next version.
func (b *Builder) analysisFor(ctx context.Context, e *entry, lang syntax.Lang, treeKey string) (*syntax.Analysis, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := e.an[lang]; a != nil {
		return a, nil
	}
	opt := b.aopt
	if len(e.content) <= maxTreeBytes {
		opt.TreeKey = treeKey
	}
	a, err := syntax.Analyze(ctx, b.grammars, e.content, lang, opt)
	if err != nil {
		return nil, err
	}
	e.an[lang] = a
	b.store.grow(e, a.Bytes)
	return a, nil
}

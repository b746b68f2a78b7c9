package contextpack

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"

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
	an [numLangs]*analysis
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
	repos   map[string]*repoIndex
	repoLRU list.List // *repoIndex, front = most recently used
}

func newStore(capBytes int64, maxRepos int, log *zap.Logger) *store {
	return &store{log: log, capBytes: capBytes, maxRepos: maxRepos,
		entries: make(map[string]*entry), repos: make(map[string]*repoIndex)}
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
		r := el.Value.(*repoIndex)
		if r.inUse > 0 {
			continue
		}
		s.repoLRU.Remove(el)
		delete(s.repos, r.key)
		s.used -= r.size
		for _, sl := range r.slots {
			if sl != nil {
				s.unpinLocked(sl.e)
				if sl.real != nil {
					s.unpinLocked(sl.real)
				}
			}
		}
		s.log.Debug("contextpack: repository index evicted", append([]zap.Field{zap.String("repo", r.key)}, fields...)...)
		return true
	}
	return false
}

// repo returns the index for key, marked in use.
func (s *store) repo(key string, newIndex func() *repoIndex, fields []zap.Field) *repoIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[key]
	if r == nil {
		for len(s.repos) >= s.maxRepos && s.evictRepoLocked(fields) {
		}
		r = newIndex()
		r.key = key
		s.repos[key] = r
		r.elem = s.repoLRU.PushFront(r)
	} else {
		s.repoLRU.MoveToFront(r.elem)
	}
	r.inUse++
	return r
}

// releaseRepo ends a request's use of r and accounts its new size.
func (s *store) releaseRepo(r *repoIndex, size int64, fields []zap.Field) {
	s.mu.Lock()
	r.inUse--
	if s.repos[r.key] == r {
		s.used += size - r.size
	}
	r.size = size
	s.evictLocked(fields)
	s.mu.Unlock()
}

// Stats reports the store's occupancy.
type Stats struct {
	Entries      int
	Repositories int
	Bytes        int64
	CapBytes     int64

	// Counts since the Builder was made (Builder.Stats fills them).
	// DigestHits and DigestMisses: files sent as a digest alone (edits
	// included) whose content the store held, or did not (the client
	// resends it).
	DigestHits, DigestMisses uint64
	// SnapshotHits and SnapshotMisses: requests built on a base snapshot
	// held, or not held.
	SnapshotHits, SnapshotMisses uint64
	// PromptMemoHits: prompts reused from the memo of prompts built for
	// the same inputs; PromptsBuilt: prompts assembled.
	PromptMemoHits, PromptsBuilt uint64
}

// counts are the Builder's running totals behind Stats.
type counts struct {
	digestHits, digestMisses     atomic.Uint64
	snapshotHits, snapshotMisses atomic.Uint64
	memoHits, built              atomic.Uint64
}

// record counts one build: files sent as digests (lookups), whether it
// named a base, and how it ended.
func (c *counts) record(lookups int, base bool, memo bool, err error) {
	var se *UnknownSnapshotError
	var me *MissingContentError
	switch {
	case errors.As(err, &se):
		c.snapshotMisses.Add(1)
		return
	case errors.As(err, &me):
		c.digestMisses.Add(uint64(len(me.Paths)))
		c.digestHits.Add(uint64(max(lookups-len(me.Paths), 0)))
	case err != nil:
		return
	default:
		c.digestHits.Add(uint64(lookups))
		if memo {
			c.memoHits.Add(1)
		} else {
			c.built.Add(1)
		}
	}
	if base {
		c.snapshotHits.Add(1)
	}
}

func (s *store) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Entries: len(s.entries), Repositories: len(s.repos), Bytes: s.used, CapBytes: s.capBytes}
}

// maxTreeBytes bounds the files whose syntax trees are kept for
// incremental parsing (a tree takes roughly ten times its file's size).
const maxTreeBytes = 256 << 10

// analysisFor returns e's analysis in lang, computing it once. A non-empty
// treeKey (repository and path) parses incrementally from the tree of the
// path's previous version when the tree cache has it, and keeps the new
// tree for the next version.
func (b *Builder) analysisFor(ctx context.Context, e *entry, lang langID, treeKey string) (*analysis, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := e.an[lang]; a != nil {
		return a, nil
	}
	opt := b.aopt
	if len(e.content) <= maxTreeBytes {
		opt.treeKey = treeKey
	}
	a, err := analyze(ctx, b.grammars, e.content, lang, opt)
	if err != nil {
		return nil, err
	}
	e.an[lang] = a
	b.store.grow(e, a.bytes)
	return a, nil
}

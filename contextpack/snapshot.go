package contextpack

import (
	"container/list"
	"fmt"
	"strconv"
	"sync"
)

// Repository snapshots: the whole file list of a request (path, digest and
// language of each file), named by a hash of it, so that a later request
// can send only what changed (Request.Base, Files as an overlay, Removed).
// An editor then sends one file per keystroke instead of one digest per
// file of the repository.

// snapFile is one file of a snapshot.
type snapFile struct {
	path, digest, lang string
}

type snapshot struct {
	id    string
	files []snapFile
	index map[string]int // path → position in files; built on first use as a base
	elem  *list.Element
}

// maxSnapshotFiles bounds the files of all snapshots together (about 50
// bytes each beyond the strings, which snapshots of one repository share):
// 64 snapshots of 4,000 files, or 13 of 20,000.
const maxSnapshotFiles = 256 << 10

// snapshots is a bounded LRU of snapshots by id.
type snapshots struct {
	max      int
	maxFiles int

	mu    sync.Mutex
	m     map[string]*snapshot
	lru   list.List // front = most recently used
	files int
}

func newSnapshots(max int) *snapshots {
	return &snapshots{max: max, maxFiles: maxSnapshotFiles, m: map[string]*snapshot{}}
}

func (s *snapshots) get(id string) *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.m[id]
	if sn != nil {
		s.lru.MoveToFront(sn.elem)
		if sn.index == nil {
			sn.index = make(map[string]int, len(sn.files))
			for i, f := range sn.files {
				sn.index[f.path] = i
			}
		}
	}
	return sn
}

// put remembers the file list of files (with their digests) under id,
// unless it is already held; it reports whether the list is held (a list
// over maxFiles is not).
func (s *snapshots) put(id string, files []File, digests []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.m[id]; sn != nil {
		s.lru.MoveToFront(sn.elem)
		return true
	}
	if len(files) > s.maxFiles {
		return false
	}
	sn := &snapshot{id: id, files: make([]snapFile, len(files))}
	for i := range files {
		sn.files[i] = snapFile{path: files[i].Path, digest: digests[i], lang: files[i].Language}
	}
	sn.elem = s.lru.PushFront(sn)
	s.m[id] = sn
	s.files += len(sn.files)
	for s.lru.Len() > s.max || s.files > s.maxFiles {
		old := s.lru.Back().Value.(*snapshot)
		s.lru.Remove(old.elem)
		delete(s.m, old.id)
		s.files -= len(old.files)
	}
	return true
}

// expand turns a request with a base into one with the whole file list:
// the base's files in their order, each replaced by the request's file of
// the same path, then the request's new files, without the removed paths.
func (b *Builder) expand(req Request) ([]File, error) {
	if req.Base == "" {
		if len(req.Removed) > 0 {
			return nil, &ArgumentError{Field: "repository.removed", Reason: "needs repository.base"}
		}
		return req.Files, nil
	}
	if !validID(req.Base, "snap:") {
		return nil, &ArgumentError{Field: "repository.base", Reason: fmt.Sprintf(
			"%.80q is not a snapshot ID (\"snap:\" and 64 lowercase hex digits, from a response)", req.Base)}
	}
	var sn *snapshot
	if b.snaps != nil {
		sn = b.snaps.get(req.Base)
	}
	if sn == nil {
		return nil, &UnknownSnapshotError{ID: req.Base}
	}
	files := make([]File, len(sn.files), len(sn.files)+len(req.Files))
	for i, f := range sn.files {
		files[i] = File{Path: f.path, Digest: f.digest, Language: f.lang}
	}
	// The delta's files are checked here, where their indexes are the
	// request's; the base's files were checked when they were sent.
	sent := make(map[string]bool, len(req.Files))
	for i, f := range req.Files {
		if err := checkFile(i, &f, sent); err != nil {
			return nil, err
		}
		if j, ok := sn.index[f.Path]; ok {
			files[j] = f
		} else {
			files = append(files, f)
		}
	}
	if len(req.Removed) == 0 {
		return files, b.checkCount(files)
	}
	drop := make(map[string]bool, len(req.Removed))
	for i, p := range req.Removed {
		field := "repository.removed[" + strconv.Itoa(i) + "]"
		if _, ok := sn.index[p]; !ok {
			return nil, &ArgumentError{Field: field, Reason: strconv.Quote(p) + " is not in the base snapshot"}
		}
		if sent[p] {
			return nil, &ArgumentError{Field: field, Reason: strconv.Quote(p) + " is also in repository.files"}
		}
		drop[p] = true
	}
	out := files[:0]
	for _, f := range files {
		if !drop[f.Path] {
			out = append(out, f)
		}
	}
	return out, b.checkCount(out)
}

// checkCount bounds a file list made from a base snapshot and a delta.
func (b *Builder) checkCount(files []File) error {
	if len(files) > b.cfg.MaxFiles {
		return &ArgumentError{Field: "repository.files", Reason: fmt.Sprintf(
			"%d files with the base snapshot exceed the limit of %d", len(files), b.cfg.MaxFiles)}
	}
	return nil
}

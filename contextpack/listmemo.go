package contextpack

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// A client sends a repository's whole file list on every request: the
// same paths, languages and digests each time, but for the file being
// edited. At 500 files, checking the paths, detecting the languages and
// hashing the list for its snapshot ID were 0.12 ms of a 0.2 ms warm build
// (server BenchmarkCompleteDigests). The Builder therefore remembers each
// repository's last checked list and does that work again only for what
// changed.

// fileList is the checked file list of one build. It is never changed
// once made: a build whose list differs makes a new one, sharing what did
// not change.
type fileList struct {
	paths   []string
	langs   []string      // File.Language as sent
	ids     []syntax.Lang // syntax.DetectLang of each path and language
	digests []string
	// edits are the files whose digests differ from the list this one was
	// made from, when that list had the same paths (nil otherwise).
	edits []int
	// chunks hashes the files listChunk at a time; the snapshot ID hashes
	// the chunks, so that a new digest rehashes one chunk, not the list.
	chunks [][sha256.Size]byte
	id     string // the snapshot ID; "" when snapshots are off
}

// listChunk is how many files one chunk hash covers.
const listChunk = 32

// samePaths reports whether files have l's paths and languages in l's
// order: a list that was checked already, but for content and digests.
func (l *fileList) samePaths(files []File) bool {
	if l == nil || len(l.paths) != len(files) {
		return false
	}
	for i := range files {
		if files[i].Path != l.paths[i] || files[i].Language != l.langs[i] {
			return false
		}
	}
	return true
}

// nextList returns the list of files (with their digests) after prev:
// prev itself when nothing changed, else a new list that shares prev's
// paths, languages and unchanged chunk hashes when same (prev.samePaths
// held). With snapshots it carries the snapshot ID; a Builder passes the
// same snapshots on every call, so prev carries one too.
func nextList(prev *fileList, same bool, files []File, digests []string, snapshots bool) *fileList {
	var edits []int
	if same {
		for i, d := range digests {
			if d != prev.digests[i] {
				edits = append(edits, i)
			}
		}
		if edits == nil {
			return prev
		}
	}
	l := &fileList{digests: digests, edits: edits}
	if same {
		l.paths, l.langs, l.ids = prev.paths, prev.langs, prev.ids
	} else {
		l.paths = make([]string, len(files))
		l.langs = make([]string, len(files))
		l.ids = make([]syntax.Lang, len(files))
		for i := range files {
			l.paths[i], l.langs[i] = files[i].Path, files[i].Language
			l.ids[i] = syntax.DetectLang(files[i].Path, files[i].Language)
		}
	}
	if !snapshots {
		return l
	}
	l.chunks = make([][sha256.Size]byte, (len(files)+listChunk-1)/listChunk)
	dirty := make([]bool, len(l.chunks))
	for c := range dirty {
		dirty[c] = !same || prev.chunks == nil
	}
	for _, i := range edits {
		dirty[i/listChunk] = true
	}
	var buf []byte
	for c := range l.chunks {
		if !dirty[c] {
			l.chunks[c] = prev.chunks[c]
			continue
		}
		lo, hi := c*listChunk, min((c+1)*listChunk, len(files))
		buf = buf[:0]
		for i := lo; i < hi; i++ {
			buf = appendField(buf, l.paths[i])
			buf = appendField(buf, digests[i])
			buf = appendField(buf, l.langs[i])
		}
		l.chunks[c] = sha256.Sum256(buf)
	}
	h := sha256.New()
	h.Write(binary.AppendUvarint(nil, uint64(len(files))))
	for c := range l.chunks {
		h.Write(l.chunks[c][:])
	}
	var sum [sha256.Size]byte
	l.id = "snap:" + hex.EncodeToString(h.Sum(sum[:0]))
	return l
}

// appendField appends s with its length first, so that no two lists
// encode alike.
func appendField(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// listMemo holds the last checked list of each repository, for at most
// maxFiles files in all.
type listMemo struct {
	maxFiles int

	mu    sync.Mutex
	m     map[string]*fileList
	files int
}

func newListMemo(maxFiles int) *listMemo {
	return &listMemo{maxFiles: maxFiles, m: map[string]*fileList{}}
}

func (m *listMemo) get(repo string) *fileList {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[repo]
}

// put makes l the last list of repo, dropping other repositories' lists
// (in no particular order) while the total is over maxFiles.
func (m *listMemo) put(repo string, l *fileList) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.m[repo]; old != nil {
		m.files -= len(old.paths)
		delete(m.m, repo)
	}
	if len(l.paths) > m.maxFiles {
		return
	}
	for r, old := range m.m {
		if m.files+len(l.paths) <= m.maxFiles {
			break
		}
		m.files -= len(old.paths)
		delete(m.m, r)
	}
	m.m[repo] = l
	m.files += len(l.paths)
}

package workspace

import (
	"sync"
	"time"

	"github.com/aymanbagabas/go-udiff"
)

// Edit is one change to a workspace file seen on disk: a unified diff
// (go-udiff, three lines of context) of its text before and after.
type Edit struct {
	Path string
	Diff string
	Time time.Time
}

// history keeps the workspace's most recent changes to files it held
// (edit prediction's history when a request brings none), oldest first:
// at most max, each diff at most maxBytes (a larger change, a file
// rewritten, is not a recent edit worth showing). Files created or
// deleted are not recorded. The diffs hold code: they are never logged.
type history struct {
	mu       sync.Mutex
	edits    []Edit
	max      int
	maxBytes int
}

// record keeps the change of rel from old to new.
func (h *history) record(rel, old, new string, at time.Time) {
	if h.max == 0 || old == new {
		return
	}
	diff, err := udiff.ToUnified("a/"+rel, "b/"+rel, old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil || diff == "" || len(diff) > h.maxBytes {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.edits) == h.max {
		h.edits = append(h.edits[:0], h.edits[1:]...)
	}
	h.edits = append(h.edits, Edit{Path: rel, Diff: diff, Time: at})
}

// recent returns a copy of the changes, oldest first.
func (h *history) recent() []Edit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Edit(nil), h.edits...)
}

// RecentEdits returns the workspace's most recent changes to its files
// as seen on disk, oldest first (Config.HistoryEdits at most).
func (w *Workspace) RecentEdits() []Edit { return w.history.recent() }

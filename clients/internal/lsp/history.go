package lsp

import (
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"google.golang.org/protobuf/types/known/timestamppb"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// The session's edit history, for edit predictions: the editor's
// didChange events in order, grouped into edits as a person makes them.
// Changes to one document close together in time and place (within
// editGroupGap of the last one and editGroupLines lines of it) are one
// edit; a change elsewhere, later or in another document closes it. An
// edit is the unified diff (go-udiff) of the document from the group's
// first change to its last. The session keeps the last maxEdits closed
// edits and the open one, each at most maxEditBytes (a larger change,
// such as a file's text replaced whole, is no edit worth showing); they
// hold code, so they are never logged.
const (
	editGroupGap   = 1500 * time.Millisecond
	editGroupLines = 8
	maxEdits       = 16
	maxEditBytes   = 8 << 10
)

// recentEdit is a closed edit.
type recentEdit struct {
	repo *repo
	rel  string
	diff string
	at   time.Time
}

// editGroup is the edit being made: the document's text before its
// first change and after its last.
type editGroup struct {
	uri       string
	repo      *repo
	rel       string
	base, cur string
	line      int // of the last change
	last      time.Time
}

// editHistory is a session's edits; s.mu guards it.
type editHistory struct {
	closed []recentEdit // oldest first
	open   *editGroup
}

// changed records that d's text went from old to d.text at now.
func (h *editHistory) changed(d *document, old string, now time.Time) {
	line := strings.Count(d.text[:commonPrefix(old, d.text)], "\n")
	if g := h.open; g != nil && (g.uri != d.uri || g.repo != d.repo || g.rel != d.rel ||
		now.Sub(g.last) > editGroupGap || abs(line-g.line) > editGroupLines) {
		h.close()
	}
	if h.open == nil {
		h.open = &editGroup{uri: d.uri, repo: d.repo, rel: d.rel, base: old}
	}
	h.open.cur, h.open.line, h.open.last = d.text, line, now
}

// close ends the open edit.
func (h *editHistory) close() {
	g := h.open
	h.open = nil
	if diff := editDiff(g.rel, g.base, g.cur); diff != "" {
		if len(h.closed) == maxEdits {
			h.closed = append(h.closed[:0], h.closed[1:]...)
		}
		h.closed = append(h.closed, recentEdit{repo: g.repo, rel: g.rel, diff: diff, at: g.last})
	}
}

// recent returns the edits made in r, the open one last, as the API takes
// them.
func (h *editHistory) recent(r *repo) []*infillv1.RecentEdit {
	var out []*infillv1.RecentEdit
	add := func(rel, diff string, at time.Time) {
		out = append(out, &infillv1.RecentEdit{Path: rel, Diff: diff, Time: timestamppb.New(at)})
	}
	for _, e := range h.closed {
		if e.repo == r {
			add(e.rel, e.diff, e.at)
		}
	}
	if g := h.open; g != nil && g.repo == r {
		if diff := editDiff(g.rel, g.base, g.cur); diff != "" {
			add(g.rel, diff, g.last)
		}
	}
	return out
}

// editDiff is the unified diff of rel from old to new, "" when they are
// the same or the diff is too large.
func editDiff(rel, old, new string) string {
	if old == new {
		return ""
	}
	diff, err := udiff.ToUnified("a/"+rel, "b/"+rel, old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil || len(diff) > maxEditBytes {
		return ""
	}
	return diff
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

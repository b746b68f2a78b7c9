package evaluator

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// NextEdit is what a next-edit problem shows besides the file: the
// editable region before the target edit, the edits made before it and
// the cursor. Prefix + Region + Suffix is the workspace's file; the task's
// Reference is the region with the target edit made; a completion is the
// region as the model rewrote it, graded in the file as any middle is
// (Prefix + completion + Suffix).
type NextEdit struct {
	Region string `json:"region"`
	// RecentEdits are the edits made before the target, oldest first.
	RecentEdits []RecentEdit `json:"recent_edits,omitempty"`
	// Cursor is a byte offset into Prefix + Region + Suffix.
	Cursor int `json:"cursor_offset"`
}

// RecentEdit is one edit made before a next-edit task's target: a unified
// diff of the file at Path (hunks with "@@ -a,b +c,d @@" headers).
type RecentEdit struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}

// File is the workspace's file of a next-edit task: Prefix + Region +
// Suffix.
func (n *NextEdit) File(t *Task) string { return t.Prefix + n.Region + t.Suffix }

// validateNextEdit checks a next-edit task's fields: its level, the
// cursor inside the file, recent edits that name a path.
func (t *Task) validateNextEdit() error {
	n := t.NextEdit
	if n == nil {
		if t.Level == LevelNextEdit {
			return fmt.Errorf("level %q needs the next edit's region, recent edits and cursor", LevelNextEdit)
		}
		return nil
	}
	if t.Level != LevelNextEdit {
		return fmt.Errorf("a next-edit task has level %q, not %q", LevelNextEdit, t.Level)
	}
	if size := len(t.Prefix) + len(n.Region) + len(t.Suffix); n.Cursor < 0 || n.Cursor > size {
		return fmt.Errorf("cursor offset %d outside the %d-byte file", n.Cursor, size)
	}
	if !utf8.ValidString(n.Region) {
		return fmt.Errorf("the region is not UTF-8")
	}
	for i, e := range n.RecentEdits {
		if e.Path == "" || strings.ContainsAny(e.Path, "\r\n") || !utf8.ValidString(e.Path) || !utf8.ValidString(e.Diff) {
			return fmt.Errorf("recent edit %d: a path (no line break) and a UTF-8 diff", i)
		}
	}
	return nil
}

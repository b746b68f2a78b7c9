package index

import (
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Typing views, as the index holds them: the cursor file of the index's
// last update holds its view (the text with the cursor's line emptied),
// every other file its text.

// CursorLine returns the line holding byte offset off: where it starts,
// where its text ends (before the newline) and its number. The typing view
// is content[:ls] + content[le:], content itself when the line is empty.
func CursorLine(content string, off int) (ls, le int, line int32) {
	ls = strings.LastIndexByte(content[:off], '\n') + 1
	le = strings.IndexByte(content[off:], '\n')
	if le < 0 {
		le = len(content)
	} else {
		le += off
	}
	return ls, le, int32(strings.Count(content[:ls], "\n"))
}

// IsView reports whether v is content with [ls, le) taken out.
func IsView(v, content string, ls, le int) bool {
	return len(v) == ls+len(content)-le && v[:ls] == content[:ls] && v[ls:] == content[le:]
}

// content is the file's text (not its view).
func (f *RequestFile) content() string {
	if f.Text != nil {
		return f.Text.Text
	}
	return f.Indexed.Text
}

// Text is the content of the file's text (not its view).
func (sl *File) Text() *Content {
	if sl.text != nil {
		return sl.text
	}
	return sl.indexed
}

// Indexed is the content the index holds at the file's path: its text, or
// its typing view.
func (sl *File) Indexed() *Content { return sl.indexed }

// Viewed reports whether the file holds its typing view.
func (sl *File) Viewed() bool { return sl.text != nil }

// WithText returns the analysis of the file's own text: its analysis, or, while
// it holds its typing view, the view's analysis with the file's text.
func (sl *File) WithText() *syntax.Analysis {
	if sl.text == nil {
		return sl.Analysis
	}
	return sl.Analysis.WithText(sl.text.Text, sl.viewLine)
}

// HoldsViewFor reports whether the file is what an update for a cursor at
// off (in its text) would make it: the view of that line, or the file itself
// when the line is empty.
func (sl *File) HoldsViewFor(off int) bool {
	ls, le, line := CursorLine(sl.Text().Text, off)
	if ls == le {
		return sl.text == nil
	}
	return sl.text != nil && sl.viewLine == line
}

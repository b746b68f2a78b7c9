package infill

import (
	"unicode/utf8"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// lastText is the cursor file's text as the server last accepted it from
// this client, with its digest. The client keeps one per repository
// (Client.texts), so that the next keystroke travels as an edit to it
// (File.edits) instead of the whole file. Only the cursor file: that is
// where typing happens, and the memory stays one file per repository.
type lastText struct {
	path, digest, content string
}

// DiffEdit returns the one edit (File.edits) that turns from into to: what
// lies between their common prefix and common suffix, both ending on
// character boundaries. The client sends keystrokes this way; it is
// exported for callers that build requests themselves. It runs on every
// keystroke over the whole file, so it compares 64 bytes at a time (string
// equality is vectorised) before going byte by byte: 35 KB took 50 µs
// byte by byte. contextpack's editBetween does the same on the server;
// this package does not import contextpack (cgo, tree-sitter).
func DiffEdit(from, to string) *infillv1.Edit {
	const chunk = 64
	n := min(len(from), len(to))
	p := 0
	for p+chunk <= n && from[p:p+chunk] == to[p:p+chunk] {
		p += chunk
	}
	for p < n && from[p] == to[p] {
		p++
	}
	for p > 0 && (!runeStart(from, p) || !runeStart(to, p)) {
		p--
	}
	s := 0
	for s+chunk <= n-p && from[len(from)-s-chunk:len(from)-s] == to[len(to)-s-chunk:len(to)-s] {
		s += chunk
	}
	for s < n-p && from[len(from)-1-s] == to[len(to)-1-s] {
		s++
	}
	for s > 0 && (!runeStart(from, len(from)-s) || !runeStart(to, len(to)-s)) {
		s--
	}
	return &infillv1.Edit{Start: uint64(p), End: uint64(len(from) - s), Text: to[p : len(to)-s]}
}

// runeStart reports whether byte offset off of s starts a character or
// is s's end.
func runeStart(s string, off int) bool {
	return off == len(s) || utf8.RuneStart(s[off])
}

// asEdit returns f sent as an edit to last, the text the server holds
// for f's path, when that is much smaller than f's content.
func asEdit(f *infillv1.File, last lastText) (*infillv1.File, bool) {
	e := DiffEdit(last.content, f.GetContent())
	if 2*(len(e.GetText())+32) > len(f.GetContent()) {
		return nil, false
	}
	return &infillv1.File{Path: f.GetPath(), Digest: last.digest, Language: f.GetLanguage(),
		Edits: []*infillv1.Edit{e}}, true
}

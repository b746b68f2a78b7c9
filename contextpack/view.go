package contextpack

import (
	"context"
	"strings"
	"sync"

	"github.com/infill-dev/infill/internal/logctx"
)

// Typing views. Everything the cross-file context is chosen from (the
// cursor file's tags, windows, identifiers and imports, and the
// repository index built from them) is derived from the cursor file with
// the cursor's line emptied, its newline kept: the typing view. The line
// being typed is the one that changes at every keystroke and is the most
// often half-written (a syntax error at every other keystroke); the
// search query already leaves it out (queryIdents). While the cursor
// stays on one line, every keystroke then has the same view: its
// analysis, the index and the import ranking are reused as they are, and
// only the prefix and suffix, cut from the file itself, are new. Lines
// keep their numbers in the view, so its tags apply to the file as they
// are.
//
// The view is a function of the request (content and cursor line), so a
// prompt still does not depend on the requests before it: the index holds
// the view for the cursor file of its last update and the file itself
// for every other path (repoIndex.view), and a request whose cursor file
// or line differs updates it.

// cursorLine returns the line holding byte offset off: where it starts,
// where its text ends (before the newline) and its number. The typing view
// is content[:ls] + content[le:], content itself when the line is empty.
func cursorLine(content string, off int) (ls, le int, line int32) {
	ls = strings.LastIndexByte(content[:off], '\n') + 1
	le = strings.IndexByte(content[off:], '\n')
	if le < 0 {
		le = len(content)
	} else {
		le += off
	}
	return ls, le, int32(strings.Count(content[:ls], "\n"))
}

// isView reports whether v is content with [ls, le) taken out.
func isView(v, content string, ls, le int) bool {
	return len(v) == ls+len(content)-le && v[:ls] == content[:ls] && v[ls:] == content[le:]
}

// content is the file's text (not its view).
func (f *reqFile) content() string {
	if f.real != nil {
		return f.real.content
	}
	return f.e.content
}

// text is the entry holding the file's text (not its view).
func (sl *slot) text() *entry {
	if sl.real != nil {
		return sl.real
	}
	return sl.e
}

// holdsView reports whether sl is what an update for a cursor at off
// (in sl's text) would make it: the view of that line, or the file itself
// when the line is empty.
func (sl *slot) holdsView(off int) bool {
	ls, le, line := cursorLine(sl.text().content, off)
	if ls == le {
		return sl.real == nil
	}
	return sl.real != nil && sl.viewLine == line
}

// useView makes f (the cursor file of repository repo, cursor at off) its
// typing view: the view's content joins the store, pinned until release
// is called. The path's last view is remembered, so that the keystrokes
// of one line find it without building and hashing it again.
func (b *Builder) useView(ctx context.Context, repo string, f *reqFile, off int) (release func()) {
	c := f.e.content
	ls, le, line := cursorLine(c, off)
	if ls == le {
		return func() {}
	}
	key := repo + "\x00" + f.path
	b.views.mu.Lock()
	d := b.views.last[key]
	b.views.mu.Unlock()
	e := b.store.pinHeld(d)
	if e != nil && !isView(e.content, c, ls, le) {
		b.store.unpin([]*entry{e}, logctx.Fields(ctx))
		e = nil
	}
	if e == nil {
		v := c[:ls] + c[le:]
		es, _ := b.store.resolve([]string{Digest(v)}, []string{v}, []bool{true})
		e = es[0]
		b.views.mu.Lock()
		if len(b.views.last) >= maxViews {
			clear(b.views.last)
		}
		b.views.last[key] = e.digest
		b.views.mu.Unlock()
	}
	es := []*entry{e}
	f.real, f.e, f.line = f.e, es[0], line
	return func() { b.store.unpin(es, logctx.Fields(ctx)) }
}

// maxViews bounds the remembered views (one per repository and path).
const maxViews = 64

// views remembers the digest of the last typing view of each repository
// and path (the store may have evicted it since).
type views struct {
	mu   sync.Mutex
	last map[string]string
}

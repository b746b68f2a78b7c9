package contextpack

import (
	"context"
	"sync"

	"github.com/infill-dev/infill/contextpack/internal/index"
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

// useView makes f (the cursor file of repository repo, cursor at off) its
// typing view: the view's content joins the store, pinned until release
// is called. The path's last view is remembered, so that the keystrokes
// of one line find it without building and hashing it again.
func (b *Builder) useView(ctx context.Context, repo string, f *index.RequestFile, off int) (release func()) {
	c := f.Indexed.Text
	ls, le, line := index.CursorLine(c, off)
	if ls == le {
		return func() {}
	}
	key := repo + "\x00" + f.Path
	b.views.mu.Lock()
	d := b.views.last[key]
	b.views.mu.Unlock()
	e := b.store.PinHeld(d)
	if e != nil && !index.IsView(e.Text, c, ls, le) {
		b.store.Unpin([]*index.Content{e}, logctx.Fields(ctx))
		e = nil
	}
	if e == nil {
		v := c[:ls] + c[le:]
		es, _ := b.store.Resolve([]string{Digest(v)}, []string{v}, []bool{true})
		e = es[0]
		b.views.mu.Lock()
		if len(b.views.last) >= maxViews {
			clear(b.views.last)
		}
		b.views.last[key] = e.Digest
		b.views.mu.Unlock()
	}
	es := []*index.Content{e}
	f.Text, f.Indexed, f.ViewLine = f.Indexed, es[0], line
	return func() { b.store.Unpin(es, logctx.Fields(ctx)) }
}

// maxViews bounds the remembered views (one per repository and path).
const maxViews = 64

// views remembers the digest of the last typing view of each repository
// and path (the store may have evicted it since).
type views struct {
	mu   sync.Mutex
	last map[string]string
}

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

// withText is the analysis the assembly reads for a cursor file whose
// view v is (line emptied): the file's own text and line table, with v's
// tags and windows, which hold for every other line. Token counts of line
// ranges that leave the line out are v's (rangeTokens).
func (v *analysis) withText(content string, line int32) *analysis {
	a := &analysis{lang: v.lang, content: content, defs: v.defs, imports: v.imports, locals: v.locals,
		pkg: v.pkg, pkgLine: v.pkgLine, partial: v.partial, chunks: v.chunks, note: v.note,
		view: v, viewLine: line}
	a.lines = make([]int32, len(v.lines))
	copy(a.lines, v.lines)
	if d := int32(len(content) - len(v.content)); d != 0 {
		for i := int(line) + 1; i < len(a.lines); i++ {
			a.lines[i] += d
		}
	}
	return a
}

// walkTail is the part of a prefix (suffix) walk above (below) the
// cursor's line, walked in a typing view from line from: the same for
// every keystroke on the line. Per segment: the line of its bound (prefix:
// its first line; suffix: the line after it, numLines for the end), its
// bytes and its tokens (-1: too long to count within the limit walked).
type walkTail struct {
	from     int32
	lines    []int32
	bytes    []int
	toks     []int
	complete bool // reached the start (end) of the file
	limit    int  // walked until the tokens exceeded it
}

// walks holds an analysis's last prefix and suffix tails (a view's).
type walks struct {
	mu       sync.Mutex
	pre, suf *walkTail
}

// covers reports whether t, from line from, walked at least limit tokens.
func (t *walkTail) covers(from int32, limit int) bool {
	return t != nil && t.from == from && (t.complete || t.limit >= limit)
}

// prefixTail continues a prefix walk of a (whose view is a.view) at line
// from, the start of the last segment, with used tokens of limit spent.
func (b *Builder) prefixTail(a *analysis, from int32, limit, used int, w *segWalk) {
	v := a.view
	t := v.tail(&v.walks.pre, from, limit-used, func(t *walkTail) {
		end, sum := int(v.lines[from]), 0
		for i := from - 1; i >= 0; i-- {
			ls := int(v.lines[i])
			if i > 0 && isBlank(v.content[ls:v.lineEnd(i)]) {
				continue
			}
			if !t.add(b, i, v.content[ls:end], &sum) {
				return
			}
			end = ls
		}
	})
	// Lines above the cursor's have the view's offsets.
	b.replay(a, t, limit, used, w, func(i int32) int { return int(a.lines[i]) }, func(bound, _ int) int { return bound })
}

// suffixTail continues a suffix walk of a at line from, the end of the
// last segment, with used tokens of limit spent.
func (b *Builder) suffixTail(a *analysis, from int32, limit, used int, w *segWalk) {
	v := a.view
	t := v.tail(&v.walks.suf, from, limit-used, func(t *walkTail) {
		n := v.numLines()
		start, sum := int(v.lines[from]), 0
		for i := from + 1; i <= n; i++ {
			next := len(v.content)
			if i < n {
				next = int(v.lines[i])
				if isBlank(v.content[next:v.lineEnd(i)]) {
					continue
				}
			}
			if next <= start {
				continue
			}
			if !t.add(b, i, v.content[start:next], &sum) {
				return
			}
			start = next
		}
	})
	end := func(i int32) int {
		if i < a.numLines() {
			return int(a.lines[i])
		}
		return len(a.content)
	}
	b.replay(a, t, limit, used, w, end, func(bound, n int) int { return bound - n })
}

// tail returns the view's tail in *slot when it covers from and limit,
// else a new one that walk fills (complete unless walk stops it), kept.
func (v *analysis) tail(slot **walkTail, from int32, limit int, walk func(t *walkTail)) *walkTail {
	v.walks.mu.Lock()
	t := *slot
	v.walks.mu.Unlock()
	if t.covers(from, limit) {
		return t
	}
	t = &walkTail{from: from, limit: limit, complete: true}
	walk(t)
	v.walks.mu.Lock()
	*slot = t
	v.walks.mu.Unlock()
	return t
}

// add records segment seg, bounded at line i, in a walk that has spent
// *sum tokens, counting it unless it cannot fit; it reports whether the
// walk goes on (marking t incomplete when it does not).
func (t *walkTail) add(b *Builder, i int32, seg string, sum *int) bool {
	k := -1
	if tooLong(len(seg), t.limit-*sum) {
		*sum = t.limit + 1
	} else {
		k = b.count.segment(seg)
		*sum += k
	}
	t.lines, t.bytes, t.toks = append(t.lines, i), append(t.bytes, len(seg)), append(t.toks, k)
	t.complete = *sum <= t.limit
	return t.complete
}

// replay appends t's segments to w, a walk of a with used tokens of limit
// spent: bound is a segment's bound in a, start its first byte.
func (b *Builder) replay(a *analysis, t *walkTail, limit, used int, w *segWalk, bound func(i int32) int, start func(bound, n int) int) {
	for k, i := range t.lines {
		at := bound(i)
		switch {
		case tooLong(t.bytes[k], limit-used):
			used = limit + 1
		case t.toks[k] < 0:
			s := start(at, t.bytes[k])
			used += b.count.segment(a.content[s : s+t.bytes[k]])
		default:
			used += t.toks[k]
		}
		w.bounds = append(w.bounds, at)
		w.cum = append(w.cum, used)
		if used > limit {
			return
		}
	}
	w.complete = t.complete
}

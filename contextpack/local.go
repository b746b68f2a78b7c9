package contextpack

import (
	"strings"
)

// lineRange is an inclusive range of 0-based lines.
type lineRange struct{ s, e int32 }

// segWalk is a walk over the segments of a prefix (backwards from the
// cursor) or a suffix (forwards from the cursor): bounds[j] is where the
// j-th segment away from the cursor starts (prefix) or ends (suffix), and
// cum[j] the tokens of segments 0..j.
type segWalk struct {
	bounds   []int
	cum      []int
	complete bool // reached the start (end) of the file within the limit
}

// tokensFor returns the tokens of the first k segments.
func (w *segWalk) tokensFor(k int) int {
	if k == 0 {
		return 0
	}
	return w.cum[k-1]
}

// fit returns how many segments fit in limit tokens.
func (w *segWalk) fit(limit int) int {
	k := 0
	for k < len(w.cum) && w.cum[k] <= limit {
		k++
	}
	return k
}

func (a *analysis) lineEnd(i int32) int {
	if int(i)+1 < len(a.lines) {
		return int(a.lines[i+1])
	}
	return len(a.content)
}

// walkPrefix counts segments of content[:off] from the cursor backwards
// until they exceed limit tokens.
func (b *Builder) walkPrefix(a *analysis, off, limit int) segWalk {
	var w segWalk
	end := off
	used := 0
	for i := a.lineOf(off); i >= 0; i-- {
		if a.view != nil && end <= int(a.lines[a.viewLine]) {
			// The rest lies above the cursor's line: the view's text.
			b.prefixTail(a, a.lineOf(end), limit, used, &w)
			return w
		}
		ls := int(a.lines[i])
		if i > 0 && isBlank(a.content[ls:min(a.lineEnd(i), off)]) {
			continue
		}
		if ls == end {
			continue // empty segment (cursor at a line start)
		}
		if tooLong(end-ls, limit-used) {
			used = limit + 1 // cannot fit; not worth counting
		} else {
			used += b.count.segment(a.content[ls:end])
		}
		w.bounds = append(w.bounds, ls)
		w.cum = append(w.cum, used)
		end = ls
		if used > limit {
			return w
		}
	}
	w.complete = true
	return w
}

// walkSuffix counts segments of content[off:] forwards until they exceed
// limit tokens.
func (b *Builder) walkSuffix(a *analysis, off, limit int) segWalk {
	var w segWalk
	start := off
	used := 0
	n := a.numLines()
	for i := a.lineOf(off) + 1; i <= n; i++ {
		if a.view != nil && int(a.viewLine)+1 < len(a.lines) && start >= int(a.lines[a.viewLine+1]) {
			// The rest lies below the cursor's line: the view's text.
			b.suffixTail(a, a.lineOf(start), limit, used, &w)
			return w
		}
		next := len(a.content)
		if i < n {
			next = int(a.lines[i])
			if isBlank(a.content[next:a.lineEnd(i)]) {
				continue // blank lines belong to the segment before them
			}
		}
		if next <= start {
			continue
		}
		if tooLong(next-start, limit-used) {
			used = limit + 1
		} else {
			used += b.count.segment(a.content[start:next])
		}
		w.bounds = append(w.bounds, next)
		w.cum = append(w.cum, used)
		start = next
		if used > limit {
			return w
		}
	}
	w.complete = true
	return w
}

// tooLong reports a segment of n bytes that cannot fit in left tokens
// whatever it holds (no Qwen token is 32 bytes long outside runs of one
// character, which tokenize to at least one token per 64 bytes); such
// segments (minified code) are dropped without being counted. Only ever
// used to leave text out, so a wrong guess cannot break the budget.
func tooLong(n, left int) bool { return n > 64*(left+1)+4096 }

// window is the cursor file's part of the prompt.
type window struct {
	preStart, sufEnd int // byte offsets of the kept prefix and suffix
	preTokens        int // kept prefix text only
	sufTokens        int
	headers          []lineRange // enclosing scope headers above preStart
	headerTokens     int         // headers plus the elision line after them
	preCut, sufCut   bool
	preTotal         int // tokens of the whole prefix, or -1 when not counted
	sufTotal         int
}

// startLine and endLine are the first and last lines of the window.
func (w *window) lines(a *analysis, off int) lineRange {
	s := a.lineOf(w.preStart)
	e := a.lineOf(max(w.sufEnd-1, off))
	if w.sufEnd <= off {
		e = a.lineOf(off)
	}
	return lineRange{s, e}
}

// localWindow cuts the prefix and suffix around off so that they, with
// the scope headers kept for a cut prefix, fit in limit tokens. The suffix
// gets at most SuffixShare of a tight budget unless the prefix needs less.
func (b *Builder) localWindow(a *analysis, off, limit int) window {
	pw := b.walkPrefix(a, off, limit)
	sw := b.walkSuffix(a, off, limit)
	pt, st := pw.tokensFor(len(pw.cum)), sw.tokensFor(len(sw.cum))
	w := window{preTotal: -1, sufTotal: -1}
	if pw.complete {
		w.preTotal = pt
	}
	if sw.complete {
		w.sufTotal = st
	}
	if pw.complete && sw.complete && pt+st <= limit {
		w.preStart, w.sufEnd = 0, len(a.content)
		w.preTokens, w.sufTokens = pt, st
		return w
	}
	sufShare := int(float64(limit) * b.cfg.SuffixShare)
	if sw.complete && st < sufShare {
		sufShare = st
	}
	preShare := limit - sufShare
	if pw.complete && pt < preShare {
		preShare = pt
		sufShare = limit - pt
	}
	ks := sw.fit(sufShare)
	w.sufTokens = sw.tokensFor(ks)
	w.sufEnd = off
	if ks > 0 {
		w.sufEnd = sw.bounds[ks-1]
	}
	w.sufCut = ks < len(sw.bounds) || !sw.complete
	b.cutPrefix(a, off, &pw, preShare, &w)
	return w
}

// cutPrefix chooses the prefix start within budget, keeping the headers of
// the scopes that enclose the cursor when the cut removes them.
func (b *Builder) cutPrefix(a *analysis, off int, pw *segWalk, budget int, w *window) {
	k := pw.fit(budget)
	if k == len(pw.bounds) && pw.complete {
		w.preStart, w.preTokens = 0, pw.tokensFor(k)
		if k == 0 {
			w.preStart = off
		}
		return
	}
	w.preCut = true
	cl := a.lineOf(off)
	for iter := 0; iter < 6; iter++ {
		k = b.quantize(a, pw, k)
		start := off
		if k > 0 {
			start = pw.bounds[k-1]
		}
		hdr, ht := b.scopeHeaders(a, cl, a.lineOf(start), budget/2)
		if pw.tokensFor(k)+ht <= budget || k == 0 {
			if pw.tokensFor(k)+ht > budget {
				hdr, ht = nil, 0
			}
			w.preStart, w.preTokens, w.headers, w.headerTokens = start, pw.tokensFor(k), hdr, ht
			return
		}
		k = pw.fit(budget - ht)
	}
	start := off
	if k > 0 {
		start = pw.bounds[k-1]
	}
	w.preStart, w.preTokens = start, pw.tokensFor(k)
}

// quantize moves a cut prefix's first line up to the next multiple of a
// line quantum (dropping segments), so that it stays put while the user
// types. The quantum is the largest of PrefixQuantumLines, half of it, …,
// 1 that keeps at least three quarters of the prefix's tokens.
func (b *Builder) quantize(a *analysis, pw *segWalk, k int) int {
	if k == 0 {
		return 0
	}
	line := a.lineOf(pw.bounds[k-1])
	full := pw.tokensFor(k)
	for q := int32(b.cfg.PrefixQuantumLines); q > 1; q /= 2 {
		target := (line + q - 1) / q * q
		j := k
		for j > 0 && a.lineOf(pw.bounds[j-1]) < target {
			j--
		}
		if j > 0 && 4*pw.tokensFor(j) >= 3*full {
			return j
		}
	}
	return k
}

// scopeHeaders returns the header lines of the scopes enclosing line cl
// that start above line first, outermost first, and their tokens plus the
// elision line that separates them from the kept prefix; outer headers
// are dropped while the total exceeds limit.
func (b *Builder) scopeHeaders(a *analysis, cl, first int32, limit int) ([]lineRange, int) {
	var hdr []lineRange
	for i := range a.defs {
		d := &a.defs[i]
		if d.start > cl {
			break
		}
		if d.end < cl || !d.kind.isScope() || d.start >= first {
			continue
		}
		s, e, ok := a.trim(d.start, min(d.headerEnd, first-1))
		if !ok {
			continue
		}
		if n := len(hdr); n > 0 && hdr[n-1].e >= s {
			if e > hdr[n-1].e {
				hdr[n-1].e = e
			}
			continue
		}
		hdr = append(hdr, lineRange{s, e})
	}
	for len(hdr) > 0 {
		t := b.rangesTokens(a, hdr, -1, first)
		if t <= limit {
			return hdr, t
		}
		hdr = hdr[1:]
	}
	return nil, 0
}

// elisionLine marks left-out lines in the file's comment syntax.
func elisionLine(a *analysis, indent string) string {
	switch elisionKind(a.lang) {
	case 1:
		return indent + "# ...\n"
	case 2:
		return indent + "...\n"
	}
	return indent + "// ...\n"
}

func elisionKind(l langID) int {
	switch l {
	case langPython:
		return 1
	case langPlain:
		return 2
	}
	return 0
}

// elisionTokens counts the elision line at line i's indentation. The
// counts of indents of one kind of blank (tabs or spaces, fewer than 64)
// are kept in a table: ranges with gaps ask for them at every keystroke.
func (b *Builder) elisionTokens(a *analysis, i int32) int {
	ind := lineIndent(a, i)
	n := len(ind)
	if n >= len(b.count.elision[0][0]) || strings.Count(ind, ind[:min(n, 1)]) != n && n > 0 {
		return b.count.segment(elisionLine(a, ind))
	}
	w := 0
	if n > 0 && ind[0] == ' ' {
		w = 1
	}
	c := &b.count.elision[elisionKind(a.lang)][w][n]
	if v := c.Load(); v > 0 {
		return int(v - 1)
	}
	k := b.count.segment(elisionLine(a, ind))
	c.Store(int32(k + 1))
	return k
}

// rangeTokens counts lines [s, e] of a (ending with a newline), cached.
func (b *Builder) rangeTokens(a *analysis, s, e int32) int {
	if a.view != nil && (e < a.viewLine || s > a.viewLine) {
		a = a.view // the same text, and counts kept across keystrokes
	}
	if tooLong(a.lineEnd(e)-int(a.lines[s]), b.cfg.ContextTokens) {
		return b.cfg.ContextTokens + 1 // cannot fit any prompt; not counted
	}
	key := uint64(uint32(s))<<32 | uint64(uint32(e))
	a.rcMu.Lock()
	n, ok := a.rc[key]
	a.rcMu.Unlock()
	if ok {
		return int(n)
	}
	n = int32(b.count.text(rangeTextNL(a, s, e)))
	a.rcMu.Lock()
	if a.rc == nil {
		a.rc = make(map[uint64]int32)
	}
	if len(a.rc) < 4096 {
		a.rc[key] = n
	}
	a.rcMu.Unlock()
	return int(n)
}

// rangeTextNL is lines [s, e] with a final newline guaranteed.
func rangeTextNL(a *analysis, s, e int32) string {
	t := a.rangeText(s, e)
	if !strings.HasSuffix(t, "\n") {
		t += "\n"
	}
	return t
}

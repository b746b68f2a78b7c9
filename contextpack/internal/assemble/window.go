package assemble

import (
	"slices"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// LineRange is an inclusive range of 0-based lines.
type LineRange struct{ First, Last int32 }

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

// growWindow gives context budget that nothing used back to a cut
// prefix/suffix window.
func (as *Assembly) growWindow() {
	if !as.window.preCut && !as.window.sufCut {
		return
	}
	spare := as.contextBudget - as.sel.contextUsed
	if spare < 16 {
		return
	}
	limit := as.available - (as.sel.contextUsed - as.sel.extraTokens)
	nw := as.localWindow(limit - as.sel.extraTokens)
	as.window = nw
	as.localLimit = limit - as.sel.extraTokens
	as.windowLines = nw.lines(as.text, as.input.Offset)
	keep := func(rs []LineRange) []LineRange {
		return slices.DeleteFunc(rs, func(r LineRange) bool { return r.First <= as.windowLines.Last && r.Last >= as.windowLines.First })
	}
	above, below := keep(as.sel.above), keep(as.sel.below)
	n := as.extrasTokens(above, below)
	if nw.preTokens+nw.sufTokens+nw.headerTokens+n+(as.sel.contextUsed-as.sel.extraTokens) > as.available {
		above, below, n = nil, nil, 0
	}
	if len(above)+len(below) < len(as.sel.above)+len(as.sel.below) {
		for _, c := range as.sel.considered {
			if c.included && c.file == as.input.Cursor && !overlapsAll(c.ranges, above, below) {
				c.included = false
				c.reason = "dropped: covered by the prefix/suffix window after it grew; " + c.reason
			}
		}
	}
	as.sel.contextUsed += n - as.sel.extraTokens
	as.sel.above, as.sel.below, as.sel.extraTokens = above, below, n
}

// walker walks the segments of a cursor file's text, counting them; the
// parts of a typing view's walks beyond the cursor's line come from the
// memos (WalkTailOf).
type walker struct {
	counter *Counter
	memos   Memos
}

// prefix counts segments of content[:off] from the cursor backwards until
// they exceed limit tokens.
func (wk walker) prefix(a *syntax.Analysis, off, limit int) segWalk {
	var w segWalk
	end := off
	used := 0
	for i := a.LineOf(off); i >= 0; i-- {
		if a.View != nil && end <= int(a.Lines[a.ViewLine]) {
			// The rest lies above the cursor's line: the view's text.
			wk.prefixTail(a, a.LineOf(end), limit, used, &w)
			return w
		}
		ls := int(a.Lines[i])
		if i > 0 && syntax.IsBlank(a.Content[ls:min(a.LineEnd(i), off)]) {
			continue
		}
		if ls == end {
			continue // empty segment (cursor at a line start)
		}
		if tooLong(end-ls, limit-used) {
			used = limit + 1 // cannot fit; not worth counting
		} else {
			used += wk.counter.segment(a.Content[ls:end])
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

// suffix counts segments of content[off:] forwards until they exceed limit
// tokens.
func (wk walker) suffix(a *syntax.Analysis, off, limit int) segWalk {
	var w segWalk
	start := off
	used := 0
	n := a.NumLines()
	for i := a.LineOf(off) + 1; i <= n; i++ {
		if a.View != nil && int(a.ViewLine)+1 < len(a.Lines) && start >= int(a.Lines[a.ViewLine+1]) {
			// The rest lies below the cursor's line: the view's text.
			wk.suffixTail(a, a.LineOf(start), limit, used, &w)
			return w
		}
		next := len(a.Content)
		if i < n {
			next = int(a.Lines[i])
			if syntax.IsBlank(a.Content[next:a.LineEnd(i)]) {
				continue // blank lines belong to the segment before them
			}
		}
		if next <= start {
			continue
		}
		if tooLong(next-start, limit-used) {
			used = limit + 1
		} else {
			used += wk.counter.segment(a.Content[start:next])
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
	headers          []LineRange // enclosing scope headers above preStart
	headerTokens     int         // headers plus the elision line after them
	preCut, sufCut   bool
	preTotal         int // tokens of the whole prefix, or -1 when not counted
	sufTotal         int
}

// startLine and endLine are the first and last lines of the window.
func (w *window) lines(a *syntax.Analysis, off int) LineRange {
	s := a.LineOf(w.preStart)
	e := a.LineOf(max(w.sufEnd-1, off))
	if w.sufEnd <= off {
		e = a.LineOf(off)
	}
	return LineRange{s, e}
}

// localWindow cuts the prefix and suffix around the cursor so that they,
// with the scope headers kept for a cut prefix, fit in limit tokens. The
// suffix gets at most suffixShare of a tight budget unless the prefix
// needs less.
func (as *Assembly) localWindow(limit int) window {
	a, off := as.text, as.input.Offset
	wk := walker{as.params.Counter, as.memos}
	pw := wk.prefix(a, off, limit)
	sw := wk.suffix(a, off, limit)
	pt, st := pw.tokensFor(len(pw.cum)), sw.tokensFor(len(sw.cum))
	w := window{preTotal: -1, sufTotal: -1}
	if pw.complete {
		w.preTotal = pt
	}
	if sw.complete {
		w.sufTotal = st
	}
	if pw.complete && sw.complete && pt+st <= limit {
		w.preStart, w.sufEnd = 0, len(a.Content)
		w.preTokens, w.sufTokens = pt, st
		return w
	}
	sufShare := int(float64(limit) * as.params.SuffixShare)
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
	as.cutPrefix(&pw, preShare, &w)
	return w
}

// cutPrefix chooses the prefix start within budget, keeping the headers of
// the scopes that enclose the cursor when the cut removes them.
func (as *Assembly) cutPrefix(pw *segWalk, budget int, w *window) {
	a, off := as.text, as.input.Offset
	k := pw.fit(budget)
	if k == len(pw.bounds) && pw.complete {
		w.preStart, w.preTokens = 0, pw.tokensFor(k)
		if k == 0 {
			w.preStart = off
		}
		return
	}
	w.preCut = true
	cl := a.LineOf(off)
	for iter := 0; iter < 6; iter++ {
		k = as.quantize(pw, k)
		start := off
		if k > 0 {
			start = pw.bounds[k-1]
		}
		hdr, ht := as.scopeHeaders(cl, a.LineOf(start), budget/2)
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
func (as *Assembly) quantize(pw *segWalk, k int) int {
	a := as.text
	if k == 0 {
		return 0
	}
	line := a.LineOf(pw.bounds[k-1])
	full := pw.tokensFor(k)
	for q := int32(as.params.PrefixQuantumLines); q > 1; q /= 2 {
		target := (line + q - 1) / q * q
		j := k
		for j > 0 && a.LineOf(pw.bounds[j-1]) < target {
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
func (as *Assembly) scopeHeaders(cl, first int32, limit int) ([]LineRange, int) {
	a := as.text
	var hdr []LineRange
	for i := range a.Defs {
		d := &a.Defs[i]
		if d.Start > cl {
			break
		}
		if d.End < cl || !d.Kind.IsScope() || d.Start >= first {
			continue
		}
		s, e, ok := a.Trim(d.Start, min(d.HeaderEnd, first-1))
		if !ok {
			continue
		}
		if n := len(hdr); n > 0 && hdr[n-1].Last >= s {
			if e > hdr[n-1].Last {
				hdr[n-1].Last = e
			}
			continue
		}
		hdr = append(hdr, LineRange{s, e})
	}
	for len(hdr) > 0 {
		t := as.params.Counter.rangesTokens(a, hdr, -1, first)
		if t <= limit {
			return hdr, t
		}
		hdr = hdr[1:]
	}
	return nil, 0
}

// WalkTail is the part of a prefix (suffix) walk above (below) the
// cursor's line, walked in a typing view from line from: the same for
// every keystroke on the line. Per segment: the line of its bound (prefix:
// its first line; suffix: the line after it, numLines for the end), its
// bytes and its tokens (-1: too long to count within the limit walked).
type WalkTail struct {
	view     *syntax.Analysis
	suffix   bool
	from     int32
	lines    []int32
	bytes    []int
	toks     []int
	complete bool // reached the start (end) of the file
	limit    int  // walked until the tokens exceeded it
}

// TailQuery asks for the walk of a typing view beyond the cursor's line:
// upwards from line from (a prefix's) or downwards (a suffix's), until it
// exceeds limit tokens.
type TailQuery struct {
	counter *Counter
	view    *syntax.Analysis
	from    int32
	limit   int
	Suffix  bool
}

// Covers reports whether t answers q: it walked the same view from the
// same line, at least q.limit tokens (or to the end).
func (t *WalkTail) Covers(q TailQuery) bool {
	return t != nil && t.view == q.view && t.suffix == q.Suffix && t.from == q.from && (t.complete || t.limit >= q.limit)
}

// WalkTailOf walks q's view from its line until the tokens exceed its
// limit.
func WalkTailOf(q TailQuery) *WalkTail {
	v, from := q.view, q.from
	t := &WalkTail{view: v, suffix: q.Suffix, from: from, limit: q.limit, complete: true}
	if !q.Suffix {
		end, sum := int(v.Lines[from]), 0
		for i := from - 1; i >= 0; i-- {
			ls := int(v.Lines[i])
			if i > 0 && syntax.IsBlank(v.Content[ls:v.LineEnd(i)]) {
				continue
			}
			if !t.add(q.counter, i, v.Content[ls:end], &sum) {
				break
			}
			end = ls
		}
		return t
	}
	n := v.NumLines()
	start, sum := int(v.Lines[from]), 0
	for i := from + 1; i <= n; i++ {
		next := len(v.Content)
		if i < n {
			next = int(v.Lines[i])
			if syntax.IsBlank(v.Content[next:v.LineEnd(i)]) {
				continue
			}
		}
		if next <= start {
			continue
		}
		if !t.add(q.counter, i, v.Content[start:next], &sum) {
			break
		}
		start = next
	}
	return t
}

// prefixTail continues a prefix walk of a (whose view is a.view) at line
// from, the start of the last segment, with used tokens of limit spent.
func (wk walker) prefixTail(a *syntax.Analysis, from int32, limit, used int, w *segWalk) {
	t := wk.memos.WalkTail(TailQuery{counter: wk.counter, view: a.View, from: from, limit: limit - used})
	// Lines above the cursor's have the view's offsets.
	wk.replay(a, t, limit, used, w, func(i int32) int { return int(a.Lines[i]) }, func(bound, _ int) int { return bound })
}

// suffixTail continues a suffix walk of a at line from, the end of the
// last segment, with used tokens of limit spent.
func (wk walker) suffixTail(a *syntax.Analysis, from int32, limit, used int, w *segWalk) {
	t := wk.memos.WalkTail(TailQuery{counter: wk.counter, view: a.View, from: from, limit: limit - used, Suffix: true})
	end := func(i int32) int {
		if i < a.NumLines() {
			return int(a.Lines[i])
		}
		return len(a.Content)
	}
	wk.replay(a, t, limit, used, w, end, func(bound, n int) int { return bound - n })
}

// add records segment seg, bounded at line i, in a walk that has spent
// *sum tokens, counting it unless it cannot fit; it reports whether the
// walk goes on (marking t incomplete when it does not).
func (t *WalkTail) add(c *Counter, i int32, seg string, sum *int) bool {
	k := -1
	if tooLong(len(seg), t.limit-*sum) {
		*sum = t.limit + 1
	} else {
		k = c.segment(seg)
		*sum += k
	}
	t.lines, t.bytes, t.toks = append(t.lines, i), append(t.bytes, len(seg)), append(t.toks, k)
	t.complete = *sum <= t.limit
	return t.complete
}

// replay appends t's segments to w, a walk of a with used tokens of limit
// spent: bound is a segment's bound in a, start its first byte.
func (wk walker) replay(a *syntax.Analysis, t *WalkTail, limit, used int, w *segWalk, bound func(i int32) int, start func(bound, n int) int) {
	for k, i := range t.lines {
		at := bound(i)
		switch {
		case tooLong(t.bytes[k], limit-used):
			used = limit + 1
		case t.toks[k] < 0:
			s := start(at, t.bytes[k])
			used += wk.counter.segment(a.Content[s : s+t.bytes[k]])
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

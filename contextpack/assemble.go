package contextpack

import (
	"slices"
	"strconv"
	"strings"
)

// candidate is one piece of context considered for the prompt.
type candidate struct {
	sl      *slot
	kind    SourceKind
	ranges  []lineRange // sorted, disjoint, without blank edges
	whole   bool
	outline bool
	label   string
	key     string
	rank    [3]int // 1-based rank among definitions, similar windows, imports; 0 = absent
	score   float64

	tokens   int
	included bool
	tier     int
	reason   string
}

const (
	srcDef = iota
	srcSim
	srcImp
)

// rangesKey identifies a candidate's text: its path and line ranges
// ("a.go:3-9:12-20").
func rangesKey(sl *slot, rs []lineRange) string {
	b := make([]byte, 0, len(sl.path)+12*len(rs))
	b = append(b, sl.path...)
	for _, r := range rs {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(r.s), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(r.e), 10)
	}
	return string(b)
}

// mergeRanges sorts and merges overlapping or adjacent ranges.
func mergeRanges(rs []lineRange) []lineRange {
	if len(rs) < 2 {
		return rs
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y lineRange) int {
		if x.s != y.s {
			return int(x.s - y.s)
		}
		return int(x.e - y.e)
	})
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.s <= last.e+1 {
			last.e = max(last.e, r.e)
			continue
		}
		out = append(out, r)
	}
	return out
}

func overlaps(rs []lineRange, w lineRange) bool {
	for _, r := range rs {
		if r.s <= w.e && r.e >= w.s {
			return true
		}
	}
	return false
}

// rangesTokens counts ranges rendered with elision lines between
// non-adjacent ones; lead (>= 0) is the line after preceding content, so
// an elision goes first when ranges[0] starts later; trail (>= 0) is the
// line where following content starts.
func (b *Builder) rangesTokens(a *analysis, rs []lineRange, lead, trail int32) int {
	if len(rs) == 0 {
		return 0
	}
	n := 0
	if lead >= 0 && rs[0].s > lead {
		n += b.elisionTokens(a, rs[0].s)
	}
	for i, r := range rs {
		if i > 0 && r.s > rs[i-1].e+1 {
			n += b.elisionTokens(a, r.s)
		}
		n += b.rangeTokens(a, r.s, r.e)
	}
	if last := rs[len(rs)-1]; trail >= 0 && trail > last.e+1 {
		n += b.elisionTokens(a, trail)
	}
	return n
}

// writeRanges renders what rangesTokens counts.
func (b *Builder) writeRanges(sb *strings.Builder, a *analysis, rs []lineRange, lead, trail int32) {
	if len(rs) == 0 {
		return
	}
	if lead >= 0 && rs[0].s > lead {
		sb.WriteString(elisionLine(a, lineIndent(a, rs[0].s)))
	}
	for i, r := range rs {
		if i > 0 && r.s > rs[i-1].e+1 {
			sb.WriteString(elisionLine(a, lineIndent(a, r.s)))
		}
		sb.WriteString(b.neutral(rangeTextNL(a, r.s, r.e)))
	}
	if last := rs[len(rs)-1]; trail >= 0 && trail > last.e+1 {
		sb.WriteString(elisionLine(a, lineIndent(a, trail)))
	}
}

func lineIndent(a *analysis, i int32) string {
	if i < 0 || i >= a.numLines() {
		return ""
	}
	s := a.lineText(i)
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	return s[:n]
}

// wholeRanges is the whole file as one range (blank edges trimmed).
func wholeRanges(a *analysis) []lineRange {
	s, e, ok := a.trim(0, a.numLines()-1)
	if !ok {
		return nil
	}
	return []lineRange{{s, e}}
}

// defRanges is how definition di of a is shown: whole when small enough
// (methods and members under their parent's header), else its header and
// an outline of its members, or its first lines.
func (b *Builder) defRanges(a *analysis, di int32) []lineRange {
	d := &a.defs[di]
	limit := b.cfg.MaxSnippetTokens
	var rs []lineRange
	if d.parent >= 0 {
		p := &a.defs[d.parent]
		switch p.kind {
		case kindClass, kindImpl, kindModule:
			if s, e, ok := a.trim(p.start, min(p.headerEnd, d.start-1)); ok {
				rs = append(rs, lineRange{s, e})
			}
		}
	}
	s, e, ok := a.trim(d.start, d.end)
	if !ok {
		return rs
	}
	if d.kind.isMember() || !tooLong(rangesBytes(a, []lineRange{{s, e}}), limit) && b.rangeTokens(a, s, e) <= limit {
		if d.kind.isMember() && e-s > 8 {
			e = s + 8
		}
		return mergeRanges(append(rs, lineRange{s, e}))
	}
	hs, he, _ := a.trim(d.start, d.headerEnd)
	if he < hs {
		he = hs
	}
	used := b.rangeTokens(a, hs, he)
	rs = append(rs, lineRange{hs, he})
	hasMembers := false
	for ci := di + 1; ci < int32(len(a.defs)) && a.defs[ci].start <= d.end; ci++ {
		c := &a.defs[ci]
		if c.parent != di {
			continue
		}
		hasMembers = true
		cs, ce, ok := a.trim(c.start, c.headerEnd)
		if !ok || cs <= he {
			continue
		}
		n := b.rangeTokens(a, cs, ce) + 4
		if used+n > limit {
			break
		}
		used += n
		rs = append(rs, lineRange{cs, ce})
	}
	if !hasMembers {
		// A long function: its first lines that fit.
		end := he
		for end < e && used+b.rangeTokens(a, end+1, end+1) <= limit {
			end++
			used += b.rangeTokens(a, end, end)
		}
		rs[len(rs)-1].e = end
	}
	return mergeRanges(rs)
}

// outlineRanges lists the headers of a file's top-level definitions and of
// the methods of top-level types (not fields) within limit tokens, those
// whose names the cursor file uses first.
func (b *Builder) outlineRanges(a *analysis, used identCounts, limit int) []lineRange {
	type h struct {
		r    lineRange
		used bool
	}
	var hs []h
	for i := range a.defs {
		d := &a.defs[i]
		if d.parent >= 0 && (a.defs[d.parent].parent >= 0 || d.kind != kindMethod && d.kind != kindFunction) {
			continue
		}
		s, e, ok := a.trim(d.start, d.headerEnd)
		if !ok {
			continue
		}
		hs = append(hs, h{lineRange{s, e}, used.has(d.name)})
	}
	slices.SortStableFunc(hs, func(x, y h) int {
		if x.used != y.used {
			if x.used {
				return -1
			}
			return 1
		}
		return 0
	})
	var rs []lineRange
	total := 0
	for _, x := range hs {
		n := b.rangeTokens(a, x.r.s, x.r.e) + 2 // with a share of elision lines
		if total+n > limit {
			continue
		}
		total += n
		rs = append(rs, x.r)
	}
	return mergeRanges(rs)
}

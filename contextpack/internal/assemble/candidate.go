package assemble

import (
	"slices"
	"strconv"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Candidate is one piece of context considered for the prompt.
type Candidate struct {
	file    *index.File
	kind    SourceKind
	ranges  []LineRange // sorted, disjoint, without blank edges
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

// Sources of the fusion, the indexes of Candidate.rank.
const (
	srcDef = iota
	srcSim
	srcImp
)

// SourceKind is the role of a piece of the prompt (the manifest's source
// kinds).
type SourceKind int

const (
	SourcePrefix SourceKind = iota + 1
	SourceSuffix
	SourceImport
	SourceDefinition
	SourceSimilar
	SourceScopeHeader
)

// rangesKey identifies a candidate's text: its path and line ranges
// ("a.go:3-9:12-20").
func rangesKey(sl *index.File, rs []LineRange) string {
	b := make([]byte, 0, len(sl.Path)+12*len(rs))
	b = append(b, sl.Path...)
	for _, r := range rs {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(r.First), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(r.Last), 10)
	}
	return string(b)
}

// mergeRanges sorts and merges overlapping or adjacent ranges.
func mergeRanges(rs []LineRange) []LineRange {
	if len(rs) < 2 {
		return rs
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y LineRange) int {
		if x.First != y.First {
			return int(x.First - y.First)
		}
		return int(x.Last - y.Last)
	})
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.First <= last.Last+1 {
			last.Last = max(last.Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

func overlaps(rs []LineRange, w LineRange) bool {
	for _, r := range rs {
		if r.First <= w.Last && r.Last >= w.First {
			return true
		}
	}
	return false
}

func lineIndent(a *syntax.Analysis, i int32) string {
	if i < 0 || i >= a.NumLines() {
		return ""
	}
	s := a.LineText(i)
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	return s[:n]
}

// wholeRanges is the whole file as one range (blank edges trimmed).
func wholeRanges(a *syntax.Analysis) []LineRange {
	s, e, ok := a.Trim(0, a.NumLines()-1)
	if !ok {
		return nil
	}
	return []LineRange{{s, e}}
}

// defRanges is how definition di of a is shown: whole when small enough
// (methods and members under their parent's header), else its header and
// an outline of its members, or its first lines.
func defRanges(p *Params, a *syntax.Analysis, di int32) []LineRange {
	d := &a.Defs[di]
	limit := p.MaxSnippetTokens
	var rs []LineRange
	if d.Parent >= 0 {
		p := &a.Defs[d.Parent]
		switch p.Kind {
		case syntax.KindClass, syntax.KindImpl, syntax.KindModule:
			if s, e, ok := a.Trim(p.Start, min(p.HeaderEnd, d.Start-1)); ok {
				rs = append(rs, LineRange{s, e})
			}
		}
	}
	s, e, ok := a.Trim(d.Start, d.End)
	if !ok {
		return rs
	}
	if d.Kind.IsMember() || !tooLong(rangesBytes(a, []LineRange{{s, e}}), limit) && p.Counter.rangeTokens(a, s, e) <= limit {
		if d.Kind.IsMember() && e-s > 8 {
			e = s + 8
		}
		return mergeRanges(append(rs, LineRange{s, e}))
	}
	hs, he, _ := a.Trim(d.Start, d.HeaderEnd)
	if he < hs {
		he = hs
	}
	used := p.Counter.rangeTokens(a, hs, he)
	rs = append(rs, LineRange{hs, he})
	hasMembers := false
	for ci := di + 1; ci < int32(len(a.Defs)) && a.Defs[ci].Start <= d.End; ci++ {
		c := &a.Defs[ci]
		if c.Parent != di {
			continue
		}
		hasMembers = true
		cs, ce, ok := a.Trim(c.Start, c.HeaderEnd)
		if !ok || cs <= he {
			continue
		}
		n := p.Counter.rangeTokens(a, cs, ce) + 4
		if used+n > limit {
			break
		}
		used += n
		rs = append(rs, LineRange{cs, ce})
	}
	if !hasMembers {
		// A long function: its first lines that fit.
		end := he
		for end < e && used+p.Counter.rangeTokens(a, end+1, end+1) <= limit {
			end++
			used += p.Counter.rangeTokens(a, end, end)
		}
		rs[len(rs)-1].Last = end
	}
	return mergeRanges(rs)
}

func rangesBytes(a *syntax.Analysis, rs []LineRange) int {
	n := 0
	for _, r := range rs {
		n += a.LineEnd(r.Last) - int(a.Lines[r.First])
	}
	return n
}

// covered reports whether every line of rs is in cover (both merged).
func covered(rs, cover []LineRange) bool {
	if len(cover) == 0 {
		return false
	}
	for _, r := range rs {
		ok := false
		for _, c := range cover {
			if c.First <= r.First && r.Last <= c.Last {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func overlapsAll(rs, above, below []LineRange) bool {
	for _, r := range rs {
		if !overlaps(above, r) && !overlaps(below, r) {
			return false
		}
	}
	return true
}

// CloneCandidates copies candidates, for a caller that changes them.
func CloneCandidates(cs []*Candidate) []*Candidate {
	if cs == nil {
		return nil
	}
	out := make([]*Candidate, len(cs))
	vals := make([]Candidate, len(cs))
	for i, c := range cs {
		vals[i] = *c
		out[i] = &vals[i]
	}
	return out
}

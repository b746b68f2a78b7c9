package assemble

import (
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// minQueryIdents is the number of distinct identifiers below which a
// query region is widened: an enclosing function of a line or two gives
// one or two search words, too few to rank windows or definitions by.
const minQueryIdents = 8

// query is the region the cursor-dependent sources look at and its
// weighted identifiers and those of them that occur in code (queryIdents):
// the enclosing function when it is
// short enough, widened to the lines around the cursor (lineWindow) when
// it names fewer than minQueryIdents distinct identifiers.
func (q *SearchQuery) query() (reg LineRange, ids map[string]float64, inCode map[string]bool) {
	reg, fn := q.queryRegion()
	ids, inCode = q.queryIdents(reg)
	if fn && len(inCode) < minQueryIdents {
		w := q.lineWindow()
		reg = LineRange{min(reg.First, w.First), max(reg.Last, w.Last)}
		ids, inCode = q.queryIdents(reg)
	}
	return reg, ids, inCode
}

// queryRegion is the enclosing function when it is short enough (fn is
// true), else lineWindow.
func (q *SearchQuery) queryRegion() (reg LineRange, fn bool) {
	a, cl := q.text, q.cursorLine
	ql := int32(q.params.QueryLines)
	var best *syntax.Def
	for i := range a.Defs {
		d := &a.Defs[i]
		if d.Start > cl {
			break
		}
		if d.End >= cl && (d.Kind == syntax.KindFunction || d.Kind == syntax.KindMethod) {
			best = d
		}
	}
	if best != nil && best.End-best.Start+1 <= 2*ql {
		return LineRange{best.Start, best.End}, true
	}
	return q.lineWindow(), false
}

// lineWindow is a window of lines around the cursor aligned to 8-line
// steps so that it moves only every few lines.
func (q *SearchQuery) lineWindow() LineRange {
	a, cl := q.text, q.cursorLine
	ql := int32(q.params.QueryLines)
	const step = 8
	base := cl / step * step
	return LineRange{max(0, base-ql*3/4), min(a.NumLines()-1, base+step-1+ql/4)}
}

// queryIdents weighs the identifiers of the query region's code, those
// of its comments and string literals (syntax.CodeOnly) much less (proseWeight),
// and leaves out English stop-words and the cursor line (it changes on
// every keystroke; excluding it keeps the cursor-dependent context stable
// while typing). Names the region defines stay in: in a class body, a
// declaration file or a list of methods they are the words that other
// files implementing, declaring or calling the same things share.
// An occurrence counts more when it is called or
// looks like a type (capitalised) than when it is a bare lower-case word.
func (q *SearchQuery) queryIdents(reg LineRange) (ids map[string]float64, inCode map[string]bool) {
	a := q.text
	ids = map[string]float64{}
	text := a.RangeText(reg.First, reg.Last)
	code := syntax.CodeOnly(text, a.Lang)
	lines, prose := strings.Split(code, "\n"), strings.Split(proseOf(text, code), "\n")
	inCode = map[string]bool{}
	for k, line := range lines {
		if reg.First+int32(k) == q.cursorLine {
			continue
		}
		syntax.ScanIdents(line, a.Lang, func(id string, off int) bool {
			if stopWords[id] {
				return true
			}
			w := 0.5
			end := off + len(id)
			switch {
			case end < len(line) && line[end] == '(':
				w = 1.5
			case off > 0 && line[off-1] == '.':
				w = 1
			case id[0] >= 'A' && id[0] <= 'Z':
				w = 1
			}
			ids[id] += w
			inCode[id] = true
			return true
		})
	}
	for k, line := range prose {
		if reg.First+int32(k) == q.cursorLine {
			continue
		}
		syntax.ScanIdents(line, a.Lang, func(id string, off int) bool {
			if !stopWords[id] {
				ids[id] += proseWeight
			}
			return true
		})
	}
	return ids, inCode
}

// proseWeight is what an occurrence of a word in a comment or string
// literal adds to the query, against 0.5 to 1.5 for one in code: prose
// names the code it documents, but a licence header or a message is not
// what the cursor's code is about.
const proseWeight = 0.125

// proseOf is the part of text that syntax.CodeOnly made blank (comments and
// string literals), the rest made blank.
func proseOf(text, code string) string {
	b := []byte(text)
	for i := range b {
		if b[i] != '\n' && code[i] == b[i] && b[i] != ' ' {
			b[i] = ' '
		}
	}
	return string(b)
}

// stopWords are English words that say nothing about code when they are
// identifiers (and are prose when they are not).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by do does for from had has have he her
		his how i if in into is it its me my no nor not of on or our she so such than that the their them
		then there these they this those to too us was we were what when where which who why will with would you your`) {
		m[w] = true
	}
	return m
}()

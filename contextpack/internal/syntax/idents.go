package syntax

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"weak"
)

// Derived data of an analysis, made on first use. An analysis is
// immutable, so what is derived from it alone is kept with it: the
// identifiers of a cursor file (patched from the previous version's after
// a keystroke) and the numbering of its definitions' names. Files that are
// never a cursor file or an import pay nothing.
type analysisMemo struct {
	identsOnce sync.Once
	idents     IdentCounts // identifiers of the whole file
	identsDone atomic.Bool // idents is set
	// identsFrom, when set, is the previous version of the file, and
	// editLines the lines the edit replaced there (from, oldTo) and wrote
	// here (from, newTo): Identifiers patches the previous counts.
	identsFrom *Analysis
	editLines  [3]int32
	// flips are the identifiers present in exactly one of identsFrom and
	// this version, set when Identifiers patched identsFrom's counts;
	// flipsFrom names that version without keeping it alive.
	flips     []string
	flipsFrom weak.Pointer[Analysis]

	namesOnce sync.Once
	nameOf    []int32 // defs[i] → index of its name among the distinct names
	nNames    int
	nameIdx   map[string]int32 // distinct name → its index
}

// IdentCounts counts the occurrences of each identifier of a file.
type IdentCounts map[string]int32

// Has reports whether id occurs.
func (c IdentCounts) Has(id string) bool { return c[id] > 0 }

// scanLines adds d for each identifier on lines [from, to] of a; crossed,
// when not nil, gets each identifier whose count went to or from zero.
func (c IdentCounts) scanLines(a *Analysis, from, to int32, d int32, crossed func(id string)) {
	if from > to || from >= a.NumLines() {
		return
	}
	ScanIdents(a.RangeText(from, min(to, a.NumLines()-1)), a.Lang, func(id string, _ int) bool {
		was := c[id]
		if n := was + d; n > 0 {
			c[id] = n
		} else {
			delete(c, id)
		}
		if crossed != nil && (was > 0) != (was+d > 0) {
			crossed(id)
		}
		return true
	})
}

// Identifiers counts the identifiers of the file (keywords excluded), as
// ScanIdents finds them. After a keystroke it patches the previous
// version's counts (when that version has them) by re-scanning only the
// edited lines: identifiers never span lines.
func (a *Analysis) Identifiers() IdentCounts {
	a.memo.identsOnce.Do(func() {
		if prev := a.memo.identsFrom; prev != nil && prev.memo.identsDone.Load() {
			before, m := prev.memo.idents, maps.Clone(prev.memo.idents)
			// An identifier that went to zero and back has not flipped.
			var crossed []string
			note := func(id string) {
				if !slices.Contains(crossed, id) {
					crossed = append(crossed, id)
				}
			}
			l := a.memo.editLines
			m.scanLines(prev, l[0], l[1], -1, note)
			m.scanLines(a, l[0], l[2], 1, note)
			a.memo.idents = m
			a.memo.flips = slices.DeleteFunc(crossed, func(id string) bool { return before.Has(id) == m.Has(id) })
			a.memo.flipsFrom = weak.Make(prev)
		} else {
			m := IdentCounts{}
			m.scanLines(a, 0, a.NumLines()-1, 1, nil)
			a.memo.idents = m
		}
		a.memo.identsFrom = nil // let the previous version go
		a.memo.identsDone.Store(true)
	})
	return a.memo.idents
}

// IdentFlips returns the identifiers present in exactly one of this
// version and the previous version of the file whose counts Identifiers
// patched (from names that version without keeping it alive); from is
// zero when Identifiers counted from scratch.
func (a *Analysis) IdentFlips() (from weak.Pointer[Analysis], flips []string) {
	return a.memo.flipsFrom, a.memo.flips
}

// Defines reports whether a has a definition named name.
func (a *Analysis) Defines(name string) bool {
	a.defNames()
	_, ok := a.memo.nameIdx[name]
	return ok
}

// defNames numbers the distinct names of the file's definitions.
func (a *Analysis) defNames() (nameOf []int32, n int) {
	a.memo.namesOnce.Do(func() {
		idx := make(map[string]int32, len(a.Defs))
		a.memo.nameOf = make([]int32, len(a.Defs))
		for i := range a.Defs {
			k, ok := idx[a.Defs[i].Name]
			if !ok {
				k = int32(len(idx))
				idx[a.Defs[i].Name] = k
			}
			a.memo.nameOf[i] = k
		}
		a.memo.nNames = len(idx)
		a.memo.nameIdx = idx
	})
	return a.memo.nameOf, a.memo.nNames
}

// UsedDefs marks the definitions of a whose names are in used and counts
// the distinct names marked.
func (a *Analysis) UsedDefs(used IdentCounts) (bits []uint64, names int) {
	nameOf, n := a.defNames()
	bits = make([]uint64, (len(a.Defs)+63)/64)
	var seen []uint64
	if n > 0 {
		seen = make([]uint64, (n+63)/64)
	}
	for i := range a.Defs {
		if !used.Has(a.Defs[i].Name) {
			continue
		}
		bits[i/64] |= 1 << (i % 64)
		k := nameOf[i]
		if seen[k/64]&(1<<(k%64)) == 0 {
			seen[k/64] |= 1 << (k % 64)
			names++
		}
	}
	return bits, names
}

// FileTerms is the file's identifier frequencies (for whole-file BM25).
func (a *Analysis) FileTerms() []TermCount {
	a.fileTerms.once.Do(func() {
		m := map[Term]int{}
		ScanIdents(a.Content, a.Lang, func(id string, _ int) bool {
			m[HashIdent(id)]++
			a.fileTerms.length++
			return true
		})
		a.fileTerms.terms = make([]TermCount, 0, len(m))
		for t, n := range m {
			a.fileTerms.terms = append(a.fileTerms.terms, TermCount{t, uint16(min(n, 65535))})
		}
		slices.SortFunc(a.fileTerms.terms, func(x, y TermCount) int { return int(x.Term) - int(y.Term) })
	})
	return a.fileTerms.terms
}

// FileLength is the number of identifier occurrences of the file.
func (a *Analysis) FileLength() int {
	a.FileTerms()
	return a.fileTerms.length
}

type fileTermsCache struct {
	once   sync.Once
	terms  []TermCount
	length int
}

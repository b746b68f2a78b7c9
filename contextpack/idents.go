package contextpack

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
	idents     identCounts // identifiers of the whole file
	identsDone atomic.Bool // idents is set
	// identsFrom, when set, is the previous version of the file, and
	// editLines the lines the edit replaced there (from, oldTo) and wrote
	// here (from, newTo): identSet patches the previous counts.
	identsFrom *analysis
	editLines  [3]int32
	// flips are the identifiers present in exactly one of identsFrom and
	// this version, set when identSet patched identsFrom's counts;
	// flipsFrom names that version without keeping it alive.
	flips     []string
	flipsFrom weak.Pointer[analysis]

	namesOnce sync.Once
	nameOf    []int32 // defs[i] → index of its name among the distinct names
	nNames    int
	nameIdx   map[string]int32 // distinct name → its index
}

// identCounts counts the occurrences of each identifier of a file.
type identCounts map[string]int32

func (c identCounts) has(id string) bool { return c[id] > 0 }

// scanLines adds d for each identifier on lines [from, to] of a; crossed,
// when not nil, gets each identifier whose count went to or from zero.
func (c identCounts) scanLines(a *analysis, from, to int32, d int32, crossed func(id string)) {
	if from > to || from >= a.numLines() {
		return
	}
	scanIdents(a.rangeText(from, min(to, a.numLines()-1)), a.lang, func(id string, _ int) bool {
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

// identSet counts the identifiers of the file (keywords excluded), as
// scanIdents finds them. After a keystroke it patches the previous
// version's counts (when that version has them) by re-scanning only the
// edited lines: identifiers never span lines.
func (a *analysis) identSet() identCounts {
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
			a.memo.flips = slices.DeleteFunc(crossed, func(id string) bool { return before.has(id) == m.has(id) })
			a.memo.flipsFrom = weak.Make(prev)
		} else {
			m := identCounts{}
			m.scanLines(a, 0, a.numLines()-1, 1, nil)
			a.memo.idents = m
		}
		a.memo.identsFrom = nil // let the previous version go
		a.memo.identsDone.Store(true)
	})
	return a.memo.idents
}

// defines reports whether a has a definition named name.
func (a *analysis) defines(name string) bool {
	a.defNames()
	_, ok := a.memo.nameIdx[name]
	return ok
}

// defNames numbers the distinct names of the file's definitions.
func (a *analysis) defNames() (nameOf []int32, n int) {
	a.memo.namesOnce.Do(func() {
		idx := make(map[string]int32, len(a.defs))
		a.memo.nameOf = make([]int32, len(a.defs))
		for i := range a.defs {
			k, ok := idx[a.defs[i].name]
			if !ok {
				k = int32(len(idx))
				idx[a.defs[i].name] = k
			}
			a.memo.nameOf[i] = k
		}
		a.memo.nNames = len(idx)
		a.memo.nameIdx = idx
	})
	return a.memo.nameOf, a.memo.nNames
}

// usedDefs marks the definitions of a whose names are in used and counts
// the distinct names marked.
func (a *analysis) usedDefs(used identCounts) (bits []uint64, names int) {
	nameOf, n := a.defNames()
	bits = make([]uint64, (len(a.defs)+63)/64)
	var seen []uint64
	if n > 0 {
		seen = make([]uint64, (n+63)/64)
	}
	for i := range a.defs {
		if !used.has(a.defs[i].name) {
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

package assemble

import (
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// maxCursorDefs bounds the definitions given the cursor tier's first
// slots: those of the names typed on the cursor's line.
const maxCursorDefs = 2

// cursorDefs are the definitions of the names typed on the cursor's line
// before the cursor, nearest first: the call being typed, then its
// receiver. A name called on self, this or super is looked up in the
// enclosing class and the classes its header names (its parents); another
// in the cursor file, the files it imports and its directory. A name with
// more than two such definitions, a local, or one the prefix/suffix
// window already shows gets none. They take the cursor tier's first slots
// (packCursorTier): whatever the fusion thinks of the code around the
// cursor, the definition of the call being typed is what completes it.
func (as *Assembly) cursorDefs() []*Candidate {
	if as.lineUses == "" {
		return nil
	}
	q := as.searchQuery()
	reg, _, _ := q.query()
	locals := q.localsIn(reg)
	cls, parents := as.enclosingClass()
	r, t := as.index, as.input.Cursor
	testCursor := isTestPath(t.Path)
	var out []*Candidate
	seen := map[string]bool{}
	for _, name := range strings.Fields(as.lineUses) {
		if len(out) == maxCursorDefs {
			break
		}
		member := name[0] == '.' // called on self, this or super
		name = strings.TrimPrefix(name, ".")
		if seen[name] || locals[syntax.HashIdent(name)] {
			continue
		}
		seen[name] = true
		var refs []index.DefRef
		for _, ref := range r.Definitions(name) {
			sl := r.FileByID(ref.File)
			d := &sl.Analysis.Defs[ref.Def]
			switch {
			case !testCursor && isTestPath(sl.Path):
				continue
			case sl == t && d.Start <= as.windowLines.Last && d.End >= as.windowLines.First:
				continue // visible in the window already
			case d.Kind.IsMember() && (d.Parent < 0 || !sl.Analysis.Defs[d.Parent].Kind.IsScope()):
				continue
			}
			if member {
				// A method of the enclosing class or of a parent.
				if d.Parent < 0 {
					continue
				}
				owner := sl.Analysis.Defs[d.Parent].Name
				if !(sl == t && owner == cls) && !parents[owner] {
					continue
				}
			} else if sl != t && as.sel.importRank[sl] == 0 && sl.Dir != t.Dir {
				continue
			}
			refs = append(refs, ref)
		}
		if len(refs) == 0 || len(refs) > 2 {
			continue // none, or too ambiguous to pin
		}
		ref := refs[0]
		sl := r.FileByID(ref.File)
		rs := defRanges(as.params, sl.Analysis, ref.Def)
		if len(rs) == 0 {
			continue
		}
		d := &sl.Analysis.Defs[ref.Def]
		out = append(out, &Candidate{file: sl, kind: SourceDefinition, ranges: rs, key: rangesKey(sl, rs),
			label: d.Kind.String() + " " + d.Name + " (named on the cursor line)"})
	}
	return out
}

// lineUsesOf lists the identifiers in code typed on the cursor's line
// before the cursor that are complete, nearest first and space-separated,
// those called on self, this or super with a leading dot (see
// cursorDefs). Words of a comment or string literal are no names.
func (as *Assembly) lineUsesOf() string {
	if !as.input.Cursor.Viewed() {
		return "" // the line is empty
	}
	a := as.text
	line := syntax.CodeOnly(a.Content[a.Lines[as.cursorLine]:as.input.Offset], a.Lang)
	var uses []string
	syntax.ScanIdents(line, a.Lang, func(id string, off int) bool {
		if off+len(id) < len(line) {
			before := strings.TrimRight(line[:off], " \t")
			if strings.HasSuffix(before, ".") && receiverIsSelf(strings.TrimSuffix(before, ".")) {
				id = "." + id
			}
			uses = append(uses, id)
		}
		return true
	})
	slices.Reverse(uses)
	return strings.Join(uses, " ")
}

// receiverIsSelf reports whether the code before a ".name" is self, this,
// super or super().
func receiverIsSelf(s string) bool {
	for _, r := range []string{"self", "this", "super", "super()", "Self"} {
		if strings.HasSuffix(s, r) {
			rest := s[:len(s)-len(r)]
			if rest == "" || !isIdentChar(rest[len(rest)-1]) && rest[len(rest)-1] != '.' {
				return true
			}
		}
	}
	return false
}

func isIdentChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// enclosingClass is the name of the innermost class (or impl) enclosing
// the cursor and the identifiers of its header after its name: its
// parents (Python's bases, Java's and TypeScript's extends and
// implements), with whatever else the header names.
func (as *Assembly) enclosingClass() (string, map[string]bool) {
	a := as.text
	var cls *syntax.Def
	for i := range a.Defs {
		d := &a.Defs[i]
		if d.Start > as.cursorLine {
			break
		}
		if d.End >= as.cursorLine && (d.Kind == syntax.KindClass || d.Kind == syntax.KindImpl) {
			cls = d
		}
	}
	if cls == nil {
		return "", nil
	}
	parents := map[string]bool{}
	header := a.RangeText(cls.Start, cls.HeaderEnd)
	if i := strings.Index(header, cls.Name); i >= 0 {
		header = header[i+len(cls.Name):]
	}
	syntax.ScanIdents(header, a.Lang, func(id string, _ int) bool {
		parents[id] = true
		return true
	})
	return cls.Name, parents
}

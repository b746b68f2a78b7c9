package syntax

import (
	"math"

	sitter "github.com/smacker/go-tree-sitter"
)

// Incremental tags. After an edit, the syntax tree outside the top-level
// nodes around the edit is the previous tree's, moved: the parse reused
// it (or, where the edit left a syntax error and the file was parsed from
// scratch, the same top-level nodes over the same text, which a parse
// from the start of a top-level node finds again). So only those nodes
// need the tags query, and the previous analysis
// supplies the definitions, imports and locals of the rest, their lines
// moved by the lines the edit added. changedRegion says when that holds;
// anything unusual (the top-level structure changed elsewhere, a top-level
// node sharing a line with the region) falls back to a full query.
// TestIncrementalParseMatchesFull checks the result against an analysis
// from scratch after random edits.

// region is the part of a new tree to query after an edit.
type region struct {
	from, to         sitter.Point // new coordinates, for the query cursor
	fromByte, toByte uint32       // captures must lie within
	keepTo           int32        // lines of the previous analysis up to here are unchanged
	shiftFrom        int32        // lines from here on moved by dl
	lineShift        int32
	spans            []span // the new top-level nodes in the region
}

// queryRoots returns the nodes to run the tags query on for the region:
// its top-level nodes one by one, which visits nothing outside them; or
// nil when one of them needs a pattern anchored at the root (rooted), so
// that the query must start at the root, limited to the region's lines.
func (r *region) queryRoots(rooted map[sitter.Symbol]bool) []*sitter.Node {
	out := make([]*sitter.Node, 0, len(r.spans))
	for _, s := range r.spans {
		if rooted[s.sym] {
			return nil
		}
		out = append(out, s.node)
	}
	return out
}

// span is a top-level node: its symbol and bytes (points are asked of
// the node only where needed: each is a cgo call).
type span struct {
	sym        sitter.Symbol
	start, end uint32
	node       *sitter.Node
}

func (s span) startRow() int32 { return int32(s.node.StartPoint().Row) }

// lastRow is the last line a node covers (a node ending with a newline
// ends at column 0 of the next line).
func (s span) lastRow() int32 {
	ep := s.node.EndPoint()
	r := int32(ep.Row)
	if ep.Column == 0 && r > s.startRow() {
		r--
	}
	return r
}

// topLevel lists the root's children with one cursor walk (indexing
// children one by one is quadratic in tree-sitter).
func topLevel(t *sitter.Tree) []span {
	c := sitter.NewTreeCursor(t.RootNode())
	defer c.Close()
	var out []span
	for ok := c.GoToFirstChild(); ok; ok = c.GoToNextSibling() {
		n := c.CurrentNode()
		out = append(out, span{sym: n.Symbol(), start: n.StartByte(), end: n.EndByte(), node: n})
	}
	return out
}

// editSpans moves the previous version's top-level spans as tree-sitter
// moves nodes for edit e: spans after the replaced bytes shift, spans
// before stay. A span overlapping the edit is left as it was; it cannot
// equal a node of the new tree outside the region, so changedRegion
// stays conservative.
func editSpans(spans []span, e sitter.EditInput) []span {
	out := make([]span, len(spans))
	d := int64(e.NewEndIndex) - int64(e.OldEndIndex)
	for i, s := range spans {
		if s.start >= e.OldEndIndex {
			s.start, s.end = uint32(int64(s.start)+d), uint32(int64(s.end)+d)
		}
		s.node = nil
		out[i] = s
	}
	return out
}

// changedRegion returns the top-level nodes of the new tree (ns) that the
// edit e touches, with one more on each side (a node's end can depend on
// the token after it), when every other new top-level node is one of the
// previous tree's (os, moved by the edit: same symbol and byte range) and
// no other node shares a line with the region. It returns nil otherwise.
func changedRegion(os, ns []span, e sitter.EditInput) *region {
	m, n := len(os), len(ns)
	first, last := -1, -1
	for i, c := range ns {
		if c.end >= e.StartIndex && c.start <= e.NewEndIndex {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	first, last = max(0, first-1), min(n-1, last+1)
	before, after := first, n-1-last
	if before+after > m {
		return nil
	}
	same := func(a, b span) bool { return a.sym == b.sym && a.start == b.start && a.end == b.end }
	for i := 0; i < before; i++ {
		if !same(os[i], ns[i]) {
			return nil
		}
	}
	for k := 0; k < after; k++ {
		if !same(os[m-1-k], ns[n-1-k]) {
			return nil
		}
	}
	f, l := ns[first], ns[last]
	r := &region{from: f.node.StartPoint(), to: l.node.EndPoint(), fromByte: f.start, toByte: l.end,
		keepTo: -1, shiftFrom: math.MaxInt32, lineShift: int32(e.NewEndPoint.Row) - int32(e.OldEndPoint.Row),
		spans: ns[first : last+1]}
	if before > 0 {
		p := ns[first-1]
		if p.lastRow() >= f.startRow() {
			return nil
		}
		r.keepTo = p.lastRow()
	}
	if after > 0 {
		nx := ns[last+1]
		if l.lastRow() >= nx.startRow() {
			return nil
		}
		r.shiftFrom = nx.startRow() - r.lineShift
	}
	return r
}

// holds reports whether every capture of a match lies in the region.
func (r *region) holds(cs []sitter.QueryCapture) bool {
	for _, c := range cs {
		if c.Node.StartByte() < r.fromByte || c.Node.EndByte() > r.toByte {
			return false
		}
	}
	return true
}

// moved maps a line of the previous analysis to the new file: ok is false
// for lines inside the region, whose tags were queried again.
func (r *region) moved(line int32) (int32, bool) {
	switch {
	case line <= r.keepTo:
		return line, true
	case line >= r.shiftFrom:
		return line + r.lineShift, true
	}
	return 0, false
}

// splice completes a's tags, queried in r only, with prev's outside r, in
// document order (before r, r, after r).
func (a *Analysis) splice(prev *Analysis, r *region) {
	var defs []Def
	var imports []Import
	var locals []Local
	for pass := 0; pass < 2; pass++ { // 0: before r, 1: after r
		in := func(line int32) bool { return pass == 0 && line <= r.keepTo || pass == 1 && line >= r.shiftFrom }
		if pass == 1 {
			defs, imports, locals = append(defs, a.Defs...), append(imports, a.Imports...), append(locals, a.Locals...)
		}
		for _, d := range prev.Defs {
			if in(d.Start) {
				d.Start, _ = r.moved(d.Start)
				d.End, _ = r.moved(d.End)
				d.HeaderEnd, _ = r.moved(d.HeaderEnd)
				d.Parent = -1
				defs = append(defs, d)
			}
		}
		for _, im := range prev.Imports {
			if in(im.Line) {
				im.Line, _ = r.moved(im.Line)
				imports = append(imports, im)
			}
		}
		for _, l := range prev.Locals {
			if in(l.Line) {
				l.Line, _ = r.moved(l.Line)
				locals = append(locals, l)
			}
		}
	}
	a.Defs, a.Imports, a.Locals = defs, imports, locals
	if a.pkg == "" && prev.pkg != "" {
		if line, ok := r.moved(prev.pkgLine); ok {
			a.pkg, a.pkgLine = prev.pkg, line
		}
	}
}

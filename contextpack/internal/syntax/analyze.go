package syntax

import (
	"context"
	"errors"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// Options shape an analysis.
type Options struct {
	MaxParseBytes  int // larger files are plain text ("too large to parse")
	ParseTimeoutUS int // bounds one parse, in microseconds
	// WindowLines and WindowStride shape the sliding windows (Chunks).
	WindowLines  int
	WindowStride int
	Trees        *TreeCache // nil: no incremental parsing
	TreeKey      string     // repository and path of the file, for trees
}

// ErrClosed is the error of an analysis after Grammars.Close.
var ErrClosed = errors.New("contextpack: builder closed")

// Analyze builds the analysis of content in language lang. With a tree
// key, the previous version of the file (its tree and analysis, from the
// tree cache) makes the work incremental: the parse starts from the old
// tree (or, after a syntax error, from the old segments), and windows
// whose text did not change keep their terms.
func Analyze(ctx context.Context, g *Grammars, content string, lang Lang, opt Options) (*Analysis, error) {
	a := &Analysis{Lang: lang, Content: content, Lines: LineStarts(content)}
	var prev *cachedTree
	if opt.TreeKey != "" {
		prev = opt.Trees.take(opt.TreeKey)
		if prev != nil && prev.lang != lang {
			prev.tree.Close()
			prev = nil
		}
	}
	var last *Analysis        // the previous version's
	var edit sitter.EditInput // prev's content → content
	lastEdit := false         // whether edit is also last's content → content
	if prev != nil {
		last, lastEdit = prev.analysis, true
		if prev.segmented != nil {
			last, lastEdit = prev.segmented, false
		}
		edit = editBetween(prev.content, content)
	}
	var keep *cachedTree
	if lang != LangPlain && len(content) > opt.MaxParseBytes {
		a.Note = "too large to parse"
	} else if lang != LangPlain {
		var err error
		keep, err = a.parse(ctx, g, opt, prev, edit)
		prev = nil // parse keeps or closes it
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			a.Note = "parse failed: " + err.Error()
			a.Defs, a.Imports, a.Locals, a.segs = nil, nil, nil, nil
		}
	}
	if prev != nil {
		prev.tree.Close()
	}
	a.buildChunks(opt.WindowLines, opt.WindowStride, last)
	if last != nil && last.memo.identsDone.Load() {
		// Only a version whose counts exist: a link to one without them
		// would keep a chain of old versions alive.
		if !lastEdit {
			edit = editBetween(last.Content, content) // while the file has an error
		}
		a.memo.identsFrom = last
		a.memo.editLines = [3]int32{int32(edit.StartPoint.Row), int32(edit.OldEndPoint.Row), int32(edit.NewEndPoint.Row)}
	}
	if keep != nil {
		// Only now is a complete: the next version may read it.
		opt.Trees.put(keep)
	}
	a.Bytes = int64(len(a.Lines))*4 + int64(cap(a.Defs))*48 + int64(len(a.Imports))*48 + int64(len(a.Locals))*8 + 256
	for _, d := range a.Defs {
		a.Bytes += int64(len(d.Name))
	}
	for i := range a.Chunks {
		a.Bytes += 40 + int64(cap(a.Chunks[i].Terms))*8
	}
	for _, s := range a.segs {
		a.Bytes += 96 + int64(len(s.defs))*48 + int64(len(s.imports))*48 + int64(len(s.locals))*8
	}
	return a, nil
}

// parse extracts the tags: from the whole file's tree when it has no
// syntax error, else from its segments. prev (may be nil) is the tree
// cache's entry for the file, which parse takes over, and edit turns its
// content into a's. It returns the entry to keep for the next version
// (nil without opt.TreeKey).
//
// The entry holds the last tree without an error (or, when there was
// none yet, a parse from scratch) and, while the file has an error, the
// last segmented analysis. Tree-sitter's error recovery depends on the
// tree a parse starts from, so a tree with an error never gives tags
// (TestIncrementalAnalysisAllLanguages).
func (a *Analysis) parse(ctx context.Context, g *Grammars, opt Options, prev *cachedTree, edit sitter.EditInput) (keep *cachedTree, err error) {
	defer func() {
		if prev != nil && keep != prev {
			prev.tree.Close()
		}
	}()
	st, err := g.acquire(a.Lang)
	if err != nil {
		return nil, err
	}
	defer g.release()
	p := st.getParser()
	p.SetOperationLimit(opt.ParseTimeoutUS)
	defer func() {
		if err != nil {
			// A halted parse leaves state behind; start clean next time.
			p.Reset()
		}
		st.putParser(p)
	}()
	// segmented completes a's tags from its segments and returns the entry
	// to keep: prev, whose tree stays the last one without an error, or
	// on a first parse tree (a parse from scratch; nil: none).
	segmented := func(tree *sitter.Tree) *cachedTree {
		a.nestDefs()
		a.cleanLocals()
		if prev == nil && opt.TreeKey != "" && tree != nil {
			return &cachedTree{key: opt.TreeKey, lang: a.Lang, content: a.Content, tree: tree, segmented: a}
		}
		if tree != nil {
			tree.Close()
		}
		if prev == nil {
			return nil
		}
		prev.segmented = a
		return prev
	}
	if prev != nil && prev.segmented != nil {
		// While the file has an error, only the segments are parsed.
		errs, err := a.parseSegments(ctx, st, p, prev.segmented.segs)
		if err != nil {
			return nil, err
		}
		if errs {
			return segmented(nil), nil
		}
	}
	var old *sitter.Tree
	if prev != nil {
		old = prev.tree.Copy()
		old.Edit(edit)
		defer old.Close()
	}
	src := []byte(a.Content)
	tree, err := p.ParseCtx(ctx, old, src)
	if err != nil {
		return nil, err
	}
	if tree.RootNode().HasError() {
		if a.segs == nil {
			var segs []segment
			if prev != nil && prev.analysis != nil && prev.analysis.Note == "" {
				// The first error after a version without one: that
				// version's segments are its tags, cut.
				segs = prev.analysis.segmentsOfTags()
			}
			if _, err := a.parseSegments(ctx, st, p, segs); err != nil {
				tree.Close()
				return nil, err
			}
		}
		return segmented(tree), nil
	}
	// The tags of segments (parsed when the last version had an error)
	// give way to the whole tree's.
	a.segs, a.Defs, a.Imports, a.Locals, a.pkg, a.pkgLine = nil, nil, nil, nil, "", 0
	var top []span
	if opt.TreeKey != "" || old != nil {
		top = topLevel(tree)
	}
	// After an edit inside one part of the file, only that part is
	// queried; the tags of the rest come from the previous analysis.
	var reg *region
	if old != nil && prev.analysis != nil && prev.analysis.Note == "" && old.RootNode().Symbol() == tree.RootNode().Symbol() {
		oldTop := prev.top
		if oldTop == nil {
			oldTop = topLevel(old) // already edited
		} else {
			oldTop = editSpans(oldTop, edit)
		}
		reg = changedRegion(oldTop, top, edit)
	}
	qc := sitter.NewQueryCursor()
	defer qc.Close()
	roots := []*sitter.Node{tree.RootNode()}
	if reg != nil {
		if rs := reg.queryRoots(st.rooted); rs != nil {
			roots = rs
		} else {
			qc.SetPointRange(reg.from, reg.to)
		}
	}
	seen := map[[2]uint32]bool{}
	for _, root := range roots {
		qc.Exec(st.query, root)
		a.collect(qc, st, src, reg, seen)
	}
	if reg != nil {
		a.splice(prev.analysis, reg)
		a.partial = true
	}
	a.nestDefs()
	a.cleanLocals()
	if opt.TreeKey == "" {
		tree.Close()
		return nil, nil
	}
	for i := range top {
		top[i].node = nil // nodes belong to this parse
	}
	return &cachedTree{key: opt.TreeKey, lang: a.Lang, content: a.Content, tree: tree, analysis: a, top: top}, nil
}

// collect adds the tags of the query cursor's matches to a; with a region,
// only matches that lie in it.
func (a *Analysis) collect(qc *sitter.QueryCursor, st *langState, src []byte, reg *region, seen map[[2]uint32]bool) {
	var reqFn bool
	for {
		m, ok := qc.NextMatch()
		if !ok {
			break
		}
		if reg != nil && !reg.holds(m.Captures) {
			continue // a match around the region, already in prev
		}
		var defNode, nameNode *sitter.Node
		var kind DefKind
		reqFn = false
		for _, c := range m.Captures {
			if c.Node.StartByte() == c.Node.EndByte() {
				// A MISSING node error recovery made up: no name or
				// path, and an incremental parse need not make it up in
				// the same place as a parse from scratch.
				continue
			}
			capName := st.capture[c.Index]
			switch {
			case capName == "name":
				nameNode = c.Node
			case strings.HasPrefix(capName, "def."):
				defNode, kind = c.Node, defKindNames[capName]
			case capName == "import.reqfn":
				reqFn = c.Node.Content(src) == "require"
			case capName == "local":
				a.Locals = append(a.Locals, Local{HashIdent(c.Node.Content(src)), int32(c.Node.StartPoint().Row)})
			default:
				k := len(a.Imports)
				a.addImport(capName, c.Node, src, reqFn)
				row := int32(c.Node.StartPoint().Row)
				for j := k; j < len(a.Imports); j++ {
					a.Imports[j].Line = row
				}
				if capName == "package" {
					a.pkgLine = row
				}
			}
		}
		if defNode == nil || nameNode == nil || kind == 0 {
			continue
		}
		key := [2]uint32{defNode.StartByte(), nameNode.StartByte()}
		if seen[key] {
			continue
		}
		seen[key] = true
		name := cleanName(nameNode.Content(src), kind)
		if name == "" {
			continue
		}
		d := Def{Name: name, Kind: kind, Parent: -1}
		sp, ep := defNode.StartPoint(), defNode.EndPoint()
		d.Start, d.End = int32(sp.Row), int32(ep.Row)
		if ep.Column == 0 && d.End > d.Start {
			d.End--
		}
		d.HeaderEnd = d.Start
		if body := defNode.ChildByFieldName("body"); body != nil {
			bp := body.StartPoint()
			he := int32(bp.Row)
			lineStart := int(a.Lines[bp.Row])
			if IsBlank(a.Content[lineStart:body.StartByte()]) {
				he-- // body starts on its own line (Python blocks)
			}
			if he > d.Start {
				d.HeaderEnd = min(he, d.Start+8, d.End)
			}
		}
		if kind == KindModule && a.Lang == LangRust && defNode.ChildByFieldName("body") == nil {
			a.Imports = append(a.Imports, Import{Kind: ImportRustMod, Spec: name, Line: d.Start})
		}
		a.Defs = append(a.Defs, d)
	}
}

// cleanLocals sorts locals by line and drops those that are definitions
// (module- or class-level assignments match both patterns).
func (a *Analysis) cleanLocals() {
	defAt := make(map[Local]bool, len(a.Defs))
	for i := range a.Defs {
		defAt[Local{HashIdent(a.Defs[i].Name), a.Defs[i].Start}] = true
	}
	a.Locals = slices.DeleteFunc(a.Locals, func(l Local) bool { return defAt[l] })
	slices.SortFunc(a.Locals, func(x, y Local) int { return int(x.Line - y.Line) })
	a.Locals = slices.Clip(a.Locals)
	if len(a.Locals) == 0 {
		a.Locals = nil
	}
}

// cleanName reduces qualified or generic names to the identifier that code
// uses: "C::m" → "m", "S<T>" → "S", "crate::x::S<T>" → "S".
func cleanName(s string, kind DefKind) string {
	if i := strings.IndexByte(s, '<'); i > 0 && kind == KindImpl {
		s = s[:i]
	}
	if i := strings.LastIndex(s, "::"); i >= 0 {
		s = s[i+2:]
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\n<(&*"); i >= 0 && kind == KindImpl {
		s = s[:i]
	}
	return s
}

// nestDefs sorts definitions by position and links each to its innermost
// enclosing definition.
func (a *Analysis) nestDefs() {
	slices.SortStableFunc(a.Defs, func(x, y Def) int {
		if x.Start != y.Start {
			return int(x.Start - y.Start)
		}
		return int(y.End - x.End)
	})
	var stack []int32
	for i := range a.Defs {
		d := &a.Defs[i]
		for len(stack) > 0 && a.Defs[stack[len(stack)-1]].End < d.Start {
			stack = stack[:len(stack)-1]
		}
		// A definition on the same lines as its would-be parent (e.g. a
		// struct inside a one-line typedef) still nests; ranges are equal
		// or contained.
		for len(stack) > 0 && a.Defs[stack[len(stack)-1]].End < d.End {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			d.Parent = stack[len(stack)-1]
			if d.Kind == KindFunction {
				switch a.Defs[d.Parent].Kind {
				case KindClass, KindImpl:
					d.Kind = KindMethod
				}
			}
		}
		stack = append(stack, int32(i))
	}
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 {
		switch s[0] {
		case '"', '\'', '`', '<':
			return s[1 : len(s)-1]
		}
	}
	return s
}

func (a *Analysis) addImport(capName string, n *sitter.Node, src []byte, reqFn bool) {
	text := n.Content(src)
	switch capName {
	case "import":
		switch a.Lang {
		case LangGo:
			a.Imports = append(a.Imports, Import{Kind: ImportGo, Spec: unquote(text)})
		case LangJS, LangTS, LangTSX:
			a.Imports = append(a.Imports, jsImport(n, text, src))
		case LangRust:
			a.Imports = append(a.Imports, parseRustUse(text))
		case LangC, LangCPP:
			k := ImportCQuote
			if strings.HasPrefix(text, "<") {
				k = ImportCSystem
			}
			a.Imports = append(a.Imports, Import{Kind: k, Spec: unquote(text)})
		}
	case "import.req":
		if reqFn {
			a.Imports = append(a.Imports, Import{Kind: ImportJS, Spec: text})
		}
	case "import.py":
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if c.Type() == "aliased_import" {
				c = c.ChildByFieldName("name")
			}
			if c != nil && c.Type() == "dotted_name" {
				a.Imports = append(a.Imports, Import{Kind: ImportPython, Spec: c.Content(src)})
			}
		}
	case "import.pyfrom":
		ref := Import{Kind: ImportPythonFrom}
		if m := n.ChildByFieldName("module_name"); m != nil {
			ref.Spec = strings.Join(strings.Fields(m.Content(src)), "")
		}
		for i := 0; i < int(n.ChildCount()); i++ {
			if n.FieldNameForChild(i) != "name" {
				continue
			}
			c := n.Child(i)
			if c.Type() == "aliased_import" {
				c = c.ChildByFieldName("name")
			}
			if c != nil {
				ref.Names = append(ref.Names, c.Content(src))
			}
		}
		a.Imports = append(a.Imports, ref)
	case "import.java":
		s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
		s = strings.TrimSpace(strings.TrimPrefix(s, "import"))
		s = strings.TrimSpace(strings.TrimPrefix(s, "static "))
		a.Imports = append(a.Imports, Import{Kind: ImportJava, Spec: strings.Join(strings.Fields(s), "")})
	case "package":
		s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
		a.pkg = strings.Join(strings.Fields(strings.TrimPrefix(s, "package")), "")
	}
}

// jsImport is the import or export ... from statement whose source
// string's text is n: the specifier, the member names it imports or
// re-exports (their exported names, not local aliases), and whether it
// re-exports.
func jsImport(n *sitter.Node, spec string, src []byte) Import {
	im := Import{Kind: ImportJS, Spec: spec}
	stmt := n.Parent()
	if stmt != nil {
		stmt = stmt.Parent()
	}
	if stmt == nil {
		return im
	}
	im.Reexport = stmt.Type() == "export_statement"
	var walk func(x *sitter.Node, depth int)
	walk = func(x *sitter.Node, depth int) {
		for i := 0; i < int(x.NamedChildCount()); i++ {
			c := x.NamedChild(i)
			switch c.Type() {
			case "import_specifier":
				if name := c.ChildByFieldName("name"); name != nil {
					im.Names = append(im.Names, unquote(name.Content(src)))
				}
			case "export_specifier":
				name, alias := c.ChildByFieldName("name"), c.ChildByFieldName("alias")
				if name == nil {
					continue
				}
				src0 := unquote(name.Content(src))
				if alias != nil && im.Sources == nil {
					im.Sources = append(make([]string, 0, len(im.Names)+1), im.Names...) // unrenamed so far
				}
				if alias != nil {
					im.Names = append(im.Names, unquote(alias.Content(src)))
				} else {
					im.Names = append(im.Names, src0)
				}
				if im.Sources != nil {
					im.Sources = append(im.Sources, src0)
				}
			case "import_clause", "named_imports", "export_clause":
				if depth < 3 {
					walk(c, depth+1)
				}
			}
		}
	}
	walk(stmt, 0)
	return im
}

// parseRustUse splits "crate::a::{B, c::D as E}" into the path "crate::a"
// and the names "B", "c::D".
func parseRustUse(text string) Import {
	s := strings.Join(strings.Fields(text), " ")
	ref := Import{Kind: ImportRustUse}
	i := strings.Index(s, "{")
	if i < 0 {
		if j := strings.Index(s, " as "); j >= 0 {
			s = s[:j]
		}
		ref.Spec = s
		return ref
	}
	ref.Spec = strings.TrimSuffix(strings.TrimSpace(s[:i]), "::")
	inner := strings.TrimSuffix(strings.TrimSpace(s[i+1:]), "}")
	depth := 0
	start := 0
	emit := func(x string) {
		x = strings.TrimSpace(x)
		if j := strings.Index(x, " as "); j >= 0 {
			x = x[:j]
		}
		if j := strings.Index(x, "{"); j >= 0 {
			x = strings.TrimSuffix(strings.TrimSpace(x[:j]), "::")
		}
		if x != "" && x != "self" && x != "*" {
			ref.Names = append(ref.Names, x)
		}
	}
	for k := 0; k < len(inner); k++ {
		switch inner[k] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				emit(inner[start:k])
				start = k + 1
			}
		}
	}
	emit(inner[start:])
	return ref
}

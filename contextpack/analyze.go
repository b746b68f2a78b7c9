package contextpack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"
)

// defKind is the kind of a definition found by the tags query.
type defKind uint8

const (
	kindFunction defKind = iota + 1
	kindMethod
	kindClass
	kindType
	kindVar
	kindConst
	kindField
	kindModule
	kindMacro
	kindImpl
	kindProto
)

var defKindNames = map[string]defKind{
	"def.function": kindFunction, "def.method": kindMethod, "def.class": kindClass, "def.type": kindType,
	"def.var": kindVar, "def.const": kindConst, "def.field": kindField, "def.module": kindModule,
	"def.macro": kindMacro, "def.impl": kindImpl, "def.proto": kindProto,
}

func (k defKind) String() string {
	for n, v := range defKindNames {
		if v == k {
			return strings.TrimPrefix(n, "def.")
		}
	}
	return "?"
}

// isScope reports whether a definition of this kind encloses code whose
// header tells the model where it is (class line, function signature).
func (k defKind) isScope() bool {
	switch k {
	case kindFunction, kindMethod, kindClass, kindModule, kindImpl:
		return true
	}
	return false
}

// isMember reports kinds that are best shown inside their parent.
func (k defKind) isMember() bool { return k == kindField }

// def is one definition in a file. Lines are 0-based and inclusive.
type def struct {
	name      string
	kind      defKind
	start     int32
	end       int32
	headerEnd int32
	parent    int32 // index of the innermost enclosing def, or -1
}

type importKind uint8

const (
	impPython     importKind = iota + 1 // import a.b.c
	impPythonFrom                       // from (.)a.b import x, y
	impGo                               // "path/to/pkg"
	impJS                               // './x', '../y', 'pkg'
	impJava                             // a.b.C or a.b.*
	impRustUse                          // crate::a::b, with names from {..}
	impRustMod                          // mod foo;
	impCQuote                           // #include "x.h"
	impCSystem                          // #include <x.h>
)

type importRef struct {
	kind  importKind
	spec  string
	names []string
	line  int32 // of the import statement
}

// localRef is a parameter or local variable declared on a line.
type localRef struct {
	t    term
	line int32
}

// termTF is a term and its frequency in a chunk.
type termTF struct {
	t  term
	tf uint16
}

// chunk is a window of lines indexed for lexical similarity.
type chunk struct {
	start, end int32 // lines, inclusive
	length     uint32
	terms      []termTF
}

// analysis is everything derived from one file content in one language.
// It is immutable once built and shared between requests and goroutines.
type analysis struct {
	lang    langID
	content string
	lines   []int32 // byte offset of each line start
	defs    []def   // sorted by start line
	imports []importRef
	locals  []localRef // parameters and local variables, by line
	pkg     string     // Java package
	pkgLine int32      // line of the package declaration, when pkg is set
	partial bool       // tags queried around an edit only, the rest from the previous version
	segs    []segment  // with a syntax error: the segments the tags come from
	chunks  []chunk
	note    string // why the file was treated as plain text, if it was
	bytes   int64  // memory estimate, content excluded

	// view, when set, is the typing view this analysis takes its tags
	// from; its text differs at line viewLine only (withText).
	view     *analysis
	viewLine int32

	tokenCounts tokenCounts // of line ranges, for the counter that fills it

	fileTermsCache // whole-file terms, for the ExecRepoBench baseline only
	memo           analysisMemo
}

// tokenCounts caches the token counts of line ranges of an analysis's
// text for the counter that fills it (a Builder counts with one
// tokenizer); the analysis itself never reads it.
type tokenCounts struct {
	mu sync.Mutex
	m  map[uint64]int32
}

// maxTokenCounts bounds the ranges one analysis keeps counts of.
const maxTokenCounts = 4096

func (c *tokenCounts) get(first, last int32) (int32, bool) {
	c.mu.Lock()
	n, ok := c.m[uint64(uint32(first))<<32|uint64(uint32(last))]
	c.mu.Unlock()
	return n, ok
}

func (c *tokenCounts) put(first, last, n int32) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[uint64]int32)
	}
	if len(c.m) < maxTokenCounts {
		c.m[uint64(uint32(first))<<32|uint64(uint32(last))] = n
	}
	c.mu.Unlock()
}

func (a *analysis) numLines() int32 { return int32(len(a.lines)) }

func (a *analysis) lineEnd(i int32) int {
	if int(i)+1 < len(a.lines) {
		return int(a.lines[i+1])
	}
	return len(a.content)
}

// lineText returns line i including its newline.
func (a *analysis) lineText(i int32) string {
	s := int(a.lines[i])
	e := len(a.content)
	if int(i)+1 < len(a.lines) {
		e = int(a.lines[i+1])
	}
	return a.content[s:e]
}

// rangeText returns lines [s, e] including the last newline.
func (a *analysis) rangeText(s, e int32) string {
	st := int(a.lines[s])
	en := len(a.content)
	if int(e)+1 < len(a.lines) {
		en = int(a.lines[e+1])
	}
	return a.content[st:en]
}

// lineOf returns the line containing byte offset off.
func (a *analysis) lineOf(off int) int32 {
	i, found := slices.BinarySearch(a.lines, int32(off))
	if found {
		return int32(i)
	}
	return int32(i - 1)
}

// isBlank reports whether s holds only white space (Unicode White_Space).
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ', c == '\t', c == '\r', c == '\n', c == '\f', c == '\v':
		case c < utf8.RuneSelf:
			return false
		default:
			r, w := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsSpace(r) {
				return false
			}
			i += w - 1
		}
	}
	return true
}

func (a *analysis) blank(i int32) bool { return isBlank(a.lineText(i)) }

// trim moves s forward and e backward past blank lines; ok is false when
// nothing but blank lines remains.
func (a *analysis) trim(s, e int32) (int32, int32, bool) {
	for s <= e && a.blank(s) {
		s++
	}
	for e >= s && a.blank(e) {
		e--
	}
	return s, e, s <= e
}

func lineStarts(content string) []int32 {
	n := strings.Count(content, "\n")
	ls := make([]int32, 1, n+1)
	for i := 0; i < len(content); i++ {
		if content[i] == '\n' {
			ls = append(ls, int32(i+1))
		}
	}
	return ls
}

type analyzeOptions struct {
	maxParseBytes  int
	parseTimeoutUS int
	windowLines    int
	windowStride   int
	trees          *treeCache // nil: no incremental parsing
	treeKey        string     // repository and path of the file, for trees
}

var errClosed = errors.New("contextpack: builder closed")

// analyze builds the analysis of content in language lang. With a tree
// key, the previous version of the file (its tree and analysis, from the
// tree cache) makes the work incremental: the parse starts from the old
// tree (or, after a syntax error, from the old segments), and windows
// whose text did not change keep their terms.
func analyze(ctx context.Context, g *grammars, content string, lang langID, opt analyzeOptions) (*analysis, error) {
	a := &analysis{lang: lang, content: content, lines: lineStarts(content)}
	var prev *cachedTree
	if opt.treeKey != "" {
		prev = opt.trees.take(opt.treeKey)
		if prev != nil && prev.lang != lang {
			prev.tree.Close()
			prev = nil
		}
	}
	var last *analysis        // the previous version's
	var edit sitter.EditInput // prev's content → content
	lastEdit := false         // whether edit is also last's content → content
	if prev != nil {
		last, lastEdit = prev.an, true
		if prev.seg != nil {
			last, lastEdit = prev.seg, false
		}
		edit = editBetween(prev.content, content)
	}
	var keep *cachedTree
	if lang != langPlain && len(content) > opt.maxParseBytes {
		a.note = "too large to parse"
	} else if lang != langPlain {
		var err error
		keep, err = a.parse(ctx, g, opt, prev, edit)
		prev = nil // parse keeps or closes it
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, errClosed) {
				return nil, err
			}
			a.note = "parse failed: " + err.Error()
			a.defs, a.imports, a.locals, a.segs = nil, nil, nil, nil
		}
	}
	if prev != nil {
		prev.tree.Close()
	}
	a.buildChunks(opt.windowLines, opt.windowStride, last)
	if last != nil && last.memo.identsDone.Load() {
		// Only a version whose counts exist: a link to one without them
		// would keep a chain of old versions alive.
		if !lastEdit {
			edit = editBetween(last.content, content) // while the file has an error
		}
		a.memo.identsFrom = last
		a.memo.editLines = [3]int32{int32(edit.StartPoint.Row), int32(edit.OldEndPoint.Row), int32(edit.NewEndPoint.Row)}
	}
	if keep != nil {
		// Only now is a complete: the next version may read it.
		opt.trees.put(keep)
	}
	a.bytes = int64(len(a.lines))*4 + int64(cap(a.defs))*48 + int64(len(a.imports))*48 + int64(len(a.locals))*8 + 256
	for _, d := range a.defs {
		a.bytes += int64(len(d.name))
	}
	for i := range a.chunks {
		a.bytes += 40 + int64(cap(a.chunks[i].terms))*8
	}
	for _, s := range a.segs {
		a.bytes += 96 + int64(len(s.defs))*48 + int64(len(s.imports))*48 + int64(len(s.locals))*8
	}
	return a, nil
}

// parse extracts the tags: from the whole file's tree when it has no
// syntax error, else from its segments. prev (may be nil) is the tree
// cache's entry for the file, which parse takes over, and edit turns its
// content into a's. It returns the entry to keep for the next version
// (nil without opt.treeKey).
//
// The entry holds the last tree without an error (or, when there was
// none yet, a parse from scratch) and, while the file has an error, the
// last segmented analysis. Tree-sitter's error recovery depends on the
// tree a parse starts from, so a tree with an error never gives tags
// (TestIncrementalAnalysisAllLanguages).
func (a *analysis) parse(ctx context.Context, g *grammars, opt analyzeOptions, prev *cachedTree, edit sitter.EditInput) (keep *cachedTree, err error) {
	defer func() {
		if prev != nil && keep != prev {
			prev.tree.Close()
		}
	}()
	st, err := g.acquire(a.lang)
	if err != nil {
		return nil, err
	}
	defer g.release()
	p := st.getParser()
	p.SetOperationLimit(opt.parseTimeoutUS)
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
		if prev == nil && opt.treeKey != "" && tree != nil {
			return &cachedTree{key: opt.treeKey, lang: a.lang, content: a.content, tree: tree, seg: a}
		}
		if tree != nil {
			tree.Close()
		}
		if prev == nil {
			return nil
		}
		prev.seg = a
		return prev
	}
	if prev != nil && prev.seg != nil {
		// While the file has an error, only the segments are parsed.
		errs, err := a.parseSegments(ctx, st, p, prev.seg.segs)
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
	src := []byte(a.content)
	tree, err := p.ParseCtx(ctx, old, src)
	if err != nil {
		return nil, err
	}
	if tree.RootNode().HasError() {
		if a.segs == nil {
			var segs []segment
			if prev != nil && prev.an != nil && prev.an.note == "" {
				// The first error after a version without one: that
				// version's segments are its tags, cut.
				segs = prev.an.segmentsOfTags()
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
	a.segs, a.defs, a.imports, a.locals, a.pkg, a.pkgLine = nil, nil, nil, nil, "", 0
	var top []span
	if opt.treeKey != "" || old != nil {
		top = topLevel(tree)
	}
	// After an edit inside one part of the file, only that part is
	// queried; the tags of the rest come from the previous analysis.
	var reg *region
	if old != nil && prev.an != nil && prev.an.note == "" && old.RootNode().Symbol() == tree.RootNode().Symbol() {
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
		a.splice(prev.an, reg)
		a.partial = true
	}
	a.nestDefs()
	a.cleanLocals()
	if opt.treeKey == "" {
		tree.Close()
		return nil, nil
	}
	for i := range top {
		top[i].n = nil // nodes belong to this parse
	}
	return &cachedTree{key: opt.treeKey, lang: a.lang, content: a.content, tree: tree, an: a, top: top}, nil
}

// collect adds the tags of the query cursor's matches to a; with a region,
// only matches that lie in it.
func (a *analysis) collect(qc *sitter.QueryCursor, st *langState, src []byte, reg *region, seen map[[2]uint32]bool) {
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
		var kind defKind
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
				a.locals = append(a.locals, localRef{hashIdent(c.Node.Content(src)), int32(c.Node.StartPoint().Row)})
			default:
				k := len(a.imports)
				a.addImport(capName, c.Node, src, reqFn)
				row := int32(c.Node.StartPoint().Row)
				for j := k; j < len(a.imports); j++ {
					a.imports[j].line = row
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
		d := def{name: name, kind: kind, parent: -1}
		sp, ep := defNode.StartPoint(), defNode.EndPoint()
		d.start, d.end = int32(sp.Row), int32(ep.Row)
		if ep.Column == 0 && d.end > d.start {
			d.end--
		}
		d.headerEnd = d.start
		if body := defNode.ChildByFieldName("body"); body != nil {
			bp := body.StartPoint()
			he := int32(bp.Row)
			lineStart := int(a.lines[bp.Row])
			if isBlank(a.content[lineStart:body.StartByte()]) {
				he-- // body starts on its own line (Python blocks)
			}
			if he > d.start {
				d.headerEnd = min(he, d.start+8, d.end)
			}
		}
		if kind == kindModule && a.lang == langRust && defNode.ChildByFieldName("body") == nil {
			a.imports = append(a.imports, importRef{kind: impRustMod, spec: name, line: d.start})
		}
		a.defs = append(a.defs, d)
	}
}

// cleanLocals sorts locals by line and drops those that are definitions
// (module- or class-level assignments match both patterns).
func (a *analysis) cleanLocals() {
	defAt := make(map[localRef]bool, len(a.defs))
	for i := range a.defs {
		defAt[localRef{hashIdent(a.defs[i].name), a.defs[i].start}] = true
	}
	a.locals = slices.DeleteFunc(a.locals, func(l localRef) bool { return defAt[l] })
	slices.SortFunc(a.locals, func(x, y localRef) int { return int(x.line - y.line) })
	a.locals = slices.Clip(a.locals)
	if len(a.locals) == 0 {
		a.locals = nil
	}
}

// cleanName reduces qualified or generic names to the identifier that code
// uses: "C::m" → "m", "S<T>" → "S", "crate::x::S<T>" → "S".
func cleanName(s string, kind defKind) string {
	if i := strings.IndexByte(s, '<'); i > 0 && kind == kindImpl {
		s = s[:i]
	}
	if i := strings.LastIndex(s, "::"); i >= 0 {
		s = s[i+2:]
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\n<(&*"); i >= 0 && kind == kindImpl {
		s = s[:i]
	}
	return s
}

// nestDefs sorts definitions by position and links each to its innermost
// enclosing definition.
func (a *analysis) nestDefs() {
	slices.SortStableFunc(a.defs, func(x, y def) int {
		if x.start != y.start {
			return int(x.start - y.start)
		}
		return int(y.end - x.end)
	})
	var stack []int32
	for i := range a.defs {
		d := &a.defs[i]
		for len(stack) > 0 && a.defs[stack[len(stack)-1]].end < d.start {
			stack = stack[:len(stack)-1]
		}
		// A definition on the same lines as its would-be parent (e.g. a
		// struct inside a one-line typedef) still nests; ranges are equal
		// or contained.
		for len(stack) > 0 && a.defs[stack[len(stack)-1]].end < d.end {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			d.parent = stack[len(stack)-1]
			if d.kind == kindFunction {
				switch a.defs[d.parent].kind {
				case kindClass, kindImpl:
					d.kind = kindMethod
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

func (a *analysis) addImport(capName string, n *sitter.Node, src []byte, reqFn bool) {
	text := n.Content(src)
	switch capName {
	case "import":
		switch a.lang {
		case langGo:
			a.imports = append(a.imports, importRef{kind: impGo, spec: unquote(text)})
		case langJS, langTS, langTSX:
			a.imports = append(a.imports, importRef{kind: impJS, spec: text})
		case langRust:
			a.imports = append(a.imports, parseRustUse(text))
		case langC, langCPP:
			k := impCQuote
			if strings.HasPrefix(text, "<") {
				k = impCSystem
			}
			a.imports = append(a.imports, importRef{kind: k, spec: unquote(text)})
		}
	case "import.req":
		if reqFn {
			a.imports = append(a.imports, importRef{kind: impJS, spec: text})
		}
	case "import.py":
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			if c.Type() == "aliased_import" {
				c = c.ChildByFieldName("name")
			}
			if c != nil && c.Type() == "dotted_name" {
				a.imports = append(a.imports, importRef{kind: impPython, spec: c.Content(src)})
			}
		}
	case "import.pyfrom":
		ref := importRef{kind: impPythonFrom}
		if m := n.ChildByFieldName("module_name"); m != nil {
			ref.spec = strings.Join(strings.Fields(m.Content(src)), "")
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
				ref.names = append(ref.names, c.Content(src))
			}
		}
		a.imports = append(a.imports, ref)
	case "import.java":
		s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
		s = strings.TrimSpace(strings.TrimPrefix(s, "import"))
		s = strings.TrimSpace(strings.TrimPrefix(s, "static "))
		a.imports = append(a.imports, importRef{kind: impJava, spec: strings.Join(strings.Fields(s), "")})
	case "package":
		s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))
		a.pkg = strings.Join(strings.Fields(strings.TrimPrefix(s, "package")), "")
	}
}

// parseRustUse splits "crate::a::{B, c::D as E}" into the path "crate::a"
// and the names "B", "c::D".
func parseRustUse(text string) importRef {
	s := strings.Join(strings.Fields(text), " ")
	ref := importRef{kind: impRustUse}
	i := strings.Index(s, "{")
	if i < 0 {
		if j := strings.Index(s, " as "); j >= 0 {
			s = s[:j]
		}
		ref.spec = s
		return ref
	}
	ref.spec = strings.TrimSuffix(strings.TrimSpace(s[:i]), "::")
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
			ref.names = append(ref.names, x)
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

// buildChunks indexes windows of lines for lexical similarity. Windows of
// prev (the previous version of the file, may be nil) whose text is the
// same at the same lines keep their terms, so a keystroke re-scans only
// the windows around it. Identifiers never span lines, so scanning one
// window's text finds exactly the occurrences a scan of the whole file
// attributes to its lines.
func (a *analysis) buildChunks(window, stride int, prev *analysis) {
	if window < 1 {
		window = 1
	}
	if stride < 1 || stride > window {
		stride = window
	}
	if prev != nil && prev.lang == a.lang {
		a.buildChunksFrom(prev, window, stride)
		return
	}
	type occ struct {
		t    term
		line int32
	}
	var occs []occ
	line := int32(0)
	scanIdents(a.content, a.lang, func(id string, off int) bool {
		for line+1 < int32(len(a.lines)) && int(a.lines[line+1]) <= off {
			line++
		}
		occs = append(occs, occ{hashIdent(id), line})
		return true
	})
	n := int32(len(a.lines))
	var buf []term
	oi := 0
	for s := int32(0); s < n; s += int32(stride) {
		e := min(s+int32(window)-1, n-1)
		for oi < len(occs) && occs[oi].line < s {
			oi++
		}
		buf = buf[:0]
		for j := oi; j < len(occs) && occs[j].line <= e; j++ {
			buf = append(buf, occs[j].t)
		}
		a.addChunk(s, e, buf)
		if e == n-1 {
			break
		}
	}
}

// buildChunksFrom is buildChunks reusing prev's windows.
func (a *analysis) buildChunksFrom(prev *analysis, window, stride int) {
	n := int32(len(a.lines))
	var buf []term
	pi := 0 // prev.chunks is sorted by start
	for s := int32(0); s < n; s += int32(stride) {
		e := min(s+int32(window)-1, n-1)
		for pi < len(prev.chunks) && prev.chunks[pi].start < s {
			pi++
		}
		text := a.rangeText(s, e)
		if e < prev.numLines() && prev.rangeText(s, e) == text {
			// Same text: the same terms, or no chunk when it had none.
			if pi < len(prev.chunks) && prev.chunks[pi].start == s && prev.chunks[pi].end == e {
				a.chunks = append(a.chunks, prev.chunks[pi])
			}
		} else {
			buf = buf[:0]
			scanIdents(text, a.lang, func(id string, _ int) bool {
				buf = append(buf, hashIdent(id))
				return true
			})
			a.addChunk(s, e, buf)
		}
		if e == n-1 {
			break
		}
	}
}

// addChunk adds the window [s, e] with the identifier terms in buf (which
// it sorts); a window without identifiers is not indexed.
func (a *analysis) addChunk(s, e int32, buf []term) {
	if len(buf) == 0 {
		return
	}
	slices.Sort(buf)
	var terms []termTF
	for k := 0; k < len(buf); {
		j := k
		for j < len(buf) && buf[j] == buf[k] {
			j++
		}
		terms = append(terms, termTF{buf[k], uint16(min(j-k, 65535))})
		k = j
	}
	a.chunks = append(a.chunks, chunk{start: s, end: e, length: uint32(len(buf)), terms: slices.Clip(terms)})
}

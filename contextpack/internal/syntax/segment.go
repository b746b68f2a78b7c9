package syntax

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"
)

// Segments. A file with a syntax error is analysed piece by piece: it is
// cut where a top-level declaration begins, as a lexer sees it (a line at
// column 0 outside strings, comments and braces that starts with a
// declaration keyword), and each piece is parsed on its own. An error
// then stays in its piece: while a statement is half typed, tree-sitter's
// error recovery no longer folds the declarations after it into one ERROR
// node (losing their definitions), and a keystroke parses its piece only,
// reusing the other pieces' tags from the previous version. The tags are
// a function of the text alone, so an analysis still does not depend on
// the versions before it.
//
// A file whose parse has no error keeps the whole-file analysis. So that
// the choice is the same whichever way a version is reached, a cut must
// never fall inside a top-level node of a file without errors: every
// piece of such a file parses without error
// (TestSegmentsMatchWholeOnValidFiles), and a file with an error has a
// piece with one. The cut is lexical, so unusual valid code could still be
// cut inside a node (a JavaScript regular expression holding a quote or a
// backtick, C declarations in K&R style); none of about 4,800 files
// checked in the nine languages was. C and C++ headers are rarely cut: an
// include guard's #ifndef holds the whole file.

// segRules are a language's lexical rules for finding cuts.
type segRules struct {
	slash    bool     // // and /* */ comments
	nested   bool     // /* */ comments nest (Rust)
	hash     bool     // # comments (Python)
	braces   bool     // cut only outside braces
	preproc  bool     // C preprocessor: # directives, cut only outside #if
	keywords []string // a cut before a line starting with one of these
	deco     string   // decorators/attributes: a cut before the first of a run
	afterEnd bool     // C: a cut before a line starting with an identifier after a line ending in ';' or '}'
}

var segLangRules = [NumLangs]*segRules{
	LangGo:     {slash: true, braces: true, keywords: []string{"func ", "type ", "var ", "const ", "import "}},
	LangPython: {hash: true, keywords: []string{"def ", "class ", "async def "}, deco: "@"},
	LangJS: {slash: true, braces: true, deco: "@", keywords: []string{"function ", "function*", "async function",
		"class ", "export ", "const ", "let ", "var ", "import "}},
	LangTS: {slash: true, braces: true, deco: "@", keywords: []string{"function ", "function*", "async function",
		"class ", "abstract class", "export ", "const ", "let ", "var ", "import ", "interface ", "type ", "enum ",
		"declare ", "namespace "}},
	LangJava: {slash: true, braces: true, deco: "@", keywords: []string{"public ", "protected ", "private ",
		"class ", "interface ", "enum ", "record ", "abstract ", "final ", "sealed ", "non-sealed ", "@interface",
		"import ", "package "}},
	LangRust: {slash: true, nested: true, braces: true, deco: "#[", keywords: []string{"fn ", "pub ", "pub(",
		"impl", "struct ", "enum ", "union ", "trait ", "mod ", "use ", "const ", "static ", "type ", "macro_rules!",
		"unsafe ", "async ", "extern "}},
	LangC:   {slash: true, braces: true, preproc: true, afterEnd: true},
	LangCPP: {slash: true, braces: true, preproc: true, afterEnd: true},
}

func init() { segLangRules[LangTSX] = segLangRules[LangTS] }

// segmentStarts returns the byte offsets at which the segments of s begin;
// the first is 0.
func segmentStarts(s string, lang Lang) []int32 {
	starts := []int32{0}
	r := segLangRules[lang]
	if r == nil {
		return starts
	}
	depth, pp := 0, 0
	inDeco := false
	last := byte(';') // last code byte before this point (C's afterEnd)
	for i := 0; i < len(s); {
		if i == 0 || s[i-1] == '\n' {
			if r.preproc && isDirective(s, i) {
				pp = directiveDepth(s, i, pp)
				i = directiveEnd(s, i)
				last = ';'
				continue
			}
			if depth == 0 && pp == 0 && i > 0 && r.cutAt(s[i:], &inDeco, last) {
				starts = append(starts, int32(i))
			}
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case r.slash && c == '/' && i+1 < len(s) && s[i+1] == '/', r.hash && c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case r.slash && c == '/' && i+1 < len(s) && s[i+1] == '*':
			i = skipBlockComment(s, i, r.nested)
			continue
		case r.braces && c == '{':
			depth++
		case r.braces && c == '}':
			depth = max(depth-1, 0)
		}
		if j := skipString(s, i, lang); j > i {
			i, last = j, '"'
			continue
		}
		last = c
		i++
	}
	return starts
}

// cutAt reports whether a segment starts at line (which begins at column
// 0 outside strings, comments and braces).
func (r *segRules) cutAt(line string, inDeco *bool, last byte) bool {
	if r.afterEnd {
		return len(line) > 0 && isIdentStart(line[0]) && (last == ';' || last == '}')
	}
	if r.deco != "" && strings.HasPrefix(line, r.deco) && !strings.HasPrefix(line, "@interface") {
		cut := !*inDeco
		*inDeco = true
		return cut
	}
	for _, k := range r.keywords {
		if strings.HasPrefix(line, k) {
			cut := !*inDeco
			*inDeco = false
			return cut
		}
	}
	return false
}

// isDirective reports whether the line at i is a preprocessor directive.
func isDirective(s string, i int) bool {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i < len(s) && s[i] == '#'
}

// directiveDepth returns the #if nesting after the directive at i.
func directiveDepth(s string, i, pp int) int {
	i = strings.IndexByte(s[i:], '#') + i + 1
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	switch w := s[i:min(len(s), i+6)]; {
	case strings.HasPrefix(w, "if"): // if, ifdef, ifndef
		return pp + 1
	case strings.HasPrefix(w, "endif"):
		return max(pp-1, 0)
	}
	return pp
}

// directiveEnd returns the start of the line after the directive at i,
// following backslash continuations.
func directiveEnd(s string, i int) int {
	for {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s)
		}
		i += j + 1
		k := i - 2
		if k >= 0 && s[k] == '\r' {
			k--
		}
		if k < 0 || s[k] != '\\' {
			return i
		}
	}
}

func skipBlockComment(s string, i int, nested bool) int {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 || !nested {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipString returns the end of the string or character literal that
// starts at i, or i when none does. Literals that cannot span lines end
// at the line's end when unterminated (an opening quote being typed does
// not hide the rest of the file).
func skipString(s string, i int, lang Lang) int {
	c := s[i]
	switch lang {
	case LangGo:
		switch c {
		case '"', '\'':
			return skipQuoted(s, i+1, c, false)
		case '`':
			return skipRaw(s, i+1, "`")
		}
	case LangPython:
		switch {
		case strings.HasPrefix(s[i:], `"""`), strings.HasPrefix(s[i:], `'''`):
			return skipQuotedUntil(s, i+3, s[i:i+3])
		case c == '"', c == '\'':
			return skipQuoted(s, i+1, c, false)
		}
	case LangJS, LangTS, LangTSX:
		switch c {
		case '"', '\'':
			return skipQuoted(s, i+1, c, false)
		case '`':
			return skipTemplate(s, i+1, 0)
		}
	case LangJava:
		switch {
		case strings.HasPrefix(s[i:], `"""`):
			return skipQuotedUntil(s, i+3, `"""`)
		case c == '"', c == '\'':
			return skipQuoted(s, i+1, c, false)
		}
	case LangRust:
		switch {
		case c == '"':
			return skipQuoted(s, i+1, '"', true)
		case c == '\'':
			return skipRustChar(s, i)
		case c == 'r' && (i == 0 || !isIdentByte(s[i-1]) || s[i-1] == 'b' && (i == 1 || !isIdentByte(s[i-2]))):
			j := i + 1
			for j < len(s) && s[j] == '#' {
				j++
			}
			if j < len(s) && s[j] == '"' {
				return skipRaw(s, j+1, `"`+s[i+1:j])
			}
		}
	case LangC, LangCPP:
		switch {
		case c == '"', c == '\'':
			return skipQuoted(s, i+1, c, false)
		case lang == LangCPP && c == 'R' && i+1 < len(s) && s[i+1] == '"' && (i == 0 || !isIdentByte(s[i-1]) || strings.IndexByte("8uUL", s[i-1]) >= 0):
			if k := strings.IndexByte(s[i+2:min(len(s), i+20)], '('); k >= 0 {
				return skipRaw(s, i+3+k, ")"+s[i+2:i+2+k]+`"`)
			}
		}
	}
	return i
}

// skipQuoted skips a literal with backslash escapes up to quote; one that
// is not multiline also ends at the end of the line.
func skipQuoted(s string, i int, quote byte, multiline bool) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case quote:
			return i + 1
		case '\n':
			if !multiline {
				return i
			}
		}
		i++
	}
	return len(s)
}

// skipQuotedUntil skips a multi-line literal with escapes up to end.
func skipQuotedUntil(s string, i int, end string) int {
	for i < len(s) {
		if s[i] == '\\' {
			i += 2
			continue
		}
		if strings.HasPrefix(s[i:], end) {
			return i + len(end)
		}
		i++
	}
	return len(s)
}

// skipRaw skips a literal without escapes up to end.
func skipRaw(s string, i int, end string) int {
	if k := strings.Index(s[min(i, len(s)):], end); k >= 0 {
		return i + k + len(end)
	}
	return len(s)
}

// skipTemplate skips a JavaScript template literal, with the code of its
// ${} substitutions (which may hold strings and templates, nested up to
// maxTemplateDepth: deeper, a substitution is taken as text).
func skipTemplate(s string, i, depth int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case '`':
			return i + 1
		case '$':
			if i+1 < len(s) && s[i+1] == '{' && depth < maxTemplateDepth {
				i = skipSubstitution(s, i+2, depth+1)
				continue
			}
		}
		i++
	}
	return len(s)
}

const maxTemplateDepth = 32

// skipSubstitution skips code up to the '}' that closes a ${.
func skipSubstitution(s string, i, tdepth int) int {
	depth := 0
	for i < len(s) {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i + 1
			}
			depth--
		case '"', '\'':
			i = skipQuoted(s, i+1, s[i], false)
			continue
		case '`':
			i = skipTemplate(s, i+1, tdepth)
			continue
		}
		i++
	}
	return len(s)
}

// skipRustChar skips a character literal ('a', '\n', 'é'); a quote that
// starts none is a lifetime ('a), skipped alone.
func skipRustChar(s string, i int) int {
	if i+1 < len(s) && s[i+1] == '\\' {
		if k := strings.IndexByte(s[i+2:min(len(s), i+14)], '\''); k >= 0 {
			return i + 3 + k
		}
		return i + 1
	}
	if i+1 < len(s) {
		_, w := utf8.DecodeRuneInString(s[i+1:])
		if i+1+w < len(s) && s[i+1+w] == '\'' {
			return i + 2 + w
		}
	}
	return i + 1
}

// segment is a piece of a file analysed on its own: its text and its
// tags, with lines relative to its first line.
type segment struct {
	text    string
	line    int32 // of its first line in the file
	errs    bool  // its parse has a syntax error
	defs    []Def
	imports []Import
	locals  []Local
	pkg     string
	pkgLine int32
}

// parseSegments fills a's tags from its segments, parsed one by one;
// segments whose text is one of prev's (a previous version's segments,
// may be nil) keep their tags. It reports whether a segment has an error.
func (a *Analysis) parseSegments(ctx context.Context, st *langState, p *sitter.Parser, prev []segment) (bool, error) {
	old := make(map[string]*segment, len(prev))
	for i := range prev {
		old[prev[i].text] = &prev[i]
	}
	starts := segmentStarts(a.Content, a.Lang)
	a.segs = make([]segment, len(starts))
	var qc *sitter.QueryCursor
	defer func() {
		if qc != nil {
			qc.Close()
		}
	}()
	errs := false
	for k, s := range starts {
		e := int32(len(a.Content))
		if k+1 < len(starts) {
			e = starts[k+1]
		}
		line := a.LineOf(int(s))
		if o := old[a.Content[s:e]]; o != nil {
			a.segs[k] = *o
			a.segs[k].line = line
		} else {
			if qc == nil {
				qc = sitter.NewQueryCursor()
			}
			seg, err := parseSegment(ctx, st, p, qc, a.Lang, a.Content[s:e])
			if err != nil {
				return false, err
			}
			seg.line = line
			a.segs[k] = seg
		}
		errs = errs || a.segs[k].errs
	}
	a.Defs, a.Imports, a.Locals, a.pkg, a.pkgLine = nil, nil, nil, "", 0
	for _, sg := range a.segs {
		for _, d := range sg.defs {
			d.Start, d.End, d.HeaderEnd = d.Start+sg.line, d.End+sg.line, d.HeaderEnd+sg.line
			a.Defs = append(a.Defs, d)
		}
		for _, im := range sg.imports {
			im.Line += sg.line
			a.Imports = append(a.Imports, im)
		}
		for _, l := range sg.locals {
			l.Line += sg.line
			a.Locals = append(a.Locals, l)
		}
		if sg.pkg != "" && a.pkg == "" {
			a.pkg, a.pkgLine = sg.pkg, sg.pkgLine+sg.line
		}
	}
	return errs, nil
}

// parseSegment parses and queries one segment's text.
func parseSegment(ctx context.Context, st *langState, p *sitter.Parser, qc *sitter.QueryCursor, lang Lang, text string) (segment, error) {
	src := []byte(text)
	tree, err := p.ParseCtx(ctx, nil, src)
	if err != nil {
		return segment{}, err
	}
	defer tree.Close()
	sa := &Analysis{Lang: lang, Content: text, Lines: LineStarts(text)}
	root := tree.RootNode()
	qc.Exec(st.query, root)
	sa.collect(qc, st, src, nil, map[[2]uint32]bool{})
	return segment{text: text, errs: root.HasError(), defs: sa.Defs, imports: sa.Imports, locals: sa.Locals,
		pkg: sa.pkg, pkgLine: sa.pkgLine}, nil
}

// segmentsOfTags cuts the tags of a's whole-file analysis (of a file
// without a syntax error) into its segments: what parsing each segment
// finds (TestSegmentsMatchWholeOnValidFiles), without parsing.
func (a *Analysis) segmentsOfTags() []segment {
	starts := segmentStarts(a.Content, a.Lang)
	segs := make([]segment, len(starts))
	for k, s := range starts {
		e := len(a.Content)
		if k+1 < len(starts) {
			e = int(starts[k+1])
		}
		segs[k] = segment{text: a.Content[s:e], line: a.LineOf(int(s))}
	}
	at := func(line int32) *segment {
		k, _ := slices.BinarySearchFunc(segs, line, func(s segment, l int32) int { return int(s.line - l) })
		if k == len(segs) || segs[k].line > line {
			k--
		}
		return &segs[k]
	}
	for _, d := range a.Defs {
		sg := at(d.Start)
		d.Start, d.End, d.HeaderEnd, d.Parent = d.Start-sg.line, d.End-sg.line, d.HeaderEnd-sg.line, -1
		sg.defs = append(sg.defs, d)
	}
	for _, im := range a.Imports {
		sg := at(im.Line)
		im.Line -= sg.line
		sg.imports = append(sg.imports, im)
	}
	for _, l := range a.Locals {
		sg := at(l.Line)
		l.Line -= sg.line
		sg.locals = append(sg.locals, l)
	}
	if a.pkg != "" {
		sg := at(a.pkgLine)
		sg.pkg, sg.pkgLine = a.pkg, a.pkgLine-sg.line
	}
	return segs
}

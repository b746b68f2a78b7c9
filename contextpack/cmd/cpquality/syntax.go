package main

import (
	"context"
	"path"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/c"
	"github.com/smacker/go-tree-sitter/cpp"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/java"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

// The metric's own reading of source code. It parses with tree-sitter
// directly and shares no code with contextpack, so that a bug in what is
// measured cannot hide in the measurement.
//
// A file's words are split into two kinds of occurrence:
//
//   - code identifiers: the leaves of the grammar's identifier node types
//     (langSpec.idents), wherever they are in the tree, plus the words of
//     text the grammar leaves unparsed but which is code (C/C++ macro
//     bodies, langSpec.codeText) and of code inside strings (f-string and
//     template-string substitutions, langSpec.interps);
//   - prose words: the words of comments and string literals (outside
//     their substitutions).
//
// Keywords are never identifier nodes, so they are neither. Words are
// runs of ASCII letters, digits, '_' and '$' and Unicode letters and
// digits, not starting with a digit, at least two bytes long.

// lang is a language the tool parses; langNone files (Markdown, JSON, …)
// have no code identifiers.
type lang uint8

const (
	langNone lang = iota
	langGo
	langPython
	langJS
	langTS
	langTSX
	langJava
	langRust
	langC
	langCPP
	numLangs
)

// langSpec says how one grammar's nodes are read.
type langSpec struct {
	group    string // the report's language row
	grammar  func() *sitter.Language
	idents   []string // identifier leaves: code
	comments []string // prose
	strs     []string // string literals: prose, but for interps children
	interps  []string // code inside a string literal
	codeText []string // unparsed leaves whose words are code, but for keywords
	keywords []string // left out of codeText's words
	// predeclared names are identifiers the language or its core library
	// defines: a model knows them without repository context, so they are
	// never "needed" (they stay code identifiers of the file).
	predeclared []string
}

var jsIdents = []string{"identifier", "property_identifier", "shorthand_property_identifier",
	"shorthand_property_identifier_pattern", "private_property_identifier", "statement_identifier"}

var jsPredeclared = []string{"undefined", "NaN", "Infinity", "globalThis", "window", "document", "console",
	"Object", "Array", "String", "Number", "Boolean", "Symbol", "BigInt", "Function", "Promise", "Error",
	"TypeError", "RangeError", "SyntaxError", "Map", "Set", "WeakMap", "WeakSet", "JSON", "Math", "Date",
	"RegExp", "Reflect", "Proxy", "parseInt", "parseFloat", "isNaN", "isFinite", "setTimeout", "clearTimeout",
	"setInterval", "clearInterval", "require", "module", "exports", "length", "prototype", "constructor",
	"toString", "push", "then", "catch"}

var tsPredeclared = append(append([]string{}, jsPredeclared...), "Record", "Partial", "Required", "Readonly",
	"Pick", "Omit", "Exclude", "Extract", "NonNullable", "ReturnType", "Parameters", "InstanceType", "Awaited",
	"Uppercase", "Lowercase", "Capitalize", "Uncapitalize", "ReadonlyArray", "PromiseLike", "ArrayLike",
	"Iterable", "IterableIterator", "AsyncIterable", "Uint8Array", "ArrayBuffer")

var cPredeclared = []string{"NULL", "size_t", "ssize_t", "printf", "fprintf", "sprintf", "snprintf", "malloc",
	"calloc", "realloc", "free", "memcpy", "memset", "memmove", "memcmp", "strlen", "strcmp", "strncmp",
	"strcpy", "strncpy", "strcat", "strchr", "strrchr", "strstr", "assert", "exit", "abort", "stderr", "stdout",
	"stdin", "errno", "FILE", "va_list", "va_start", "va_end", "va_arg", "uint8_t", "uint16_t", "uint32_t",
	"uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "uintptr_t", "intptr_t"}

var cKeywords = []string{"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
	"enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
	"short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
	"volatile", "while", "defined", "bool", "true", "false"}

var cppKeywords = append(append([]string{}, cKeywords...), "class", "namespace", "template", "typename",
	"public", "private", "protected", "virtual", "override", "new", "delete", "this", "nullptr", "operator",
	"constexpr", "noexcept", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "decltype",
	"explicit", "friend", "mutable", "using", "throw", "try", "catch")

var cppPredeclared = append(append([]string{}, cPredeclared...), "std", "string", "vector", "map",
	"unordered_map", "set", "unordered_set", "pair", "make_pair", "unique_ptr", "shared_ptr", "make_unique",
	"make_shared", "move", "forward", "size", "begin", "end", "push_back", "emplace_back", "cout", "cerr",
	"endl", "nullptr_t", "string_view", "optional", "function", "array", "tuple")

var langSpecs = [numLangs]langSpec{
	langGo: {group: "Go", grammar: golang.GetLanguage,
		idents:   []string{"identifier", "type_identifier", "field_identifier", "package_identifier", "label_name"},
		comments: []string{"comment"},
		strs:     []string{"interpreted_string_literal", "raw_string_literal", "rune_literal"},
		predeclared: []string{"any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32",
			"float64", "int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16",
			"uint32", "uint64", "uintptr", "true", "false", "iota", "nil", "append", "cap", "clear", "close",
			"complex", "copy", "delete", "imag", "len", "make", "max", "min", "new", "panic", "print", "println",
			"real", "recover"}},
	langPython: {group: "Python", grammar: python.GetLanguage,
		idents:   []string{"identifier"},
		comments: []string{"comment"},
		strs:     []string{"string"},
		interps:  []string{"interpolation"},
		predeclared: []string{"self", "cls", "object", "type", "int", "float", "str", "bytes", "bool", "list",
			"dict", "set", "frozenset", "tuple", "len", "range", "enumerate", "zip", "map", "filter", "sorted",
			"reversed", "print", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "delattr", "super",
			"open", "iter", "next", "repr", "hash", "id", "min", "max", "sum", "any", "all", "abs", "round",
			"format", "callable", "property", "staticmethod", "classmethod", "vars", "divmod", "ord", "chr",
			"Exception", "BaseException", "ValueError", "TypeError", "KeyError", "IndexError", "AttributeError",
			"RuntimeError", "NotImplementedError", "StopIteration", "OSError", "IOError", "ImportError",
			"AssertionError", "NotImplemented", "Ellipsis", "__name__", "__init__", "__file__"}},
	langJS: {group: "JavaScript", grammar: javascript.GetLanguage,
		idents:      jsIdents,
		comments:    []string{"comment", "html_comment"},
		strs:        []string{"string", "template_string", "regex", "jsx_text"},
		interps:     []string{"template_substitution"},
		predeclared: jsPredeclared},
	langTS: {group: "TypeScript", grammar: typescript.GetLanguage,
		idents:      append(append([]string{}, jsIdents...), "type_identifier"),
		comments:    []string{"comment", "html_comment"},
		strs:        []string{"string", "template_string", "regex"},
		interps:     []string{"template_substitution"},
		predeclared: tsPredeclared},
	langTSX: {group: "TypeScript", grammar: tsx.GetLanguage,
		idents:      append(append([]string{}, jsIdents...), "type_identifier"),
		comments:    []string{"comment", "html_comment"},
		strs:        []string{"string", "template_string", "regex", "jsx_text"},
		interps:     []string{"template_substitution"},
		predeclared: tsPredeclared},
	langJava: {group: "Java", grammar: java.GetLanguage,
		idents:   []string{"identifier", "type_identifier"},
		comments: []string{"line_comment", "block_comment"},
		strs:     []string{"string_literal", "character_literal"},
		predeclared: []string{"String", "Object", "Integer", "Long", "Double", "Float", "Boolean", "Character",
			"Byte", "Short", "Number", "Void", "System", "Math", "StringBuilder", "Class", "Iterable",
			"Comparable", "Runnable", "Thread", "Throwable", "Exception", "RuntimeException", "Error",
			"IllegalArgumentException", "IllegalStateException", "NullPointerException",
			"UnsupportedOperationException", "IndexOutOfBoundsException", "ClassCastException",
			"InterruptedException", "CharSequence", "AutoCloseable", "Cloneable", "Enum", "Override",
			"Deprecated", "SuppressWarnings", "FunctionalInterface", "SafeVarargs", "out", "println",
			"equals", "hashCode", "toString", "length", "size"}},
	langRust: {group: "Rust", grammar: rust.GetLanguage,
		idents:   []string{"identifier", "type_identifier", "field_identifier", "shorthand_field_identifier"},
		comments: []string{"line_comment", "block_comment"},
		strs:     []string{"string_literal", "raw_string_literal", "char_literal"},
		predeclared: []string{"Self", "Option", "Some", "None", "Result", "Ok", "Err", "Vec", "String", "Box",
			"Copy", "Clone", "Send", "Sync", "Sized", "Drop", "Fn", "FnMut", "FnOnce", "Default", "Debug",
			"Display", "Iterator", "IntoIterator", "Into", "From", "ToString", "ToOwned", "PartialEq", "Eq",
			"PartialOrd", "Ord", "Hash", "AsRef", "AsMut", "println", "print", "eprintln", "eprint", "format",
			"vec", "assert", "assert_eq", "assert_ne", "debug_assert", "panic", "write", "writeln", "matches",
			"todo", "unimplemented", "unreachable", "derive", "cfg", "test", "std", "new", "len", "unwrap",
			"clone", "to_string", "iter", "map", "collect"}},
	langC: {group: "C/C++", grammar: c.GetLanguage,
		idents:      []string{"identifier", "type_identifier", "field_identifier", "statement_identifier"},
		comments:    []string{"comment"},
		strs:        []string{"string_literal", "char_literal", "system_lib_string"},
		codeText:    []string{"preproc_arg"},
		keywords:    cKeywords,
		predeclared: cPredeclared},
	langCPP: {group: "C/C++", grammar: cpp.GetLanguage,
		idents: []string{"identifier", "type_identifier", "field_identifier", "statement_identifier",
			"namespace_identifier"},
		comments:    []string{"comment"},
		strs:        []string{"string_literal", "char_literal", "system_lib_string", "raw_string_literal"},
		codeText:    []string{"preproc_arg"},
		keywords:    cppKeywords,
		predeclared: cppPredeclared},
}

var extLangs = map[string]lang{
	".go": langGo,
	".py": langPython, ".pyi": langPython,
	".js": langJS, ".mjs": langJS, ".cjs": langJS, ".jsx": langJS,
	".ts": langTS, ".mts": langTS, ".cts": langTS,
	".tsx":  langTSX,
	".java": langJava,
	".rs":   langRust,
	".c":    langC, ".h": langC,
	".cc": langCPP, ".cpp": langCPP, ".cxx": langCPP, ".hh": langCPP, ".hpp": langCPP, ".hxx": langCPP,
	".cu": langCPP, ".cuh": langCPP, ".ipp": langCPP, ".tpp": langCPP,
}

// langOf is a path's language; a .h header is C++ in a repository that
// has C++ sources (cppHeaders).
func langOf(p string, cppHeaders bool) lang {
	ext := strings.ToLower(path.Ext(p))
	if ext == ".h" && cppHeaders {
		return langCPP
	}
	return extLangs[ext]
}

// node classes of a grammar's symbols.
const (
	clsOther uint8 = iota
	clsIdent
	clsComment
	clsString
	clsInterp
	clsCodeText
)

type grammarInfo struct {
	lang        *sitter.Language
	classes     []uint8 // by symbol
	predeclared map[string]bool
	keywords    map[string]bool
}

var (
	grammarsOnce [numLangs]sync.Once
	grammars     [numLangs]*grammarInfo
)

func grammarOf(l lang) *grammarInfo {
	if l == langNone || l >= numLangs {
		return nil
	}
	grammarsOnce[l].Do(func() {
		sp := &langSpecs[l]
		g := &grammarInfo{lang: sp.grammar(), predeclared: map[string]bool{}, keywords: map[string]bool{}}
		byName := map[string]uint8{}
		for _, lst := range []struct {
			names []string
			cls   uint8
		}{{sp.idents, clsIdent}, {sp.comments, clsComment}, {sp.strs, clsString}, {sp.interps, clsInterp},
			{sp.codeText, clsCodeText}} {
			for _, n := range lst.names {
				byName[n] = lst.cls
			}
		}
		n := g.lang.SymbolCount()
		g.classes = make([]uint8, n)
		for s := uint32(0); s < n; s++ {
			sym := sitter.Symbol(s)
			if g.lang.SymbolType(sym) != sitter.SymbolTypeRegular {
				continue
			}
			g.classes[s] = byName[g.lang.SymbolName(sym)]
		}
		for _, p := range sp.predeclared {
			g.predeclared[p] = true
		}
		for _, k := range sp.keywords {
			g.keywords[k] = true
		}
		grammars[l] = g
	})
	return grammars[l]
}

// occurrence is one word of a file.
type occurrence struct {
	start, end int32
	code       bool
	name       string
}

// fileSyntax is a file's words, in order, with its line starts.
type fileSyntax struct {
	lang      lang
	occs      []occurrence // by start
	lineStart []int32
	parsed    bool // a grammar read it (else occs is empty)
}

// parse parses content as language l; nil when l has no grammar. The
// caller closes the tree.
func parse(content string, l lang) (*sitter.Tree, *grammarInfo) {
	g := grammarOf(l)
	if g == nil {
		return nil, nil
	}
	p := sitter.NewParser()
	defer p.Close()
	p.SetLanguage(g.lang)
	tree, err := p.ParseCtx(context.Background(), nil, []byte(content))
	if err != nil || tree == nil {
		return nil, nil
	}
	return tree, g
}

// analyzeFile reads content as language l.
func analyzeFile(content string, l lang) *fileSyntax {
	fs := &fileSyntax{lang: l, lineStart: lineStarts(content)}
	tree, g := parse(content, l)
	if tree == nil {
		return fs
	}
	defer tree.Close()
	w := walker{g: g, src: content}
	w.walk(tree.RootNode())
	sort.SliceStable(w.occs, func(i, j int) bool { return w.occs[i].start < w.occs[j].start })
	fs.occs, fs.parsed = w.occs, true
	return fs
}

type walker struct {
	g    *grammarInfo
	src  string
	occs []occurrence
}

func (w *walker) class(n *sitter.Node) uint8 {
	s := int(n.Symbol())
	if s < len(w.g.classes) {
		return w.g.classes[s]
	}
	return clsOther
}

// walk visits n's subtree in order.
func (w *walker) walk(root *sitter.Node) {
	c := sitter.NewTreeCursor(root)
	defer c.Close()
	for {
		n := c.CurrentNode()
		descend := true
		switch w.class(n) {
		case clsIdent:
			// As words: a JS private name loses its '#', a JSX attribute
			// (aria-label) is two words, as a reader of the text sees them.
			w.words(int(n.StartByte()), int(n.EndByte()), true)
			descend = false
		case clsComment:
			w.words(int(n.StartByte()), int(n.EndByte()), false)
			descend = false
		case clsString:
			w.stringNode(n)
			descend = false
		case clsCodeText:
			w.words(int(n.StartByte()), int(n.EndByte()), true)
			descend = false
		}
		if descend && c.GoToFirstChild() {
			continue
		}
		for !c.GoToNextSibling() {
			if !c.GoToParent() {
				return
			}
		}
	}
}

// stringNode reads a string literal: prose, except substitutions (code),
// which may hold strings themselves.
func (w *walker) stringNode(n *sitter.Node) {
	at := int(n.StartByte())
	for i := 0; i < int(n.NamedChildCount()); i++ {
		ch := n.NamedChild(i)
		if w.class(ch) != clsInterp {
			continue
		}
		w.words(at, int(ch.StartByte()), false)
		w.walk(ch)
		at = int(ch.EndByte())
	}
	w.words(at, int(n.EndByte()), false)
}

func (w *walker) words(s, e int, code bool) {
	if s >= e || e > len(w.src) {
		return
	}
	scanWords(w.src[s:e], func(word string, off int) {
		if code && w.g.keywords[word] {
			return
		}
		w.occs = append(w.occs, occurrence{start: int32(s + off), end: int32(s + off + len(word)), code: code, name: word})
	})
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || (c|0x20) >= 'a' && (c|0x20) <= 'z' || c >= '0' && c <= '9'
}

// scanWords calls fn for each word of s (see the package comment) with
// its byte offset.
func scanWords(s string, fn func(word string, off int)) {
	for i := 0; i < len(s); {
		j := i
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if !isWordByte(c) {
					break
				}
				j++
				continue
			}
			r, n := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			j += n
		}
		if j == i {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		if c := s[i]; !(c >= '0' && c <= '9') && j-i >= 2 {
			fn(s[i:j], i)
		}
		i = j
	}
}

// wordSet is the words of s.
func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	scanWords(s, func(w string, _ int) { m[w] = true })
	return m
}

func lineStarts(s string) []int32 {
	ls := []int32{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			ls = append(ls, int32(i+1))
		}
	}
	return ls
}

// numLines counts lines (a final line without a newline included).
func (fs *fileSyntax) numLines() int { return len(fs.lineStart) }

// line is line i's text without its newline.
func (fs *fileSyntax) line(content string, i int) string {
	s := int(fs.lineStart[i])
	e := len(content)
	if i+1 < len(fs.lineStart) {
		e = int(fs.lineStart[i+1]) - 1
	}
	if s > e {
		return ""
	}
	return content[s:e]
}

// overlapping calls fn for the occurrences that overlap [s, e).
func (fs *fileSyntax) overlapping(s, e int, fn func(o occurrence)) {
	// Occurrences do not overlap each other, so their ends are sorted too.
	i := sort.Search(len(fs.occs), func(i int) bool { return int(fs.occs[i].end) > s })
	for ; i < len(fs.occs) && int(fs.occs[i].start) < e; i++ {
		if int(fs.occs[i].end) > s {
			fn(fs.occs[i])
		}
	}
}

// lineCode adds the code identifiers that start on line i to m.
func (fs *fileSyntax) lineCode(i int, m map[string]bool) {
	s := fs.lineStart[i]
	e := int32(1 << 30)
	if i+1 < len(fs.lineStart) {
		e = fs.lineStart[i+1]
	}
	k := sort.Search(len(fs.occs), func(k int) bool { return fs.occs[k].start >= s })
	for ; k < len(fs.occs) && fs.occs[k].start < e; k++ {
		if fs.occs[k].code {
			m[fs.occs[k].name] = true
		}
	}
}

// middleWords splits the words that overlap the middle [s, e) into code
// identifiers that count (not predeclared) and prose words that are not
// also code identifiers of the middle.
func (fs *fileSyntax) middleWords(s, e int) (code, prose []string) {
	g := grammarOf(fs.lang)
	seen := map[string]bool{}
	var pr []string
	fs.overlapping(s, e, func(o occurrence) {
		if !o.code {
			pr = append(pr, o.name)
			return
		}
		if seen[o.name] || g != nil && g.predeclared[o.name] {
			return
		}
		seen[o.name] = true
		code = append(code, o.name)
	})
	codeAll := map[string]bool{}
	fs.overlapping(s, e, func(o occurrence) {
		if o.code {
			codeAll[o.name] = true
		}
	})
	ps := map[string]bool{}
	for _, w := range pr {
		if !codeAll[w] && !ps[w] {
			ps[w] = true
			prose = append(prose, w)
		}
	}
	return code, prose
}

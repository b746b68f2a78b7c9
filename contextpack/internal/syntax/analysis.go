package syntax

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// DefKind is the kind of a definition found by the tags query.
type DefKind uint8

const (
	KindFunction DefKind = iota + 1
	KindMethod
	KindClass
	KindType
	KindVar
	KindConst
	KindField
	KindModule
	KindMacro
	KindImpl
	KindProto
)

var defKindNames = map[string]DefKind{
	"def.function": KindFunction, "def.method": KindMethod, "def.class": KindClass, "def.type": KindType,
	"def.var": KindVar, "def.const": KindConst, "def.field": KindField, "def.module": KindModule,
	"def.macro": KindMacro, "def.impl": KindImpl, "def.proto": KindProto,
}

func (k DefKind) String() string {
	for n, v := range defKindNames {
		if v == k {
			return strings.TrimPrefix(n, "def.")
		}
	}
	return "?"
}

// IsScope reports whether a definition of this kind encloses code whose
// header tells the model where it is (class line, function signature).
func (k DefKind) IsScope() bool {
	switch k {
	case KindFunction, KindMethod, KindClass, KindModule, KindImpl:
		return true
	}
	return false
}

// IsMember reports kinds that are best shown inside their parent.
func (k DefKind) IsMember() bool { return k == KindField }

// Def is one definition in a file. Lines are 0-based and inclusive.
type Def struct {
	Name      string
	Kind      DefKind
	Start     int32
	End       int32
	HeaderEnd int32
	Parent    int32 // index of the innermost enclosing def, or -1
}

// ImportKind is the form of an import statement.
type ImportKind uint8

const (
	ImportPython     ImportKind = iota + 1 // import a.b.c
	ImportPythonFrom                       // from (.)a.b import x, y
	ImportGo                               // "path/to/pkg"
	ImportJS                               // './x', '../y', 'pkg'
	ImportJava                             // a.b.C or a.b.*
	ImportRustUse                          // crate::a::b, with names from {..}
	ImportRustMod                          // mod foo;
	ImportCQuote                           // #include "x.h"
	ImportCSystem                          // #include <x.h>
)

// Import is an import statement: what it imports (Spec, and Names for
// the forms that name members) and its line.
type Import struct {
	Kind  ImportKind
	Spec  string
	Names []string
	Line  int32 // of the import statement
	// Reexport marks a JavaScript/TypeScript export ... from statement
	// (Names empty: export * from); its Names are the names it exports,
	// and Sources, when any is renamed ("export {default as X} from"),
	// the names they have in the module it re-exports, one for each.
	Reexport bool
	Sources  []string
}

// Local is a parameter or local variable declared on a line.
type Local struct {
	Term Term
	Line int32
}

// TermCount is a term and its frequency in a chunk.
type TermCount struct {
	Term  Term
	Count uint16
}

// Chunk is a window of lines indexed for lexical similarity.
type Chunk struct {
	Start, End int32 // lines, inclusive
	Length     uint32
	Terms      []TermCount
}

// Analysis is everything derived from one file content in one language.
// It is immutable once built and shared between requests and goroutines.
type Analysis struct {
	Lang    Lang
	Content string
	Lines   []int32 // byte offset of each line start
	Defs    []Def   // sorted by start line
	Imports []Import
	Locals  []Local   // parameters and local variables, by line
	pkg     string    // Java package
	pkgLine int32     // line of the package declaration, when pkg is set
	partial bool      // tags queried around an edit only, the rest from the previous version
	segs    []segment // with a syntax error: the segments the tags come from
	Chunks  []Chunk
	Note    string // why the file was treated as plain text, if it was
	Bytes   int64  // memory estimate, content excluded

	// View, when set, is the typing view this analysis takes its tags
	// from; its text differs at line ViewLine only (WithText).
	View     *Analysis
	ViewLine int32

	TokenCounts TokenCounts // of line ranges, for the counter that fills it

	fileTerms fileTermsCache // whole-file terms, for the ExecRepoBench baseline only
	memo      analysisMemo
}

// TokenCounts caches the token counts of line ranges of an analysis's
// text for the counter that fills it (a Builder counts with one
// tokenizer); the analysis itself never reads it.
type TokenCounts struct {
	mu     sync.Mutex
	counts map[uint64]int32
}

// maxTokenCounts bounds the ranges one analysis keeps counts of.
const maxTokenCounts = 4096

// Get returns the count kept for lines [first, last].
func (c *TokenCounts) Get(first, last int32) (int32, bool) {
	c.mu.Lock()
	n, ok := c.counts[uint64(uint32(first))<<32|uint64(uint32(last))]
	c.mu.Unlock()
	return n, ok
}

// Put keeps n as the count of lines [first, last], unless the cache is
// full.
func (c *TokenCounts) Put(first, last, n int32) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[uint64]int32)
	}
	if len(c.counts) < maxTokenCounts {
		c.counts[uint64(uint32(first))<<32|uint64(uint32(last))] = n
	}
	c.mu.Unlock()
}

// NumLines is the number of lines (a final line without a newline
// counts; an empty text has one empty line).
func (a *Analysis) NumLines() int32 { return int32(len(a.Lines)) }

// LineEnd is the byte offset where line i ends (after its newline).
func (a *Analysis) LineEnd(i int32) int {
	if int(i)+1 < len(a.Lines) {
		return int(a.Lines[i+1])
	}
	return len(a.Content)
}

// LineText returns line i including its newline.
func (a *Analysis) LineText(i int32) string {
	s := int(a.Lines[i])
	e := len(a.Content)
	if int(i)+1 < len(a.Lines) {
		e = int(a.Lines[i+1])
	}
	return a.Content[s:e]
}

// RangeText returns lines [s, e] including the last newline.
func (a *Analysis) RangeText(s, e int32) string {
	st := int(a.Lines[s])
	en := len(a.Content)
	if int(e)+1 < len(a.Lines) {
		en = int(a.Lines[e+1])
	}
	return a.Content[st:en]
}

// LineOf returns the line containing byte offset off.
func (a *Analysis) LineOf(off int) int32 {
	i, found := slices.BinarySearch(a.Lines, int32(off))
	if found {
		return int32(i)
	}
	return int32(i - 1)
}

// IsBlank reports whether s holds only white space (Unicode White_Space).
func IsBlank(s string) bool {
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

func (a *Analysis) blank(i int32) bool { return IsBlank(a.LineText(i)) }

// Trim moves s forward and e backward past blank lines; ok is false when
// nothing but blank lines remains.
func (a *Analysis) Trim(s, e int32) (int32, int32, bool) {
	for s <= e && a.blank(s) {
		s++
	}
	for e >= s && a.blank(e) {
		e--
	}
	return s, e, s <= e
}

// LineStarts returns the byte offset of each line start of content.
func LineStarts(content string) []int32 {
	n := strings.Count(content, "\n")
	ls := make([]int32, 1, n+1)
	for i := 0; i < len(content); i++ {
		if content[i] == '\n' {
			ls = append(ls, int32(i+1))
		}
	}
	return ls
}

// WithText is the analysis the assembly reads for a cursor file whose
// view v is (line emptied): the file's own text and line table, with v's
// tags and windows, which hold for every other line. Token counts of line
// ranges that leave the line out are v's.
func (v *Analysis) WithText(content string, line int32) *Analysis {
	a := &Analysis{Lang: v.Lang, Content: content, Defs: v.Defs, Imports: v.Imports, Locals: v.Locals,
		pkg: v.pkg, pkgLine: v.pkgLine, partial: v.partial, Chunks: v.Chunks, Note: v.Note,
		View: v, ViewLine: line}
	a.Lines = make([]int32, len(v.Lines))
	copy(a.Lines, v.Lines)
	if d := int32(len(content) - len(v.Content)); d != 0 {
		for i := int(line) + 1; i < len(a.Lines); i++ {
			a.Lines[i] += d
		}
	}
	return a
}

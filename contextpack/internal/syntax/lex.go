package syntax

import (
	"unicode"
	"unicode/utf8"
)

// Term is a hashed identifier (FNV-1a, 32 bits). Collisions only blur
// similarity scores slightly; identifiers themselves are compared as
// strings wherever correctness matters (definitions, the quality metric).
type Term = uint32

// HashIdent is the term of identifier s.
func HashIdent(s string) Term {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

func isIdentByte(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// ScanIdents calls fn for every identifier in s with its byte offset.
// Identifiers are ASCII letters, digits, '_' and '$' plus any Unicode
// letter; they do not start with a digit. Identifiers shorter than two
// bytes and keywords of lang are skipped. fn returns false to stop.
func ScanIdents(s string, lang Lang, fn func(id string, off int) bool) {
	kw := keywords[lang]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !isIdentStart(c) {
				if c >= '0' && c <= '9' {
					// Skip a number with its suffix letters (0x1f, 10ms).
					for i < len(s) && s[i] < utf8.RuneSelf && isIdentByte(s[i]) {
						i++
					}
					continue
				}
				i++
				continue
			}
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsLetter(r) {
				i += w
				continue
			}
		}
		j := i
		for j < len(s) {
			c := s[j]
			if c < utf8.RuneSelf {
				if !isIdentByte(c) {
					break
				}
				j++
				continue
			}
			r, w := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			j += w
		}
		id := s[i:j]
		if len(id) >= 2 && !kw[id] {
			if !fn(id, i) {
				return
			}
		}
		i = j
	}
}

func kwSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

var cKeywords = []string{"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
	"else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
	"return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned",
	"void", "volatile", "while", "include", "define", "ifdef", "ifndef", "endif", "elif", "undef", "pragma",
	"NULL", "bool", "true", "false"}

var jsKeywords = []string{"break", "case", "catch", "class", "const", "continue", "debugger", "default",
	"delete", "do", "else", "export", "extends", "finally", "for", "function", "if", "import", "in",
	"instanceof", "new", "return", "super", "switch", "this", "throw", "try", "typeof", "var", "void",
	"while", "with", "yield", "let", "static", "async", "await", "of", "null", "undefined", "true", "false",
	"from", "as", "get", "set"}

var tsExtra = []string{"interface", "type", "enum", "implements", "private", "protected", "public",
	"readonly", "abstract", "declare", "namespace", "module", "keyof", "any", "unknown", "never", "string",
	"number", "boolean", "void", "is", "infer", "satisfies"}

// keywords per language; LangPlain uses a small cross-language set.
var keywords = map[Lang]map[string]bool{
	LangPlain: kwSet("if", "else", "for", "while", "return", "def", "class", "func", "function", "var",
		"let", "const", "import", "from", "package", "true", "false", "null", "nil", "None", "new", "in",
		"and", "or", "not", "the", "is"),
	LangPython: kwSet("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
		"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
		"import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
		"with", "yield", "self", "cls"),
	LangGo: kwSet("break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough",
		"for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return",
		"select", "struct", "switch", "type", "var", "nil", "true", "false", "iota"),
	LangJS:  kwSet(jsKeywords...),
	LangTS:  kwSet(append(append([]string{}, jsKeywords...), tsExtra...)...),
	LangTSX: kwSet(append(append([]string{}, jsKeywords...), tsExtra...)...),
	LangJava: kwSet("abstract", "assert", "boolean", "break", "byte", "case", "catch", "char", "class",
		"const", "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally",
		"float", "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long",
		"native", "new", "package", "private", "protected", "public", "return", "short", "static",
		"strictfp", "super", "switch", "synchronized", "this", "throw", "throws", "transient", "try", "void",
		"volatile", "while", "var", "record", "yield", "null", "true", "false"),
	LangRust: kwSet("as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
		"extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
		"pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
		"unsafe", "use", "where", "while"),
	LangC: kwSet(cKeywords...),
	LangCPP: kwSet(append(append([]string{}, cKeywords...), "class", "namespace", "template", "typename",
		"public", "private", "protected", "virtual", "override", "final", "new", "delete", "this",
		"operator", "using", "try", "catch", "throw", "const_cast", "static_cast", "dynamic_cast",
		"reinterpret_cast", "constexpr", "noexcept", "nullptr", "explicit", "friend", "mutable", "decltype",
		"auto")...),
}

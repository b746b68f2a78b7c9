package syntax

import "strings"

// CodeOnly returns s with its comments and string literals made blank
// (their bytes replaced by spaces, line breaks kept, so offsets and lines
// stay), by the same lexical rules that cut segments (segLangRules,
// skipBlockComment, skipString). A JavaScript or TypeScript template's
// ${...} substitutions stay code. s is taken to start outside a comment
// or literal; a language without rules comes back unchanged.
func CodeOnly(s string, lang Lang) string {
	r := segLangRules[lang]
	if r == nil {
		return s
	}
	js := lang == LangJS || lang == LangTS || lang == LangTSX
	b := []byte(s)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case r.slash && c == '/' && i+1 < len(s) && s[i+1] == '/', r.hash && c == '#':
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				j = len(s) - i
			}
			blank(i, i+j)
			i += j
			continue
		case r.slash && c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := skipBlockComment(s, i, r.nested)
			blank(i, j)
			i = j
			continue
		}
		if j := skipString(s, i, lang); j > i {
			if j == i+1 && c == '\'' {
				i++ // a Rust lifetime ('a), not a character literal
				continue
			}
			if js && c == '`' {
				j = blankTemplate(b, i, j)
			} else {
				blank(i, j)
			}
			i = j
			continue
		}
		i++
	}
	return string(b)
}

// blankTemplate blanks the literal text of the JavaScript template string
// b[from:to] (to is after its closing back-quote) and keeps the code of its
// ${...} substitutions; a substitution left open runs to the end of b.
// A template nested in a substitution is taken for code (rare; lexing it
// would need a stack).
func blankTemplate(b []byte, from, to int) int {
	i := from
	for i < to {
		if b[i] == '$' && i+1 < len(b) && b[i+1] == '{' {
			b[i], b[i+1] = ' ', ' '
			depth := 1
			j := i + 2
			for ; j < len(b) && depth > 0; j++ {
				switch b[j] {
				case '{':
					depth++
				case '}':
					depth--
				}
			}
			if depth == 0 {
				b[j-1] = ' '
			}
			i = j
			if i >= to {
				// The substitution held the back-quote that ended the
				// literal: find the real end.
				for to = i; to < len(b) && b[to] != '`'; to++ {
					if b[to] != '\n' {
						b[to] = ' '
					}
				}
				if to < len(b) {
					b[to] = ' '
					to++
				}
				return to
			}
			continue
		}
		if b[i] != '\n' {
			b[i] = ' '
		}
		i++
	}
	return to
}

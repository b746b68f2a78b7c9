package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer splits normalized text into pieces exactly as the
// leftmost-first regex [Pattern] does, without backtracking. Alternatives, in
// the order the regex tries them at the start of a piece:
//
//	A1 (?i:'s|'t|'re|'ve|'m|'ll|'d)      contraction
//	A2 [^\r\n\p{L}\p{N}]?\p{L}+          optional lead char + letters
//	A3 \p{N}                             one number char
//	A4  ?[^\s\p{L}\p{N}]+[\r\n]*         optional space + symbols + newlines
//	A5 \s*[\r\n]+                        whitespace up to the last CR/LF of the run
//	A6 \s+(?!\S)                         whitespace run, minus its last char if \S follows
//	A7 \s+                               a single whitespace char before \S
//
// Every character starts a match of some alternative, so pieces are
// contiguous and cover the text.

const (
	clsOther  = iota // not \s, not \p{L}, not \p{N}
	clsLetter        // \p{L}
	clsNumber        // \p{N}
	clsSpace         // \s: \t \n \v \f \r, U+0085 and categories Zs, Zl, Zp
)

// asciiClass is a read-only lookup table.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		t[c] = runeClass(rune(c))
	}
	return t
}()

func runeClass(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		// Go's IsSpace is exactly Unicode White_Space, which equals
		// Oniguruma's and .NET's \s: 9-13, 0x85 and Z* categories.
		return clsSpace
	}
	return clsOther
}

// classAt returns the class and width of the character at s[i].
func (t *runeTable) classAt(s string, i int) (uint8, rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return t.classOf(r), r, w
}

// nextPiece returns the end of the piece that starts at s[i] (i < len(s)).
func (t *runeTable) nextPiece(s string, i int) int {
	cls, r, w := t.classAt(s, i)
	switch cls {
	case clsLetter: // A2 without the lead char
		return t.scanLetters(s, i+w)
	case clsNumber: // A3
		return i + w
	case clsOther:
		if r == '\'' {
			if n := contraction(s, i+1); n > 0 { // A1
				return i + 1 + n
			}
		}
		j := i + w
		if j < len(s) && t.isLetterAt(s, j) { // A2 with the lead char
			return t.scanLetters(s, j)
		}
		return scanNewlines(s, t.scanOthers(s, j)) // A4 without the space
	}
	// Whitespace.
	j := i + w
	if j < len(s) {
		if r != '\r' && r != '\n' && t.isLetterAt(s, j) { // A2, whitespace lead
			return t.scanLetters(s, j)
		}
		if r == ' ' {
			if c, _, _ := t.classAt(s, j); c == clsOther { // A4 with the space
				return scanNewlines(s, t.scanOthers(s, j))
			}
		}
	}
	// The maximal whitespace run starting at i.
	end, lastNL, lastStart, chars := i, -1, i, 0
	for end < len(s) {
		c, r, w := t.classAt(s, end)
		if c != clsSpace {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end + w
		}
		lastStart = end
		end += w
		chars++
	}
	switch {
	case lastNL >= 0: // A5
		return lastNL
	case end == len(s): // A6 at the end of the text
		return end
	case chars >= 2: // A6: leave the last whitespace char for the next piece
		return lastStart
	default: // A7
		return end
	}
}

// contraction returns the length after the apostrophe of a case-insensitive
// 's 't 're 've 'm 'll 'd at s[j:], or 0. U+017F (ſ) case-folds to "s" in
// Oniguruma and matches too.
func contraction(s string, j int) int {
	if j >= len(s) {
		return 0
	}
	// Only 'X' and 'x' satisfy c|0x20 == 'x' for an ASCII letter x.
	switch s[j] | 0x20 {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if j+1 < len(s) && s[j+1]|0x20 == 'e' {
			return 2
		}
	case 'l':
		if j+1 < len(s) && s[j+1]|0x20 == 'l' {
			return 2
		}
	}
	if j+1 < len(s) && s[j] == 0xC5 && s[j+1] == 0xBF { // U+017F
		return 2
	}
	return 0
}

func (t *runeTable) isLetterAt(s string, j int) bool {
	c, _, _ := t.classAt(s, j)
	return c == clsLetter
}

// scanLetters returns the end of the run of letters starting at s[j].
func (t *runeTable) scanLetters(s string, j int) int {
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if asciiClass[c] != clsLetter {
				return j
			}
			j++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if t.classOf(r) != clsLetter {
			return j
		}
		j += w
	}
	return j
}

// scanOthers returns the end of the run of [^\s\p{L}\p{N}] starting at s[j].
func (t *runeTable) scanOthers(s string, j int) int {
	for j < len(s) {
		c, _, w := t.classAt(s, j)
		if c != clsOther {
			return j
		}
		j += w
	}
	return j
}

// scanNewlines returns the end of the run of [\r\n] starting at s[j].
func scanNewlines(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}

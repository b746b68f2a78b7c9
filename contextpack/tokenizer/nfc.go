package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// cgj is U+034F COMBINING GRAPHEME JOINER. golang.org/x/text inserts it after
// 30 consecutive non-starters (the Unicode Stream-Safe Text Format); Hugging
// Face's NFC does not, so such text takes the exact slow path below.
const cgj = "\u034F"

// normalize returns the NFC form of valid UTF-8 text, as Hugging Face's NFC
// normalizer (Rust unicode-normalization) computes it.
func (t *runeTable) normalize(s string) string {
	if isASCII(s) {
		return s
	}
	inert, longRun := t.scanNFC(s)
	switch {
	case inert:
		return s
	case longRun:
		// x/text may insert CGJ here: take the exact path directly.
		return nfcExact(s)
	}
	out := norm.NFC.String(s)
	if out != s && strings.Contains(out, cgj) && strings.Count(out, cgj) != strings.Count(s, cgj) {
		return nfcExact(s) // not expected (see scanNFC), but stay exact
	}
	return out
}

// scanNFC reports whether every rune of s is NFC-inert (then s is NFC), and
// whether s has a run of 10 or more consecutive runes that are not. x/text
// inserts a CGJ only after more than 30 non-starters in a row; a rune adds at
// most 3 (its decomposition has at most 3 leading or trailing non-starters),
// so without such a run x/text's output is plain NFC.
func (t *runeTable) scanNFC(s string) (inert, longRun bool) {
	inert = true
	run := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			run = 0
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		if (r < 0x10000 && t[r]&nfcInert != 0) || (r >= 0x10000 && supplementaryInert(r)) {
			run = 0
			continue
		}
		inert = false
		if run++; run >= 10 {
			return false, true
		}
	}
	return inert, false
}

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if (s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7])&0x80 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nfcExact is the textbook NFC algorithm (UAX #15: full canonical
// decomposition, canonical ordering, canonical composition) on
// golang.org/x/text's Unicode data, without stream-safe CGJ insertion. It is
// only used for text with very long runs of combining characters.
func nfcExact(s string) string {
	// Canonical decomposition. Hangul syllables are kept whole: they are
	// starters, and composing them again below gives the same result.
	rs := make([]rune, 0, len(s))
	ccc := make([]uint8, 0, len(s))
	for i := 0; i < len(s); {
		p := norm.NFD.PropertiesString(s[i:])
		w := p.Size()
		if w == 0 {
			w = 1
		}
		if d := p.Decomposition(); d != nil {
			for k := 0; k < len(d); {
				r, rw := utf8.DecodeRune(d[k:])
				rs = append(rs, r)
				ccc = append(ccc, norm.NFD.Properties(d[k:]).CCC())
				k += rw
			}
		} else {
			r, _ := utf8.DecodeRuneInString(s[i:])
			rs = append(rs, r)
			ccc = append(ccc, p.CCC())
		}
		i += w
	}

	// Canonical ordering: stable sort of every run of non-starters by class.
	for i := 0; i < len(rs); {
		if ccc[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc[j] != 0 {
			j++
		}
		type mark struct {
			r rune
			c uint8
		}
		run := make([]mark, j-i)
		for k := range run {
			run[k] = mark{rs[i+k], ccc[i+k]}
		}
		slices.SortStableFunc(run, func(a, b mark) int { return int(a.c) - int(b.c) })
		for k, m := range run {
			rs[i+k], ccc[i+k] = m.r, m.c
		}
		i = j
	}

	// Canonical composition.
	cache := map[[2]rune]rune{}
	compose := func(a, b rune) (rune, bool) {
		k := [2]rune{a, b}
		if c, ok := cache[k]; ok {
			return c, c >= 0
		}
		c := rune(-1)
		out := norm.NFC.String(string([]rune{a, b}))
		if r, w := utf8.DecodeRuneInString(out); w == len(out) && r != utf8.RuneError {
			c = r
		}
		cache[k] = c
		return c, c >= 0
	}
	out := make([]rune, 0, len(rs))
	starter := -1   // index in out of the last starter
	last := int(-1) // class of the last char appended after the starter; -1: none
	for i, r := range rs {
		c := int(ccc[i])
		if starter >= 0 && (last == -1 || (last != 0 && last < c)) {
			if comp, ok := compose(out[starter], r); ok {
				out[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter, last = len(out), -1
		} else {
			last = c
		}
		out = append(out, r)
	}
	return string(out)
}

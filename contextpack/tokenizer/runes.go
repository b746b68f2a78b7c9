package tokenizer

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// runeTable caches, for every BMP code point, its pre-tokenizer class (bits
// 0-1) and whether it is NFC-inert (bit 2). It is built once per Tokenizer and
// read-only afterwards.
type runeTable [0x10000]uint8

const nfcInert = 4

// isNFCInert reports whether r can neither change under NFC nor interact with
// its neighbours: NFC_Quick_Check=Yes, canonical combining class 0 and not
// combining backward. A string made only of such runes is already NFC.
func isNFCInert(r rune) bool {
	return isNFCInertBuf(r, make([]byte, 0, utf8.UTFMax))
}

func isNFCInertBuf(r rune, buf []byte) bool {
	b := utf8.AppendRune(buf[:0], r)
	p := norm.NFC.Properties(b)
	return p.BoundaryBefore() && p.CCC() == 0 && norm.NFC.IsNormal(b)
}

func buildRuneTable() *runeTable {
	t := new(runeTable)
	buf := make([]byte, 0, utf8.UTFMax)
	for r := rune(0); r < 0x10000; r++ {
		v := runeClass(r)
		if r < 0xD800 || r > 0xDFFF {
			if r < utf8.RuneSelf || isNFCInertBuf(r, buf) {
				v |= nfcInert
			}
		}
		t[r] = v
	}
	return t
}

// Supplementary-plane ranges that are NFC-inert throughout (emoji and
// pictographs, CJK Unified Ideographs Extensions B to G); checked by a test.
func supplementaryInert(r rune) bool {
	return (r >= 0x1F000 && r <= 0x1FAFF) || (r >= 0x20000 && r <= 0x2EBEF) || (r >= 0x30000 && r <= 0x3134F)
}

// classOf returns the pre-tokenizer class of r.
func (t *runeTable) classOf(r rune) uint8 {
	if r < 0x10000 {
		return t[r] & 3
	}
	return runeClass(r)
}

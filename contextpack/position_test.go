package contextpack

import (
	"errors"
	"testing"
	"unicode/utf8"
)

func TestByteOffset(t *testing.T) {
	t.Parallel()
	const src = "ab\r\nx😀y\n\n€z"
	cases := []struct {
		name string
		c    Cursor
		want int
		err  string // field of the expected ArgumentError, "" for none
	}{
		{"start", Cursor{}, 0, ""},
		{"end of crlf line utf16", Cursor{Line: 0, Column: 2}, 2, ""},
		{"column into crlf", Cursor{Line: 0, Column: 3}, 0, "cursor.column"},
		{"after emoji utf16", Cursor{Line: 1, Column: 3}, 4 + 1 + 4, ""},
		{"inside surrogate", Cursor{Line: 1, Column: 2}, 0, "cursor.column"},
		{"after emoji utf32", Cursor{Line: 1, Column: 2, Encoding: EncodingUTF32}, 4 + 1 + 4, ""},
		{"after emoji utf8", Cursor{Line: 1, Column: 5, Encoding: EncodingUTF8}, 4 + 5, ""},
		{"inside utf8 char", Cursor{Line: 1, Column: 2, Encoding: EncodingUTF8}, 0, "cursor.column"},
		{"empty line", Cursor{Line: 2, Column: 0}, 11, ""},
		{"last line end", Cursor{Line: 3, Column: 2}, 12 + 3 + 1, ""},
		{"line past eof", Cursor{Line: 4}, 0, "cursor.line"},
		{"negative", Cursor{Line: -1}, 0, "cursor"},
		{"offset", Cursor{Offset: 4, Encoding: EncodingByteOffset}, 4, ""},
		{"offset end", Cursor{Offset: len(src), Encoding: EncodingByteOffset}, len(src), ""},
		{"offset past", Cursor{Offset: len(src) + 1, Encoding: EncodingByteOffset}, 0, "cursor.offset"},
		{"offset mid rune", Cursor{Offset: 6, Encoding: EncodingByteOffset}, 0, "cursor.offset"},
		{"bad encoding", Cursor{Encoding: Encoding(99)}, 0, "cursor.encoding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ByteOffset(src, tc.c)
			if tc.err != "" {
				var ae *ArgumentError
				if !errors.As(err, &ae) || ae.Field != tc.err || !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("err = %v, want ArgumentError on %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ByteOffset = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// Position is ByteOffset's inverse at every character start, in every
// encoding.
func TestPositionInvertsByteOffset(t *testing.T) {
	text := "a😀b\r\n\tβγ\n\n𝄞x\nlast"
	for _, enc := range []Encoding{EncodingUTF8, EncodingUTF16, EncodingUTF32} {
		for off := 0; off <= len(text); off++ {
			if off < len(text) && !utf8.RuneStart(text[off]) {
				continue
			}
			line, col := Position(text, off, enc)
			if text[max(off-1, 0):off] == "\r" && off < len(text) && text[off] == '\n' {
				continue // between "\r" and "\n": a column ByteOffset puts past the line's end
			}
			got, err := ByteOffset(text, Cursor{Line: line, Column: col, Encoding: enc})
			if err != nil || got != off {
				t.Errorf("%s: offset %d -> %d:%d -> %d (%v)", enc, off, line, col, got, err)
			}
		}
	}
}

package lsp

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	protocol "github.com/tliron/glsp/protocol_3_16"
)

func pos(line, char uint32) protocol.Position { return protocol.Position{Line: line, Character: char} }

func TestOffsetOf(t *testing.T) {
	t.Parallel()
	// "a😀b" then CRLF, "é中" then CR, "q" then LF, "z": four kinds of
	// characters and three kinds of line break.
	text := "a😀b\r\né中\rq\nz"
	for _, c := range []struct {
		p    protocol.Position
		enc  string
		want int
	}{
		{pos(0, 0), encodingUTF16, 0},
		{pos(0, 1), encodingUTF16, 1},
		{pos(0, 2), encodingUTF16, 1}, // inside the surrogate pair: the character's start
		{pos(0, 3), encodingUTF16, 5},
		{pos(0, 4), encodingUTF16, 6},  // the line's end, before "\r\n"
		{pos(0, 99), encodingUTF16, 6}, // past the line's end: the line's end
		{pos(1, 0), encodingUTF16, 8},
		{pos(1, 2), encodingUTF16, 13},
		{pos(2, 0), encodingUTF16, 14}, // after a lone "\r"
		{pos(2, 1), encodingUTF16, 15},
		{pos(3, 1), encodingUTF16, 17},
		{pos(0, 2), encodingUTF32, 5},
		{pos(0, 3), encodingUTF32, 6},
		{pos(1, 1), encodingUTF32, 10},
		{pos(0, 3), encodingUTF8, 1}, // inside "😀": its start
		{pos(0, 5), encodingUTF8, 5},
		{pos(1, 2), encodingUTF8, 10},
		{pos(1, 3), encodingUTF8, 10},
	} {
		got, err := offsetOf(text, c.p, c.enc)
		if err != nil || got != c.want {
			t.Errorf("%s %d:%d: %d, %v; want %d", c.enc, c.p.Line, c.p.Character, got, err, c.want)
		}
	}
	if _, err := offsetOf(text, pos(4, 0), encodingUTF16); err == nil {
		t.Error("a line past the end must be an error")
	}
	if _, err := offsetOf("", pos(0, 0), encodingUTF16); err != nil {
		t.Errorf("an empty document has line 0: %v", err)
	}
	if _, err := offsetOf("x\n", pos(1, 0), encodingUTF16); err != nil {
		t.Errorf("the line after a final line break exists: %v", err)
	}
}

func TestPositionOfInvertsOffsetOf(t *testing.T) {
	t.Parallel()
	text := "a😀b\r\né中\r\nz\n"
	for _, enc := range []string{encodingUTF8, encodingUTF16, encodingUTF32} {
		for off := 0; off <= len(text); off++ {
			if off < len(text) && !utf8.RuneStart(text[off]) {
				continue
			}
			p := positionOf(text, off, enc)
			back, err := offsetOf(text, p, enc)
			want := off
			if off > 0 && text[off-1] == '\r' && off < len(text) && text[off] == '\n' {
				want = off - 1 // between "\r" and "\n": the line's end
			}
			if err != nil || back != want {
				t.Errorf("%s offset %d → %d:%d → %d, %v", enc, off, p.Line, p.Character, back, err)
			}
		}
	}
}

// refDoc is an editor's model of a document, kept independently: a
// sequence of characters, positions counted in enc's units over lines
// split by "\n", "\r\n" or "\r".
type refDoc struct {
	runes []rune
	enc   string
}

func (d *refDoc) units(r rune) int {
	switch d.enc {
	case encodingUTF8:
		return utf8.RuneLen(r)
	case encodingUTF16:
		if r >= 0x10000 {
			return 2
		}
	}
	return 1
}

// index returns the rune index of p (p on a character boundary).
func (d *refDoc) index(p protocol.Position) int {
	line, col, i := 0, 0, 0
	for i < len(d.runes) {
		if line == int(p.Line) && col == int(p.Character) {
			return i
		}
		r := d.runes[i]
		if r == '\r' || r == '\n' {
			if line == int(p.Line) {
				return i
			}
			if r == '\r' && i+1 < len(d.runes) && d.runes[i+1] == '\n' {
				i++
			}
			line++
			col = 0
			i++
			continue
		}
		col += d.units(r)
		i++
	}
	return i
}

// randomPosition picks a character boundary as an editor would send it.
func (d *refDoc) randomPosition(rng *rand.Rand) protocol.Position {
	i := rng.IntN(len(d.runes) + 1)
	line, col := 0, 0
	for k := 0; k < i; k++ {
		r := d.runes[k]
		switch {
		case r == '\r' && k+1 < len(d.runes) && d.runes[k+1] == '\n':
			if k+1 == i {
				return pos(uint32(line), uint32(col)) // not between "\r" and "\n"
			}
		case r == '\r' || r == '\n':
			line++
			col = 0
		default:
			col += d.units(r)
		}
	}
	return pos(uint32(line), uint32(col))
}

var pieces = []string{"a", "b", " ", "é", "中", "😀", "𝄞", "\n", "\r\n", "\r", "x😀", "😀😀"}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// Incremental changes are applied exactly as the editor applies them: a
// random document of ASCII, two-, three- and four-byte characters
// (UTF-16 surrogate pairs) and all three line breaks, edited many times
// at random character boundaries, matches the editor's model after each
// change, in each encoding.
func TestApplyChangesMatchesEditor(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{encodingUTF16, encodingUTF8, encodingUTF32} {
		t.Run(enc, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(enc))))
			for doc := range 50 {
				text := randomText(rng, rng.IntN(40))
				ref := &refDoc{runes: []rune(text), enc: enc}
				for step := range 40 {
					a, b := ref.randomPosition(rng), ref.randomPosition(rng)
					if b.Line < a.Line || (b.Line == a.Line && b.Character < a.Character) {
						a, b = b, a
					}
					ins := randomText(rng, rng.IntN(4))
					ia, ib := ref.index(a), ref.index(b)
					ref.runes = append(append(append([]rune{}, ref.runes[:ia]...), []rune(ins)...), ref.runes[ib:]...)
					change := protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: a, End: b}, Text: ins}
					got, err := applyChanges(text, []any{change}, enc)
					if err != nil {
						t.Fatalf("doc %d step %d: %v", doc, step, err)
					}
					if want := string(ref.runes); got != want {
						t.Fatalf("doc %d step %d: replacing %d:%d-%d:%d of %q by %q gave %q, the editor has %q",
							doc, step, a.Line, a.Character, b.Line, b.Character, text, ins, got, want)
					}
					text = got
				}
			}
		})
	}
}

// Several changes in one notification apply in order, each to the text
// the one before left; a change without a range replaces the whole text.
func TestApplyChangesInOrder(t *testing.T) {
	t.Parallel()
	text := "ab😀cd\nef"
	got, err := applyChanges(text, []any{
		protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(0, 2), End: pos(0, 4)}, Text: "XY"},
		protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(0, 3), End: pos(1, 1)}, Text: "🎉"},
		protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(0, 5), End: pos(0, 5)}, Text: "!"},
	}, encodingUTF16)
	if want := "abX🎉!f"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	got, err = applyChanges(text, []any{protocol.TextDocumentContentChangeEventWhole{Text: "new"},
		protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(0, 3), End: pos(0, 3)}, Text: "er"}}, encodingUTF16)
	if err != nil || got != "newer" {
		t.Errorf("whole then incremental: %q, %v", got, err)
	}
	// An editor out of step (a line past the end, a reversed range) is
	// taken as leniently as vscode-languageserver's TextDocument does.
	got, _ = applyChanges("ab", []any{protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(5, 0), End: pos(6, 0)}, Text: "!"}}, encodingUTF16)
	if got != "ab!" {
		t.Errorf("past the end: %q", got)
	}
	got, _ = applyChanges("abcd", []any{protocol.TextDocumentContentChangeEvent{Range: &protocol.Range{Start: pos(0, 3), End: pos(0, 1)}, Text: ""}}, encodingUTF16)
	if got != "ad" {
		t.Errorf("reversed: %q", got)
	}
}

func TestLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"foo(x)":                "foo(x)",
		"foo\n    bar":          "foo …",
		"\n    return x":        "⏎ return x",
		strings.Repeat("é", 70): strings.Repeat("é", 60) + "…",
	} {
		if got := label(in); got != want {
			t.Errorf("label(%q) = %q; want %q", in, got, want)
		}
	}
}

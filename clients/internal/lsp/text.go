package lsp

import (
	"fmt"
	"strings"
	"unicode/utf8"

	protocol "github.com/tliron/glsp/protocol_3_16"
)

// A document's text is the editor's, kept by applying didChange events in
// order. LSP positions are a 0-based line and a column counted in the
// negotiated encoding; lines end at "\n", "\r\n" or "\r" (all three, as
// LSP says). The column of a position inside a character (the second
// UTF-16 unit of a surrogate pair, a byte inside a UTF-8 sequence) stands
// for that character's start, and a column past the end of its line for
// the line's end, as LSP says.

// errPastEnd is a position on a line the text does not have.
type errPastEnd struct{ line, lines int }

func (e errPastEnd) Error() string {
	return fmt.Sprintf("position line %d is past the end of the document (%d lines)", e.line, e.lines)
}

// nextLine returns the start of the line after the one starting at i and
// the end of the line starting at i (before its line break); next is -1
// when that line is the last.
func nextLine(text string, i int, hasCR bool) (end, next int) {
	if !hasCR {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			return len(text), -1
		}
		return i + j, i + j + 1
	}
	j := strings.IndexAny(text[i:], "\r\n")
	if j < 0 {
		return len(text), -1
	}
	end = i + j
	if text[end] == '\r' && end+1 < len(text) && text[end+1] == '\n' {
		return end, end + 2
	}
	return end, end + 1
}

// lineBounds returns the byte range of line (0-based) from the start of
// text, without its line break.
func lineBounds(text string, line int) (start, end int, err error) {
	return lineBoundsFrom(text, 0, 0, line, strings.IndexByte(text, '\r') >= 0)
}

// lineBoundsFrom is lineBounds starting from line fromLine at byte from.
func lineBoundsFrom(text string, from, fromLine, line int, hasCR bool) (start, end int, err error) {
	start = from
	for l := fromLine; ; l++ {
		end, next := nextLine(text, start, hasCR)
		if l == line {
			return start, end, nil
		}
		if next < 0 {
			return 0, 0, errPastEnd{line: line, lines: l + 1}
		}
		start = next
	}
}

// columnOffset returns the byte offset within line (the text of one
// line) of column col counted in enc: the start of the character the
// column falls in, or the line's end.
func columnOffset(line string, col uint32, enc string) int {
	switch enc {
	case encodingUTF8:
		off := min(int(col), len(line))
		for off > 0 && off < len(line) && !utf8.RuneStart(line[off]) {
			off--
		}
		return off
	case encodingUTF32:
		n := uint32(0)
		for i := range line {
			if n == col {
				return i
			}
			n++
		}
		return len(line)
	default: // UTF-16
		n := uint32(0)
		for i, r := range line {
			w := uint32(1)
			if r >= 0x10000 {
				w = 2
			}
			if col < n+w {
				return i
			}
			n += w
		}
		return len(line)
	}
}

// columnOf returns the column, counted in enc, of byte offset off within
// line.
func columnOf(line string, off int, enc string) uint32 {
	switch enc {
	case encodingUTF8:
		return uint32(off)
	case encodingUTF32:
		return uint32(utf8.RuneCountInString(line[:off]))
	default:
		n := uint32(0)
		for _, r := range line[:off] {
			n++
			if r >= 0x10000 {
				n++
			}
		}
		return n
	}
}

// offsetOf returns the byte offset of p in text.
func offsetOf(text string, p protocol.Position, enc string) (int, error) {
	start, end, err := lineBounds(text, int(p.Line))
	if err != nil {
		return 0, err
	}
	return start + columnOffset(text[start:end], p.Character, enc), nil
}

// positionOf returns the position of byte offset off (a character
// boundary) in text.
func positionOf(text string, off int, enc string) protocol.Position {
	hasCR := strings.IndexByte(text[:off], '\r') >= 0
	line, start := 0, 0
	for {
		end, next := nextLine(text, start, hasCR)
		if next < 0 || off <= end || next > off {
			if off > end {
				off = end // inside a "\r\n"
			}
			return protocol.Position{Line: uint32(line), Character: columnOf(text[start:end], off-start, enc)}
		}
		line++
		start = next
	}
}

// rangeOffsets returns the byte range r covers in text. A position on a
// line past the end of the text counts as the end of the text when
// lenient (an editor out of step: a notification cannot be refused), and
// is an error otherwise; so is a range whose end comes before its start,
// which lenient takes the other way round.
func rangeOffsets(text string, r protocol.Range, enc string, lenient bool) (int, int, error) {
	if r.End.Line < r.Start.Line || (r.End.Line == r.Start.Line && r.End.Character < r.Start.Character) {
		if !lenient {
			return 0, 0, fmt.Errorf("range end %d:%d is before its start %d:%d", r.End.Line, r.End.Character, r.Start.Line, r.Start.Character)
		}
		r.Start, r.End = r.End, r.Start
	}
	hasCR := strings.IndexByte(text, '\r') >= 0
	ls, le, err := lineBoundsFrom(text, 0, 0, int(r.Start.Line), hasCR)
	if err != nil {
		if lenient {
			return len(text), len(text), nil
		}
		return 0, 0, err
	}
	s := ls + columnOffset(text[ls:le], r.Start.Character, enc)
	// The end's line is searched from the start's.
	es, ee, err := lineBoundsFrom(text, ls, int(r.Start.Line), int(r.End.Line), hasCR)
	if err != nil {
		if lenient {
			return s, len(text), nil
		}
		return 0, 0, err
	}
	e := es + columnOffset(text[es:ee], r.End.Character, enc)
	return s, max(s, e), nil
}

// applyChanges applies didChange's content changes in order to text.
func applyChanges(text string, changes []any, enc string) (string, error) {
	for i, c := range changes {
		switch c := c.(type) {
		case protocol.TextDocumentContentChangeEventWhole:
			text = c.Text
		case protocol.TextDocumentContentChangeEvent:
			if c.Range == nil {
				text = c.Text
				continue
			}
			s, e, err := rangeOffsets(text, *c.Range, enc, true)
			if err != nil {
				return "", fmt.Errorf("change %d: %w", i, err)
			}
			text = text[:s] + c.Text + text[e:]
		default:
			return "", fmt.Errorf("change %d: unknown change type %T", i, c)
		}
	}
	return text, nil
}

package contextpack

import (
	"fmt"
	"unicode/utf8"
)

// ByteOffset converts a cursor into a byte offset in content.
//
// Lines end at "\n" (a preceding "\r" belongs to the line ending, as in
// LSP). A line past the end of the file, a column past the end of its line,
// or a column that falls inside a multi-byte character or a UTF-16
// surrogate pair is an ArgumentError: the client and server disagree about
// the file, and guessing would put the completion in the wrong place.
func ByteOffset(content string, c Cursor) (int, error) {
	if c.Encoding == EncodingByteOffset {
		if c.Offset < 0 || c.Offset > len(content) {
			return 0, &ArgumentError{Field: "cursor.offset",
				Reason: fmt.Sprintf("offset %d outside file of %d bytes", c.Offset, len(content))}
		}
		if c.Offset < len(content) && !utf8.RuneStart(content[c.Offset]) {
			return 0, &ArgumentError{Field: "cursor.offset",
				Reason: fmt.Sprintf("offset %d is inside a UTF-8 character", c.Offset)}
		}
		return c.Offset, nil
	}
	if c.Line < 0 || c.Column < 0 {
		return 0, &ArgumentError{Field: "cursor", Reason: "line and column must be >= 0"}
	}
	start := 0
	for line := 0; line < c.Line; line++ {
		i := indexByteFrom(content, start, '\n')
		if i < 0 {
			return 0, &ArgumentError{Field: "cursor.line",
				Reason: fmt.Sprintf("line %d past end of file (%d lines; lines count from 0)", c.Line, line+1)}
		}
		start = i + 1
	}
	end := indexByteFrom(content, start, '\n')
	if end < 0 {
		end = len(content)
	}
	if end > start && content[end-1] == '\r' {
		end--
	}
	line := content[start:end]
	col, err := columnToByte(line, c.Column, c.Encoding)
	if err != nil {
		return 0, err
	}
	return start + col, nil
}

func indexByteFrom(s string, from int, b byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// columnToByte maps a column in the given encoding to a byte index in line.
func columnToByte(line string, col int, enc Encoding) (int, error) {
	tooLong := func(units string, n int) error {
		return &ArgumentError{Field: "cursor.column",
			Reason: fmt.Sprintf("column %d past end of line (%d %s in %s; columns count from 0)", col, n, units, enc)}
	}
	switch enc {
	case EncodingUTF8:
		if col > len(line) {
			return 0, tooLong("bytes", len(line))
		}
		if col < len(line) && !utf8.RuneStart(line[col]) {
			return 0, &ArgumentError{Field: "cursor.column",
				Reason: fmt.Sprintf("column %d is inside a UTF-8 character", col)}
		}
		return col, nil
	case EncodingUTF16, EncodingUTF32:
		units := 0
		for i, r := range line {
			if units == col {
				return i, nil
			}
			w := 1
			if enc == EncodingUTF16 && r >= 0x10000 {
				w = 2
			}
			if units+w > col {
				return 0, &ArgumentError{Field: "cursor.column",
					Reason: fmt.Sprintf("column %d splits a surrogate pair", col)}
			}
			units += w
		}
		if units == col {
			return len(line), nil
		}
		name := "UTF-16 code units"
		if enc == EncodingUTF32 {
			name = "code points"
		}
		return 0, tooLong(name, units)
	}
	return 0, &ArgumentError{Field: "cursor.encoding", Reason: fmt.Sprintf("unknown encoding %d", int(enc))}
}

// Position is ByteOffset's inverse: the 0-based line and column of byte
// offset off in content, the column counted in enc (UTF-8 bytes for
// EncodingUTF8 and EncodingByteOffset). off must lie in content at a
// character's start (or its end); a "\r" before a "\n" counts in its
// line's columns, as ByteOffset reads them.
func Position(content string, off int, enc Encoding) (line, column int) {
	off = max(0, min(off, len(content)))
	start := 0
	for i := 0; i < off; i++ {
		if content[i] == '\n' {
			line++
			start = i + 1
		}
	}
	seg := content[start:off]
	switch enc {
	case EncodingUTF16:
		for _, r := range seg {
			column++
			if r >= 0x10000 {
				column++
			}
		}
	case EncodingUTF32:
		column = utf8.RuneCountInString(seg)
	default:
		column = len(seg)
	}
	return line, column
}

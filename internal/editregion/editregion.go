// Package editregion places an edit-prediction model's editable region and
// excerpt around a cursor: whole lines from some lines above the cursor's
// line to some below, as each model's prompt format has them (Zeta's,
// Instinct's). The serving path (server/pipeline) and the next-edit
// benchmark's builder (evaluator/nextedit) both place regions with it, so
// that a benchmark sample's region is the one a request at its cursor gets.
// It imports nothing of the module.
package editregion

import (
	"slices"
	"strings"
)

// Span is the byte range [Start, End) of a text.
type Span struct{ Start, End int }

// Shape is where a format's region and excerpt lie around the cursor's
// line: the region from RegionAbove lines above it to RegionBelow below,
// the excerpt (window) from WindowAbove above to WindowBelow below (it
// holds the region).
type Shape struct{ RegionAbove, RegionBelow, WindowAbove, WindowBelow int }

// The formats' shapes (docs/edit-prediction.md).
var (
	// Zeta: the region 4 lines above to 8 below, the excerpt 8 more
	// each way (Zed's is 150–350 tokens of syntax nodes, 150 around).
	Zeta = Shape{4, 8, 12, 16}
	// Instinct: Continue's window, 1 line above to 5 below, the excerpt
	// 25 lines each way.
	Instinct = Shape{1, 5, 25, 25}
)

// Around places the region and the excerpt of shape s around the cursor
// at byte offset cursor of text. Both are whole lines, from a line's start
// to a line's end before its line break.
func (s Shape) Around(text string, cursor int) (region, window Span) {
	starts := LineStarts(text)
	line, _ := slices.BinarySearch(starts, cursor+1)
	line-- // the last line starting at or before the cursor
	last := len(starts) - 1
	if last > 0 && starts[last] == len(text) {
		last-- // a final line break ends the last line; no empty line follows
	}
	line = min(line, last)
	lines := func(a, b int) Span {
		a, b = max(a, 0), min(b, last)
		return Span{starts[a], LineEnd(text, starts, b)}
	}
	region = lines(line-s.RegionAbove, line+s.RegionBelow)
	window = lines(line-max(s.WindowAbove, s.RegionAbove), line+max(s.WindowBelow, s.RegionBelow))
	return region, window
}

// Window is the excerpt of shape s around the cursor widened to whole
// lines holding region, a region the caller chose.
func (s Shape) Window(text string, cursor int, region Span) Span {
	_, w := s.Around(text, cursor)
	starts := LineStarts(text)
	if region.Start < w.Start {
		w.Start = starts[LineOf(text, region.Start)]
	}
	if region.End > w.End {
		w.End = LineEnd(text, starts, LineOf(text, region.End))
	}
	return w
}

// LineStarts returns the byte offset of every line's start ("\n" ends a
// line; "\r\n" leaves the "\r" on the line, as diffs do).
func LineStarts(text string) []int {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// LineEnd is the end of line i, before its "\n".
func LineEnd(text string, starts []int, i int) int {
	if i+1 < len(starts) {
		return starts[i+1] - 1
	}
	return len(text)
}

// LineOf returns the 0-based line holding byte offset off.
func LineOf(text string, off int) int { return strings.Count(text[:off], "\n") }

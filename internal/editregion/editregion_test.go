package editregion

import (
	"strings"
	"testing"
)

// TestAround: the region and excerpt are whole lines around the cursor's
// line, cut at the file's ends, and Window widens the excerpt to hold a
// region the caller chose.
func TestAround(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 30 {
		b.WriteString(strings.Repeat("x", i) + "\n")
	}
	text := b.String()
	starts := LineStarts(text)
	line := func(i int) int { return starts[i] }
	end := func(i int) int { return LineEnd(text, starts, i) }
	cases := []struct {
		name           string
		s              Shape
		cursor         int
		region, window Span
	}{
		{"zeta mid-file", Zeta, line(15) + 3, Span{line(11), end(23)}, Span{line(3), end(29)}},
		{"zeta at the top", Zeta, 0, Span{line(0), end(8)}, Span{line(0), end(16)}},
		{"instinct near the end", Instinct, line(28), Span{line(27), end(29)}, Span{line(3), end(29)}},
		{"cursor at the final line break", Instinct, len(text), Span{line(28), end(29)}, Span{line(4), end(29)}},
	}
	for _, c := range cases {
		r, w := c.s.Around(text, c.cursor)
		if r != c.region || w != c.window {
			t.Errorf("%s: region %v window %v, want %v %v", c.name, r, w, c.region, c.window)
		}
	}
	if w := Zeta.Window(text, line(20), Span{line(2) + 1, end(28) - 1}); w != (Span{line(2), end(29)}) {
		t.Errorf("Window widened to %v, want lines 2 to 29", w)
	}
	if w := Instinct.Window(text, line(20), Span{line(19), end(21)}); w != (Span{line(0), end(29)}) {
		t.Errorf("Window around a region inside the excerpt: %v", w)
	}
}

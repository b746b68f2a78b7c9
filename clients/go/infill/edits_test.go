package infill

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// DiffEdit's edit turns one text into the other, within character
// boundaries, and is empty when nothing changed.
func TestDiffEdit(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "\n", "é", "ë", "✓", "✔", "😀", "😁"}
	word := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for i := range 4000 {
		n := r.IntN(12)
		if i%2 == 1 {
			n = r.IntN(400) // past the 64-byte blocks DiffEdit compares first
		}
		from := word(n)
		to := from
		for range 1 + r.IntN(2) { // one or two changes somewhere
			rs := []rune(to)
			a := r.IntN(len(rs) + 1)
			b := a + r.IntN(len(rs)-a+1)
			to = string(rs[:a]) + word(r.IntN(3)) + string(rs[b:])
		}
		e := DiffEdit(from, to)
		s, end := int(e.GetStart()), int(e.GetEnd())
		if s > end || end > len(from) || !runeStart(from, s) || !runeStart(from, end) || !utf8.ValidString(e.GetText()) {
			t.Fatalf("case %d: %q → %q: bad edit %v", i, from, to, e)
		}
		if got := from[:s] + e.GetText() + from[end:]; got != to {
			t.Fatalf("case %d: %q → %q: edit %v gives %q", i, from, to, e, got)
		}
		if from == to && (e.GetText() != "" || s != end) {
			t.Fatalf("case %d: no change gave edit %v", i, e)
		}
	}
	// A keystroke in a large file is a one-character edit.
	big := strings.Repeat("line of text\n", 1000)
	e := DiffEdit(big, big[:6500]+"x"+big[6500:])
	if e.GetStart() != 6500 || e.GetEnd() != 6500 || e.GetText() != "x" {
		t.Fatalf("keystroke edit %v", e)
	}
}

// BenchmarkDiffEdit is one keystroke in the middle of a 36 KB file, what
// the client computes for every request while typing.
func BenchmarkDiffEdit(b *testing.B) {
	from := strings.Repeat("\tif err := check(value); err != nil {\n\t\treturn err\n\t}\n", 36<<10/52)
	to := from[:len(from)/2] + "x" + from[len(from)/2:]
	b.SetBytes(int64(len(from)))
	for b.Loop() {
		if e := DiffEdit(from, to); e.GetText() != "x" {
			b.Fatal(e)
		}
	}
}

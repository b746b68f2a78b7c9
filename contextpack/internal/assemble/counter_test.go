package assemble

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
	"github.com/infill-dev/infill/contextpack/tokenizer"
)

// The assembler's exact counts rest on one property of Qwen2's
// pre-tokenizer: a text's token count is the sum of its segments' (see
// counter.go). Check it on random text built from the characters that matter:
// newlines, CR, spaces of every kind, punctuation that absorbs newlines,
// letters, digits, apostrophes and special-token text.
func TestSegmentSumIsExact(t *testing.T) {
	tok := testcorpus.Qwen(t)
	pieces := []string{"\n", "\n", "\n", "\r\n", " ", "  ", "    ", "\t", "\u00a0", "\u3000", "\u2028", "\u0085",
		"x", "foo", "Bar", "_z", "1", "42", "'s", "'", ")", "});", ":", "#", "//", "\"", "é", "中文", "😀",
		"<|endoftext|>", "<|fim_prefix|>", "<", "|>", "\f", "\v", "\u200b"}
	r := rand.New(rand.NewPCG(7, 11))
	c := NewCounter(tok, tokenizer.Neutralize, 1<<12, 8192)
	for i := 0; i < 20000; i++ {
		var sb strings.Builder
		for n := 1 + r.IntN(30); n > 0; n-- {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := sb.String()
		want := tok.Count(tokenizer.Neutralize(s))
		if got := c.text(s); got != want {
			var segs []string
			forSegments(s, func(seg string) { segs = append(segs, seg) })
			t.Fatalf("text %q: segment sum %d, whole %d; segments %q", s, got, want, segs)
		}
	}
}

func TestSegmentSumOnRealCode(t *testing.T) {
	tok := testcorpus.Qwen(t)
	c := NewCounter(tok, tokenizer.Neutralize, 1<<16, 8192)
	for _, f := range testcorpus.Samples(t, 200) {
		src := f.Text
		if got, want := c.text(src), tok.Count(tokenizer.Neutralize(src)); got != want {
			t.Fatalf("segment sum %d, whole %d for %.80q", got, want, src)
		}
	}
}

package pipeline

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/infill-dev/infill/inference"
)

// parseInput is an editInput for text with the cursor mark, region and
// excerpt placed as format f places them.
func parseInput(t *testing.T, f editFormat, marked string) *editInput {
	t.Helper()
	i := strings.Index(marked, cursorMark)
	if i < 0 {
		t.Fatal("no cursor mark")
	}
	text := marked[:i] + marked[i+len(cursorMark):]
	in := &editInput{path: "a.py", text: text, cursor: i}
	in.region, in.window = f.shape().Around(text, i)
	return in
}

// The readers of each format's output, on outputs crafted for the cases
// models produce: whole rewrites, cut-short ones, repeated or changed
// context, stray markers, fences. Each want is the region read back, or a
// word the no-edit reason holds.
func TestParseEditOutput(t *testing.T) {
	const file = "import os\n\ndef f(x):\n    y = x<CURSOR>\n    return y\n"
	zeta, instinct := zetaFormat{}, instinctFormat{}
	for _, tc := range []struct {
		name   string
		f      editFormat
		out    string
		finish inference.FinishReason
		region string // want: the region read back
		reason string // or: a no-edit reason holding this
	}{
		{"zeta whole, stopped on the end marker", zeta,
			"```a.py\n<|start_of_file|>\n<|editable_region_start|>\nimport os\n\ndef f(x):\n    y = x + 1\n    return y",
			inference.FinishStopSequence, "import os\n\ndef f(x):\n    y = x + 1\n    return y", ""},
		{"zeta with the end marker and the context after", zeta,
			"<|editable_region_start|>\nimport os\n\ndef f(x):\n    y = 2 * x\n    return y\n<|editable_region_end|>\n```",
			inference.FinishStop, "import os\n\ndef f(x):\n    y = 2 * x\n    return y", ""},
		{"zeta cursor marker copied", zeta,
			"<|editable_region_start|>\nimport os\n\ndef f(x):\n    y = x<|user_cursor_is_here|>\n    return y\n",
			inference.FinishStopSequence, "import os\n\ndef f(x):\n    y = x\n    return y", ""},
		{"zeta cut at max tokens", zeta, "<|editable_region_start|>\nimport os\n\ndef f(", inference.FinishLength, "", "max_tokens"},
		{"zeta cut by the budget", zeta, "<|editable_region_start|>\nimport", inference.FinishBudget, "", "latency budget"},
		{"zeta no marker", zeta, "def f(x): pass", inference.FinishStop, "", "no <|editable_region_start|>"},
		{"zeta two start markers", zeta, "<|editable_region_start|>\na<|editable_region_start|>\nb", inference.FinishStopSequence, "", "more than one"},
		{"zeta changed context before", zeta,
			"```a.py\nimport sys\n<|editable_region_start|>\nimport os\n", inference.FinishStopSequence, "", "outside the editable region"},
		{"zeta empty region", zeta, "<|editable_region_start|>\n<|editable_region_end|>", inference.FinishStop, "", ""},
		{"instinct whole", instinct, "def f(x):\n    y = x * 3\n    return y\n", inference.FinishStop, "def f(x):\n    y = x * 3\n    return y", ""},
		{"instinct fenced", instinct, "```python\ndef f(x):\n    y = -x\n    return y\n```", inference.FinishStop, "def f(x):\n    y = -x\n    return y", ""},
		{"instinct repeats markers", instinct,
			"import os\n<|editable_region_start|>\ndef f(x):\n    y = x\n    return y + 1\n<|editable_region_end|>", inference.FinishStop,
			"def f(x):\n    y = x\n    return y + 1", ""},
		{"instinct repeats the line before", instinct, "import os\ndef f(x):\n    y = x\n    return y", inference.FinishStop, "", "before the editable region"},
		{"instinct cut short", instinct, "def f(x):\n    y", inference.FinishLength, "", "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := parseInput(t, tc.f, file)
			if tc.f == editFormat(instinct) {
				// Instinct's region starts a line above the cursor's.
				if got := in.text[in.region.Start:in.region.End]; got != "def f(x):\n    y = x\n    return y" {
					t.Fatalf("instinct region %q", got)
				}
			}
			region, reason := tc.f.parse(in, tc.out, tc.finish)
			if tc.reason != "" || reason != "" {
				if tc.reason == "" || !strings.Contains(reason, tc.reason) || region != "" {
					t.Fatalf("reason %q (region %q), want one saying %q", reason, region, tc.reason)
				}
				return
			}
			if tc.name == "zeta empty region" {
				tc.region = ""
			}
			if region != tc.region {
				t.Fatalf("region %q, want %q", region, tc.region)
			}
		})
	}
}

// The differ's edit, for any region and rewrite: applied to the file it
// gives the file with the region rewritten, it lies in the region, it is
// smallest (no character to spare at either end) and it cuts no
// character; a rewrite equal to the region is no edit.
func TestSmallestEditProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", " ", "\n", "é", "😀", "x", "("}
	word := func() string {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := 0; i < 5000; i++ {
		before, old, after := word(), word(), word()
		next := old
		switch rng.IntN(4) {
		case 0:
			next = word()
		case 1:
			next = old + word()
		case 2:
			if len(old) > 0 {
				next = word() + old[:len(old)/2]
			}
		}
		text := before + old + after
		in := &editInput{path: "p", text: text, region: Span{Start: len(before), End: len(before) + len(old)}}
		e, reason := in.edit(next)
		if next == old {
			if e != nil || reason == "" {
				t.Fatalf("unchanged %q: edit %+v, reason %q", old, e, reason)
			}
			continue
		}
		if e == nil {
			t.Fatalf("%q -> %q: no edit (%s)", old, next, reason)
		}
		if e.Start < in.region.Start || e.End > in.region.End || e.Start > e.End {
			t.Fatalf("%q -> %q: edit [%d, %d) outside [%d, %d)", old, next, e.Start, e.End, in.region.Start, in.region.End)
		}
		if got := text[:e.Start] + e.Text + text[e.End:]; got != before+next+after {
			t.Fatalf("%q -> %q: applied %q", old, next, got)
		}
		if !boundary(text, e.Start) || !boundary(text, e.End) || !boundary(e.Text, 0) {
			t.Fatalf("%q -> %q: edit cuts a character", old, next)
		}
		rep := text[e.Start:e.End]
		if rep != "" && e.Text != "" {
			if r1, r2 := []rune(rep), []rune(e.Text); r1[0] == r2[0] || r1[len(r1)-1] == r2[len(r2)-1] {
				t.Fatalf("%q -> %q: edit %q -> %q not the smallest", old, next, rep, e.Text)
			}
		}
	}
}

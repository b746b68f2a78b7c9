package contextpack

import (
	"strings"
	"testing"
)

func TestCheckEvaluated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		evaluated int
		warn      string // "" for no warning
	}{
		{0, ""}, {100, ""}, {101, ""}, // unknown, exact, plus a BOS
		{99, "truncated"}, {60, "truncated"},
		{102, "tokenizers disagree"}, {140, "tokenizers disagree"},
	} {
		m := Manifest{PromptTokens: 100}
		warned := m.CheckEvaluated(tc.evaluated)
		want := 0
		if tc.warn != "" {
			want = 1
		}
		if warned != (want == 1) || len(m.Warnings) != want || want == 1 && !strings.Contains(m.Warnings[0], tc.warn) {
			t.Errorf("evaluated %d of 100: warned %v, warnings %q; want %q", tc.evaluated, warned, m.Warnings, tc.warn)
		}
	}
}

package inference

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStopMatcher(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		chunks []string
		user   []string
		want   string
		reason FinishReason
	}{
		{"no stop", []string{"ab", "c"}, nil, "abc", FinishUnknown},
		{"model stop split", []string{"x = 1<|", "file_", "sep|>more"}, nil, "x = 1", FinishStop},
		{"user stop", []string{"return a\n", "\ndef g"}, []string{"\n\n"}, "return a", FinishStopSequence},
		{"earliest wins", []string{"a;b<|endoftext|>"}, []string{";"}, "a", FinishStopSequence},
		{"false prefix released", []string{"a <", "b"}, nil, "a <b", FinishUnknown},
		{"multibyte kept whole", []string{"é", "€<", "|x"}, []string{"€!"}, "é€<|x", FinishUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newStopMatcher(QwenStops, tc.user)
			var out strings.Builder
			reason := FinishUnknown
			for _, c := range tc.chunks {
				e, r := m.feed(c)
				if !utf8.ValidString(e) {
					t.Fatalf("emitted invalid UTF-8 %q", e)
				}
				out.WriteString(e)
				if r != FinishUnknown {
					reason = r
					break
				}
			}
			if reason == FinishUnknown {
				out.WriteString(m.flush())
			}
			if out.String() != tc.want || reason != tc.reason {
				t.Fatalf("got %q %v, want %q %v", out.String(), reason, tc.want, tc.reason)
			}
		})
	}
}

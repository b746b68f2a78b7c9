package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// refPattern is [Pattern] for regexp2 (.NET semantics): identical except that
// the case-insensitive contraction group is spelled out, because Oniguruma
// (used by Hugging Face) case-folds U+017F "ſ" to "s" and regexp2 does not.
// regexp2's \s, \p{L} and \p{N} use the same Unicode sets as Oniguruma.
const refPattern = `'[sSſ]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var refRegex = regexp2.MustCompile(refPattern, regexp2.None)

func TestRefPatternIsPattern(t *testing.T) {
	const group = `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
	const spelled = `'[sSſ]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]`
	if got := strings.Replace(Pattern, group, spelled, 1); got != refPattern {
		t.Fatalf("refPattern drifted from Pattern:\n%s\n%s", got, refPattern)
	}
}

func refPieces(t testing.TB, s string) []string {
	t.Helper()
	var out []string
	m, err := refRegex.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = refRegex.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scanPieces(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func checkPieces(t *testing.T, s string) {
	t.Helper()
	want := refPieces(t, s)
	got := scanPieces(s)
	if strings.Join(want, "") != s {
		t.Fatalf("regex pieces of %+q do not cover the text: %+q", s, want)
	}
	if len(got) != len(want) {
		t.Fatalf("pieces of %+q:\n got %+q\nwant %+q", s, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("pieces of %+q:\n got %+q\nwant %+q", s, got, want)
		}
	}
}

func TestPretokenizerMatchesRegex(t *testing.T) {
	for _, s := range fuzzSeeds {
		if utf8.ValidString(s) {
			checkPieces(t, s)
		}
	}
	for _, v := range loadVectors(t) {
		if v.Decode == nil && v.Gen == nil {
			checkPieces(t, normalize(v.Text))
		}
	}
}

func FuzzPretokenizer(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{"'S'LL're", "\t\ta", " \u00a0x", "a\u2028\u2028b", "x\v\fy", "'Ⅻa", " 's", "…\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = sanitize(s)
		}
		checkPieces(t, s)
	})
}

package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
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
		j := testRunes().nextPiece(s, i)
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
			checkPieces(t, testRunes().normalize(v.Text))
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

var testRunes = sync.OnceValue(buildRuneTable)

// The rune table agrees with the Unicode functions it caches.
func TestRuneTable(t *testing.T) {
	tab := testRunes()
	for r := rune(0); r < 0x10000; r++ {
		if got, want := tab.classOf(r), runeClass(r); got != want {
			t.Fatalf("class of %U: %d, want %d", r, got, want)
		}
	}
	for r := rune(0x10000); r <= utf8.MaxRune; r++ {
		if supplementaryInert(r) && !isNFCInert(r) {
			t.Fatalf("%U is in an inert range but not NFC-inert", r)
		}
	}
	// A string of inert runes is NFC, and isNFC never claims otherwise.
	var inert []rune
	for r := rune(0); r < 0x10000; r++ {
		if tab[r]&nfcInert != 0 {
			inert = append(inert, r)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 50000 {
		rs := make([]rune, 2+rng.IntN(3))
		for k := range rs {
			rs[k] = inert[rng.IntN(len(inert))]
		}
		if s := string(rs); !isInert(tab, s) || norm.NFC.String(s) != s {
			t.Fatalf("inert runes %+q are not NFC", s)
		}
	}
	for _, s := range []string{"abc", "日本語", "😀👍🏽", "가각", "é", "e\u0301", "\u212b", "\u1100\u1161", "가\u11a8", "\u0958", "ｶ\uff9e"} {
		if isInert(tab, s) && norm.NFC.String(s) != s {
			t.Errorf("scanNFC(%+q) says inert but it is not NFC", s)
		}
	}
}

func isInert(tab *runeTable, s string) bool {
	inert, _ := tab.scanNFC(s)
	return inert
}

// Without a run of 10 non-inert runes x/text never inserts a CGJ, even with
// the longest decompositions.
func TestNoCGJWithoutLongRun(t *testing.T) {
	tab := testRunes()
	heavy := []string{"\u0344", "\u1fa2", "\u01d5", "\u0f73", "\u0f75", "\u0f81", "\u0301", "\u1161", "\uff9e", "\u1e69", "\u0b3e"}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			if rng.IntN(6) == 0 {
				b.WriteString("a")
			} else {
				b.WriteString(heavy[rng.IntN(len(heavy))])
			}
		}
		s := b.String()
		if _, long := tab.scanNFC(s); !long && strings.Contains(norm.NFC.String(s), cgj) {
			t.Fatalf("x/text inserted CGJ into %+q without a long run", s)
		}
	}
}

package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"testing"
)

func TestPassAtK(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{1, 1, 1, 1},
		{1, 0, 1, 0},
		{10, 3, 1, 0.3},
		{10, 0, 5, 0},
		{10, 3, 5, 1 - 21.0/252}, // 1 - C(7,5)/C(10,5)
		{10, 6, 5, 1},            // n-c < k
		{5, 2, 5, 1},
		{20, 1, 10, 0.5},
	}
	for _, tc := range cases {
		got, err := PassAtK(tc.n, tc.c, tc.k)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(%d,%d,%d) = %v, %v; want %v", tc.n, tc.c, tc.k, got, err, tc.want)
		}
	}
	// Against exact binomials.
	for _, tc := range [][3]int{{200, 13, 10}, {200, 13, 100}, {50, 49, 1}, {100, 7, 20}} {
		n, c, k := tc[0], tc[1], tc[2]
		exact := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n-c), int64(k)), new(big.Int).Binomial(int64(n), int64(k)))
		want, _ := new(big.Rat).Sub(big.NewRat(1, 1), exact).Float64()
		got, err := PassAtK(n, c, k)
		if err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("PassAtK(%d,%d,%d) = %v, want %v", n, c, k, got, want)
		}
	}
	for _, tc := range [][3]int{{0, 0, 1}, {5, 1, 0}, {5, 1, 6}, {5, 6, 1}, {5, -1, 1}} {
		if _, err := PassAtK(tc[0], tc[1], tc[2]); !errors.Is(err, ErrInvalidK) {
			t.Errorf("PassAtK%v err = %v", tc, err)
		}
	}
}

func TestExactMatch(t *testing.T) {
	if !ExactMatch("  return x\n", "return x") || ExactMatch("return x", "return  x") || !ExactMatch("\u00a0\t", "") {
		t.Fatal("ExactMatch")
	}
}

// TestEditSimilarityHand checks hand-computed values: M is the LCS length.
func TestEditSimilarityHand(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 100},
		{"", "x", 0},
		{"kitten", "sitting", 62},    // M=4: 800/13 = 61.5 -> 62
		{"abc", "abd", 67},           // M=2: 400/6
		{"ab", "ba", 50},             // M=1: 200/4
		{"abcdefgh", "aXXXXXXX", 12}, // M=1: 200/16 = 12.5 -> 12 (half to even)
		{"ab", "ac", 50},
		{"日本語", "日本", 80}, // code points, not bytes: 400/5
		{"  same\n", "same", 100},
	}
	for _, tc := range cases {
		if got := EditSimilarity(tc.a, tc.b); got != tc.want {
			t.Errorf("EditSimilarity(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestEditSimilarityFuzzywuzzy replays vectors produced by Debian's
// python3-fuzzywuzzy 0.18.0 with python3-levenshtein 0.12.2
// (fuzz.ratio(a.strip(), b.strip())); "difflib" is what the pure-Python
// fallback (difflib.SequenceMatcher) would give, which differs on 39 of them.
func TestEditSimilarityFuzzywuzzy(t *testing.T) {
	data, err := os.ReadFile("testdata/fuzz_ratio.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		A, B    string
		Ratio   int
		Difflib int
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, r := range rows {
		if got := EditSimilarity(r.A, r.B); got != r.Ratio {
			t.Errorf("EditSimilarity(%q, %q) = %d, fuzz.ratio = %d", r.A, r.B, got, r.Ratio)
		}
		if r.Ratio != r.Difflib {
			differ++
		}
	}
	if len(rows) < 60 || differ == 0 {
		t.Fatalf("vectors: %d rows, %d differ from difflib", len(rows), differ)
	}
}

func BenchmarkEditSimilarity(b *testing.B) {
	x := make([]byte, 2000)
	y := make([]byte, 2000)
	for i := range x {
		x[i] = "abcdefgh "[i%9]
		y[i] = "abcdefgh "[(i*7)%9]
	}
	for b.Loop() {
		EditSimilarity(string(x), string(y))
	}
}

// Package metrics owns the evaluator's scores: unbiased pass@k, exact match
// and edit similarity (fuzzywuzzy's fuzz.ratio with python-Levenshtein
// semantics), and their aggregation by benchmark and level with latency
// statistics. It depends on nothing else in infill.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// ErrInvalidK is returned by PassAtK for k outside 1..n or c outside 0..n.
var ErrInvalidK = errors.New("metrics: invalid pass@k arguments")

// PassAtK is the unbiased estimator of pass@k for n samples of which c
// passed: 1 − C(n−c, k)/C(n, k), computed as 1 − ∏_{i=n−c+1..n} (1 − k/i).
// It is defined only for 1 ≤ k ≤ n.
func PassAtK(n, c, k int) (float64, error) {
	if n < 1 || k < 1 || k > n || c < 0 || c > n {
		return 0, fmt.Errorf("%w: n=%d c=%d k=%d", ErrInvalidK, n, c, k)
	}
	if n-c < k {
		return 1, nil
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, nil
}

// ExactMatch compares completion and reference after stripping leading and
// trailing whitespace (Python's str.strip()).
func ExactMatch(completion, reference string) bool {
	return strip(completion) == strip(reference)
}

// EditSimilarity is fuzzywuzzy's fuzz.ratio(a.strip(), b.strip()) as
// computed with python-Levenshtein installed (the StringMatcher backend):
// round(100 · 2·M / (|a|+|b|)) where M is the length of a longest common
// subsequence of code points, i.e. Levenshtein.ratio, whose substitution
// costs 2. Rounding is Python's round-half-to-even. Equal strings score 100
// (two empty strings included); one empty string scores 0. The result is in
// 0..100.
func EditSimilarity(a, b string) int {
	ra, rb := []rune(strip(a)), []rune(strip(b))
	if string(ra) == string(rb) {
		return 100
	}
	if len(ra) == 0 || len(rb) == 0 {
		return 0
	}
	m := lcs(ra, rb)
	return int(math.RoundToEven(100 * (2 * float64(m) / float64(len(ra)+len(rb)))))
}

// lcs returns the length of a longest common subsequence with O(min) memory.
func lcs(a, b []rune) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	// Trim a common prefix and suffix: they are part of every LCS.
	pre := 0
	for pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	a, b = a[pre:], b[pre:]
	suf := 0
	for suf < len(b) && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	a, b = a[:len(a)-suf], b[:len(b)-suf]
	row := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		diag := 0
		for j := 1; j <= len(b); j++ {
			up := row[j]
			switch {
			case a[i-1] == b[j-1]:
				row[j] = diag + 1
			case row[j-1] > row[j]:
				row[j] = row[j-1]
			}
			diag = up
		}
	}
	return pre + suf + row[len(b)]
}

// strip removes what Python's str.strip() removes: Unicode whitespace.
func strip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

func isPySpace(r rune) bool {
	switch r {
	case '\x1c', '\x1d', '\x1e', '\x1f':
		return true
	}
	return unicode.IsSpace(r)
}

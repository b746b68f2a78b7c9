package main

import "testing"

// TestPooledAndPerSampleRecall: the headline pools identifiers, the
// per-sample mean weighs samples alike, and a sample that needs nothing
// counts in neither.
func TestPooledAndPerSampleRecall(t *testing.T) {
	var a agg
	for _, c := range []cell{{CodeNeed: 1, CodeFound: 1}, {CodeNeed: 3, CodeFound: 0}, {CodeNeed: 0}} {
		a.add(c)
	}
	if got := pct(a.CodeFound, a.CodeNeed); got != 25 {
		t.Errorf("pooled recall %v, want 25", got)
	}
	if got := 100 * a.SampleRecall / float64(a.SampleRecallN); got != 50 || a.Prompts != 3 {
		t.Errorf("per-sample mean %v over %d prompts, want 50 over 3", got, a.Prompts)
	}
}

package metrics

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	samples := []Sample{
		{TaskID: "a", Benchmark: "he", Level: "single-line", Passed: true, Verdict: "passed", ExactMatch: true, EditSimilarity: 100, TTFT: 10 * ms, Total: 50 * ms},
		{TaskID: "a", Benchmark: "he", Level: "single-line", Passed: false, Verdict: "failed", EditSimilarity: 50, TTFT: 30 * ms, Total: 70 * ms},
		{TaskID: "b", Benchmark: "he", Level: "multi-line", Passed: false, Verdict: "timeout", EditSimilarity: 0},
		{TaskID: "b", Benchmark: "he", Level: "multi-line", Passed: false, Verdict: "failed", EditSimilarity: 10},
		{TaskID: "r1", Benchmark: "repo", Level: "expression", Passed: true, Verdict: "passed", EditSimilarity: 90},
	}
	s := Summarize(samples, 1, 2)
	o := s.Overall
	if o.Tasks != 3 || o.Samples != 5 {
		t.Fatalf("overall counts %+v", o)
	}
	// pass@1: a=0.5, b=0, r1=1 -> 0.5; pass@2 missing because r1 has n=1.
	if math.Abs(o.PassAtK[1]-0.5) > 1e-12 {
		t.Errorf("pass@1 = %v", o.PassAtK[1])
	}
	if _, ok := o.PassAtK[2]; ok {
		t.Errorf("pass@2 reported with a task of n=1")
	}
	if o.Verdicts["failed"] != 2 || o.Verdicts["timeout"] != 1 || o.Verdicts["passed"] != 2 {
		t.Errorf("verdicts %v", o.Verdicts)
	}
	if math.Abs(o.ExactMatch-0.2) > 1e-12 || math.Abs(o.EditSimilarity-50) > 1e-12 {
		t.Errorf("em %v es %v", o.ExactMatch, o.EditSimilarity)
	}
	if o.TTFT.Count != 2 || o.TTFT.Mean != 20*ms || o.Total.Max != 70*ms || o.TTFT.P50 != 10*ms {
		t.Errorf("latency %+v %+v", o.TTFT, o.Total)
	}
	if len(s.ByBenchmark) != 2 || s.ByBenchmark[0].Benchmark != "he" {
		t.Fatalf("by benchmark %+v", s.ByBenchmark)
	}
	he := s.ByBenchmark[0]
	// he: a pass@2 = 1 (n=2,c=1,k=2), b = 0 -> 0.5.
	if math.Abs(he.PassAtK[2]-0.5) > 1e-12 || math.Abs(he.PassAtK[1]-0.25) > 1e-12 {
		t.Errorf("he pass@k %v", he.PassAtK)
	}
	if len(s.ByLevel) != 3 || s.ByLevel[0].Level != "multi-line" {
		t.Errorf("by level %+v", s.ByLevel)
	}
	agg := NewAggregator(2, 1, 1, 0)
	for _, x := range samples {
		agg.Add(x)
	}
	if got := agg.Summary(); got.Overall.PassAtK[1] != o.PassAtK[1] {
		t.Errorf("aggregator differs")
	}
}

func TestSummarizeByLanguage(t *testing.T) {
	samples := []Sample{
		{TaskID: "p1", Benchmark: "mixed", Level: "expression", Language: "python", Passed: true, Verdict: "passed"},
		{TaskID: "p2", Benchmark: "mixed", Level: "block", Language: "python", Passed: false, Verdict: "failed"},
		{TaskID: "g1", Benchmark: "mixed", Level: "expression", Language: "go", Passed: false, Verdict: "failed"},
		{TaskID: "g1", Benchmark: "mixed", Level: "expression", Language: "go", Passed: true, Verdict: "passed"},
		{TaskID: "g2", Benchmark: "other", Level: "block", Language: "go", Passed: true, Verdict: "passed"},
		{TaskID: "h", Benchmark: "he", Level: "single-line", Passed: true, Verdict: "passed"},
	}
	s := Summarize(samples, 1)
	type want struct {
		lang, level string
		tasks       int
		pass1       float64
	}
	check := func(name string, got []Group, w []want) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: %d groups, want %d: %+v", name, len(got), len(w), got)
		}
		for i, g := range got {
			if g.Language != w[i].lang || g.Level != w[i].level || g.Tasks != w[i].tasks || math.Abs(g.PassAtK[1]-w[i].pass1) > 1e-12 {
				t.Errorf("%s[%d] = %s/%s tasks %d pass@1 %v, want %+v", name, i, g.Language, g.Level, g.Tasks, g.PassAtK[1], w[i])
			}
		}
	}
	// Languages pool across benchmarks; "" holds samples without one.
	check("by language", s.ByLanguage, []want{{"", "", 1, 1}, {"go", "", 2, 0.75}, {"python", "", 2, 0.5}})
	check("by language and level", s.ByLanguageLevel, []want{
		{"", "single-line", 1, 1},
		{"go", "block", 1, 1}, {"go", "expression", 1, 0.5},
		{"python", "block", 1, 0}, {"python", "expression", 1, 1},
	})
}

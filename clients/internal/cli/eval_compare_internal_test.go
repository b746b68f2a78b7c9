package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/outcome"
)

func TestTestsRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    evaluator.Result
		want int
	}{
		{evaluator.Result{Tests: &outcome.TestCounts{Passed: 4, Skipped: 2}}, 4},
		{evaluator.Result{StdoutTail: "FAILED tests/t.py::x - TypeError\n3 failed, 733 passed in 39.82s\n"}, 736},
		{evaluator.Result{StdoutTail: "!!! Interrupted: 2 errors during collection !!!\n2 errors in 3.07s\n"}, 2},
		{evaluator.Result{StdoutTail: "3 failed, 142 deselected in 1.23s\n"}, 3},
		{evaluator.Result{StdoutTail: "==== 1 failed, 1 error, 5 passed, 2 skipped in 0.50s ====\n"}, 7},
		{evaluator.Result{StdoutTail: "Traceback (most recent call last):\n"}, 0},
	} {
		if got := testsRun(&tc.r); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.r.StdoutTail, got, tc.want)
		}
	}
}

// TestWriteComparison pins the comparison's text: the disagreements, the
// per-level table (samples count reference completions only) and the
// totals, and the error a disagreement returns.
func TestWriteComparison(t *testing.T) {
	t.Parallel()
	pass := func(n int) evaluator.Result {
		return evaluator.Result{Verdict: evaluator.VerdictPassed, Tests: &outcome.TestCounts{Passed: n}, ExecDuration: time.Duration(n) * time.Second}
	}
	results := []comparison{
		{TaskID: "a", Level: evaluator.LevelStatement, Completion: "reference", Selected: pass(2), Whole: pass(20), SelectedWall: 2 * time.Second, WholeWall: 8 * time.Second},
		{TaskID: "a", Level: evaluator.LevelStatement, Completion: "empty",
			Selected: evaluator.Result{Verdict: evaluator.VerdictFailed, Reason: "assert"}, Whole: pass(20), SelectedWall: time.Second, WholeWall: 8 * time.Second},
		{TaskID: "b", Level: evaluator.LevelFunction, Completion: "reference", Selected: pass(5), Whole: pass(10), SelectedWall: 3 * time.Second, WholeWall: 6 * time.Second},
	}
	var b strings.Builder
	err := writeComparison(&b, results, 2)
	want := `disagreements:
  a (empty middle): selected failed (assert); whole suite passed
      LEVEL  SAMPLES  TESTS RUN SELECTED  WHOLE SUITE         WALL TIME SELECTED  WHOLE SUITE      
  statement        1                   2           40  20.0×                  3s          16s  5.3×
   function        1                   5           10   2.0×                  3s           6s  2.0×
                    RUNS  TESTS RUN  PER SAMPLE  WALL TIME  PER SAMPLE  TEST TIME
    selected tests     3          7         3.5         6s          3s         7s
       whole suite     3         50        25.0        22s         11s        50s
  whole ÷ selected             7.1×                   3.7×                   7.1×
3 completions compared over 2 samples (reference and empty middle each): 1 disagree
`
	if got := b.String(); got != want {
		t.Errorf("writeComparison wrote\n%s\nwant\n%s", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "1 of 3 verdicts differ") {
		t.Errorf("error %v, want one of three verdicts differing", err)
	}
}

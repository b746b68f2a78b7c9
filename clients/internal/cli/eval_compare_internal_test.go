package cli

import (
	"testing"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

func TestTestsRun(t *testing.T) {
	for _, tc := range []struct {
		r    evaluator.Result
		want int
	}{
		{evaluator.Result{Tests: &sandbox.TestCounts{Passed: 4, Skipped: 2}}, 4},
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

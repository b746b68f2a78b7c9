package impact

import "slices"

// Selection is the tests that execute one span of the pristine repository.
type Selection struct {
	// Tests are those tests in the runner's own form (the form
	// evaluator.TestSpec.Tests takes); empty when Whole is set or when no
	// test reaches the span.
	Tests []string
	// Passing is how many of Tests passed on the pristine code: a run of
	// just them passes as many.
	Passing int
	// Whole says every test reaches the span (a line run at import time, a
	// test file): the whole suite is the selection.
	Whole bool
}

// Empty reports whether no test reaches the span: no run of the tests can
// tell a completion of it from any other.
func (s Selection) Empty() bool { return !s.Whole && s.Passing == 0 }

// Reach finds the tests that execute a span of the pristine repository.
type Reach interface {
	// Span returns the tests that execute bytes [start, end) of file (a
	// slash-separated path relative to the repository root; src its
	// pristine contents).
	Span(file string, src []byte, start, end int) (Selection, error)
}

// PytestReach is a pytest Map as a Reach: node ids relative to the
// repository root (RootRelative), for PytestTests, under SelectShaped's
// rule (a selected run checks the changed file's shape: PytestShape).
type PytestReach struct{ Map *Map }

// Span implements Reach.
func (r PytestReach) Span(file string, src []byte, start, end int) (Selection, error) {
	span, err := ByteSpan(file, src, start, end)
	if err != nil {
		return Selection{}, err
	}
	ids, whole, err := SelectShaped(r.Map, span)
	if err != nil {
		return Selection{}, err
	}
	if whole || len(ids) == len(r.Map.Tests) && len(ids) > 0 {
		return Selection{Whole: true}, nil
	}
	passed := map[TestID]bool{}
	for i, t := range r.Map.Tests {
		passed[t] = r.Map.Outcomes[i] == "passed"
	}
	var keep []TestID
	for _, id := range ids {
		// Tests that did not pass on the pristine code (skipped) say nothing
		// about a completion; a run that names only them would pass nothing.
		if passed[id] {
			keep = append(keep, id)
		}
	}
	if len(keep) == 0 {
		return Selection{}, nil
	}
	return Selection{Tests: r.Map.RootRelative(slices.Clip(keep)), Passing: len(keep)}, nil
}

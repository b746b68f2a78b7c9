package masking

import (
	"context"
	"fmt"

	"github.com/infill-dev/infill/evaluator"
)

// BaselineError is a failed check of the unmodified repository: the test
// command, what it did, and the changes Build made to the command before
// giving up. Explain says what it means and what to do, in the words of
// the test's runner.
type BaselineError struct {
	// Repo is the repository's directory.
	Repo   string
	Test   evaluator.TestSpec
	Result evaluator.Result
	// Fixes are the changes made to the test command (Stats.Fixes).
	Fixes []string
	// Unit is the unit checked (a Go package), for runners that check the
	// unmodified repository unit by unit.
	Unit string
}

func (e *BaselineError) Error() string {
	why := firstNonEmpty(e.Result.Error, e.Result.Reason, string(e.Result.Verdict))
	return fmt.Sprintf("%v: %s", ErrBaselineFails, why)
}

func (e *BaselineError) Unwrap() error { return ErrBaselineFails }

// Explain says, in a few lines, what the failed check means and what to
// do: the test command, what its exit status means, the reason, the last
// lines of its output and the fix for the common cases. python names the
// interpreter the tests ran with.
func (e *BaselineError) Explain(python string) string {
	b := evaluator.BaselineFailure{Repo: e.Repo, Test: e.Test, Result: e.Result, Fixes: e.Fixes, Unit: e.Unit, Python: python}
	return b.Explain()
}

// maxFixes bounds the changes Build makes to a test command.
const maxFixes = 4

// CheckBaseline runs the unmodified repository's tests (the target file's
// own text as the completion: exactly the file on disk). A run that fails
// in a way the test's runner can fix (pytest: an option, warning filter or
// plugin the configuration names and the environment lacks, or the
// repository's own package under src/ not being importable) is run again
// with that fixed, at most maxFixes times; each change is returned in
// words. The test spec returned is the one that passed.
func CheckBaseline(ctx context.Context, g Grader, repoDir string, base evaluator.Task) (evaluator.TestSpec, evaluator.Result, []string, error) {
	test := base.Exec.Test
	runner, ok := evaluator.TestRunnerFor(test.Kind)
	if !ok {
		return test, evaluator.Result{}, nil, fmt.Errorf("%w: unknown test kind %q", ErrInvalidOptions, test.Kind)
	}
	var fixes []string
	for {
		base.Exec.Test = test
		res, err := g.Grade(ctx, base, 0, &evaluator.Completion{Text: base.Reference})
		if err != nil {
			return test, res, fixes, err
		}
		if res.Passed() {
			return test, res, fixes, nil
		}
		if len(fixes) == maxFixes {
			return test, res, fixes, &BaselineError{Repo: repoDir, Test: test, Result: res, Fixes: fixes}
		}
		fixed, note, ok := runner.Fix(repoDir, test, &res)
		if !ok {
			berr := &BaselineError{Repo: repoDir, Test: test, Result: res, Fixes: fixes}
			if note != "" {
				berr.Fixes = append(berr.Fixes, note)
			}
			return test, res, fixes, berr
		}
		test, fixes = fixed, append(fixes, note)
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

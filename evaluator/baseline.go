package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// The rule that tells an environment's failure from a completion's. A
// test run that fails on an import (ImportError, ModuleNotFoundError) may
// be either: a module that is not installed, or a completion that imports
// a misspelt module or removes a name others import. The unmodified
// repository decides: its tests are run once, with the same test command
// and interpreter, in the same sandbox. When they fail on an import too,
// the environment cannot run the repository's tests, and no sample of it
// can be judged: the sample is ERROR, with the repository's own failure
// as the reason. When they do not, the environment has what the
// repository needs, and the import failure is the completion's: FAILED.
// Failures other than imports are never the environment's (the
// unmodified repository's failing tests are eval mask's business: it
// keeps only repositories that pass).

// baselines runs each unmodified repository's tests once per Runner and
// keeps the outcome.
type baselines struct {
	mu   sync.Mutex
	runs map[string]*baselineRun
}

type baselineRun struct {
	done chan struct{}
	// envErr is the environment failure the run showed (nil: none).
	envErr error
	err    error
}

// environmentFailure runs run without its target file (the unmodified
// repository), once per repository, test command and environment, and
// returns an error wrapping sandbox.ErrEnvironment when that run fails the
// way tr says may be the environment's (an import, a module the cache
// lacks), or on its environment.
func (b *baselines) environmentFailure(ctx context.Context, ex Executor, tr TestRunner, run *testRun) (error, error) {
	base := *run
	base.spec.Files = maps.Clone(run.spec.Files)
	delete(base.spec.Files, run.target)
	key, err := json.Marshal(base.spec)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[string]*baselineRun{}
	}
	r, ok := b.runs[string(key)]
	if !ok {
		r = &baselineRun{done: make(chan struct{})}
		b.runs[string(key)] = r
	}
	b.mu.Unlock()
	if !ok {
		r.envErr, r.err = runBaseline(ctx, ex, tr, &base)
		if ctx.Err() != nil {
			// Not an answer: the next sample asks again.
			b.mu.Lock()
			delete(b.runs, string(key))
			b.mu.Unlock()
		}
		close(r.done)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil && ctx.Err() == nil && (errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded)) {
		// The sample that ran it was cancelled: run it again.
		return b.environmentFailure(ctx, ex, tr, run)
	}
	return r.envErr, r.err
}

func runBaseline(ctx context.Context, ex Executor, tr TestRunner, run *testRun) (error, error) {
	out, err := ex.Run(ctx, run.spec)
	if err == nil {
		err = run.finish(&out)
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrEnvironment) {
			return err, nil
		}
		return nil, err
	}
	if run.passed(&out) {
		return nil, nil
	}
	if s := tr.suspect(&out); s != "" {
		return tr.unmodifiedFailure(s), nil
	}
	return nil, nil
}

// BaselineFailure is a failed check of an unmodified repository: the test
// command, what it did, and the changes made to the command before giving
// up (package masking's check; Explain says what it means and what to do).
type BaselineFailure struct {
	// Repo is the repository's directory.
	Repo   string
	Test   TestSpec
	Result Result
	// Fixes are the changes made to the test command, in words.
	Fixes []string
	// Unit is the unit checked, for runners that check unit by unit (a Go
	// package).
	Unit string
	// Python is the interpreter the tests ran with ("": the sandbox's).
	Python string
}

// Explain says, in a few lines, what the failed check means and what to
// do, in the words of the test's runner: the test command, what its exit
// status means, the reason, the last lines of its output and the fix.
func (b *BaselineFailure) Explain() string {
	r, ok := TestRunnerFor(b.Test.Kind)
	if !ok {
		return fmt.Sprintf("the unmodified repository does not pass its tests: %s", firstNonEmpty(b.Result.Error, b.Result.Reason, string(b.Result.Verdict)))
	}
	return r.Explain(b)
}

// writeOutputTail writes the last lines of the run's output, indented.
func (b *BaselineFailure) writeOutputTail(sb *strings.Builder) {
	r := &b.Result
	if out := lastLines(r.StdoutTail+"\n"+r.StderrTail, 12); strings.TrimSpace(out) != "" {
		sb.WriteString("  last lines of its output:\n")
		for _, l := range strings.Split(out, "\n") {
			fmt.Fprintf(sb, "    | %s\n", l)
		}
	}
}

// ownModule says whether the dotted module name lies in a package of the
// repository (at its root or under src/).
func (b *BaselineFailure) ownModule(name string) bool {
	top, _, dotted := strings.Cut(name, ".")
	if !dotted || b.Repo == "" {
		return false
	}
	for _, dir := range []string{filepath.Join(b.Repo, top), filepath.Join(b.Repo, "src", top)} {
		if fi, err := os.Stat(filepath.Join(dir, "__init__.py")); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// environmentFailure runs spec without its files (the unmodified
// repository), once per repository, test command and environment, and
// returns an error wrapping sandbox.ErrEnvironment when that run fails on
// an import too (or on its environment).
func (b *baselines) environmentFailure(ctx context.Context, ex Executor, spec sandbox.Spec) (error, error) {
	spec.Files = runnerFiles(spec.Files)
	key, err := json.Marshal(struct {
		Spec sandbox.Spec
		Env  *sandbox.Environment
	}{spec, spec.Environment})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[string]*baselineRun{}
	}
	run, ok := b.runs[string(key)]
	if !ok {
		run = &baselineRun{done: make(chan struct{})}
		b.runs[string(key)] = run
	}
	b.mu.Unlock()
	if !ok {
		run.envErr, run.err = runBaseline(ctx, ex, spec)
		if ctx.Err() != nil {
			// Not an answer: the next sample asks again.
			b.mu.Lock()
			delete(b.runs, string(key))
			b.mu.Unlock()
		}
		close(run.done)
	}
	select {
	case <-run.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if run.err != nil && ctx.Err() == nil && (errors.Is(run.err, context.Canceled) || errors.Is(run.err, context.DeadlineExceeded)) {
		// The sample that ran it was cancelled: run it again.
		return b.environmentFailure(ctx, ex, spec)
	}
	return run.envErr, run.err
}

func runBaseline(ctx context.Context, ex Executor, spec sandbox.Spec) (error, error) {
	out, err := ex.Run(ctx, spec)
	if err != nil {
		if errors.Is(err, sandbox.ErrEnvironment) {
			return err, nil
		}
		return nil, err
	}
	if out.Passed(spec.Mode) {
		return nil, nil
	}
	if imp := environmentSuspect(&out); imp != "" && spec.Mode == sandbox.ModeGo {
		return fmt.Errorf("%w: the unmodified repository fails to build too: %s; "+
			"the module cache lacks a dependency (eval mask runs go mod download into it; it must be readable by the sandbox's user: GOMODCACHE, or --sandbox-go-modcache here and on infill-server)", sandbox.ErrEnvironment, imp), nil
	} else if imp != "" {
		return fmt.Errorf("%w: the unmodified repository's tests fail on an import too: %s; "+
			"the interpreter lacks what they import (give the repository a virtual environment that has it: .venv/, or --python)", sandbox.ErrEnvironment, imp), nil
	}
	return nil, nil
}

package evaluator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Selected tests: a repository task whose TestSpec.Tests names the tests
// that execute its span runs only those (unless Config.AllTests), and
// Runner.TraceTests finds them once per repository on the pristine code,
// with its test runner's selector: pytest's here, node's files in
// nodetest.go.

// ErrNoTracer is returned by Runner.TraceTests for a test kind whose tests
// cannot be traced (or whose selection was not asked for): its tasks run
// the whole suite.
var ErrNoTracer = errors.New("evaluator: no test-impact tracer for this test kind")

// selectPytest narrows spec, a pytest run of t's tests, to
// t.Exec.Test.Tests when it names any: the test-impact plugin deselects
// every other test (impact.PytestTests), compiles the target first, so
// that a completion that does not parse fails even where no selected test
// imports its file at collection, and says when the completion changes
// the file's shape (code outside function bodies), which the selection
// does not cover (impact.SelectShaped): gradeCompletion then runs the
// whole suite unless the selected tests fail (widenRun).
func selectPytest(spec *sandbox.Spec, t *Task, target string) error {
	ts := t.Exec.Test
	if len(ts.Tests) == 0 {
		return nil
	}
	cfg := impact.PytestConfig{Options: ts.Args}
	if strings.HasSuffix(target, ".py") {
		cfg.Compile = []string{target}
		cfg.Shape = &impact.PytestShape{File: target, Pristine: t.Prefix + t.Reference + t.Suffix}
	}
	run, err := impact.PytestTests(ts.Tests, cfg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTask, err)
	}
	applyPytestRun(spec, run)
	return nil
}

// applyPytestRun makes spec, a run of the Python runner's pytest mode,
// run run.
func applyPytestRun(spec *sandbox.Spec, run impact.PytestRun) {
	spec.Python = append([]string{"pytest"}, run.Args...)
	if spec.Files == nil {
		spec.Files = map[string]string{}
	}
	maps.Copy(spec.Files, run.Files)
	env := make(map[string]string, len(spec.Env)+len(run.Env))
	maps.Copy(env, spec.Env)
	maps.Copy(env, run.Env)
	spec.Env = env
}

// WholeSuite is ts running the whole suite: without Tests, and expecting
// the whole suite's pass count (SuiteTests) where Tests were named
// (Config.AllTests; the CLI's --all-tests).
func (ts TestSpec) WholeSuite() TestSpec {
	if len(ts.Tests) == 0 {
		return ts
	}
	ts.Tests, ts.ExpectedTests, ts.SuiteTests = nil, ts.SuiteTests, 0
	return ts
}

// validateTests checks a TestSpec's Tests.
func validateTests(tests []string) error {
	for _, id := range tests {
		if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "\x00\n\r") {
			return fmt.Errorf("test %q: empty or with a NUL or line break", id)
		}
	}
	return nil
}

// pytestSelector traces a pytest suite once with the test-impact plugin
// (package impact), in the sandbox as any test run, with the task's
// interpreter: the map says, for any span of the repository, the tests to
// name in TestSpec.Tests. The selection is trusted: a span no test
// executes is no sample.
type pytestSelector struct{}

func (pytestSelector) optIn() bool { return false }

func (pytestSelector) trace(ctx context.Context, r *Runner, t Task, o TraceOptions) (*TestSelection, error) {
	run, err := r.planRun(&t, t.Reference)
	if err != nil {
		return nil, err
	}
	tr, err := impact.NewPytestTrace(impact.PytestConfig{Options: t.Exec.Test.Args})
	if err != nil {
		return nil, err
	}
	applyPytestRun(&run.spec, tr.Run)
	if o.Timeout > 0 {
		run.spec.Timeout = o.Timeout
	}
	out, err := r.exec.Run(ctx, run.spec)
	if err != nil {
		return nil, fmt.Errorf("tracing the tests: %w", err)
	}
	if out.Status != sandbox.StatusExited {
		out.NoteLimit(false)
		return nil, fmt.Errorf("tracing the tests: the run ended %s: %s", out.Status, limitReason(&out))
	}
	m, err := tr.Parse([]byte(out.Stdout))
	if err != nil {
		return nil, fmt.Errorf("tracing the tests (exit status %d): %w", out.ExitCode, err)
	}
	return &TestSelection{Reach: impact.PytestReach{Map: m}}, nil
}

package evaluator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Selected tests: a repository task whose TestSpec.Tests names the tests
// that execute its span runs only those (unless Config.AllTests), and
// TraceTests finds them once per repository on the pristine code.

// ErrNoTracer is returned by TraceTests for a test kind whose tests cannot
// be traced: its tasks run the whole suite.
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

// applyPytestRun makes spec (ModePytest) run run.
func applyPytestRun(spec *sandbox.Spec, run impact.PytestRun) {
	spec.Args = run.Args
	if spec.Files == nil {
		spec.Files = map[string]string{}
	}
	maps.Copy(spec.Files, run.Files)
	env := make(map[string]string, len(spec.Env)+len(run.Env))
	maps.Copy(env, spec.Env)
	maps.Copy(env, run.Env)
	spec.Env = env
}

// widenRun runs t's whole suite when the selected run out (of spec)
// passed although the completion changed its file's shape, which the
// selection does not cover. A failing selected run stands: the whole suite
// runs the same tests (an order-dependent pass is what a selection cannot
// see anyway: see package impact). It returns the task, spec and result
// that grade the completion.
func (r *Runner) widenRun(ctx context.Context, t *Task, completion string, spec sandbox.Spec, out sandbox.Result) (*Task, sandbox.Spec, sandbox.Result, error) {
	if !impact.Widened(spec.Env, out.Stdout) {
		return t, spec, out, nil
	}
	if v, _ := verdict(&out, &spec, t.Exec.Test.ExpectedTests); v != VerdictPassed {
		return t, spec, out, nil
	}
	whole := *t
	whole.Exec.Test = t.Exec.Test.WholeSuite()
	spec, err := specFor(&r.cfg, &whole, completion)
	if err != nil {
		return t, spec, out, err
	}
	out, err = r.exec.Run(ctx, spec)
	return &whole, spec, out, err
}

// runnerFiles are the files of a spec that belong to the test runner (the
// test-impact plugin and its selection), not to the completion.
func runnerFiles(files map[string]string) map[string]string {
	var out map[string]string
	for k, v := range files {
		if strings.HasPrefix(k, impact.PluginDir+"/") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
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

// TraceTests runs repository task t's whole suite once on its pristine
// file (Prefix + Reference + Suffix), recording which tests execute which
// lines, within timeout (0: the sandbox's limit). The Reach it returns
// says, for any span of the repository, the tests to name in
// TestSpec.Tests. Test kinds without a tracer give ErrNoTracer; pytest is
// traced with the test-impact plugin (package impact), in the sandbox as
// any test run, with the task's interpreter.
func (r *Runner) TraceTests(ctx context.Context, t Task, timeout time.Duration) (impact.Reach, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.Exec.Kind != ExecRepository || t.Exec.Test.Kind != TestPytest {
		return nil, fmt.Errorf("%w: %q", ErrNoTracer, t.Exec.Test.Kind)
	}
	t.Exec.Test.Tests = nil
	spec, err := specFor(&r.cfg, &t, t.Reference)
	if err != nil {
		return nil, err
	}
	tr, err := impact.NewPytestTrace(impact.PytestConfig{Options: t.Exec.Test.Args})
	if err != nil {
		return nil, err
	}
	applyPytestRun(&spec, tr.Run)
	if timeout > 0 {
		spec.Timeout = timeout
	}
	out, err := r.exec.Run(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("tracing the tests: %w", err)
	}
	if out.Status != sandbox.StatusExited {
		return nil, fmt.Errorf("tracing the tests: the run ended %s: %s", out.Status, limitReason(&out))
	}
	m, err := tr.Parse([]byte(out.Stdout))
	if err != nil {
		return nil, fmt.Errorf("tracing the tests (exit status %d): %w", out.ExitCode, err)
	}
	return impact.PytestReach{Map: m}, nil
}

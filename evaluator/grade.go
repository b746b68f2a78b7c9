package evaluator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/infill-dev/infill/evaluator/metrics"
	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/internal/errkind"
	"github.com/infill-dev/infill/internal/logctx"
	"go.uber.org/zap"
)

// Completion is one generated middle with its latencies.
type Completion struct {
	Text string `json:"text"`
	// TTFT is the time to first token once a backend slot was free (the
	// wait for one is QueueWait); zero when unknown.
	TTFT time.Duration `json:"ttft_ns"`
	// Total is the time to the full completion, also without QueueWait;
	// zero when unknown.
	Total time.Duration `json:"total_ns"`
	// QueueWait is how long the request waited for a backend slot: behind
	// the run's own other samples, and anyone else's.
	QueueWait time.Duration `json:"queue_ns,omitempty"`
}

// Completer produces completions for tasks. Implementations must be safe
// for concurrent use; sample numbers a task's n samples 0..n-1.
type Completer interface {
	Complete(ctx context.Context, t Task, sample int) (Completion, error)
}

// CompleterFunc adapts a function to Completer.
type CompleterFunc func(ctx context.Context, t Task, sample int) (Completion, error)

// Complete calls f.
func (f CompleterFunc) Complete(ctx context.Context, t Task, sample int) (Completion, error) {
	return f(ctx, t, sample)
}

// Executor runs sandbox specs; *sandbox.Sandbox implements it (and Pool,
// over one).
type Executor interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// reacher is an Executor that says whether its sandbox's user can reach a
// host directory (sandbox.Sandbox.Reachable): a test runner binds a
// directory it may go without (a module cache) only where it can. An
// Executor without it is taken to reach everything.
type reacher interface {
	Reachable(dir string) error
}

// Verdict is the outcome of one graded completion.
type Verdict string

const (
	// VerdictPassed: the tests ran to the end and passed.
	VerdictPassed Verdict = "passed"
	// VerdictFailed: the tests failed, crashed, exited early without the
	// pass signal, or the run flooded its output.
	VerdictFailed Verdict = "failed"
	// VerdictTimeout: the wall-clock or CPU-time limit was hit.
	VerdictTimeout Verdict = "timeout"
	// VerdictError: no verdict could be reached (completion failed, invalid
	// task, sandbox could not start), or the environment, not the
	// completion, failed (a missing interpreter or test runner, a pytest
	// usage error, a module the unmodified repository cannot import
	// either: see baseline.go). Not written to the journal, so a resumed
	// run retries it.
	VerdictError Verdict = "error"
	// VerdictSkipped: the task has no tests (ExecNone); only exact match
	// and edit similarity are meaningful.
	VerdictSkipped Verdict = "skipped"
)

// Result is one graded sample. It is also the journal's record.
type Result struct {
	TaskID    string `json:"task_id"`
	Benchmark string `json:"benchmark"`
	Level     Level  `json:"level,omitempty"`
	// Language is the task's source language ("python", "go"); empty
	// when the benchmark does not say.
	Language   string  `json:"language,omitempty"`
	Sample     int     `json:"sample"`
	Completion string  `json:"completion"`
	Verdict    Verdict `json:"verdict"`
	// Reason explains a verdict other than passed in one line: the first
	// meaningful error (the failing test, the exception and where it was
	// raised), the limit hit ("timed out after 3s", "memory limit"), or
	// what else ended the run ("exited 0 without the pass signal").
	Reason   string `json:"reason,omitempty"`
	ExitCode int    `json:"exit_code"`
	// WeakSignal is set when the test kind has no positive pass signal
	// beyond the exit status (TestCommand).
	WeakSignal     bool                `json:"weak_signal,omitempty"`
	Tests          *outcome.TestCounts `json:"tests,omitempty"`
	StdoutTail     string              `json:"stdout_tail,omitempty"`
	StderrTail     string              `json:"stderr_tail,omitempty"`
	ExactMatch     bool                `json:"exact_match"`
	EditSimilarity int                 `json:"edit_similarity"`
	TTFT           time.Duration       `json:"ttft_ns"`
	Total          time.Duration       `json:"total_ns"`
	// QueueWait is the generation's wait for a backend slot, which TTFT
	// and Total do not include.
	QueueWait    time.Duration `json:"queue_ns,omitempty"`
	ExecDuration time.Duration `json:"exec_ns"`
	// Exception is what the test code raised ("AssertionError", its
	// message), when it raised.
	Exception *outcome.Exception `json:"exception,omitempty"`
	// Failure is the first failing pytest test, with its report and
	// output.
	Failure *outcome.Failure `json:"failure,omitempty"`
	// Limit is the resource limit the run hit, when it hit one.
	Limit outcome.Limit `json:"limit,omitempty"`
	// Reference is the task's true middle, kept for reports that show the
	// completion beside it (eval run and grade record it; empty when the
	// task has none).
	Reference string `json:"reference,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ReferenceResult words the verdict as the human-eval-infilling harness
// writes its "result" field: "passed", "timed out", or "failed: " and the
// exception's message ("failed: " alone when the run ended without one).
func (r *Result) ReferenceResult() string {
	switch r.Verdict {
	case VerdictPassed:
		return "passed"
	case VerdictTimeout:
		return "timed out"
	}
	if r.Exception != nil {
		return "failed: " + r.Exception.Message
	}
	return "failed: "
}

// Passed reports whether the sample passed.
func (r *Result) Passed() bool { return r.Verdict == VerdictPassed }

// MetricsSample converts r for aggregation.
func (r *Result) MetricsSample() metrics.Sample {
	return metrics.Sample{
		TaskID: r.TaskID, Benchmark: r.Benchmark, Level: string(r.Level), Language: r.Language,
		Passed: r.Passed(), Verdict: string(r.Verdict),
		ExactMatch: r.ExactMatch, EditSimilarity: r.EditSimilarity,
		TTFT: r.TTFT, Total: r.Total, QueueWait: r.QueueWait,
	}
}

// ErrRepoNotAllowed is returned (as a VerdictError reason) when a task's
// repository lies outside Config.AllowedRepoRoots.
var ErrRepoNotAllowed = errkind.New(errkind.PermissionDenied, "evaluator: repository outside the allowed roots")

// ErrPythonNotAllowed is returned (as a VerdictError reason) when a task
// names an interpreter outside Config.AllowedRepoRoots that no
// Config.Pythons rule names.
var ErrPythonNotAllowed = errors.New("evaluator: interpreter outside the allowed roots and not one the server was given (--eval-python)")

const defaultProgramName = "program.py"

// gradeCompletion runs completion c of task t. It returns an error only
// when ctx is done; every other problem is a VerdictError result.
func (r *Runner) gradeCompletion(ctx context.Context, t *Task, sample int, c Completion) (Result, error) {
	cfg := &r.cfg
	res := Result{
		TaskID: t.ID, Benchmark: t.Benchmark, Level: t.Level, Language: t.Language, Sample: sample,
		Completion: c.Text, Reference: t.Reference, TTFT: c.TTFT, Total: c.Total, QueueWait: c.QueueWait, ExitCode: -1,
		ExactMatch:     metrics.ExactMatch(c.Text, t.Reference),
		EditSimilarity: metrics.EditSimilarity(c.Text, t.Reference),
	}
	fail := func(err error) (Result, error) {
		res.Verdict, res.Error = VerdictError, r.errorText(ctx, t, sample, err)
		return res, nil
	}
	if err := t.Validate(); err != nil {
		return fail(err)
	}
	if t.Exec.Kind == ExecNone {
		res.Verdict = VerdictSkipped
		return res, nil
	}
	if cfg.AllTests {
		whole := *t
		whole.Exec.Test = t.Exec.Test.WholeSuite()
		t = &whole
	}
	run, err := r.planRun(t, c.Text)
	if err != nil {
		return fail(err)
	}
	out, err := r.exec.Run(ctx, run.spec)
	if err == nil {
		err = run.finish(&out)
	}
	if err == nil {
		t, run, out, err = r.widenRun(ctx, t, c.Text, run, out)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrEnvironment) {
			// What the run printed says why (eval mask explains it).
			res.ExitCode = out.ExitCode
			res.StdoutTail = tail(stripANSI(out.Stdout), cfg.OutputTailBytes)
			res.StderrTail = tail(stripANSI(out.Stderr), cfg.OutputTailBytes)
		}
		return fail(err)
	}
	// pytest --color=yes (a repository's addopts) colours its output.
	out.Stdout, out.Stderr = stripANSI(out.Stdout), stripANSI(out.Stderr)
	res.ExitCode = out.ExitCode
	res.ExecDuration = out.Duration
	res.StdoutTail = tail(out.Stdout, cfg.OutputTailBytes)
	res.StderrTail = tail(out.Stderr, cfg.OutputTailBytes)
	res.Tests = out.Tests
	res.Exception = out.Exception
	res.Failure = out.Failure
	res.Limit = out.Limit
	res.WeakSignal = run.weak
	res.Verdict, res.Reason = run.verdict(&out, t.Exec.Test.ExpectedTests)
	if res.Verdict == VerdictFailed && t.Exec.Kind == ExecRepository {
		tr := mustRunner(t.Exec.Test.Kind)
		if tr.suspect(&out) != "" {
			envErr, err := r.baselines.environmentFailure(ctx, r.exec, tr, run)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if err != nil {
				return fail(err)
			}
			if envErr != nil {
				return fail(envErr)
			}
		}
	}
	return res, nil
}

// planRun is the sandbox run of task t with completion in place: a
// program as its reference harness runs it, a repository's tests as its
// test runner plans them.
func (r *Runner) planRun(t *Task, completion string) (*testRun, error) {
	file := t.Compose(completion)
	switch t.Exec.Kind {
	case ExecProgram:
		return programRunner{}.plan(&r.cfg, t, file), nil
	case ExecRepository:
		if !r.cfg.repoAllowed(t.Exec.RepoDir) {
			return nil, &fs.PathError{Op: "evaluate in", Path: t.Exec.RepoDir, Err: ErrRepoNotAllowed}
		}
		return mustRunner(t.Exec.Test.Kind).plan(&planner{r: r, cfg: &r.cfg}, t, file)
	}
	return nil, fmt.Errorf("%w: unknown exec kind %q", ErrInvalidTask, t.Exec.Kind)
}

// widenRun runs t's whole suite when the selected run out (of run) passed
// although its runner says the selection does not hold for this
// completion (a pytest selection the completion's shape escapes). A
// failing selected run stands: the whole suite runs the same tests (an
// order-dependent pass is what a selection cannot see anyway: see package
// impact). It returns the task, run and result that grade the completion.
func (r *Runner) widenRun(ctx context.Context, t *Task, completion string, run *testRun, out sandbox.Result) (*Task, *testRun, sandbox.Result, error) {
	if run.widened == nil || !run.widened(&out) {
		return t, run, out, nil
	}
	if v, _ := run.verdict(&out, t.Exec.Test.ExpectedTests); v != VerdictPassed {
		return t, run, out, nil
	}
	whole := *t
	whole.Exec.Test = t.Exec.Test.WholeSuite()
	run, err := r.planRun(&whole, completion)
	if err != nil {
		return t, nil, out, err
	}
	out, err = r.exec.Run(ctx, run.spec)
	if err == nil {
		err = run.finish(&out)
	}
	return &whole, run, out, err
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[len(s)-n:], "")
}

// errorText is a sample's error as its Result reports it, to the client
// too: without the server's paths or the detail of a sandbox that failed
// to start (ClientMessage), which the log keeps.
func (r *Runner) errorText(ctx context.Context, t *Task, sample int, err error) string {
	if r.cfg.FullErrors {
		return err.Error()
	}
	log := r.log
	if errors.Is(err, sandbox.ErrSetup) {
		err = &errkind.HiddenError{Public: "sandbox: setup failed (the server's log has the detail)", Err: err}
	}
	msg := errkind.ClientMessage(err)
	if msg != err.Error() {
		logctx.From(ctx, log).Warn("sample error, reported without the server's detail", zap.String("task", t.ID),
			zap.String("benchmark", t.Benchmark), zap.Int("sample", sample), zap.Error(err))
	}
	return msg
}

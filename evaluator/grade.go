package evaluator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/infill-dev/infill/evaluator/metrics"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/internal/logctx"
	"go.uber.org/zap"
)

// Completion is one generated middle with its latencies.
type Completion struct {
	Text string `json:"text"`
	// TTFT is the time to first token; zero when unknown.
	TTFT time.Duration `json:"ttft_ns"`
	// Total is the time to the full completion; zero when unknown.
	Total time.Duration `json:"total_ns"`
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

// Executor runs sandbox specs; *sandbox.Sandbox implements it.
type Executor interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
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
	// task, sandbox could not start). Not written to the journal, so a
	// resumed run retries it.
	VerdictError Verdict = "error"
	// VerdictSkipped: the task has no tests (ExecNone); only exact match
	// and edit similarity are meaningful.
	VerdictSkipped Verdict = "skipped"
)

// Result is one graded sample. It is also the journal's record.
type Result struct {
	TaskID     string  `json:"task_id"`
	Benchmark  string  `json:"benchmark"`
	Level      Level   `json:"level,omitempty"`
	Sample     int     `json:"sample"`
	Completion string  `json:"completion"`
	Verdict    Verdict `json:"verdict"`
	// Reason explains the verdict briefly ("exit status 1", "exited 0
	// without the pass signal", ...).
	Reason   string `json:"reason,omitempty"`
	ExitCode int    `json:"exit_code"`
	// WeakSignal is set when the test kind has no positive pass signal
	// beyond the exit status (TestCommand).
	WeakSignal     bool                `json:"weak_signal,omitempty"`
	Tests          *sandbox.TestCounts `json:"tests,omitempty"`
	StdoutTail     string              `json:"stdout_tail,omitempty"`
	StderrTail     string              `json:"stderr_tail,omitempty"`
	ExactMatch     bool                `json:"exact_match"`
	EditSimilarity int                 `json:"edit_similarity"`
	TTFT           time.Duration       `json:"ttft_ns"`
	Total          time.Duration       `json:"total_ns"`
	ExecDuration   time.Duration       `json:"exec_ns"`
	// Exception is what the test code raised ("AssertionError", its
	// message), when it raised.
	Exception *sandbox.Exception `json:"exception,omitempty"`
	Error     string             `json:"error,omitempty"`
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
		TaskID: r.TaskID, Benchmark: r.Benchmark, Level: string(r.Level),
		Passed: r.Passed(), Verdict: string(r.Verdict),
		ExactMatch: r.ExactMatch, EditSimilarity: r.EditSimilarity,
		TTFT: r.TTFT, Total: r.Total,
	}
}

// ErrRepoNotAllowed is returned (as a VerdictError reason) when a task's
// repository lies outside Config.AllowedRepoRoots.
var ErrRepoNotAllowed = errors.New("evaluator: repository outside the allowed roots")

const defaultProgramName = "program.py"

// grade runs completion c of task t. It returns an error only when ctx is
// done; every other problem is a VerdictError result.
func grade(ctx context.Context, log *zap.Logger, ex Executor, cfg *Config, t *Task, sample int, c Completion) (Result, error) {
	res := Result{
		TaskID: t.ID, Benchmark: t.Benchmark, Level: t.Level, Sample: sample,
		Completion: c.Text, TTFT: c.TTFT, Total: c.Total, ExitCode: -1,
		ExactMatch:     metrics.ExactMatch(c.Text, t.Reference),
		EditSimilarity: metrics.EditSimilarity(c.Text, t.Reference),
	}
	fail := func(err error) (Result, error) {
		res.Verdict, res.Error = VerdictError, errorText(ctx, log, t, sample, err)
		return res, nil
	}
	if err := t.Validate(); err != nil {
		return fail(err)
	}
	if t.Exec.Kind == ExecNone {
		res.Verdict = VerdictSkipped
		return res, nil
	}
	spec, err := specFor(cfg, t, c.Text)
	if err != nil {
		return fail(err)
	}
	out, err := ex.Run(ctx, spec)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		return fail(err)
	}
	res.ExitCode = out.ExitCode
	res.ExecDuration = out.Duration
	res.StdoutTail = tail(out.Stdout, cfg.OutputTailBytes)
	res.StderrTail = tail(out.Stderr, cfg.OutputTailBytes)
	res.Tests = out.Tests
	res.Exception = out.Exception
	res.WeakSignal = spec.Mode == sandbox.ModeCommand
	res.Verdict, res.Reason = verdict(&out, spec.Mode, t.Exec.Test.ExpectedTests)
	return res, nil
}

func verdict(out *sandbox.Result, mode sandbox.Mode, expected int) (Verdict, string) {
	switch out.Status {
	case sandbox.StatusTimeout:
		if out.Signal != 0 {
			return VerdictTimeout, "CPU time limit exceeded"
		}
		return VerdictTimeout, "wall-clock timeout"
	case sandbox.StatusOutputLimit:
		return VerdictFailed, "output limit exceeded"
	case sandbox.StatusSignaled:
		return VerdictFailed, fmt.Sprintf("killed by signal %d", out.Signal)
	}
	if out.ExitCode != 0 {
		return VerdictFailed, fmt.Sprintf("exit status %d", out.ExitCode)
	}
	if !out.Passed(mode) {
		return VerdictFailed, "exited 0 without the pass signal (the tests did not run to the end)"
	}
	if mode == sandbox.ModePytest {
		tc := out.Tests
		switch {
		case tc == nil:
			return VerdictFailed, "no pytest report"
		case tc.Failed+tc.Errors > 0:
			return VerdictFailed, fmt.Sprintf("pytest: %d failed, %d errors", tc.Failed, tc.Errors)
		case expected > 0 && tc.Passed != expected:
			return VerdictFailed, fmt.Sprintf("pytest: %d passed, expected %d", tc.Passed, expected)
		case tc.Passed == 0:
			return VerdictFailed, "pytest: no test passed"
		}
	}
	return VerdictPassed, ""
}

func specFor(cfg *Config, t *Task, completion string) (sandbox.Spec, error) {
	file := t.Compose(completion)
	switch t.Exec.Kind {
	case ExecProgram:
		name := defaultProgramName
		if t.Path != "" && filepath.IsLocal(filepath.FromSlash(t.Path)) && strings.HasSuffix(t.Path, ".py") {
			name = t.Path
		}
		timeout := t.Exec.Timeout
		if timeout <= 0 {
			timeout = cfg.ProgramTimeout
		}
		// HumanEval family: run as its reference harness runs it (its
		// reliability guard, a fresh globals dict), so verdicts match.
		return sandbox.Spec{
			Mode: sandbox.ModeHumanEval, Target: name,
			Files:   map[string]string{name: file + t.Exec.Epilogue},
			Timeout: timeout,
		}, nil
	case ExecRepository:
		if !cfg.repoAllowed(t.Exec.RepoDir) {
			return sandbox.Spec{}, &fs.PathError{Op: "evaluate in", Path: t.Exec.RepoDir, Err: ErrRepoNotAllowed}
		}
		work := t.RepoName
		if work == "" || !filepath.IsLocal(work) || strings.ContainsRune(work, '/') {
			work = "repo"
		}
		spec := sandbox.Spec{
			SourceDir: t.Exec.RepoDir, WorkName: work,
			Files:   map[string]string{path.Clean(t.Path): file},
			Timeout: t.Exec.Timeout,
		}
		ts := t.Exec.Test
		switch ts.Kind {
		case TestScript:
			spec.Mode, spec.Target, spec.Args = sandbox.ModeScript, path.Clean(ts.Script), ts.Args
		case TestPytest:
			spec.Mode, spec.Args = sandbox.ModePytest, ts.Args
		case TestCommand:
			spec.Mode, spec.Command = sandbox.ModeCommand, ts.Command
		}
		return spec, nil
	}
	return sandbox.Spec{}, fmt.Errorf("%w: unknown exec kind %q", ErrInvalidTask, t.Exec.Kind)
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
func errorText(ctx context.Context, log *zap.Logger, t *Task, sample int, err error) string {
	if errors.Is(err, sandbox.ErrSetup) {
		err = &HiddenError{Public: "sandbox: setup failed (the server's log has the detail)", Err: err}
	}
	msg := ClientMessage(err)
	if msg != err.Error() {
		logctx.From(ctx, log).Warn("sample error, reported without the server's detail", zap.String("task", t.ID),
			zap.String("benchmark", t.Benchmark), zap.Int("sample", sample), zap.Error(err))
	}
	return msg
}

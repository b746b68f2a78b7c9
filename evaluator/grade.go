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
	spec, err := specFor(cfg, t, c.Text)
	if err != nil {
		return fail(err)
	}
	out, err := r.exec.Run(ctx, spec)
	if err == nil {
		t, spec, out, err = r.widenRun(ctx, t, c.Text, spec, out)
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
	res.WeakSignal = spec.Mode == sandbox.ModeCommand
	res.Verdict, res.Reason = verdict(&out, &spec, t.Exec.Test.ExpectedTests)
	if res.Verdict == VerdictFailed && t.Exec.Kind == ExecRepository {
		if environmentSuspect(&out) != "" {
			envErr, err := r.baselines.environmentFailure(ctx, r.exec, spec)
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
		env, err := cfg.pythonFor(t)
		if err != nil {
			return sandbox.Spec{}, err
		}
		spec := sandbox.Spec{
			SourceDir: t.Exec.RepoDir, WorkName: work,
			Files:       map[string]string{path.Clean(t.Path): file},
			Timeout:     t.Exec.Timeout,
			Environment: env,
		}
		ts := t.Exec.Test
		switch ts.Kind {
		case TestScript:
			spec.Mode, spec.Target, spec.Args = sandbox.ModeScript, path.Clean(ts.Script), ts.Args
		case TestPytest:
			spec.Mode, spec.Args = sandbox.ModePytest, ts.Args
			if err := selectPytest(&spec, t, path.Clean(t.Path)); err != nil {
				return sandbox.Spec{}, err
			}
		case TestCommand:
			spec.Mode, spec.Command = sandbox.ModeCommand, ts.Command
		case TestNode:
			if err := nodeSpec(&spec, t.Exec.RepoDir, &ts); err != nil {
				return sandbox.Spec{}, err
			}
		case TestGo:
			goSpec(&spec, t)
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

// pythonFor is the environment the tests of repository task t run in: the
// task's own interpreter (a benchmark's "python", the CLI's --python),
// else the Config.Pythons rule of its repository (the server's
// --eval-python), else the repository's own virtual environment (.venv/
// or venv/), else nil: the sandbox's default interpreter. An absolute
// interpreter named by the task must lie under an allowed repository
// root or be one the Pythons rules name.
func (c *Config) pythonFor(t *Task) (*sandbox.Environment, error) {
	repo := t.Exec.RepoDir
	python := t.Exec.Test.Python
	if filepath.IsAbs(python) && !c.pythonAllowed(python) {
		return nil, &fs.PathError{Op: "run tests with", Path: python, Err: ErrPythonNotAllowed}
	}
	if python == "" {
		best := ""
		for _, r := range c.Pythons {
			if underDirOrSame(repo, r.Dir) && len(r.Dir) > len(best) {
				best, python = r.Dir, r.Python
			}
		}
	}
	if python == "" {
		python = sandbox.RepositoryPython(repo)
	}
	if python == "" {
		return nil, nil
	}
	return sandbox.PythonEnvironment(filepath.FromSlash(python), repo)
}

// pythonAllowed says whether a task may name the interpreter python.
func (c *Config) pythonAllowed(python string) bool {
	if len(c.AllowedRepoRoots) == 0 || c.repoAllowed(python) {
		return true
	}
	for _, r := range c.Pythons {
		if filepath.Clean(r.Python) == filepath.Clean(python) {
			return true
		}
	}
	return false
}

func underDirOrSame(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

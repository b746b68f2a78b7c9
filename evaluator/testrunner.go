package evaluator

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// A TestRunner runs one kind of repository test (TestSpec.Kind) and owns
// everything that differs between the kinds, so that nothing else in the
// evaluator, the masking, the server or the CLI asks which kind a test is:
//
//   - grading: validating a spec, the sandbox run of a completed task
//     (command, files, variables, binds: plan), reading the run into its
//     counts, failure and pass signal (testRun.read), the reason a Go or a
//     Python developer would look at first (testRun.firstError), and the
//     failures that may be the environment's rather than the completion's
//     (suspect, unmodifiedFailure: the unmodified repository decides);
//   - building a benchmark (package masking): the repository's default
//     test command (Detect), its words (Describe), the unit the unmodified
//     repository is checked in (Unit: Go's package), fixing an unmodified
//     repository whose tests fail here and explaining what cannot be fixed
//     (Fix, Explain), and test selection — traced once on the pristine
//     repository, selected per sample (selector, through
//     Runner.TraceTests);
//   - the repository's environment on the host, before any sandbox
//     (Prepare: Go's modules). The suite builder adds its environment
//     fingerprint beside it.
//
// testRunners is the table: a new test runner is a type implementing
// TestRunner, its line there, its value in the wire's TestKind enum
// (internal/evalwire translates by name) and its section in
// docs/evaluation.md.
type TestRunner interface {
	// Kind is the test kind it runs.
	Kind() TestKind
	// Detect is the test command of a repository this runner would test
	// by default, and whether it would (pytest always; the script runner
	// when the repository has an evaluate_repo.py).
	Detect(repoDir string) (TestSpec, bool)
	// Describe words ts as the command line it runs.
	Describe(ts TestSpec) string
	// Counts says whether its runs report how many tests passed, which the
	// unmodified repository's run gives its samples as ExpectedTests.
	Counts() bool
	// Unit is the part of the repository a sample of file rel tests, when
	// the unmodified repository is checked unit by unit (Go: its package
	// directory); ok false for a runner that tests the whole repository.
	Unit(rel string) (unit string, ok bool)
	// Fix changes ts so that the failure res of the unmodified repository
	// at repoDir goes away, when it is one the runner knows (pytest: an
	// option, warning filter or plugin its configuration names and the
	// environment lacks); note says what it did and why.
	Fix(repoDir string, ts TestSpec, res *Result) (fixed TestSpec, note string, ok bool)
	// Explain says what a failed check of the unmodified repository means
	// and what to do (BaselineFailure.Explain).
	Explain(b *BaselineFailure) string
	// Prepare makes, on the host, what the repository's tests need and the
	// sandbox cannot fetch (it has no network): Go's modules downloaded.
	// It returns what it did, in words; nothing to do is no error.
	Prepare(ctx context.Context, repoDir string, tc Toolchains) ([]string, error)
	// Flags are the command-line spellings of its specs (eval mask
	// --pytest ARGS): a tool registers every runner's.
	Flags() []TestFlag

	validate(ts *TestSpec) error
	// checkEntry reports a repository at dir that lacks the entry point
	// ts runs (the script runner's evaluate_repo.py): an *fs.PathError
	// naming it. nil for runners without one.
	checkEntry(dir string, ts TestSpec) error
	// judge is how a run of ts is judged (testRun's name, counts, weak
	// and firstError), before it is planned.
	judge(ts *TestSpec) testRun
	// plan makes the sandbox run of repository task t whose target file
	// holds file (the completion in place).
	plan(p *planner, t *Task, file string) (*testRun, error)
	// suspect says why a failed run may be the environment's rather than
	// the completion's ("" when it is the completion's); unmodifiedFailure
	// is the environment failure to report when the unmodified repository
	// fails that way too.
	suspect(out *sandbox.Result) string
	unmodifiedFailure(suspect string) error
	// selector traces the tests that reach each span; nil for a runner
	// that cannot.
	selector() testSelector
}

// testRunners is the table of test runners, in the order masking prefers
// them when a language offers several.
var testRunners = []TestRunner{scriptRunner{}, pytestRunner{}, commandRunner{}, goRunner{}, nodeRunner{}}

// TestKinds lists every test kind the evaluator runs.
func TestKinds() []TestKind {
	kinds := make([]TestKind, len(testRunners))
	for i, r := range testRunners {
		kinds[i] = r.Kind()
	}
	return kinds
}

// TestRunnerFor is the test runner of kind k.
func TestRunnerFor(k TestKind) (TestRunner, bool) {
	for _, r := range testRunners {
		if r.Kind() == k {
			return r, true
		}
	}
	return nil, false
}

// CheckTestEntry reports a repository at dir that lacks the entry point
// its test ts runs (evaluate_repo.py): an *fs.PathError naming the entry
// point, which a benchmark's loader reports when it loads the benchmark
// rather than when a sample runs. Other test kinds have none to check.
func CheckTestEntry(dir string, ts TestSpec) error {
	r, ok := TestRunnerFor(ts.Kind)
	if !ok {
		return nil // Task.Validate says why
	}
	return r.checkEntry(dir, ts)
}

// TestFlag is a command-line flag that names a repository's test command
// (eval mask --pytest "-q tests"): its name and usage, the value it takes
// when given alone (NoValue; "" when it needs one), whether a count of
// tests to pass goes with it (--expected-tests), and the spec it means.
type TestFlag struct {
	Name, Usage string
	NoValue     string
	Expected    bool
	Spec        func(value string, expected int) TestSpec
}

// TestFlags are every test runner's flags, in the table's order.
func TestFlags() []TestFlag {
	var out []TestFlag
	for _, r := range testRunners {
		out = append(out, r.Flags()...)
	}
	return out
}

// mustRunner is the runner of a kind a validated spec has.
func mustRunner(k TestKind) TestRunner {
	r, ok := TestRunnerFor(k)
	if !ok {
		panic(fmt.Sprintf("evaluator: no test runner for %q (validate the task first)", k))
	}
	return r
}

// validateTestSpec checks ts: a kind in the table, then the runner's own
// rules, then what every spec must hold.
func validateTestSpec(ts *TestSpec) error {
	r, ok := TestRunnerFor(ts.Kind)
	if !ok {
		return fmt.Errorf("unknown test kind %q", ts.Kind)
	}
	if err := r.validate(ts); err != nil {
		return err
	}
	if ts.ExpectedTests < 0 || ts.SuiteTests < 0 {
		return fmt.Errorf("negative expected test count")
	}
	return validateTests(ts.Tests)
}

// planner is what a test runner plans a run with: the Runner (its
// configuration, toolchains, executor and what it found on the host).
type planner struct {
	r   *Runner
	cfg *Config
}

// repositoryRun is what every runner's run of repository task t shares:
// the private copy of the repository (named after it), the completed
// target file and the task's time limit, judged as tr judges t's spec.
func (p *planner) repositoryRun(tr TestRunner, t *Task, file string) *testRun {
	work := t.RepoName
	if work == "" || !filepath.IsLocal(work) || strings.ContainsRune(work, '/') {
		work = "repo"
	}
	run := tr.judge(&t.Exec.Test)
	run.target = path.Clean(t.Path)
	run.spec = sandbox.Spec{SourceDir: t.Exec.RepoDir, WorkName: work,
		Files: map[string]string{run.target: file}, Timeout: t.Exec.Timeout}
	return &run
}

// testRun is one planned sandbox run and how its runner reads it.
type testRun struct {
	spec sandbox.Spec
	// target is the completed file in spec.Files.
	target string
	// name words the test runner in reasons ("pytest", "go test").
	name string
	// counts: the verdict needs the run's count of passed tests.
	counts bool
	// weak: exit status 0 is the only pass signal.
	weak bool
	// read interprets what the run reported (its counts, failure,
	// exception and pass signal, its output as people read it); an error
	// wrapping sandbox.ErrEnvironment says the environment failed.
	read func(out *sandbox.Result) error
	// firstError is the first meaningful error of a run that did not
	// pass; nil: the Python runner's words (the failing test, the
	// exception, the error in the output).
	firstError func(out *sandbox.Result) string
	// widened, if set, says that the run's passing verdict needs the whole
	// suite to confirm it (a pytest selection the completion's shape
	// escapes).
	widened func(out *sandbox.Result) bool
}

// passed is the run's pass signal: exit status 0 and the runner's own
// positive signal (a weak runner has none).
func (r *testRun) passed(out *sandbox.Result) bool {
	if r.weak {
		return out.Status == sandbox.StatusExited && out.ExitCode == 0
	}
	return out.Passed()
}

// finish reads a run the sandbox ended (ErrEnvironment when the
// environment failed) and notes the limit it hit when it did not pass.
func (r *testRun) finish(out *sandbox.Result) error {
	if r.read != nil {
		if err := r.read(out); err != nil {
			return err
		}
	}
	out.NoteLimit(r.passed(out))
	return nil
}

// testSelector is a test runner's test selection: one trace of the
// pristine repository, from which each sample's tests are chosen.
type testSelector interface {
	// optIn says that the selection runs only when asked for
	// (TraceOptions.OptIn).
	optIn() bool
	// trace runs on base, the unmodified repository as a task (its first
	// file restored). It returns ErrNoTracer when its spec is not one it
	// can trace.
	trace(ctx context.Context, r *Runner, base Task, o TraceOptions) (*TestSelection, error)
}

// Span is a byte range of a repository file (slash-separated, relative).
type Span struct {
	File       string
	Start, End int
}

// TraceOptions say how Runner.TraceTests traces.
type TraceOptions struct {
	// Timeout bounds the trace run (0: the sandbox's limit).
	Timeout time.Duration
	// OptIn traces with the runners whose selection is asked for only
	// (node's built-in runner, eval mask --node-select-tests); OptInOnly
	// traces with those alone (eval mask --all-tests
	// --node-select-tests).
	OptIn, OptInOnly bool
	// Benchmark names the trace's tasks.
	Benchmark string
}

// TestSelection is a trace's answer: the tests that reach each span. A
// trusted selection (pytest's map) knows its Reach before the samples are
// checked, which they then are with just their tests, and a span no test
// reaches is no sample. A confirmed one (node's test files: coverage can
// miss what a test needs) is traced once the samples are chosen (Spans:
// its probe needs them), and a sample runs its selected tests only when
// they give the whole suite's verdicts on it (its reference passes, its
// empty middle fails); otherwise, and where no test reaches its span, the
// whole suite.
type TestSelection struct {
	// Reach gives a trusted selection's tests for any span.
	Reach impact.Reach
	// Spans traces a confirmed selection for the chosen samples' spans.
	Spans func(ctx context.Context, spans []Span) (impact.Reach, error)
	// TestFiles is the number of test files a selection by file traces.
	TestFiles int
}

// Confirm says the selection is confirmed per sample (Spans is set).
func (s *TestSelection) Confirm() bool { return s.Spans != nil }

// TraceTests traces the tests of repository task base (the unmodified
// repository: its first file restored) once, with the selection of its
// test runner. Test kinds without a selection, specs it cannot trace, and
// opt-in selections not asked for give ErrNoTracer: their samples run the
// whole suite.
func (r *Runner) TraceTests(ctx context.Context, base Task, o TraceOptions) (*TestSelection, error) {
	if err := base.Validate(); err != nil {
		return nil, err
	}
	if base.Exec.Kind != ExecRepository {
		return nil, fmt.Errorf("%w: not a repository task", ErrNoTracer)
	}
	sel := mustRunner(base.Exec.Test.Kind).selector()
	if sel == nil || sel.optIn() && !o.OptIn && !o.OptInOnly || !sel.optIn() && o.OptInOnly {
		return nil, fmt.Errorf("%w: %q", ErrNoTracer, base.Exec.Test.Kind)
	}
	base.Exec.Test.Tests = nil
	return sel.trace(ctx, r, base, o)
}

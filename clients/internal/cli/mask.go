package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/masking"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

type maskFlags struct {
	out         string
	seed        uint64
	perLevel    int
	levels      string
	requireFail bool
	// tests are the test runners' flags' values (evaluator.TestFlags),
	// by name.
	tests         map[string]*string
	selectNode    bool
	timeout       time.Duration
	noCheck       bool
	benchmark     string
	language      string
	minMiddle     int
	maxMiddle     int
	maxAttempts   int
	expectedTests int
	python        string
	allTests      bool
	traceTimeout  time.Duration
	sandbox       sandboxFlags
}

func newEvalMaskCmd(env *Env) *cobra.Command {
	f := &maskFlags{}
	cmd := &cobra.Command{
		Use:   "mask REPO",
		Short: "Build a benchmark from a Python, JavaScript or TypeScript repository with tests by masking its code",
		Long: `mask turns a Python, JavaScript or TypeScript repository with tests into an
infill-format benchmark, as ExecRepoBench built its own:
tree-sitter finds expressions, statements,
blocks, functions and classes to mask, random single-line, multi-line and
span masks are added, and a seeded generator picks --per-level samples of
each level (the same repository, flags and seed give the same benchmark).

Every sample is checked in a local bubblewrap sandbox: the unmodified
repository must pass its tests, and with --require-empty-fails (the default)
the tests must fail when the masked span is left empty, so that each sample
is one the tests actually exercise. --no-check skips the sandbox and only
selects spans.

The tests are the repository's evaluate_repo.py when it has one, else
pytest -q; --pytest, --script or --test-command choose otherwise. They run
with the repository's own virtual environment when it has one (.venv/ or
venv/: its interpreter, with its site-packages mounted read-only), or with
--python PATH; the records name that interpreter.

When the unmodified repository's pytest run stops on its configuration
naming what the interpreter lacks — an addopts option of a plugin that is
not installed (--cov=... without pytest-cov), a -p plugin, a warning filter
naming a module that is not installed
(error::coverage.exceptions.CoverageWarning), required_plugins — or on its
own package under src/ not being importable, mask neutralises exactly that
with pytest's -o overrides (addopts, filterwarnings, required_plugins,
pythonpath), says so, and writes the overrides into the records. Other
failures are explained: what the exit status means, the reason, the last
lines of output and the fix.

JavaScript and TypeScript repositories (--language, default: the language
with the most files to mask) run node's built-in test runner, or the
repository's vitest when its test script runs vitest; --node-test or --vitest
choose otherwise. Their dependencies must be installed first (npm ci): the
sandbox has no network and mounts node_modules read-only. A pass needs the
runner's count of passed tests, as for pytest (docs/evaluation.md,
JavaScript and TypeScript repositories).

Before the samples are checked, the unmodified repository's pytest suite
runs once more with a tracer (the test-impact plugin; under Python 3.11 it
makes the suite several times slower, --trace-timeout bounds it), which
finds the tests that execute each line. Every record then names the tests
that execute its span ("tests", with expected_tests their count; a span
of lines that run only at import time outside function bodies names none:
the whole suite), its samples are checked with just those, and a span no
test executes is dropped, since no test can fail on it. --all-tests skips the trace: every record runs the
whole suite. 'infill eval compare FILE' grades a benchmark both ways.

Run the result with 'infill eval run --infill FILE'. Each record names the
repository relative to FILE's directory.`,
		Example: `  infill eval mask ~/src/mylib -o mylib-bench.jsonl
  infill eval mask --levels expression,statement,function --per-level 20 --seed 7 . -o bench.jsonl
  infill eval mask --pytest "-q tests/unit" ~/src/mylib -o bench.jsonl
  infill eval mask --python ~/venvs/mylib/bin/python --sandbox-memory 8GiB ~/src/mylib
  infill eval mask --max-middle 16000 --vitest ~/src/mytslib    # after npm ci there`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("mask needs the repository directory, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMask(cmd, env, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "benchmark `FILE` to write (JSON lines; default REPO-NAME.bench.jsonl)")
	fl.Uint64Var(&f.seed, "seed", 1, "selection seed")
	fl.IntVar(&f.perLevel, "per-level", 5, "samples wanted per level")
	fl.StringVar(&f.levels, "levels", "", "comma-separated levels (default all: "+levelList()+")")
	fl.BoolVar(&f.requireFail, "require-empty-fails", true, "keep only spans whose removal makes the tests fail")
	f.tests = addTestFlags(cmd)
	fl.BoolVar(&f.selectNode, "node-select-tests", false, "JavaScript with node's test runner: record with each sample the test files that execute its span (V8 coverage on the unmodified code), so that grading runs only those")
	fl.IntVar(&f.expectedTests, "expected-tests", 0, "with --pytest: tests that must pass (default: as many as pass unmodified)")
	fl.DurationVar(&f.timeout, "sample-timeout", 60*time.Second, "limit of one test run's own time (start-up not included); written into the records")
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "the same as --sample-timeout")
	_ = fl.MarkHidden("timeout")
	fl.StringVar(&f.python, "python", "", "run the tests with this interpreter `PATH` (a virtual environment's bin/python selects it; default: the repository's .venv/ or venv/, else python3)")
	addSandboxFlags(cmd, &f.sandbox, "")
	fl.BoolVar(&f.allTests, "all-tests", false, "do not trace the tests: every record runs the whole suite")
	fl.DurationVar(&f.traceTimeout, "trace-timeout", masking.DefaultTraceTimeout, "limit of the traced run of the whole suite (wall clock and CPU time)")
	fl.BoolVar(&f.noCheck, "no-check", false, "select spans without running any test (no sandbox needed)")
	fl.StringVar(&f.language, "language", "", "language to mask: "+strings.Join(masking.Languages(), ", ")+" (default: the one with the most files)")
	fl.StringVar(&f.benchmark, "name", "", "benchmark name in the records (default: the repository's directory name)")
	fl.IntVar(&f.minMiddle, "min-middle", 0, "shortest masked text in bytes, stripped (default 3)")
	fl.IntVar(&f.maxMiddle, "max-middle", 0, "longest masked text in bytes, stripped (default 1500)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "candidates checked per level at most (default 10 × --per-level)")
	return cmd
}

func levelList() string {
	var names []string
	for _, l := range evaluator.Levels() {
		names = append(names, string(l))
	}
	return strings.Join(names, ", ")
}

func runMask(cmd *cobra.Command, env *Env, f *maskFlags, repo string) error {
	absRepo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	opts, err := f.options(absRepo)
	if err != nil {
		return usageError{err}
	}
	out := f.out
	if out == "" {
		out = filepath.Base(absRepo) + ".bench.jsonl"
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(filepath.Dir(absOut), absRepo); err == nil {
		opts.Repository = filepath.ToSlash(rel)
	}
	ctx := cmd.Context()
	var (
		recs  []dataset.InfillRecord
		stats masking.Stats
	)
	if f.noCheck {
		recs, stats, err = masking.Select(ctx, absRepo, opts)
	} else {
		cfg := sandbox.Config{Timeout: f.timeout, WarmWorkers: -1}
		if !f.allTests {
			// The trace run's map arrives at the end of its stdout, and its
			// suite runs for longer than a sample's.
			cfg.OutputTailBytes, cfg.CPUTime = sandbox.DefaultOutputLimitBytes, max(f.timeout, f.traceTimeout)
		}
		f.sandbox.apply(&cfg)
		sb, serr := sandbox.New(cfg, zap.NewNop())
		if serr != nil {
			if errors.Is(serr, sandbox.ErrUnavailable) {
				return hintError{serr, "eval mask checks every sample in a local bubblewrap sandbox: " +
					"install bubblewrap (Debian: apt-get install bubblewrap), or pass --no-check to select spans without running tests"}
			}
			return serr
		}
		defer sb.Close()
		if err := prepare(ctx, env, absRepo, opts, f.sandbox.toolchains()); err != nil {
			return err
		}
		runner, rerr := evaluator.NewRunner(evaluator.Config{Workers: 1, FullErrors: true, Toolchains: f.sandbox.toolchains()}, sb, nil, zap.NewNop())
		if rerr != nil {
			return rerr
		}
		if !f.allTests {
			opts.Tracer = runner
		}
		fmt.Fprintf(env.Stderr, "masking %s: checking each sample in the sandbox (this runs the tests up to twice per sample)%s\n", absRepo, withPython(opts, absRepo))
		recs, stats, err = masking.Build(ctx, absRepo, opts, runner, zap.NewNop())
	}
	for _, fix := range stats.Fixes {
		fmt.Fprintf(env.Stdout, "pytest configuration: %s\n", fix)
	}
	if err != nil {
		var be *masking.BaselineError
		if errors.As(err, &be) {
			fmt.Fprintln(env.Stderr, be.Explain(be.Test.Python))
			return fmt.Errorf("the unmodified repository does not pass its tests (above: why, and the fix); nothing written")
		}
		return err
	}
	if len(recs) == 0 {
		writeMaskStats(env.Stdout, stats, f.noCheck)
		return fmt.Errorf("no sample survived the checks; nothing written")
	}
	var buf bytes.Buffer
	if err := dataset.WriteInfill(&buf, recs); err != nil {
		return err
	}
	if err := writeFileAtomic(absOut, buf.Bytes()); err != nil {
		return err
	}
	writeMaskStats(env.Stdout, stats, f.noCheck)
	if sel := stats.Selection; sel != nil {
		fmt.Fprintf(env.Stdout, "tests per sample: %d samples run only the test files that execute their span (%.1f of %d on average), %d the whole suite\n",
			sel.Samples, float64(sel.SelectedFiles)/float64(max(sel.Samples, 1)), sel.TestFiles, sel.Whole)
	}
	fmt.Fprintf(env.Stdout, "wrote %s to %s; run it with: infill eval run --infill %s\n", plural(len(recs), "sample"), out, out)
	return nil
}

// options turns the flags into masking options.
func (f *maskFlags) options(absRepo string) (masking.Options, error) {
	o := masking.Options{
		Seed: f.seed, PerLevel: f.perLevel, RequireEmptyFails: f.requireFail && !f.noCheck,
		Timeout: f.timeout, Benchmark: f.benchmark, MinMiddle: f.minMiddle, MaxMiddle: f.maxMiddle,
		MaxAttempts: f.maxAttempts, Language: f.language, SelectOptIn: f.selectNode, TraceTimeout: f.traceTimeout,
	}
	if f.python != "" {
		p, err := filepath.Abs(f.python)
		if err != nil {
			return o, err
		}
		o.Python = p
	}
	if o.Benchmark == "" {
		o.Benchmark = filepath.Base(absRepo)
	}
	if f.perLevel < 1 {
		return o, errors.New("--per-level must be at least 1")
	}
	for _, l := range strings.Split(f.levels, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !evaluator.Level(l).Valid() {
			return o, fmt.Errorf("--levels: unknown level %q (known: %s)", l, levelList())
		}
		o.Levels = append(o.Levels, evaluator.Level(l))
	}
	t, err := testFlagSpec(f.tests, f.expectedTests)
	o.Test = t
	return o, err
}

// addTestFlags registers every test runner's flags (evaluator.TestFlags)
// and returns their values by name.
func addTestFlags(cmd *cobra.Command) map[string]*string {
	fl := cmd.Flags()
	tests := map[string]*string{}
	for _, tf := range evaluator.TestFlags() {
		tests[tf.Name] = fl.String(tf.Name, "", tf.Usage)
		if tf.NoValue != "" {
			fl.Lookup(tf.Name).NoOptDefVal = tf.NoValue
		}
	}
	return tests
}

// testFlagSpec is the test spec the one test flag given names (nil: none
// given), with expected tests to pass where the flag takes a count.
func testFlagSpec(tests map[string]*string, expected int) (*evaluator.TestSpec, error) {
	var given, names, counting []string
	var chosen *evaluator.TestFlag
	for _, tf := range evaluator.TestFlags() {
		names = append(names, "--"+tf.Name)
		if tf.Expected {
			counting = append(counting, "--"+tf.Name)
		}
		if v := *tests[tf.Name]; v != "" {
			given = append(given, v)
			chosen = &tf
		}
	}
	switch {
	case len(given) > 1:
		return nil, fmt.Errorf("give at most one of %s", wordList(names, "and"))
	case expected != 0 && (chosen == nil || !chosen.Expected):
		return nil, fmt.Errorf("--expected-tests goes with %s", wordList(counting, "or"))
	case chosen != nil:
		t := chosen.Spec(given[0], expected)
		return &t, nil
	}
	return nil, nil
}

// wordList words names as "--a, --b and --c" (word: "and", "or").
func wordList(names []string, word string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + word + " " + names[len(names)-1]
}

// writeMaskStats prints per level how many spans were found and kept.
func writeMaskStats(w io.Writer, s masking.Stats, noCheck bool) {
	fmt.Fprintf(w, "%s masked", plural(s.Files, languageTitle(s.Language)+" file"))
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, ", %d skipped (%s)", len(s.Skipped), strings.Join(firstN(s.Skipped, 3), ", "))
	}
	if len(s.Excluded) > 0 {
		fmt.Fprintf(w, ", %d left out (%s)", len(s.Excluded), strings.Join(firstN(s.Excluded, 3), ", "))
	}
	switch {
	case s.Packages > 0:
		fmt.Fprintf(w, "; tested packages: %d, their tests passing unmodified: %d", s.Packages, s.BaselineTests)
	case s.BaselineTests > 0:
		fmt.Fprintf(w, "; the unmodified repository passes %s", plural(s.BaselineTests, "test"))
	}
	fmt.Fprintln(w)
	for _, f := range s.FailingPackages {
		fmt.Fprintf(w, "not masked, its unmodified tests fail: package %s\n", f)
	}
	if s.Traced {
		fmt.Fprintf(w, "traced the tests in %s: each record names the tests that execute its span\n", s.Trace.Round(time.Second))
	}
	if s.TraceNote != "" {
		fmt.Fprintln(w, s.TraceNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch {
	case noCheck:
		fmt.Fprintln(tw, "LEVEL\tCANDIDATES\tSELECTED")
	case s.Traced:
		fmt.Fprintln(tw, "LEVEL\tCANDIDATES\tKEPT\tNOT COVERED BY TESTS\tEXECUTED BY NO TEST")
	default:
		fmt.Fprintln(tw, "LEVEL\tCANDIDATES\tKEPT\tNOT COVERED BY TESTS")
	}
	levels := evaluator.Levels()
	for l := range s.Candidates {
		if !slices.Contains(levels, l) {
			levels = append(levels, l)
		}
	}
	for _, l := range levels {
		c, k, u := s.Candidates[l], s.Kept[l], s.Uncovered[l]
		if c == 0 && k == 0 {
			continue
		}
		switch {
		case noCheck:
			fmt.Fprintf(tw, "%s\t%d\t%d\n", l, c, k)
		case s.Traced:
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", l, c, k, u, s.Unreached[l])
		default:
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", l, c, k, u)
		}
	}
	_ = tw.Flush()
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), "…")
}

// withPython says which interpreter a build's tests run with, when not the
// sandbox's default.
func withPython(o masking.Options, repo string) string {
	p := o.Python
	if p == "" {
		p = sandbox.RepositoryPython(repo)
	}
	if p == "" {
		return ""
	}
	return ", with " + p
}

// prepare makes what the repository's tests need on the host before any
// sandbox (the sandbox has no network): its test runner's preparation (Go:
// go mod download into the module cache the sandbox binds).
func prepare(ctx context.Context, env *Env, repo string, o masking.Options, tc evaluator.Toolchains) error {
	notes, err := masking.Prepare(ctx, repo, o, tc)
	if err != nil {
		return hintError{err, "eval mask prepares a repository's dependencies before the sandbox, which has no network: " +
			"for Go the module proxy must be reachable from here, or the modules vendored (go mod vendor)"}
	}
	for _, n := range notes {
		fmt.Fprintln(env.Stderr, n)
	}
	return nil
}

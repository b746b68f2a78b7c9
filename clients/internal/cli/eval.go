package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/internal/evalwire"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// defaultHumanEvalDir is where the project's shared data sits beside a
// checkout; used when present and neither --humaneval-dir nor
// $INFILL_HUMANEVAL_DIR is set.
const defaultHumanEvalDir = "../shared/data/human-eval-infilling"

func newEvalCmd(env *Env, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run benchmarks through the server, report their results, build benchmarks",
		Long: `eval runs execution benchmarks through an infill server (which generates the
completions and grades them in its sandbox), grades completions made
elsewhere (grade), reports the results as a table
and an HTML page, joins the results of a benchmark's shards (merge), and
builds repository benchmarks by masking code (mask) or from a repository's
history of edits (nextedit).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown eval command %q (run, grade, report, merge, mask, nextedit, list)", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newEvalRunCmd(env, g), newEvalGradeCmd(env, g), newEvalReportCmd(env), newEvalMergeCmd(env), newEvalMaskCmd(env), newEvalNextEditCmd(env), newEvalCompareCmd(env), newEvalListCmd(env, g))
	return cmd
}

type evalRunFlags struct {
	humanEvalDir  string
	execRepoBench string
	repos         string
	infillFile    string
	serverSide    bool
	runID         string
	results       string
	samples       int
	ks            string
	limit         int
	shard         string
	shardSpec     evaluator.Shard
	model         string
	maxTokens     uint32
	temperature   float32
	seed          int64
	reference     bool
	maxErrors     int
	sampleTimeout time.Duration
	repoMap       string
	every         time.Duration
	// Grading given completions (eval grade, eval run --completions).
	completions     string
	local           bool
	workers         int
	referenceFormat bool
	// python is the interpreter of repository tasks (--python).
	python  string
	sandbox sandboxFlags
	// allTests runs repository tasks' whole suites (--all-tests).
	allTests bool
}

func newEvalRunCmd(env *Env, g *globals) *cobra.Command {
	f := &evalRunFlags{}
	cmd := &cobra.Command{
		Use:   "run [BENCHMARK]",
		Short: "Run a benchmark through the server, with progress, into a results file",
		Long: `run streams a benchmark's tasks to the server, which generates the completions
through the same path editors use and grades them in its sandbox. Each
finished sample is appended to the results file (JSON lines, one
evaluator result per line, synced to disk) as it arrives.

The benchmark is one of:
  BENCHMARK         a HumanEval infilling set: humaneval-single-line,
                    humaneval-multi-line, humaneval-random-span,
                    humaneval-random-span-light, or humaneval (all four),
                    read from --humaneval-dir on this machine;
  --execrepobench FILE --repos DIR
                    ExecRepoBench-format JSON lines and its repositories;
  --infill FILE     a repository benchmark made by 'infill eval mask';
  --server-side BENCHMARK
                    a benchmark the server holds ('infill eval list'), run
                    whole on the server (RunBenchmark); --run-id makes the
                    server journal it and resume it too.

With --completions FILE nothing is generated: the completions in FILE are
graded, as 'infill eval grade' does (see its help). --reference grades the
benchmark's own middles (a check of the benchmark and its environment);
with --local it needs no server: this process's sandbox grades them.

Repository tasks run their tests with the benchmark's interpreter (eval
mask records it), the repository's own virtual environment (.venv/ or
venv/), or --python PATH. A sample that does not pass has a reason: the
first meaningful error, or the limit it hit and the flag that raises it
(--sample-timeout; --sandbox-memory, --sandbox-processes and
--sandbox-file-size here with --local, on infill-server otherwise). Samples
whose environment failed (a missing interpreter or test runner, a pytest
usage error, a module the unmodified repository cannot import either) are
ERROR, not failures, and make the exit status non-zero.

Several servers: --server a,b,... spreads the run over them. Tasks wait in
one queue and each server is handed the next as its sandbox workers free up
(about twice its --eval-workers samples in flight); every result goes to
the one results file. When a server goes away (its stream breaks), the
tasks it had not finished go back to the queue for the others; the run
fails only when none is left, and running it again resumes it. The results
are those of a run on one server. --shard i/n runs one part of a benchmark
instead (on one server or several; with --server-side the server picks the
part), and 'infill eval merge' joins the parts' results files.

Repository tasks name their repository by its path on this machine; the
server must allow it (infill-server --eval-repo-root) and see it at the same
path, or at the path --repo-map LOCAL=REMOTE rewrites it to.

Resuming: samples already in the results file are skipped, so running the
same command again after Ctrl-C (or a crash: a torn last line is cut off)
goes on where it stopped. Samples that reached no verdict (generation or
sandbox errors) are not recorded, so a later run retries them.

A progress bar (done/total, pass rate so far, rate, ETA) is drawn when
stderr is a terminal; otherwise a progress line is printed every
--progress-every. At the end the results file's scores are printed as in
'infill eval report'.`,
		Example: `  infill eval run humaneval-single-line --limit 100 -o single.jsonl
  infill eval run humaneval --samples 10 --k 1,10 --temperature 0.8
  infill eval run --reference humaneval-random-span-light
  infill eval run --execrepobench samples.jsonl --repos repos/ -o erb.jsonl
  infill eval run --infill bench.jsonl
  infill eval run --reference --local --infill bench.jsonl
  infill eval run --server-side humaneval-multi-line --run-id ml-7b
  infill --server gpu1:50051,gpu2:50051 eval run humaneval --samples 10
  infill --server gpu2:50051 eval run --server-side --shard 1/2 -o ml.1.jsonl humaneval-multi-line`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("run takes at most one BENCHMARK, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runEval(cmd, env, g, f, name)
		},
	}
	fl := cmd.Flags()
	addSourceFlags(cmd, f, "(with --repos)", "(from 'infill eval mask')")
	fl.BoolVar(&f.serverSide, "server-side", false, "run BENCHMARK as the server holds it (RunBenchmark)")
	fl.StringVar(&f.runID, "run-id", "", "with --server-side: journal `ID` on the server, so the server resumes too")
	fl.StringVarP(&f.results, "results", "o", "", "results `FILE` (JSON lines; default BENCHMARK.results.jsonl)")
	fl.IntVar(&f.samples, "samples", 1, "completions per task (n of pass@k)")
	fl.StringVar(&f.ks, "k", "1", "comma-separated k of pass@k to report, each <= --samples")
	fl.IntVar(&f.limit, "limit", 0, "run only the first `N` tasks (0: all)")
	fl.StringVar(&f.shard, "shard", "", "run one part `i/n` of the benchmark: its tasks i, i+n, i+2n, ... (after --limit); merge the parts' results files with 'infill eval merge'")
	fl.StringVar(&f.model, "model", "", "model name on the backend (default: the server's)")
	fl.Uint32Var(&f.maxTokens, "max-tokens", 0, "most tokens per completion (default: the server's)")
	fl.Float32Var(&f.temperature, "temperature", 0, "sampling temperature (default greedy; 0.8 on the server when --samples > 1)")
	fl.Int64Var(&f.seed, "seed", 0, "seed of sample 0; sample i uses seed+i (default: the server's)")
	fl.BoolVar(&f.reference, "reference", false, "grade the benchmark's reference middles instead of generating (checks the harness and data)")
	fl.IntVar(&f.maxErrors, "max-errors", 20, "stop after this many samples reach no verdict (0: never)")
	fl.StringVar(&f.completions, "completions", "", "grade the completions in `FILE` (task_id, completion per line) instead of generating: as 'infill eval grade'")
	addGradeFlags(cmd, f)
	return cmd
}

// addSourceFlags registers the flags that say where tasks come from and how
// a run reports, shared by eval run and eval grade.
func addSourceFlags(cmd *cobra.Command, f *evalRunFlags, erbNote, infillNote string) {
	fl := cmd.Flags()
	fl.StringVar(&f.humanEvalDir, "humaneval-dir", "", "`DIR` of the HumanEval infilling .jsonl.gz files (default $INFILL_HUMANEVAL_DIR, else "+defaultHumanEvalDir+" when present)")
	fl.StringVar(&f.execRepoBench, "execrepobench", "", "ExecRepoBench-format JSON-lines `FILE` "+erbNote)
	fl.StringVar(&f.repos, "repos", "", "`DIR` holding one directory per ExecRepoBench repository")
	fl.StringVar(&f.infillFile, "infill", "", "infill-format benchmark `FILE` "+infillNote)
	fl.DurationVar(&f.sampleTimeout, "sample-timeout", 0, "limit of one sample's own run time, start-up not included (default: the benchmark's: 3s for HumanEval, the server's for repositories)")
	fl.StringVar(&f.repoMap, "repo-map", "", "rewrite repository paths `LOCAL=REMOTE` for a server that sees them elsewhere")
	fl.StringVar(&f.python, "python", "", "run repository tasks' tests with this interpreter `PATH` (a virtual environment's bin/python selects it), instead of the benchmark's or the repository's own .venv/ or venv/")
	fl.DurationVar(&f.every, "progress-every", 10*time.Second, "interval of progress lines when stderr is not a terminal")
	fl.BoolVar(&f.allTests, "all-tests", false, "run repository tasks' whole test suites, also where the benchmark names the tests that reach a span")
}

// evalSource is what a run grades, loaded on this machine (tasks) or held
// by the server (serverName).
type evalSource struct {
	name       string // what was asked for; the default results file's name
	tasks      []evaluator.Task
	serverName string
}

// label names the run in messages and progress lines as its results name
// the benchmarks: the one benchmark's name, or what was asked for with the
// benchmarks it holds.
func (src evalSource) label() string {
	var names []string
	for i := range src.tasks {
		if b := src.tasks[i].Benchmark; !slices.Contains(names, b) {
			names = append(names, b)
		}
	}
	switch {
	case len(names) == 0:
		return src.name
	case len(names) == 1:
		return names[0]
	}
	return src.name + " (" + strings.Join(names, ", ") + ")"
}

func runEval(cmd *cobra.Command, env *Env, g *globals, f *evalRunFlags, name string) error {
	ks, err := parseKs(f.ks)
	if err != nil {
		return usageError{err}
	}
	if err := f.check(ks); err != nil {
		return usageError{err}
	}
	rm, err := parseRepoMap(f.repoMap)
	if err != nil {
		return usageError{err}
	}
	var given *samplesFile
	if f.completions != "" {
		if given, err = readSamples(f.completions); err != nil {
			return err
		}
		if name == "" && f.execRepoBench == "" && f.infillFile == "" {
			if name, err = given.humanEvalName(); err != nil {
				return usageError{err}
			}
		}
	}
	src, err := f.source(cmd, env, name)
	if err != nil {
		return err
	}
	var completions map[taskKey][]string
	if given != nil {
		if src.tasks, completions, err = given.match(src.tasks); err != nil {
			return err
		}
	}
	resultsPath := f.results
	if resultsPath == "" {
		resultsPath = src.name + ".results.jsonl"
		if given != nil {
			resultsPath = given.defaultResults()
		}
	}
	_, statErr := os.Stat(resultsPath)
	journal, existing, err := evaluator.OpenJournal(resultsPath)
	if err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	defer func() {
		journal.Close()
		if fi, err := os.Stat(resultsPath); os.IsNotExist(statErr) && err == nil && fi.Size() == 0 {
			os.Remove(resultsPath) // made by this run, which recorded nothing
		}
	}()

	var rpc infillv1.EvaluationServiceClient
	var servers []*spreadServer
	if !f.local {
		targets, err := g.targets(env)
		if err != nil {
			return err
		}
		if len(targets) > 1 && (src.serverName != "") {
			return usageError{errors.New("--server-side runs on one server: give each server its own part with --shard i/n " +
				"(and join the results files with 'infill eval merge'), or load the benchmark here to spread it over several")}
		}
		for _, target := range targets {
			client, _, err := g.dialTarget(env, target, nil)
			if err != nil {
				return err
			}
			defer client.Close()
			rpc = client.Evaluation()
			servers = append(servers, &spreadServer{addr: target, rpc: rpc})
		}
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if cmd.Flags().Changed("timeout") && g.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}

	r := &evalRun{env: env, f: f, cmd: cmd, journal: journal, results: existing, path: resultsPath, ks: ks,
		rpc: rpc, repoMap: rm, completions: completions}
	switch {
	case src.serverName != "":
		err = r.serverSide(ctx, src.serverName)
	case f.local:
		err = r.inProcess(ctx, src, f.workers)
	case len(servers) > 1:
		err = r.spread(ctx, src, servers)
	default:
		err = r.local(ctx, src)
	}
	onDisk := func() { // what is safe on disk when a run stops early
		fmt.Fprintf(env.Stderr, "%d samples are in %s; run the same command again to go on\n", len(r.results), resultsPath)
	}
	if cmd.Context().Err() != nil {
		onDisk() // interrupted: exit 130
		return err
	}
	// gRPC may report the deadline a moment before ctx's own timer does.
	if dl, ok := ctx.Deadline(); err != nil && ok && !time.Now().Before(dl) {
		onDisk() // --timeout ran out: the results so far are kept, as on Ctrl-C
		return status.Errorf(codes.DeadlineExceeded, "the run did not finish within --timeout %v", g.timeout)
	}
	if err != nil {
		return err
	}
	if len(r.results) > 0 {
		results := r.results
		if given != nil {
			results = given.resultsOf(r.results)
		}
		sum := summarize(results, ks)
		if given != nil {
			// Only the k every task has samples for, as the reference reports.
			ks = slices.DeleteFunc(slices.Clone(ks), func(k int) bool { return !slices.Contains(presentKs(sum), k) })
		}
		fmt.Fprintln(env.Stdout)
		writeTable(env.Stdout, sum, ks)
		writeReasons(env.Stdout, results, 5)
	}
	if f.referenceFormat && given != nil {
		if r.state.Errors > 0 {
			fmt.Fprintf(env.Stderr, "%s not written: %s\n", given.referencePath(), plural(r.state.Errors, "sample")+" have no verdict")
		} else if err := given.writeReference(r.results); err != nil {
			return err
		} else {
			fmt.Fprintf(env.Stderr, "reference-format results in %s\n", given.referencePath())
		}
	}
	if msg := r.errorSummary(); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// check validates flag combinations.
func (f *evalRunFlags) check(ks []int) error {
	var err error
	if f.shardSpec, err = evaluator.ParseShard(f.shard); err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	if f.samples < 1 {
		return fmt.Errorf("--samples must be at least 1")
	}
	if f.completions != "" {
		switch {
		case f.serverSide || f.reference || f.samples != 1:
			return fmt.Errorf("--completions grades the given samples: no --server-side, --reference or --samples")
		case f.workers < 1:
			return fmt.Errorf("--workers must be at least 1")
		}
		return nil // pass@k is reported for the k every task has samples for
	}
	if f.referenceFormat || f.local && !f.reference {
		return fmt.Errorf("--local and --reference-format grade given completions: they need --completions FILE (or 'infill eval grade'), or --reference (--local)")
	}
	if f.local && f.workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	for _, k := range ks {
		if k > f.samples {
			return fmt.Errorf("--k %d: pass@%d needs at least %d samples per task (--samples %d)", k, k, k, f.samples)
		}
	}
	if f.reference && f.samples != 1 {
		return fmt.Errorf("--reference grades the one reference middle: --samples must be 1")
	}
	if f.limit < 0 || f.maxErrors < 0 {
		return fmt.Errorf("--limit and --max-errors must not be negative")
	}
	if f.runID != "" && !f.serverSide {
		return fmt.Errorf("--run-id names a journal on the server: it needs --server-side")
	}
	if f.allTests && f.serverSide {
		return fmt.Errorf("--all-tests changes the tasks this machine loads: not with --server-side")
	}
	return nil
}

// source works out the benchmark from the arguments and loads local tasks.
func (f *evalRunFlags) source(cmd *cobra.Command, env *Env, name string) (evalSource, error) {
	files := 0
	for _, s := range []string{f.execRepoBench, f.infillFile} {
		if s != "" {
			files++
		}
	}
	switch {
	case f.serverSide:
		if name == "" || files > 0 {
			return evalSource{}, usageError{errors.New("--server-side runs a BENCHMARK the server holds: give its name (see 'infill eval list') and no --execrepobench/--infill")}
		}
		return evalSource{name: name, serverName: name}, nil
	case files > 1 || files == 1 && name != "":
		return evalSource{}, usageError{errors.New("give one benchmark: a BENCHMARK name, --execrepobench FILE or --infill FILE")}
	case f.execRepoBench != "":
		if f.repos == "" {
			return evalSource{}, usageError{errors.New("--execrepobench needs --repos DIR (the repositories its samples name)")}
		}
		// The file's stem names its tasks' benchmark, so that two files stay
		// two benchmarks in results and reports, named as in progress lines.
		stem := fileStem(f.execRepoBench)
		tasks, err := dataset.LoadExecRepoBench(f.execRepoBench, dataset.ExecRepoBenchOptions{ReposDir: f.repos, Benchmark: stem})
		return f.finish(evalSource{name: stem, tasks: tasks}, err)
	case f.infillFile != "":
		stem := fileStem(f.infillFile)
		tasks, err := dataset.LoadInfill(f.infillFile)
		for i := range tasks {
			if tasks[i].Benchmark == dataset.InfillName {
				tasks[i].Benchmark = stem // as the server's catalog names an infill file
			}
		}
		return f.finish(evalSource{name: stem, tasks: tasks}, err)
	case name == "":
		return evalSource{}, usageError{errors.New("which benchmark? give a HumanEval set (e.g. humaneval-single-line), --execrepobench FILE, --infill FILE or --server-side NAME")}
	}
	var sets []dataset.HumanEvalSet
	if _, err := dataset.ParseHumanEvalSet("humaneval-" + name); err == nil {
		name = "humaneval-" + name // the reference harness's name of the set
	}
	if name != "humaneval" {
		set, err := dataset.ParseHumanEvalSet(name)
		if err != nil {
			var names []string
			for _, s := range dataset.HumanEvalSets() {
				names = append(names, string(s))
			}
			return evalSource{}, usageError{fmt.Errorf("unknown benchmark %q: here that is humaneval or one of %s; "+
				"use --execrepobench or --infill for files, --server-side for a benchmark the server holds", name, strings.Join(names, ", "))}
		}
		sets = append(sets, set)
	}
	dir := firstNonEmpty(f.humanEvalDir, env.Getenv("INFILL_HUMANEVAL_DIR"))
	if dir == "" {
		if _, err := os.Stat(defaultHumanEvalDir); err != nil {
			return evalSource{}, usageError{fmt.Errorf("no HumanEval infilling data: pass --humaneval-dir DIR "+
				"(the .jsonl.gz files of the human-eval-infilling release; %s is absent)", defaultHumanEvalDir)}
		}
		dir = defaultHumanEvalDir
	}
	tasks, err := dataset.LoadHumanEvalDir(dir, sets...)
	if err != nil {
		err = fmt.Errorf("HumanEval infilling data: %w", err)
	}
	return f.finish(evalSource{name: name, tasks: tasks}, err)
}

// finish applies --limit, --shard and --sample-timeout to loaded tasks.
func (f *evalRunFlags) finish(src evalSource, err error) (evalSource, error) {
	if err != nil {
		return src, err
	}
	if len(src.tasks) == 0 {
		return src, fmt.Errorf("%s: no tasks", src.name)
	}
	if f.limit > 0 && f.limit < len(src.tasks) {
		src.tasks = src.tasks[:f.limit]
	}
	src.tasks = f.shardSpec.Select(src.tasks) // as RunBenchmark: the parts of the first --limit tasks
	for i := range src.tasks {
		if f.sampleTimeout > 0 {
			src.tasks[i].Exec.Timeout = f.sampleTimeout
		}
		if f.allTests {
			src.tasks[i].Exec.Test = src.tasks[i].Exec.Test.WholeSuite()
		}
	}
	if f.python != "" {
		abs, err := filepath.Abs(f.python)
		if err != nil {
			return src, err
		}
		for i := range src.tasks {
			t := &src.tasks[i]
			if t.Exec.Kind != evaluator.ExecRepository {
				continue
			}
			// One inside the repository is named relative to it, as a
			// server that sees the repository elsewhere finds it.
			t.Exec.Test.Python = abs
			if rel, err := filepath.Rel(t.Exec.RepoDir, abs); err == nil && filepath.IsLocal(rel) {
				t.Exec.Test.Python = filepath.ToSlash(rel)
			}
		}
	}
	return src, nil
}

// fileStem is a file's base name without its extensions.
func fileStem(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, "."); i > 0 {
		base = base[:i]
	}
	return base
}

// parseKs parses "1,10".
func parseKs(s string) ([]int, error) {
	var ks []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := strconv.Atoi(part)
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--k %q: want positive integers separated by commas", s)
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

// generation builds the request's options from the flags.
func (f *evalRunFlags) generation(cmd *cobra.Command) *infillv1.GenerationOptions {
	g := &infillv1.GenerationOptions{MaxTokens: f.maxTokens}
	if cmd.Flags().Changed("temperature") {
		t := f.temperature
		g.Temperature = &t
	}
	if cmd.Flags().Changed("seed") {
		s := f.seed
		g.Seed = &s
	}
	return g
}

// evalRun is one run's state: the results file and the tallies behind the
// progress display.
type evalRun struct {
	env     *Env
	f       *evalRunFlags
	cmd     *cobra.Command
	rpc     infillv1.EvaluationServiceClient
	journal *evaluator.Journal
	path    string
	ks      []int
	repoMap *repoMap
	// completions, when set, are the samples to grade, by task: the run
	// generates nothing.
	completions map[taskKey][]string
	// servers, when there are several, share the run (spread).
	servers []*spreadServer

	// results is everything in the results file: what was there plus what
	// this run appended.
	results []evaluator.Result
	state   runState
	// errs counts this run's samples that reached no verdict, by reason.
	errs      map[string]int
	errsOrder []string
	// references are the tasks' true middles, recorded with the results
	// of a server (which does not send them back) for reports that show
	// a completion beside its reference.
	references map[taskKey]string
}

// taskKey names a task across benchmarks.
type taskKey struct{ benchmark, id string }

// record appends a new result to the results file. Samples already there
// are dropped; samples without a verdict are counted, not recorded.
func (r *evalRun) record(res evaluator.Result) (bool, error) {
	if r.journal.Done(res.Benchmark, res.TaskID, res.Sample) {
		return false, nil
	}
	if res.Verdict == evaluator.VerdictError {
		r.state.Errors++
		msg := firstNonEmpty(res.Error, res.Reason, "no verdict")
		if r.errs == nil {
			r.errs = map[string]int{}
		}
		if r.errs[msg] == 0 {
			r.errsOrder = append(r.errsOrder, msg)
		}
		r.errs[msg]++
		if r.f.maxErrors > 0 && r.state.Errors >= r.f.maxErrors {
			return true, fmt.Errorf("stopped after %d samples reached no verdict; first: %s", r.state.Errors, r.errsOrder[0])
		}
		return true, nil
	}
	if res.Reference == "" {
		res.Reference = r.references[taskKey{res.Benchmark, res.TaskID}]
	}
	if err := r.journal.Append(&res); err != nil {
		return false, fmt.Errorf("results file: %w", err)
	}
	r.results = append(r.results, res)
	r.count(&res)
	return true, nil
}

// errorSummary says how many samples reached no verdict and why, the most
// frequent reasons first; "" when none.
func (r *evalRun) errorSummary() string {
	if r.state.Errors == 0 {
		return ""
	}
	reasons := slices.Clone(r.errsOrder)
	slices.SortStableFunc(reasons, func(a, b string) int { return r.errs[b] - r.errs[a] })
	var parts []string
	for i, msg := range reasons {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more reasons", len(reasons)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d × %s", r.errs[msg], msg))
	}
	return fmt.Sprintf("%s reached no verdict (ERROR): %s", plural(r.state.Errors, "sample"), strings.Join(parts, "; "))
}

func (r *evalRun) count(res *evaluator.Result) {
	switch res.Verdict {
	case evaluator.VerdictPassed:
		r.state.Passed++
		r.state.Executed++
	case evaluator.VerdictFailed, evaluator.VerdictTimeout:
		r.state.Executed++
	}
}

// header prints what the run is about to do.
func (r *evalRun) header(name string, tasks, todo int) {
	samples := plural(r.f.samples, "sample")
	what, on := "generated by the server", ""
	if n := len(r.servers); n > 1 {
		what, on = fmt.Sprintf("generated by %d servers", n), fmt.Sprintf(", on %d servers", n)
	}
	switch {
	case r.completions != nil:
		samples = plural(r.state.Total, "sample")
		fmt.Fprintf(r.env.Stderr, "%s: %s, %s (given%s) → %s", name, plural(tasks, "task"), samples, on, r.path)
	case r.f.reference:
		fmt.Fprintf(r.env.Stderr, "%s: %s × %s (reference middles%s) → %s", name, plural(tasks, "task"), samples, on, r.path)
	default:
		fmt.Fprintf(r.env.Stderr, "%s: %s × %s (%s) → %s", name, plural(tasks, "task"), samples, what, r.path)
	}
	if r.state.Resumed > 0 {
		fmt.Fprintf(r.env.Stderr, " (%d already there, %d to go)", r.state.Resumed, todo)
	}
	fmt.Fprintln(r.env.Stderr)
}

// footer prints the run's tally and the errors, if any.
func (r *evalRun) footer(graded int, took time.Duration) {
	fmt.Fprintf(r.env.Stderr, "graded %s in %s", plural(graded, "sample"), roundDuration(took))
	if r.state.Resumed > 0 {
		fmt.Fprintf(r.env.Stderr, " (%d resumed)", r.state.Resumed)
	}
	fmt.Fprintf(r.env.Stderr, "; results in %s\n", r.path)
	if r.state.Errors > 0 {
		fmt.Fprintf(r.env.Stderr, "%s reached no verdict and %s not recorded (run again to retry)\n",
			plural(r.state.Errors, "sample"), map[bool]string{true: "was", false: "were"}[r.state.Errors == 1])
	}
}

// samplesOf is how many samples of t the run grades.
func (r *evalRun) samplesOf(t *evaluator.Task) int {
	if r.completions != nil {
		return len(r.completions[taskKey{t.Benchmark, t.ID}])
	}
	return r.f.samples
}

// plan works out what a run of src has to do: the tasks with a sample not
// yet in the results file, and each task's sample count. It counts the
// samples already there into the state and prints the header.
func (r *evalRun) plan(src evalSource) ([]*evaluator.Task, map[taskKey]int) {
	var todo []*evaluator.Task
	inRun := map[taskKey]int{}
	r.references = map[taskKey]string{}
	r.state.Total = 0
	for i := range src.tasks {
		t := &src.tasks[i]
		n := r.samplesOf(t)
		inRun[taskKey{t.Benchmark, t.ID}] = n
		r.references[taskKey{t.Benchmark, t.ID}] = t.Reference
		r.state.Total += n
		missing := false
		for s := 0; s < n; s++ {
			if r.journal.Done(t.Benchmark, t.ID, s) {
				r.state.Resumed++
			} else {
				missing = true
			}
		}
		if missing {
			todo = append(todo, t)
		}
	}
	for i := range r.results {
		if res := &r.results[i]; res.Sample < inRun[taskKey{res.Benchmark, res.TaskID}] {
			r.count(res)
		}
	}
	r.state.Done = r.state.Resumed
	r.header(src.label(), len(src.tasks), r.state.Total-r.state.Resumed)
	return todo, inRun
}

// grading is the part of a run that turns results into progress.
type grading struct {
	r      *evalRun
	inRun  map[taskKey]int
	prog   progress
	start  time.Time
	graded int
}

func (r *evalRun) startGrading(src evalSource, inRun map[taskKey]int) *grading {
	gr := &grading{r: r, inRun: inRun, prog: newProgress(r.env.Stderr, r.env.StderrIsTerminal, src.label(), r.f.every), start: time.Now()}
	gr.prog.update(r.state)
	return gr
}

// add records one result.
func (gr *grading) add(res evaluator.Result) error {
	if res.Sample >= gr.inRun[taskKey{res.Benchmark, res.TaskID}] {
		return status.Errorf(codes.Internal, "the server sent a result for a sample not asked for (%s/%s #%d)",
			res.Benchmark, res.TaskID, res.Sample)
	}
	fresh, err := gr.r.record(res)
	if fresh {
		gr.r.state.Done++
		gr.graded++
		gr.prog.update(gr.r.state)
	}
	return err
}

// end finishes the progress display; with ok, it prints the footer.
func (gr *grading) end(ok bool) {
	gr.prog.finish(gr.r.state)
	gr.prog = nopProgress{}
	if ok {
		gr.r.footer(gr.graded-gr.r.state.Errors, time.Since(gr.start))
	}
}

// local runs tasks loaded here through Evaluate.
func (r *evalRun) local(ctx context.Context, src evalSource) error {
	todo, inRun := r.plan(src)
	if len(todo) == 0 {
		fmt.Fprintf(r.env.Stderr, "nothing to do: all %s are in %s\n", plural(r.state.Total, "sample"), r.path)
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.rpc.Evaluate(ctx)
	if err != nil {
		return err
	}
	gen := r.f.generation(r.cmd)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, t := range todo {
			if err := stream.Send(r.request(t, gen)); err != nil {
				return // the receive side reports why the stream ended
			}
		}
		_ = stream.CloseSend()
	}()
	defer wg.Wait()
	defer cancel()

	gr := r.startGrading(src, inRun)
	defer gr.end(false)
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r.streamError(ctx, err)
		}
		res := m.GetResult()
		if res == nil {
			continue // the summary: scores are computed from the results file
		}
		if err := gr.add(evalwire.ResultOf(res)); err != nil {
			return err
		}
	}
	gr.end(true)
	return nil
}

// request asks for every sample of t: the server numbers them from 0 (on
// a stream that has not had t before); those already recorded are
// dropped when they come back.
func (r *evalRun) request(t *evaluator.Task, gen *infillv1.GenerationOptions) *infillv1.EvaluateRequest {
	req := &infillv1.EvaluateRequest{Task: taskToProto(t, r.repoMap), Model: r.f.model}
	switch {
	case r.completions != nil:
		req.Completions = r.completions[taskKey{t.Benchmark, t.ID}]
	case r.f.reference:
		req.Completions = []string{t.Reference}
	default:
		req.Samples = uint32(r.f.samples)
		req.Generation = gen
	}
	return req
}

// inProcess grades the given completions here, in this process's own
// sandbox (--local), with --workers at once.
func (r *evalRun) inProcess(ctx context.Context, src evalSource, workers int) error {
	todo, inRun := r.plan(src)
	if len(todo) == 0 {
		fmt.Fprintf(r.env.Stderr, "nothing to do: all %s are in %s\n", plural(r.state.Total, "sample"), r.path)
		return nil
	}
	sb, err := newLocalSandbox(sandbox.Config{WarmWorkers: workers}, &r.f.sandbox,
		"--local needs bubblewrap and python3 here (Debian packages bubblewrap python3); or grade through a server without --local")
	if err != nil {
		return err
	}
	defer sb.Close()
	runner, err := evaluator.NewRunner(evaluator.Config{Workers: workers, FullErrors: true, Toolchains: r.f.sandbox.toolchains()}, sb, nil, nil)
	if err != nil {
		return err
	}
	jobs := make([]evaluator.Job, 0, len(todo))
	for _, t := range todo {
		var cs []evaluator.Completion
		for _, c := range r.completions[taskKey{t.Benchmark, t.ID}] {
			cs = append(cs, evaluator.Completion{Text: c})
		}
		if r.completions == nil { // --reference
			cs = []evaluator.Completion{{Text: t.Reference}}
		}
		jobs = append(jobs, evaluator.Job{Task: *t, Completions: cs})
	}
	gr := r.startGrading(src, inRun)
	defer gr.end(false)
	// The runner serialises emit; a sample already recorded is dropped.
	_, err = runner.RunJobs(ctx, jobs, gr.add)
	if err != nil {
		return err
	}
	gr.end(true)
	return nil
}

// newLocalSandbox starts this process's own sandbox with the limit flags
// given; hint says what it needs when it cannot start.
func newLocalSandbox(cfg sandbox.Config, f *sandboxFlags, hint string) (*sandbox.Sandbox, error) {
	f.apply(&cfg)
	sb, err := sandbox.New(cfg, nil)
	if err != nil {
		if errors.Is(err, sandbox.ErrInvalidConfig) {
			return nil, usageError{err}
		}
		return nil, hintError{err, hint}
	}
	return sb, nil
}

// streamError explains a broken stream.
func (r *evalRun) streamError(ctx context.Context, err error) error {
	if ctx.Err() != nil && status.Code(err) == codes.Canceled {
		return ctx.Err()
	}
	if status.Code(err) == codes.Unimplemented {
		return hintError{err, "the server has no EvaluationService (an older infill-server?)"}
	}
	return err
}

// serverSide runs a benchmark the server holds through RunBenchmark.
func (r *evalRun) serverSide(ctx context.Context, name string) error {
	req := &infillv1.RunBenchmarkRequest{
		Benchmark: name, Model: r.f.model, Samples: uint32(r.f.samples), Limit: uint32(r.f.limit),
		Reference: r.f.reference, RunId: r.f.runID, Shard: r.f.shard,
	}
	for _, k := range r.ks {
		req.K = append(req.K, uint32(k))
	}
	if !r.f.reference {
		req.Generation = r.f.generation(r.cmd)
	}
	fmt.Fprintf(r.env.Stderr, "%s: run on the server → %s\n", name, r.path)
	if have := len(r.results); have > 0 && r.f.runID == "" {
		fmt.Fprintf(r.env.Stderr, "note: without --run-id the server grades every sample again; "+
			"the %d results already in %s are kept, not duplicated\n", have, r.path)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.rpc.RunBenchmark(ctx, req)
	if err != nil {
		return err
	}
	prog := newProgress(r.env.Stderr, r.env.StderrIsTerminal, name, r.f.every)
	start := time.Now()
	graded := 0
	defer func() { prog.finish(r.state) }()
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return status.Error(codes.Internal, "the server ended the run without a summary")
		}
		if err != nil {
			return r.streamError(ctx, err)
		}
		switch e := m.GetEvent().(type) {
		case *infillv1.RunBenchmarkResponse_Result:
			res := evalwire.ResultOf(e.Result)
			if res.Verdict != evaluator.VerdictError {
				r.count(&res) // the pass rate of what this run sees
			}
			fresh, err := r.record(res)
			if fresh && res.Verdict != evaluator.VerdictError {
				graded++
			}
			if err != nil {
				return err
			}
		case *infillv1.RunBenchmarkResponse_Progress:
			p := e.Progress
			r.state.Done, r.state.Total, r.state.Resumed = int(p.GetDone()), int(p.GetTotal()), int(p.GetResumed())
			prog.update(r.state)
		case *infillv1.RunBenchmarkResponse_Summary:
			prog.finish(r.state)
			prog = nopProgress{}
			s := e.Summary
			fmt.Fprintf(r.env.Stderr, "server: graded %d, resumed %d\n", s.GetGraded(), s.GetResumed())
			if s.GetShard() != "" {
				fmt.Fprintf(r.env.Stderr, "shard %s: %s of the benchmark's %d; join the shards' results files with 'infill eval merge'\n",
					s.GetShard(), plural(int(s.GetShardTasks()), "task"), s.GetBenchmarkTasks())
			}
			r.footer(graded, time.Since(start))
			return nil
		}
	}
}

type nopProgress struct{}

func (nopProgress) update(runState) {}
func (nopProgress) finish(runState) {}

// newEvalListCmd lists the benchmarks the server holds.
func newEvalListCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the benchmarks the server holds (for eval run --server-side)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, _, err := g.dial(env)
			if err != nil {
				return err
			}
			defer client.Close()
			ctx, cancel := g.callContext(cmd.Context())
			defer cancel()
			resp, err := client.Evaluation().ListBenchmarks(ctx, &infillv1.ListBenchmarksRequest{})
			if err != nil {
				return err
			}
			if len(resp.GetBenchmarks()) == 0 {
				fmt.Fprintln(env.Stderr, "the server holds no benchmarks (start infill-server with --humaneval-dir or --execrepobench-*)")
			}
			for _, b := range resp.GetBenchmarks() {
				fmt.Fprintln(env.Stdout, b)
			}
			return nil
		},
	}
}

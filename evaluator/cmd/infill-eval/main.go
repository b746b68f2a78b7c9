// Command infill-eval builds and checks execution benchmarks offline:
//
//	infill-eval mask -repo DIR -out bench.jsonl [-seed N] [-per-level N] [-require-empty-fails]
//	    [-all-tests] [-python PATH] [sandbox limits]
//	    turns a Python repository with tests into an infill-format benchmark
//	    (grammar-based and random masks, each checked in the sandbox; the
//	    tests are traced once and each record names those that execute its
//	    span, unless -all-tests);
//	infill-eval run (-humaneval DIR [-sets a,b] | -execrepobench FILE -repos DIR | -infill FILE)
//	    [-completion reference|empty] [-results out.jsonl] [-workers N]
//	    [-all-tests] [-python PATH] [sandbox limits]
//	    grades the reference (or empty) middles in the sandbox and prints the
//	    summary as JSON; with -results an interrupted run resumes.
//
// The sandbox limits are the flags of 'infill eval' and infill-server:
// -sandbox-memory, -sandbox-address-space, -sandbox-processes,
// -sandbox-file-size.
//
// Model completions are graded through the server's EvaluationService.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/masking"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: infill-eval mask|run [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, _ := zap.NewProduction()
	defer func() { _ = log.Sync() }()
	var err error
	switch os.Args[1] {
	case "mask":
		err = mask(ctx, os.Args[2:], log)
	case "run":
		err = run(ctx, os.Args[2:], log)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "infill-eval:", err)
		os.Exit(1)
	}
}

// common are the flags mask and run share.
type common struct {
	limits   sandbox.LimitFlags
	python   string
	allTests bool
}

func (c *common) register(fs *flag.FlagSet) {
	for _, d := range c.limits.Defs("") {
		fs.Var(d.Value, d.Name, d.Usage)
	}
	fs.StringVar(&c.python, "python", "", "run the tests with this interpreter (a virtual environment's bin/python selects it; default: the benchmark's, else the repository's .venv/ or venv/, else python3)")
	fs.BoolVar(&c.allTests, "all-tests", false, "run whole test suites: mask traces no tests, run ignores the tests records name")
}

func (c *common) newSandbox(cfg sandbox.Config, log *zap.Logger) (*sandbox.Sandbox, error) {
	c.limits.Apply(&cfg)
	return sandbox.New(cfg, log)
}

// pythonPath is -python made absolute ("" without it).
func (c *common) pythonPath() (string, error) {
	if c.python == "" {
		return "", nil
	}
	return filepath.Abs(c.python)
}

func mask(ctx context.Context, args []string, log *zap.Logger) error {
	fs := flag.NewFlagSet("mask", flag.ExitOnError)
	repo := fs.String("repo", "", "repository directory (required)")
	out := fs.String("out", "", "output JSON-lines file (required)")
	seed := fs.Uint64("seed", 1, "selection seed")
	perLevel := fs.Int("per-level", 5, "samples per level")
	levels := fs.String("levels", "", "comma-separated levels (default all)")
	requireFail := fs.Bool("require-empty-fails", true, "keep only spans whose removal makes the tests fail")
	pytestArgs := fs.String("pytest", "", "run pytest with these space-separated arguments instead of evaluate_repo.py")
	timeout := fs.Duration("timeout", 60*time.Second, "per-run wall-clock limit")
	traceTimeout := fs.Duration("trace-timeout", masking.DefaultTraceTimeout, "limit of the traced run of the whole suite")
	var c common
	c.register(fs)
	_ = fs.Parse(args)
	if *repo == "" || *out == "" {
		return errors.New("mask: -repo and -out are required")
	}
	python, err := c.pythonPath()
	if err != nil {
		return err
	}
	opts := masking.Options{Seed: *seed, PerLevel: *perLevel, RequireEmptyFails: *requireFail, Timeout: *timeout,
		TraceTimeout: *traceTimeout, Python: python}
	for _, l := range strings.Split(*levels, ",") {
		if l = strings.TrimSpace(l); l != "" {
			opts.Levels = append(opts.Levels, evaluator.Level(l))
		}
	}
	if *pytestArgs != "" {
		opts.Test = &evaluator.TestSpec{Kind: evaluator.TestPytest, Args: strings.Fields(*pytestArgs)}
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	absRepo, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(filepath.Dir(absOut), absRepo); err == nil {
		opts.Repository = filepath.ToSlash(rel)
	}
	cfg := sandbox.Config{Timeout: *timeout}
	if !c.allTests {
		cfg.OutputTailBytes, cfg.CPUTime = sandbox.DefaultOutputLimitBytes, max(*timeout, *traceTimeout)
	}
	sb, err := c.newSandbox(cfg, log)
	if err != nil {
		return err
	}
	defer sb.Close()
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 1}, sb, nil, log)
	if err != nil {
		return err
	}
	if !c.allTests {
		opts.Tracer = r
	}
	recs, stats, err := masking.Build(ctx, absRepo, opts, r, log)
	if err != nil {
		return err
	}
	tmp := absOut + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := dataset.WriteInfill(f, recs); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, absOut); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(stats)
}

func run(ctx context.Context, args []string, log *zap.Logger) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	he := fs.String("humaneval", "", "HumanEval infilling directory")
	sets := fs.String("sets", "", "comma-separated HumanEval sets (default all four)")
	erb := fs.String("execrepobench", "", "ExecRepoBench JSON-lines file")
	repos := fs.String("repos", "", "ExecRepoBench repositories directory")
	infill := fs.String("infill", "", "infill-format JSON-lines file")
	completion := fs.String("completion", "reference", "what to grade: reference or empty")
	results := fs.String("results", "", "results journal (resumable)")
	workers := fs.Int("workers", 0, "parallel samples (default: CPUs)")
	timeout := fs.Duration("timeout", 30*time.Second, "per-run wall-clock limit")
	var c common
	c.register(fs)
	_ = fs.Parse(args)
	python, err := c.pythonPath()
	if err != nil {
		return err
	}
	var tasks []evaluator.Task
	switch {
	case *he != "":
		var ss []dataset.HumanEvalSet
		for _, s := range strings.Split(*sets, ",") {
			if s = strings.TrimSpace(s); s != "" {
				set, err := dataset.ParseHumanEvalSet(s)
				if err != nil {
					return err
				}
				ss = append(ss, set)
			}
		}
		tasks, err = dataset.LoadHumanEvalDir(*he, ss...)
	case *erb != "":
		tasks, err = dataset.LoadExecRepoBench(*erb, dataset.ExecRepoBenchOptions{ReposDir: *repos})
	case *infill != "":
		tasks, err = dataset.LoadInfill(*infill)
	default:
		return errors.New("run: one of -humaneval, -execrepobench or -infill is required")
	}
	if err != nil {
		return err
	}
	if *completion != "reference" && *completion != "empty" {
		return fmt.Errorf("run: -completion must be reference or empty")
	}
	for i := range tasks {
		if python != "" && tasks[i].Exec.Kind == evaluator.ExecRepository {
			tasks[i].Exec.Test.Python = python
		}
	}
	sb, err := c.newSandbox(sandbox.Config{Timeout: *timeout}, log)
	if err != nil {
		return err
	}
	defer sb.Close()
	r, err := evaluator.NewRunner(evaluator.Config{Workers: *workers, ResultsPath: *results, AllTests: c.allTests}, sb, nil, log)
	if err != nil {
		return err
	}
	jobs := make([]evaluator.Job, len(tasks))
	for i, t := range tasks {
		text := t.Reference
		if *completion == "empty" {
			text = ""
		}
		jobs[i] = evaluator.Job{Task: t, Completions: []evaluator.Completion{{Text: text}}}
	}
	start := time.Now()
	rep, err := r.RunJobs(ctx, jobs, nil)
	out := map[string]any{"graded": rep.Graded, "resumed": rep.Resumed, "seconds": time.Since(start).Seconds(), "summary": rep.Summary}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(out); encErr != nil && err == nil {
		err = encErr
	}
	return err
}

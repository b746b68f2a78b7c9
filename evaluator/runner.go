package evaluator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator/metrics"
	"github.com/infill-dev/infill/internal/errkind"
)

// Config configures a Runner.
type Config struct {
	// Workers bounds the samples graded at once (default runtime.NumCPU()).
	Workers int
	// Ks are the k of pass@k reported in summaries (default {1}).
	Ks []int
	// ResultsPath, if set, is the JSON-lines journal: finished samples are
	// appended (fsync per record) and skipped when a run is resumed.
	ResultsPath string
	// OutputTailBytes is how much of stdout and of stderr each Result keeps
	// (default 2048).
	OutputTailBytes int
	// AllowedRepoRoots, if non-empty, restricts ExecRepository tasks to
	// repositories under one of these absolute directories.
	AllowedRepoRoots []string
	// ProgramTimeout is the limit of an ExecProgram (HumanEval-family)
	// sample's own run time when its task sets none (default 3s, as the
	// human-eval-infilling harness); the sandbox's start-up is not charged.
	ProgramTimeout time.Duration
	// FullErrors keeps the detail in errors that a server hides from its
	// clients (its paths, why a sandbox did not start): for a run whose
	// user is the machine's own (the CLI's local sandbox).
	FullErrors bool
	// Pythons give repositories under a directory their interpreter (the
	// server's --eval-python DIR=PYTHON), where the task names none: the
	// rule with the longest matching Dir applies.
	Pythons []PythonRule
	// AllTests runs every repository task's whole suite, also where the
	// task names the tests that reach its span (TestSpec.Tests).
	AllTests bool
	// Toolchains are the toolchains repository tests run with, besides
	// the sandbox's Python.
	Toolchains Toolchains
}

// Toolchains are the toolchains of the test runners that do not run in
// the sandbox's Python: infill-server, eval mask and eval run|grade
// --local take them as flags (--sandbox-node, --sandbox-go-root,
// --sandbox-go-modcache, --sandbox-go-build-timeout).
type Toolchains struct {
	// Node is the node that runs JavaScript and TypeScript tests (default
	// /usr/bin/node). One outside the directories every sandbox shows
	// (/usr) is bound read-only with its installation.
	Node string
	// GoRoot is the Go toolchain Go tests run with (bound read-only when
	// it lies outside /usr). Empty: `go env GOROOT` of the go command on
	// PATH, asked at the first Go sample.
	GoRoot string
	// GoModCache is the module cache Go tests build against (bound
	// read-only; nothing is downloaded inside). Empty with GoRoot empty:
	// `go env GOMODCACHE`. One the sandbox's user cannot reach is left
	// out: the run has an empty module cache.
	GoModCache string
	// GoBuildTimeout bounds a Go run's build (compiling, go vet's checks)
	// before its tests start (default 3m: a fresh build cache compiles the
	// standard library's testing packages once). Past it the run is a
	// timeout.
	GoBuildTimeout time.Duration
}

// Defaults of Toolchains.
const (
	DefaultNodePath       = "/usr/bin/node"
	DefaultGoBuildTimeout = 3 * time.Minute
)

func (t Toolchains) withDefaults() Toolchains {
	if t.Node == "" {
		t.Node = DefaultNodePath
	}
	if t.GoBuildTimeout == 0 {
		t.GoBuildTimeout = DefaultGoBuildTimeout
	}
	return t
}

func (t Toolchains) validate() error {
	for _, p := range []string{t.Node, t.GoRoot, t.GoModCache} {
		if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) == "/") {
			return fmt.Errorf("%w: toolchain path %q must be an absolute path other than /", ErrInvalidConfig, p)
		}
	}
	if t.GoBuildTimeout < 0 {
		return fmt.Errorf("%w: negative GoBuildTimeout", ErrInvalidConfig)
	}
	return nil
}

// PythonRule says that repositories under Dir run their tests with the
// interpreter Python (a host path; a virtual environment's bin/python
// selects that environment).
type PythonRule struct {
	Dir, Python string
}

// DefaultProgramTimeout is human-eval-infilling's default timeout.
const DefaultProgramTimeout = 3 * time.Second

// ErrInvalidConfig wraps Config validation errors.
var ErrInvalidConfig = errors.New("evaluator: invalid config")

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = runtime.NumCPU()
	}
	if len(c.Ks) == 0 {
		c.Ks = []int{1}
	}
	if c.OutputTailBytes == 0 {
		c.OutputTailBytes = 2048
	}
	if c.ProgramTimeout == 0 {
		c.ProgramTimeout = DefaultProgramTimeout
	}
	c.Toolchains = c.Toolchains.withDefaults()
	return c
}

// Validate checks the configuration (after defaults).
func (c Config) Validate() error {
	if c.Workers < 1 {
		return fmt.Errorf("%w: Workers must be at least 1", ErrInvalidConfig)
	}
	for _, k := range c.Ks {
		if k < 1 {
			return fmt.Errorf("%w: pass@k needs k >= 1, got %d", ErrInvalidConfig, k)
		}
	}
	if c.OutputTailBytes < 0 {
		return fmt.Errorf("%w: negative OutputTailBytes", ErrInvalidConfig)
	}
	if c.ProgramTimeout < 0 {
		return fmt.Errorf("%w: negative ProgramTimeout", ErrInvalidConfig)
	}
	for _, r := range c.AllowedRepoRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("%w: AllowedRepoRoots entry %q is not absolute", ErrInvalidConfig, r)
		}
	}
	for _, r := range c.Pythons {
		if !filepath.IsAbs(r.Dir) || !filepath.IsAbs(r.Python) {
			return fmt.Errorf("%w: Pythons rule %s=%s: both paths must be absolute", ErrInvalidConfig, r.Dir, r.Python)
		}
	}
	return c.Toolchains.validate()
}

func (c *Config) repoAllowed(dir string) bool {
	if len(c.AllowedRepoRoots) == 0 {
		return true
	}
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for _, root := range c.AllowedRepoRoots {
		root = filepath.Clean(root)
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		if dir == root || strings.HasPrefix(dir, root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Job asks for Samples completions of Task to be graded. When Completions
// is set the harness made them already and they are graded as given
// (Samples defaults to len(Completions)); otherwise the Runner's Completer
// makes them.
type Job struct {
	Task        Task
	Samples     int
	Completions []Completion
	// FirstSample is the number of the job's first sample; its samples are
	// FirstSample, FirstSample+1, ... (a task's samples may arrive in
	// several jobs, each numbering on from the last).
	FirstSample int
	// Completer, if set, makes this job's completions instead of the
	// Runner's (a request's own generation settings).
	Completer Completer
}

// ErrNoCompleter is the VerdictError reason for a job without completions
// on a Runner without a Completer.
var ErrNoCompleter = errkind.New(errkind.InvalidArgument, "evaluator: no completion supplied and no completer configured")

// Report is what a run produced.
type Report struct {
	// Summary covers this run's results and the journaled results of the
	// samples it asked for (not other tasks the journal holds).
	Summary metrics.Summary
	// Graded counts results produced by this run; Resumed those of its
	// samples found in the journal and skipped.
	Graded, Resumed int
}

// Runner grades jobs with a bounded worker pool.
type Runner struct {
	cfg       Config
	exec      Executor
	completer Completer
	log       *zap.Logger
	// baselines are the runs of unmodified repositories that decide
	// whether a failure is the environment's (baseline.go).
	baselines baselines
	// host holds what test runners found on the host, once per Runner
	// (hostOnce).
	host hostMemo
}

// hostMemo keeps what test runners find out on the host (a toolchain's
// paths), by key.
type hostMemo struct {
	mu   sync.Mutex
	vals map[string]*hostValue
}

type hostValue struct {
	once sync.Once
	v    any
	err  error
}

// hostOnce is f's answer, asked once per Runner for key (error included:
// what the host lacks, it lacks for every sample).
func (r *Runner) hostOnce(key string, f func() (any, error)) (any, error) {
	r.host.mu.Lock()
	if r.host.vals == nil {
		r.host.vals = map[string]*hostValue{}
	}
	hv := r.host.vals[key]
	if hv == nil {
		hv = &hostValue{}
		r.host.vals[key] = hv
	}
	r.host.mu.Unlock()
	hv.once.Do(func() { hv.v, hv.err = f() })
	return hv.v, hv.err
}

// NewRunner returns a Runner. completer may be nil when every job carries
// its completions.
func NewRunner(cfg Config, exec Executor, completer Completer, log *zap.Logger) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if exec == nil {
		return nil, fmt.Errorf("%w: nil Executor", ErrInvalidConfig)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Runner{cfg: cfg, exec: exec, completer: completer, log: log}, nil
}

// Grade completes (when c is nil) and grades one sample of t. It returns an
// error only when ctx is done.
func (r *Runner) Grade(ctx context.Context, t Task, sample int, c *Completion) (Result, error) {
	return r.grade(ctx, r.completer, t, sample, c)
}

func (r *Runner) grade(ctx context.Context, completer Completer, t Task, sample int, c *Completion) (Result, error) {
	if c == nil {
		if completer == nil {
			return r.errorResult(ctx, &t, sample, ErrNoCompleter), nil
		}
		got, err := completer.Complete(ctx, t, sample)
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if err != nil {
			return r.errorResult(ctx, &t, sample, fmt.Errorf("completion: %w", err)), nil
		}
		c = &got
	}
	return r.gradeCompletion(ctx, &t, sample, *c)
}

func (r *Runner) errorResult(ctx context.Context, t *Task, sample int, err error) Result {
	return Result{TaskID: t.ID, Benchmark: t.Benchmark, Level: t.Level, Language: t.Language, Sample: sample,
		Verdict: VerdictError, Error: r.errorText(ctx, t, sample, err), ExitCode: -1}
}

// RunJobs is Run over a slice.
func (r *Runner) RunJobs(ctx context.Context, jobs []Job, emit func(Result) error) (Report, error) {
	ch := make(chan Job)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(ch)
		for _, j := range jobs {
			select {
			case ch <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	return r.Run(ctx, ch, emit)
}

type unit struct {
	job   *Job
	index int // into the job's samples; its number is job.FirstSample+index
}

// Run grades every sample of every job received on jobs until jobs is
// closed, with at most Config.Workers samples in flight. Each result is
// appended to the journal (if any) and then passed to emit as soon as it is
// ready; emit calls are serialised. Samples already in the journal are
// skipped. When ctx is cancelled or emit returns an error, samples in flight
// are killed and not recorded, and Run returns that error with the report so
// far. One sample's crash, hang or flood only affects its own result.
func (r *Runner) Run(ctx context.Context, jobs <-chan Job, emit func(Result) error) (Report, error) {
	agg := metrics.NewAggregator(r.cfg.Ks...)
	var rep Report
	var journal *Journal
	prevs := map[string]*Result{} // journaled results not yet asked for again
	if r.cfg.ResultsPath != "" {
		j, prev, err := OpenJournal(r.cfg.ResultsPath)
		if err != nil {
			return rep, err
		}
		defer j.Close()
		journal = j
		for i := range prev {
			prevs[resultKey(prev[i].Benchmark, prev[i].TaskID, prev[i].Sample)] = &prev[i]
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	units := make(chan unit)
	var mu sync.Mutex // serialises journal appends, aggregation and emit
	record := func(res *Result) {
		mu.Lock()
		defer mu.Unlock()
		if journal != nil && res.Verdict != VerdictError {
			if err := journal.Append(res); err != nil {
				cancel(fmt.Errorf("evaluator: writing results journal: %w", err))
				return
			}
		}
		agg.Add(res.MetricsSample())
		rep.Graded++
		if emit != nil && ctx.Err() == nil {
			if err := emit(*res); err != nil {
				cancel(err)
			}
		}
	}
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range units {
				var c *Completion
				if u.index < len(u.job.Completions) {
					c = &u.job.Completions[u.index]
				}
				completer := r.completer
				if u.job.Completer != nil {
					completer = u.job.Completer
				}
				res, err := r.grade(ctx, completer, u.job.Task, u.job.FirstSample+u.index, c)
				if err != nil {
					continue // ctx done: drain without recording
				}
				record(&res)
			}
		}()
	}
dispatch:
	for {
		var job Job
		var ok bool
		select {
		case <-ctx.Done():
			break dispatch
		case job, ok = <-jobs:
			if !ok {
				break dispatch
			}
		}
		n := job.Samples
		if n <= 0 {
			n = max(1, len(job.Completions))
		}
		jp := &job
		for i := range n {
			s := job.FirstSample + i
			if journal != nil && journal.Done(job.Task.Benchmark, job.Task.ID, s) {
				// Done already: its journaled result counts in this run's
				// summary, once (results of tasks not asked for do not).
				key := resultKey(job.Task.Benchmark, job.Task.ID, s)
				if p := prevs[key]; p != nil {
					mu.Lock()
					agg.Add(p.MetricsSample())
					rep.Resumed++
					mu.Unlock()
					delete(prevs, key)
				}
				continue
			}
			select {
			case units <- unit{jp, i}:
			case <-ctx.Done():
				break dispatch
			}
		}
	}
	close(units)
	wg.Wait()
	rep.Summary = agg.Summary()
	if err := context.Cause(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

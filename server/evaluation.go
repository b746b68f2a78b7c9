package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/internal/errkind"
	"github.com/infill-dev/infill/internal/evalwire"
	"github.com/infill-dev/infill/internal/logctx"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Benchmarks loads named benchmarks held by the server (dataset.Catalog).
type Benchmarks interface {
	Load(name string) ([]evaluator.Task, error)
	Names() []string
}

// passKs are the k of pass@k reported; a k is left out of a summary unless
// every executed task has at least k samples.
var passKs = []int{1, 5, 10, 100}

// defaultSampleTemperature is used when several samples are asked for and
// no temperature is given: pass@k over identical greedy samples means
// nothing.
const defaultSampleTemperature = 0.8

type evaluationService struct {
	infillv1.UnimplementedEvaluationServiceServer
	s *Server

	// pool bounds the sandbox runs of every call together: one
	// server-wide pool of Eval.Workers slots, made on first use.
	poolOnce sync.Once
	pool     *evaluator.Pool
}

// executor is the server-wide pool over the sandbox, or nil without one.
func (e *evaluationService) executor() evaluator.Executor {
	e.poolOnce.Do(func() {
		if e.s.deps.Executor != nil {
			// Validated config: Workers >= 1, so NewPool cannot fail.
			e.pool, _ = evaluator.NewPool(e.s.deps.Executor, e.s.cfg.Eval.Workers)
		}
	})
	if e.pool == nil {
		return nil
	}
	return e.pool
}

func (e *evaluationService) ListBenchmarks(context.Context, *infillv1.ListBenchmarksRequest) (*infillv1.ListBenchmarksResponse, error) {
	var names []string
	if e.s.deps.Benchmarks != nil {
		names = e.s.deps.Benchmarks.Names()
	}
	resp := &infillv1.ListBenchmarksResponse{Benchmarks: names}
	if e.executor() != nil {
		resp.Workers = uint32(e.s.cfg.Eval.Workers)
	}
	return resp, nil
}

func (e *evaluationService) Evaluate(stream infillv1.EvaluationService_EvaluateServer) error {
	return toStatus(stream.Context(), e.s.log, e.s.evaluate(stream, e.executor()))
}

func (e *evaluationService) RunBenchmark(req *infillv1.RunBenchmarkRequest, stream infillv1.EvaluationService_RunBenchmarkServer) error {
	return toStatus(stream.Context(), e.s.log, e.s.runBenchmark(req, stream, e.executor()))
}

// newRunner returns a Runner for one call over ex, the server-wide pool.
// Its own worker count only bounds how many of the call's samples are
// generated or waiting for a slot at once.
func (s *Server) newRunner(ex evaluator.Executor, resultsPath string, ks []int, c evaluator.Completer) (*evaluator.Runner, error) {
	if ex == nil {
		return nil, status.Error(codes.FailedPrecondition,
			"evaluation is unavailable: the server has no sandbox (install bubblewrap and restart)")
	}
	cfg := evaluator.Config{
		Workers:          s.cfg.Eval.Workers,
		Ks:               ks,
		ResultsPath:      resultsPath,
		AllowedRepoRoots: s.cfg.Eval.RepoRoots,
		Pythons:          s.cfg.Eval.Pythons,
		Toolchains:       s.cfg.Eval.Toolchains,
	}
	return evaluator.NewRunner(cfg, ex, c, s.log.Named("evaluator"))
}

// evaluate serves the bidirectional Evaluate stream: a reader goroutine
// turns requests into jobs, the runner grades them with its worker pool and
// emits results (serialised) onto the stream, and the summary goes last.
func (s *Server) evaluate(stream infillv1.EvaluationService_EvaluateServer, ex evaluator.Executor) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	runner, err := s.newRunner(ex, "", passKs, nil)
	if err != nil {
		return err
	}
	next := map[string]int{} // per task: the number of its next sample
	jobs := make(chan evaluator.Job)
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i := 0; ; i++ {
			req, err := stream.Recv()
			if err == io.EOF {
				return
			}
			if err == nil {
				var job evaluator.Job
				if job, err = s.toJob(ctx, req, next); err != nil {
					err = annotate(ctx, s.log, err, fmt.Sprintf("request %d (task %q)", i, req.GetTask().GetTaskId()))
				} else {
					select {
					case jobs <- job:
						continue
					case <-ctx.Done():
						return
					}
				}
			}
			readErr = err
			cancel() // stop grading: the stream is broken or the input bad
			return
		}
	}()
	report, runErr := runner.Run(ctx, jobs, func(r evaluator.Result) error {
		s.metrics.Verdict(string(r.Verdict))
		return stream.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Result{Result: evalwire.SampleResult(&r)}})
	})
	cancel()
	wg.Wait()
	if readErr != nil {
		return readErr
	}
	if runErr != nil {
		return runErr
	}
	return stream.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Summary{Summary: evalwire.Summary(report)}})
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// runBenchmark runs a named benchmark the server holds: validate the
// request, load the benchmark, run it in the evaluator, encode.
func (s *Server) runBenchmark(req *infillv1.RunBenchmarkRequest, stream infillv1.EvaluationService_RunBenchmarkServer, ex evaluator.Executor) error {
	ctx := stream.Context()
	if s.deps.Benchmarks == nil {
		return status.Error(codes.FailedPrecondition, "the server holds no benchmarks (configure --humaneval-dir or --execrepobench-*)")
	}
	opts, ks, resultsPath, err := s.benchmarkRequest(req)
	if err != nil {
		return err
	}
	tasks, err := s.deps.Benchmarks.Load(req.GetBenchmark())
	if err != nil {
		return err
	}
	runner, err := s.newRunner(ex, resultsPath, ks, &pipelineCompleter{s: s,
		gen: genParams{model: req.GetModel(), opts: req.GetGeneration(), samples: opts.Samples}})
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := runner.RunBenchmark(ctx, tasks, opts, func(r evaluator.Result, p evaluator.Progress) error {
		s.metrics.Verdict(string(r.Verdict))
		if err := stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Result{Result: evalwire.SampleResult(&r)}}); err != nil {
			return err
		}
		return stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Progress{Progress: evalwire.Progress(p)}})
	})
	if err != nil {
		return journalError(req.GetRunId(), err)
	}
	logctx.From(ctx, s.log).Info("benchmark run", zap.String("benchmark", req.GetBenchmark()), zap.String("shard", rep.Shard.String()), zap.Int("tasks", rep.ShardTasks),
		zap.Int("graded", rep.Graded), zap.Int("resumed", rep.Resumed), zap.Duration("elapsed", time.Since(start)))
	return stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Summary{Summary: evalwire.BenchmarkSummary(rep)}})
}

// benchmarkRequest checks a RunBenchmark request: what to run, the k of
// pass@k reported, and the journal of its run_id on the server ("": none).
func (s *Server) benchmarkRequest(req *infillv1.RunBenchmarkRequest) (evaluator.BenchmarkOptions, []int, string, error) {
	opts := evaluator.BenchmarkOptions{Samples: max(int(req.GetSamples()), 1), Reference: req.GetReference(), Limit: int(req.GetLimit())}
	if err := s.checkSamples(opts.Samples); err != nil {
		return opts, nil, "", err
	}
	ks := passKs // reported where every task has enough samples
	if len(req.GetK()) > 0 {
		ks = nil
	}
	for _, k := range req.GetK() {
		if k < 1 || int(k) > opts.Samples {
			return opts, nil, "", invalid("k", fmt.Sprintf("pass@%d needs 1 <= k <= samples (%d)", k, opts.Samples))
		}
		ks = append(ks, int(k))
	}
	if opts.Reference && opts.Samples != 1 {
		return opts, nil, "", invalid("samples", "reference runs grade the one reference middle: samples must be 0 or 1")
	}
	shard, err := evaluator.ParseShard(req.GetShard())
	if err != nil {
		return opts, nil, "", invalid("shard", err.Error())
	}
	opts.Shard = shard
	id := req.GetRunId()
	if id == "" {
		return opts, ks, "", nil
	}
	if !runIDPattern.MatchString(id) || strings.HasPrefix(id, ".") {
		return opts, nil, "", invalid("run_id", "must match [A-Za-z0-9._-]{1,128} and not start with '.'")
	}
	if s.cfg.Eval.ResultsDir == "" {
		return opts, nil, "", status.Error(codes.FailedPrecondition, "run_id needs a results directory on the server (--results-dir)")
	}
	return opts, ks, filepath.Join(s.cfg.Eval.ResultsDir, id+".jsonl"), nil
}

// journalError restates an error of run id's journal without the path
// it has on the server; other errors pass unchanged.
func journalError(id string, err error) error {
	var le *evaluator.JournalLineError
	switch {
	case errors.Is(err, evaluator.ErrJournalBusy):
		return fmt.Errorf("run_id %q: %w", id, evaluator.ErrJournalBusy)
	case errors.As(err, &le):
		return fmt.Errorf("run_id %q: journal %w", id, le)
	}
	return err
}

// genParams are the generation settings of an evaluation call or request.
type genParams struct {
	model string
	opts  *infillv1.GenerationOptions
	// samples > 1 selects the default sampling temperature.
	samples int
}

// pipelineCompleter makes completions through the same path as
// CompletionService: the task becomes a repository (the target file with
// the cursor between prefix and suffix, plus its context files), then
// context assembly and the backend.
type pipelineCompleter struct {
	s   *Server
	gen genParams
}

func (p *pipelineCompleter) Complete(ctx context.Context, t evaluator.Task, sample int) (evaluator.Completion, error) {
	g := p.gen
	opts := &infillv1.GenerationOptions{}
	if g.opts != nil {
		opts = proto.Clone(g.opts).(*infillv1.GenerationOptions)
	}
	opts.Candidates = 1
	seed := opts.GetSeed() + int64(sample)
	opts.Seed = &seed
	if g.samples > 1 && opts.Temperature == nil {
		temp := float32(defaultSampleTemperature)
		opts.Temperature = &temp
	}
	if t.NextEdit != nil {
		return p.predictEdit(ctx, t, opts)
	}
	path := t.Path
	if path == "" {
		path = "main.py"
	}
	files := []*infillv1.File{{Path: path, Language: t.Language, Content: proto.String(t.Prefix + t.Suffix)}}
	for _, c := range t.Context {
		if c.Path != path {
			files = append(files, &infillv1.File{Path: c.Path, Content: proto.String(c.Content)})
		}
	}
	resp, err := p.s.complete(ctx, &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: t.RepoName, Files: files},
		Cursor: &infillv1.Cursor{Path: path, Offset: uint64(len(t.Prefix)),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation:    opts,
		Model:         g.model,
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE, // only the text is graded
		RequestClass:  infillv1.RequestClass_REQUEST_CLASS_EVALUATION,
	}, nil)
	if err != nil {
		return evaluator.Completion{}, err
	}
	if len(resp.Candidates) == 0 {
		return evaluator.Completion{}, errors.New("backend returned no candidate")
	}
	return completionOf(resp.Candidates[0].Text, resp.Timings), nil
}

// completionOf is a generated completion with its latencies. A run's own
// samples queue for the backend's slots behind each other, so the time
// to first token and the total are reported without the wait for a slot,
// which is reported beside them.
func completionOf(text string, tm *infillv1.Timings) evaluator.Completion {
	wait := tm.GetQueueWait().AsDuration()
	c := evaluator.Completion{Text: text, QueueWait: wait,
		TTFT: tm.GetTimeToFirstToken().AsDuration(), Total: tm.GetTotal().AsDuration()}
	if c.TTFT > wait {
		c.TTFT -= wait
	}
	if c.Total > wait {
		c.Total -= wait
	}
	return c
}

// toJob converts and checks one Evaluate request. next holds, per task of
// the stream, the number its next sample gets.
func (s *Server) toJob(ctx context.Context, req *infillv1.EvaluateRequest, next map[string]int) (evaluator.Job, error) {
	pt := req.GetTask()
	if pt == nil {
		return evaluator.Job{}, invalid("task", "required")
	}
	t, repository, err := evalwire.TaskOf(pt)
	var fe *evalwire.FieldError
	if errors.As(err, &fe) {
		return evaluator.Job{}, invalid(fe.Field, fe.Reason)
	}
	if t.Exec.Kind == evaluator.ExecRepository {
		if t.Exec.RepoDir, err = s.repoDir(ctx, repository); err != nil {
			return evaluator.Job{}, err
		}
	}
	if err := t.Validate(); err != nil {
		return evaluator.Job{}, err
	}
	job := evaluator.Job{Task: t, Samples: int(req.GetSamples())}
	for _, c := range req.GetCompletions() {
		job.Completions = append(job.Completions, evaluator.Completion{Text: c})
	}
	if n := len(job.Completions); n > 0 {
		// The harness made them: samples is their number, nothing is generated.
		if job.Samples != 0 && job.Samples != n {
			return evaluator.Job{}, invalid("samples", fmt.Sprintf("%d with %d completions: leave it 0 (the completions are the samples)", job.Samples, n))
		}
		job.Samples = n
	}
	if job.Samples == 0 {
		job.Samples = 1
	}
	key := taskKey(t)
	job.FirstSample = next[key]
	if total := job.FirstSample + job.Samples; total > s.cfg.Eval.MaxSamples {
		return evaluator.Job{}, invalid("samples", fmt.Sprintf("task %q of benchmark %q: %d samples on this stream exceed the limit of %d",
			t.ID, t.Benchmark, total, s.cfg.Eval.MaxSamples))
	}
	next[key] = job.FirstSample + job.Samples
	if len(job.Completions) == 0 {
		// Several samples of one task, in this request or over the stream,
		// are sampled (default temperature), not greedy repeats.
		job.Completer = &pipelineCompleter{s: s, gen: genParams{model: req.GetModel(), opts: req.GetGeneration(),
			samples: max(job.Samples, job.FirstSample+job.Samples)}}
	}
	return job, nil
}

// checkSamples bounds the samples one task may ask for, in Evaluate and
// RunBenchmark alike.
func (s *Server) checkSamples(n int) error {
	if n > s.cfg.Eval.MaxSamples {
		return invalid("samples", fmt.Sprintf("%d exceeds the limit of %d", n, s.cfg.Eval.MaxSamples))
	}
	return nil
}

func taskKey(t evaluator.Task) string { return t.Benchmark + "\x00" + t.ID }

// repoDir resolves a repository named by a client: inside an allowed root,
// never outside (symbolic links included).
func (s *Server) repoDir(ctx context.Context, name string) (string, error) {
	if len(s.cfg.Eval.RepoRoots) == 0 {
		return "", status.Error(codes.PermissionDenied, "the server allows no repository tasks (start it with --eval-repo-root DIR)")
	}
	dir := name
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cfg.Eval.RepoRoots[0], dir)
	}
	dir = filepath.Clean(dir)
	outside := status.Error(codes.PermissionDenied, fmt.Sprintf("repository %q is outside the server's allowed roots", name))
	// Look nothing up outside the roots: whether a path there exists is
	// not the client's to learn. Then resolve links and check again.
	if !underAny(dir, s.cfg.Eval.RepoRoots) {
		return "", outside
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		// The error names the path on the server: the log keeps it.
		logctx.From(ctx, s.log).Info("repository task: no such repository", zap.String("repository", name), zap.Error(err))
		reason := fmt.Sprintf("%q: no such repository under the server's allowed roots", name)
		if !errors.Is(err, fs.ErrNotExist) {
			reason = fmt.Sprintf("%q: %s", name, errkind.ClientMessage(err))
		}
		return "", invalid("task.repository.repository", reason)
	}
	if !underAny(real, s.cfg.Eval.RepoRoots) {
		return "", outside
	}
	return real, nil
}

// underAny reports whether the clean path dir lies in one of roots, as
// written or with links resolved (a root may itself be a link). For a dir
// with links resolved, "as written" can only match a root that has none.
func underAny(dir string, roots []string) bool {
	for _, root := range roots {
		cands := []string{filepath.Clean(root)}
		if r, err := filepath.EvalSymlinks(root); err == nil {
			cands = append(cands, r)
		}
		for _, r := range cands {
			if rel, err := filepath.Rel(r, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return true
			}
		}
	}
	return false
}

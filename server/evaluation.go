package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/internal/errkind"
	"github.com/infill-dev/infill/internal/logctx"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
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
		return stream.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Result{Result: toSampleResult(&r)}})
	})
	cancel()
	wg.Wait()
	if readErr != nil {
		return readErr
	}
	if runErr != nil {
		return runErr
	}
	return stream.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Summary{Summary: toSummary(report)}})
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// runBenchmark runs a named benchmark the server holds.
func (s *Server) runBenchmark(req *infillv1.RunBenchmarkRequest, stream infillv1.EvaluationService_RunBenchmarkServer, ex evaluator.Executor) error {
	ctx := stream.Context()
	if s.deps.Benchmarks == nil {
		return status.Error(codes.FailedPrecondition, "the server holds no benchmarks (configure --humaneval-dir or --execrepobench-*)")
	}
	samples := max(int(req.GetSamples()), 1)
	if err := s.checkSamples(samples); err != nil {
		return err
	}
	ks := passKs // reported where every task has enough samples
	if len(req.GetK()) > 0 {
		ks = nil
	}
	for _, k := range req.GetK() {
		if k < 1 || int(k) > samples {
			return invalid("k", fmt.Sprintf("pass@%d needs 1 <= k <= samples (%d)", k, samples))
		}
		ks = append(ks, int(k))
	}
	if req.GetReference() && samples != 1 {
		return invalid("samples", "reference runs grade the one reference middle: samples must be 0 or 1")
	}
	shard, err := evaluator.ParseShard(req.GetShard())
	if err != nil {
		return invalid("shard", err.Error())
	}
	var resultsPath string
	if id := req.GetRunId(); id != "" {
		if !runIDPattern.MatchString(id) || strings.HasPrefix(id, ".") {
			return invalid("run_id", "must match [A-Za-z0-9._-]{1,128} and not start with '.'")
		}
		if s.cfg.Eval.ResultsDir == "" {
			return status.Error(codes.FailedPrecondition, "run_id needs a results directory on the server (--results-dir)")
		}
		resultsPath = filepath.Join(s.cfg.Eval.ResultsDir, id+".jsonl")
	}
	tasks, err := s.deps.Benchmarks.Load(req.GetBenchmark())
	if err != nil {
		return err
	}
	if l := int(req.GetLimit()); l > 0 && l < len(tasks) {
		tasks = tasks[:l]
	}
	benchmarkTasks := len(tasks)
	tasks = shard.Select(tasks) // after the limit: the shards of N tasks are those N
	runner, err := s.newRunner(ex, resultsPath, ks, &pipelineCompleter{s: s,
		gen: genParams{model: req.GetModel(), opts: req.GetGeneration(), samples: samples}})
	if err != nil {
		return err
	}
	jobs := make([]evaluator.Job, len(tasks))
	for i, t := range tasks {
		jobs[i] = evaluator.Job{Task: t, Samples: samples}
		if req.GetReference() {
			jobs[i].Completions = []evaluator.Completion{{Text: t.Reference}}
		}
	}
	resumed := 0
	if resultsPath != "" {
		if resumed, err = countJournaled(ctx, resultsPath, tasks, samples); err != nil {
			return journalError(req.GetRunId(), err)
		}
	}
	start := time.Now()
	prog := &infillv1.Progress{Total: uint32(len(tasks) * samples), Done: uint32(resumed), Resumed: uint32(resumed)}
	report, err := runner.RunJobs(ctx, jobs, func(r evaluator.Result) error {
		s.metrics.Verdict(string(r.Verdict))
		prog.Done++
		if r.Passed() {
			prog.Passed++
		}
		prog.Elapsed = durationpb.New(time.Since(start))
		if err := stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Result{Result: toSampleResult(&r)}}); err != nil {
			return err
		}
		return stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Progress{Progress: proto.Clone(prog).(*infillv1.Progress)}})
	})
	if err != nil {
		return journalError(req.GetRunId(), err)
	}
	logctx.From(ctx, s.log).Info("benchmark run", zap.String("benchmark", req.GetBenchmark()), zap.String("shard", shard.String()), zap.Int("tasks", len(tasks)),
		zap.Int("graded", report.Graded), zap.Int("resumed", report.Resumed), zap.Duration("elapsed", time.Since(start)))
	sum := toSummary(report)
	sum.Shard, sum.ShardTasks, sum.BenchmarkTasks = shard.String(), uint32(len(tasks)), uint32(benchmarkTasks)
	return stream.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Summary{Summary: sum}})
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

// countJournaled counts samples of tasks already in the journal at path.
func countJournaled(ctx context.Context, path string, tasks []evaluator.Task, samples int) (int, error) {
	j, _, err := evaluator.OpenJournal(path)
	if err != nil {
		return 0, err
	}
	defer j.Close()
	n := 0
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		for i := 0; i < samples; i++ {
			if j.Done(t.Benchmark, t.ID, i) {
				n++
			}
		}
	}
	return n, nil
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
	t := evaluator.Task{
		ID: pt.GetTaskId(), Benchmark: pt.GetBenchmark(), Level: fromLevel(pt.GetLevel()),
		Language: pt.GetLanguage(), RepoName: pt.GetRepoName(), Path: pt.GetPath(),
		Prefix: pt.GetPrefix(), Suffix: pt.GetSuffix(), Reference: pt.GetReference(),
	}
	for i, f := range pt.GetContext() {
		if f.Content == nil || f.GetDigest() != "" || len(f.GetEdits()) > 0 {
			return evaluator.Job{}, invalid(fmt.Sprintf("task.context[%d]", i), "context files need content (no digest or edits)")
		}
		t.Context = append(t.Context, evaluator.ContextFile{Path: f.GetPath(), Content: f.GetContent()})
	}
	if d := pt.GetTimeout(); d != nil {
		t.Exec.Timeout = d.AsDuration()
	}
	switch x := pt.GetExecution().(type) {
	case *infillv1.EvalTask_Program:
		t.Exec.Kind, t.Exec.Epilogue = evaluator.ExecProgram, x.Program.GetEpilogue()
	case *infillv1.EvalTask_Repository:
		dir, err := s.repoDir(ctx, x.Repository.GetRepository())
		if err != nil {
			return evaluator.Job{}, err
		}
		t.Exec.Kind, t.Exec.RepoDir, t.Exec.Test = evaluator.ExecRepository, dir, fromTestSpec(x.Repository.GetTest())
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

var levels = map[infillv1.Level]evaluator.Level{
	infillv1.Level_LEVEL_EXPRESSION:  evaluator.LevelExpression,
	infillv1.Level_LEVEL_STATEMENT:   evaluator.LevelStatement,
	infillv1.Level_LEVEL_BLOCK:       evaluator.LevelBlock,
	infillv1.Level_LEVEL_FUNCTION:    evaluator.LevelFunction,
	infillv1.Level_LEVEL_CLASS:       evaluator.LevelClass,
	infillv1.Level_LEVEL_SINGLE_LINE: evaluator.LevelSingleLine,
	infillv1.Level_LEVEL_MULTI_LINE:  evaluator.LevelMultiLine,
	infillv1.Level_LEVEL_RANDOM_SPAN: evaluator.LevelRandomSpan,
}

// protoLevels is levels inverted.
var protoLevels = func() map[evaluator.Level]infillv1.Level {
	m := make(map[evaluator.Level]infillv1.Level, len(levels))
	for k, v := range levels {
		m[v] = k
	}
	return m
}()

func fromLevel(l infillv1.Level) evaluator.Level { return levels[l] }

// toLevel maps a level name; unknown names are LEVEL_UNSPECIFIED.
func toLevel(l string) infillv1.Level { return protoLevels[evaluator.Level(l)] }

var testKinds = map[infillv1.TestKind]evaluator.TestKind{
	infillv1.TestKind_TEST_KIND_SCRIPT:  evaluator.TestScript,
	infillv1.TestKind_TEST_KIND_PYTEST:  evaluator.TestPytest,
	infillv1.TestKind_TEST_KIND_COMMAND: evaluator.TestCommand,
	infillv1.TestKind_TEST_KIND_GO:      evaluator.TestGo,
	infillv1.TestKind_TEST_KIND_NODE:    evaluator.TestNode,
}

func fromTestSpec(t *infillv1.TestSpec) evaluator.TestSpec {
	return evaluator.TestSpec{Kind: testKinds[t.GetKind()], Script: t.GetScript(), Args: t.GetArgs(),
		Command: t.GetCommand(), ExpectedTests: int(t.GetExpectedTests()), Python: t.GetPython(), Tests: t.GetTests()}
}

var verdicts = map[evaluator.Verdict]infillv1.Verdict{
	evaluator.VerdictPassed:  infillv1.Verdict_VERDICT_PASSED,
	evaluator.VerdictFailed:  infillv1.Verdict_VERDICT_FAILED,
	evaluator.VerdictTimeout: infillv1.Verdict_VERDICT_TIMEOUT,
	evaluator.VerdictError:   infillv1.Verdict_VERDICT_ERROR,
	evaluator.VerdictSkipped: infillv1.Verdict_VERDICT_SKIPPED,
}

func toSampleResult(r *evaluator.Result) *infillv1.SampleResult {
	return &infillv1.SampleResult{
		TaskId: r.TaskID, Benchmark: r.Benchmark, Level: toLevel(string(r.Level)), Sample: uint32(r.Sample),
		Completion: r.Completion, Verdict: verdicts[r.Verdict], Reason: r.Reason, ExitCode: int32(r.ExitCode),
		WeakSignal: r.WeakSignal, StdoutTail: r.StdoutTail, StderrTail: r.StderrTail,
		ExactMatch: r.ExactMatch, EditSimilarity: uint32(r.EditSimilarity),
		TimeToFirstToken: durationpb.New(r.TTFT), Generation: durationpb.New(r.Total),
		Execution: durationpb.New(r.ExecDuration), Error: r.Error,
		Exception: toException(r.Exception), QueueWait: durationpb.New(r.QueueWait),
		Failure: toFailure(r.Failure), Limit: string(r.Limit), Tests: toTestCounts(r.Tests),
		Language: r.Language,
	}
}

func toTestCounts(c *outcome.TestCounts) *infillv1.TestCounts {
	if c == nil {
		return nil
	}
	return &infillv1.TestCounts{Passed: uint32(max(c.Passed, 0)), Failed: uint32(max(c.Failed, 0)),
		Errors: uint32(max(c.Errors, 0)), Skipped: uint32(max(c.Skipped, 0))}
}

func toException(e *outcome.Exception) *infillv1.TestException {
	if e == nil {
		return nil
	}
	return &infillv1.TestException{Type: e.Type, Message: e.Message, Where: e.Where}
}

func toFailure(f *outcome.Failure) *infillv1.TestFailure {
	if f == nil {
		return nil
	}
	out := &infillv1.TestFailure{Test: f.Test, When: f.When, Report: f.Report, Output: f.Output}
	if c := f.Crash; c != nil {
		out.Path, out.Line, out.Message = c.Path, uint32(max(c.Line, 0)), c.Message
	}
	return out
}

func toSummary(rep evaluator.Report) *infillv1.EvaluationSummary {
	out := &infillv1.EvaluationSummary{Overall: toGroup(rep.Summary.Overall),
		Graded: uint32(rep.Graded), Resumed: uint32(rep.Resumed)}
	for _, g := range rep.Summary.ByBenchmark {
		out.ByBenchmark = append(out.ByBenchmark, toGroup(g))
	}
	for _, g := range rep.Summary.ByLevel {
		out.ByLevel = append(out.ByLevel, toGroup(g))
	}
	for _, g := range rep.Summary.ByLanguage {
		out.ByLanguage = append(out.ByLanguage, toGroup(g))
	}
	for _, g := range rep.Summary.ByLanguageLevel {
		out.ByLanguageLevel = append(out.ByLanguageLevel, toGroup(g))
	}
	return out
}

func toGroup(g metrics.Group) *infillv1.MetricsGroup {
	out := &infillv1.MetricsGroup{Benchmark: g.Benchmark, Level: toLevel(g.Level), Tasks: uint32(g.Tasks),
		Samples: uint32(g.Samples), ExactMatch: g.ExactMatch, EditSimilarity: g.EditSimilarity,
		Verdicts: map[string]uint32{}, TimeToFirstToken: toLatency(g.TTFT), Total: toLatency(g.Total),
		QueueWait: toLatency(g.QueueWait), Language: g.Language}
	ks := make([]int, 0, len(g.PassAtK))
	for k := range g.PassAtK {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		out.PassAtK = append(out.PassAtK, &infillv1.PassAtK{K: uint32(k), Value: g.PassAtK[k]})
	}
	for v, n := range g.Verdicts {
		out.Verdicts[v] = uint32(n)
	}
	return out
}

func toLatency(l metrics.Latency) *infillv1.LatencySummary {
	return &infillv1.LatencySummary{Count: uint32(l.Count), Mean: durationpb.New(l.Mean),
		P50: durationpb.New(l.P50), P95: durationpb.New(l.P95), Max: durationpb.New(l.Max)}
}

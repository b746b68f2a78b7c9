package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/evaluator"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// fakeEval is a scripted EvaluationService: every sample of task i passes
// when i is even; it records the tasks it was sent.
type fakeEval struct {
	infillv1.UnimplementedEvaluationServiceServer

	// block, when set, is closed by the fake after it sent that many
	// results in one call, which then waits for the client to go away.
	blockAfter int
	blocked    chan struct{}
	// errorFor makes samples of these tasks end with VERDICT_ERROR.
	errorFor map[string]bool
	// For runs over several servers: workers is what ListBenchmarks
	// reports; readAhead reads requests as they come (counting in maxOpen
	// the most tasks sent and not yet answered), not one at a time; hold,
	// when set, delays the first result until it is closed; after
	// dieAfter results (when > 0) the fake calls die and waits for the
	// call to be broken; a task in reject is INVALID_ARGUMENT.
	workers   uint32
	readAhead bool
	hold      chan struct{}
	dieAfter  int
	die       func()
	reject    map[string]bool
	open      int
	maxOpen   int

	mu    sync.Mutex
	tasks []string
	reqs  []*infillv1.EvaluateRequest
	bench *infillv1.RunBenchmarkRequest
}

func (f *fakeEval) result(t *infillv1.EvalTask, sample int, completion string) *infillv1.SampleResult {
	var idx int
	fmt.Sscanf(t.GetTaskId()[strings.LastIndex(t.GetTaskId(), "/")+1:], "%d", &idx)
	v := infillv1.Verdict_VERDICT_FAILED
	if idx%2 == 0 {
		v = infillv1.Verdict_VERDICT_PASSED
	}
	r := &infillv1.SampleResult{TaskId: t.GetTaskId(), Benchmark: t.GetBenchmark(), Level: t.GetLevel(),
		Sample: uint32(sample), Completion: completion, Verdict: v, ExactMatch: v == infillv1.Verdict_VERDICT_PASSED,
		EditSimilarity: 70, TimeToFirstToken: durationpb.New(time.Duration(10+idx) * time.Millisecond),
		Generation: durationpb.New(time.Duration(100+idx) * time.Millisecond)}
	if f.errorFor[t.GetTaskId()] {
		r.Verdict, r.Error = infillv1.Verdict_VERDICT_ERROR, "backend: model not found"
	}
	return r
}

func (f *fakeEval) ListBenchmarks(context.Context, *infillv1.ListBenchmarksRequest) (*infillv1.ListBenchmarksResponse, error) {
	return &infillv1.ListBenchmarksResponse{Benchmarks: []string{"humaneval-single-line"}, Workers: f.workers}, nil
}

func (f *fakeEval) Evaluate(st grpc.BidiStreamingServer[infillv1.EvaluateRequest, infillv1.EvaluateResponse]) error {
	sent := 0
	recv := st.Recv
	if f.readAhead {
		type msg struct {
			req *infillv1.EvaluateRequest
			err error
		}
		ch := make(chan msg, 1024)
		go func() {
			for {
				req, err := st.Recv()
				if err == nil {
					f.mu.Lock()
					f.open++
					f.maxOpen = max(f.maxOpen, f.open)
					f.mu.Unlock()
				}
				ch <- msg{req, err}
				if err != nil {
					return
				}
			}
		}()
		recv = func() (*infillv1.EvaluateRequest, error) { m := <-ch; return m.req, m.err }
	}
	for {
		req, err := recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.tasks = append(f.tasks, req.GetTask().GetTaskId())
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		if f.reject[req.GetTask().GetTaskId()] {
			return status.Error(codes.InvalidArgument, "task.prefix: bad task")
		}
		n := int(max(req.GetSamples(), 1))
		if len(req.GetCompletions()) > 0 {
			n = len(req.GetCompletions())
		}
		for s := 0; s < n; s++ {
			c := "generated"
			if s < len(req.GetCompletions()) {
				c = req.GetCompletions()[s]
			}
			if f.blockAfter > 0 && sent == f.blockAfter {
				close(f.blocked)
				<-st.Context().Done()
				return st.Context().Err()
			}
			if f.dieAfter > 0 && sent == f.dieAfter {
				f.die()
				<-st.Context().Done()
				return st.Context().Err()
			}
			if f.hold != nil {
				select {
				case <-f.hold:
				case <-st.Context().Done():
					return st.Context().Err()
				}
			}
			if s == n-1 && f.readAhead {
				f.mu.Lock()
				f.open-- // before its last result: the client cannot have sent the next yet
				f.mu.Unlock()
			}
			if err := st.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Result{
				Result: f.result(req.GetTask(), s, c)}}); err != nil {
				return err
			}
			sent++
		}
	}
	return st.Send(&infillv1.EvaluateResponse{Event: &infillv1.EvaluateResponse_Summary{Summary: &infillv1.EvaluationSummary{}}})
}

func (f *fakeEval) RunBenchmark(req *infillv1.RunBenchmarkRequest, st grpc.ServerStreamingServer[infillv1.RunBenchmarkResponse]) error {
	f.mu.Lock()
	f.bench = req
	f.mu.Unlock()
	if req.GetBenchmark() != "humaneval-single-line" {
		return status.Errorf(codes.NotFound, "dataset: unknown benchmark: %q (known: humaneval-single-line)", req.GetBenchmark())
	}
	shard, err := evaluator.ParseShard(req.GetShard())
	if err != nil {
		return status.Error(codes.InvalidArgument, "shard: "+err.Error())
	}
	var ids []int
	for i := range int(req.GetLimit()) {
		if shard.Whole() || i%shard.Count == shard.Index {
			ids = append(ids, i)
		}
	}
	total := len(ids)
	prog := &infillv1.Progress{Total: uint32(total)}
	for _, i := range ids {
		t := &infillv1.EvalTask{TaskId: fmt.Sprintf("SingleLineInfilling/HumanEval/%d", i), Benchmark: "humaneval-single-line",
			Level: infillv1.Level_LEVEL_SINGLE_LINE}
		r := f.result(t, 0, "x")
		prog.Done++
		if r.Verdict == infillv1.Verdict_VERDICT_PASSED {
			prog.Passed++
		}
		if err := st.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Result{Result: r}}); err != nil {
			return err
		}
		if err := st.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Progress{Progress: &infillv1.Progress{
			Done: prog.Done, Total: prog.Total, Passed: prog.Passed}}}); err != nil {
			return err
		}
	}
	return st.Send(&infillv1.RunBenchmarkResponse{Event: &infillv1.RunBenchmarkResponse_Summary{
		Summary: &infillv1.EvaluationSummary{Graded: uint32(total), Shard: req.GetShard(), ShardTasks: uint32(total),
			BenchmarkTasks: req.GetLimit()}}})
}

func (f *fakeEval) sentTasks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tasks...)
}

// evalEnv serves fake on an in-process connection and returns a runner of
// the tool against it.
func evalEnv(t *testing.T, fake *fakeEval) func(ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	dialOpt := serveWith(t, func(s *grpc.Server) { infillv1.RegisterEvaluationServiceServer(s, fake) })
	return func(ctx context.Context, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(ctx, args, Env{Stdout: &stdout, Stderr: &stderr,
			Dial: func(_ string, cfg infill.Config) (*infill.Client, error) {
				cfg.DialOptions = append(cfg.DialOptions, dialOpt)
				return infill.Dial("passthrough:///bufnet", cfg, nil)
			}})
		return code, stdout.String(), stderr.String()
	}
}

// writeHumanEval writes a small single-line set of n tasks into a new
// directory, in the release's gzipped format.
func writeHumanEval(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := 0; i < n; i++ {
		rec := map[string]string{
			"task_id": fmt.Sprintf("SingleLineInfilling/HumanEval/%d", i), "entry_point": "f",
			"prompt": "def f():\n", "suffix": "", "canonical_solution": "    return 1\n",
			"test": "def check(c):\n    assert c() == 1\n",
		}
		b, _ := json.Marshal(rec)
		zw.Write(append(b, '\n'))
	}
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "HumanEval-SingleLineInfilling.jsonl.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readLines parses a results file strictly: every line a complete result,
// no (task, sample) twice.
func readLines(t *testing.T, path string) []evaluator.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	var out []evaluator.Result
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r evaluator.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		key := fmt.Sprintf("%s/%s#%d", r.Benchmark, r.TaskID, r.Sample)
		if seen[key] {
			t.Fatalf("%s: %s twice", path, key)
		}
		seen[key] = true
		out = append(out, r)
	}
	return out
}

func TestEvalRunResumes(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 6)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	code, stdout, stderr := run(t.Context(), "eval", "run", "--humaneval-dir", he, "--limit", "3", "-o", out, "humaneval-single-line")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readLines(t, out); len(got) != 3 {
		t.Fatalf("%d results after the first run", len(got))
	}
	for _, want := range []string{"humaneval-single-line: 3 tasks × 1 sample (generated by the server) → " + out,
		"humaneval-single-line: 3/3 (100%), pass 66.7%", "graded 3 samples in"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "humaneval-single-line  single-line  3") {
		t.Errorf("no summary table:\n%s", stdout)
	}

	// Torn last line, as a crash mid-write leaves it.
	f, _ := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"task_id": "SingleLineInfilling/HumanEval/3", "bench`)
	f.Close()

	code, _, stderr = run(t.Context(), "eval", "run", "--humaneval-dir", he, "--limit", "5", "-o", out, "humaneval-single-line")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "(3 already there, 2 to go)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if got := readLines(t, out); len(got) != 5 {
		t.Fatalf("%d results after resuming", len(got))
	}
	sent := fake.sentTasks()
	if len(sent) != 5 || sent[3] != "SingleLineInfilling/HumanEval/3" || sent[4] != "SingleLineInfilling/HumanEval/4" {
		t.Fatalf("server was sent %v; want tasks 0-2, then only 3 and 4", sent)
	}

	code, _, stderr = run(t.Context(), "eval", "run", "--humaneval-dir", he, "--limit", "5", "-o", out, "humaneval-single-line")
	if code != 0 || !strings.Contains(stderr, "nothing to do: all 5 samples are in") || len(fake.sentTasks()) != 5 {
		t.Fatalf("exit %d, sent %d: %s", code, len(fake.sentTasks()), stderr)
	}
}

func TestEvalRunInterrupted(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{blockAfter: 4, blocked: make(chan struct{})}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 8)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-fake.blocked
		// Let the client write what it received, then interrupt as
		// SIGINT does. The deadline only ends a run that would never get
		// there; under load (CI runs packages in parallel on two cores)
		// writing four lines has no fixed bound.
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if data, _ := os.ReadFile(out); bytes.Count(data, []byte("\n")) >= 4 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	code, _, stderr := run(ctx, "eval", "run", "--humaneval-dir", he, "--samples", "2", "--k", "1,2", "-o", out, "humaneval-single-line")
	if code != ExitInterrupted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasSuffix(stderr, "4 samples are in "+out+"; run the same command again to go on\ninfill: interrupted\n") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if got := readLines(t, out); len(got) != 4 {
		t.Fatalf("%d results after the interrupt", len(got))
	}

	fake.blockAfter = 0
	code, stdout, stderr := run(t.Context(), "eval", "run", "--humaneval-dir", he, "--samples", "2", "--k", "1,2", "-o", out, "humaneval-single-line")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readLines(t, out)
	if len(got) != 16 {
		t.Fatalf("%d results, want 8 tasks × 2 samples", len(got))
	}
	// The server had read tasks 0-2 when it was interrupted; tasks 0 and 1
	// were done, so the second run sends 2-7.
	sent := fake.sentTasks()
	if len(sent) != 3+6 || sent[3] != "SingleLineInfilling/HumanEval/2" || sent[8] != "SingleLineInfilling/HumanEval/7" {
		t.Errorf("server was sent %v", sent)
	}
	if !strings.Contains(stdout, "PASS@1  PASS@2") || !strings.Contains(stdout, "50.0%   50.0%") {
		t.Errorf("summary:\n%s", stdout)
	}
	for _, r := range fake.reqs[len(fake.reqs)-1:] {
		if r.GetSamples() != 2 || r.GetGeneration() == nil || r.GetGeneration().Temperature != nil {
			t.Errorf("request %v", r)
		}
	}
}

func TestEvalRunErrorsAreNotRecorded(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{errorFor: map[string]bool{"SingleLineInfilling/HumanEval/1": true}}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 4)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, stderr := run(t.Context(), "eval", "run", "--humaneval-dir", he, "-o", out, "--temperature", "0.2",
		"--max-tokens", "9", "--model", "m", "humaneval-single-line")
	// A sample without a verdict makes the run fail, saying how many and why.
	if code != ExitError || !strings.HasSuffix(stderr, "infill: 1 sample reached no verdict (ERROR): 1 × backend: model not found\n") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readLines(t, out); len(got) != 3 {
		t.Fatalf("%d results, want 3 (the error is not recorded)", len(got))
	}
	if !strings.Contains(stderr, "1 sample reached no verdict and was not recorded (run again to retry)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	r := fake.reqs[0]
	if r.GetModel() != "m" || r.GetGeneration().GetMaxTokens() != 9 || r.GetGeneration().GetTemperature() != 0.2 {
		t.Errorf("request %v", r)
	}

	// --max-errors stops the run with one line.
	fake.errorFor = map[string]bool{"SingleLineInfilling/HumanEval/0": true, "SingleLineInfilling/HumanEval/1": true,
		"SingleLineInfilling/HumanEval/2": true, "SingleLineInfilling/HumanEval/3": true}
	out2 := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, stderr = run(t.Context(), "eval", "run", "--humaneval-dir", he, "-o", out2, "--max-errors", "2", "humaneval-single-line")
	if code != 1 || !strings.HasSuffix(stderr, "infill: stopped after 2 samples reached no verdict; first: backend: model not found\n") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestEvalRunReference(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 2)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, stderr := run(t.Context(), "eval", "run", "--humaneval-dir", he, "--reference", "-o", out, "humaneval-single-line")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, r := range fake.reqs {
		if len(r.GetCompletions()) != 1 || r.GetCompletions()[0] != "    return 1\n" || r.GetSamples() != 0 {
			t.Errorf("reference request %v", r)
		}
		p := r.GetTask().GetProgram()
		if p == nil || !strings.Contains(p.GetEpilogue(), "check(f)") || r.GetTask().GetLevel() != infillv1.Level_LEVEL_SINGLE_LINE {
			t.Errorf("task %v", r.GetTask())
		}
	}
}

func TestEvalRunServerSide(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{}
	run := evalEnv(t, fake)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	args := []string{"eval", "run", "--server-side", "--limit", "4", "--run-id", "x1", "--samples", "1", "-o", out, "humaneval-single-line"}
	code, stdout, stderr := run(t.Context(), args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readLines(t, out); len(got) != 4 {
		t.Fatalf("%d results", len(got))
	}
	if b := fake.bench; b.GetRunId() != "x1" || b.GetLimit() != 4 || len(b.GetK()) != 1 || b.GetK()[0] != 1 {
		t.Errorf("request %v", b)
	}
	if !strings.Contains(stderr, "humaneval-single-line: 4/4 (100%), pass 50.0%") || !strings.Contains(stdout, "50.0%") {
		t.Errorf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	}
	// Again: the server (without its own journal here) sends the same
	// samples; the file keeps one of each.
	if code, _, stderr = run(t.Context(), args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readLines(t, out); len(got) != 4 {
		t.Fatalf("%d results after the second run", len(got))
	}

	nope := filepath.Join(t.TempDir(), "nope.jsonl")
	code, _, stderr = run(t.Context(), "eval", "run", "--server-side", "-o", nope, "nope")
	if _, err := os.Stat(nope); !os.IsNotExist(err) {
		t.Errorf("a failed run left its empty results file: %v", err)
	}
	if code != 1 || !strings.HasSuffix(stderr, "\ninfill: NOT_FOUND: dataset: unknown benchmark: \"nope\" (known: humaneval-single-line)\n") {
		t.Fatalf("exit %d: %q", code, stderr)
	}
}

func TestLineProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := &lineProgress{w: &buf, name: "b", every: 10 * time.Second, now: func() time.Time { return now }}
	p.update(runState{Done: 10, Total: 110, Resumed: 10})
	now = now.Add(5 * time.Second)
	p.update(runState{Done: 20, Total: 110, Resumed: 10, Passed: 5, Executed: 20})
	now = now.Add(5 * time.Second)
	p.update(runState{Done: 30, Total: 110, Resumed: 10, Passed: 10, Executed: 30, Errors: 1})
	now = now.Add(2 * time.Second)
	p.finish(runState{Done: 34, Total: 110, Resumed: 10, Passed: 12, Executed: 34, Errors: 1})
	want := "b: 30/110 (27%), pass 33.3%, 1 error, 2 samples/s, ETA 40s\n" +
		"b: 34/110 (31%), pass 35.3%, 1 error, 2 samples/s, took 12s\n"
	if buf.String() != want {
		t.Errorf("got\n%swant\n%s", buf.String(), want)
	}
}

func TestBarProgress(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	p := newProgress(&buf, true, "bench", time.Second)
	p.update(runState{Done: 10, Total: 40, Resumed: 10, Passed: 5, Executed: 10})
	p.update(runState{Done: 12, Total: 40, Resumed: 10, Passed: 6, Executed: 12, Errors: 1})
	p.finish(runState{Done: 40, Total: 40, Resumed: 10, Passed: 20, Executed: 39, Errors: 1})
	out := buf.String()
	last := out[strings.LastIndex(out, "\r")+1:]
	for _, want := range []string{"bench 40 / 40 [", "] 100.00% pass 51.3%, 1 error ", "samples/s"} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame %q lacks %q", last, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the bar's refresh goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

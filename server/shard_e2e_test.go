package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// runToSummary runs a benchmark to its end and returns its summary.
func runToSummary(t *testing.T, client infillv1.EvaluationServiceClient, req *infillv1.RunBenchmarkRequest) *infillv1.EvaluationSummary {
	t.Helper()
	st, err := client.RunBenchmark(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("RunBenchmark %v: %v", req, err)
		}
		if s := m.GetSummary(); s != nil {
			return s
		}
	}
}

// readJournal reads a RunBenchmark run_id journal.
func readJournal(t *testing.T, path string) []evaluator.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, st, err := evaluator.ReadJournal(f)
	if err != nil || st.Torn {
		t.Fatalf("%s: %v (torn %v)", path, err, st.Torn)
	}
	return rs
}

// TestRunBenchmarkShardsMatchWholeRun: a benchmark sharded over two real
// servers (shard 0/2 on one, 1/2 on the other) grades every task once,
// and the shards' journals merged give the verdicts and the scores (pass@k,
// exact match, edit similarity by level) of the whole run on one server:
// reference middles, and completions the real backend generates.
func TestRunBenchmarkShardsMatchWholeRun(t *testing.T) {
	t.Parallel()
	a, b := servertest.StartEval(t, ""), servertest.StartEval(t, "")
	ha, hb := dial(t, a.Server), dial(t, b.Server)
	for name, base := range map[string]*infillv1.RunBenchmarkRequest{
		"reference": {Benchmark: "humaneval-random-span-light", Limit: 9, Reference: true},
		"generated": {Benchmark: "humaneval-single-line", Limit: 3, Samples: 2, K: []uint32{1, 2},
			Generation: &infillv1.GenerationOptions{MaxTokens: 4}},
	} {
		t.Run(name, func(t *testing.T) {
			req := func(shard, runID string) *infillv1.RunBenchmarkRequest {
				r := proto.Clone(base).(*infillv1.RunBenchmarkRequest)
				r.Shard, r.RunId = shard, runID+"-"+name
				return r
			}
			whole := runToSummary(t, ha.eval, req("", "whole"))
			s0 := runToSummary(t, ha.eval, req("0/2", "s0"))
			s1 := runToSummary(t, hb.eval, req("1/2", "s1"))
			n := base.GetLimit()
			if whole.GetShard() != "" || whole.GetShardTasks() != n || whole.GetBenchmarkTasks() != n {
				t.Errorf("whole run: shard %q, %d of %d tasks", whole.GetShard(), whole.GetShardTasks(), whole.GetBenchmarkTasks())
			}
			for i, s := range []*infillv1.EvaluationSummary{s0, s1} {
				want := (n - uint32(i) + 1) / 2 // tasks i, i+2, ...
				if s.GetShard() != fmt.Sprintf("%d/2", i) || s.GetShardTasks() != want || s.GetBenchmarkTasks() != n {
					t.Errorf("shard %d/2: shard %q, %d of %d tasks; want %d of %d", i, s.GetShard(), s.GetShardTasks(), s.GetBenchmarkTasks(), want, n)
				}
			}

			wholeRs := readJournal(t, filepath.Join(a.ResultsDir, "whole-"+name+".jsonl"))
			merged, dropped, err := evaluator.MergeResults(readJournal(t, filepath.Join(a.ResultsDir, "s0-"+name+".jsonl")),
				readJournal(t, filepath.Join(b.ResultsDir, "s1-"+name+".jsonl")))
			if err != nil || dropped != 0 {
				t.Fatalf("merge: %v, %d dropped (the shards overlap)", err, dropped)
			}
			samples := int(n * max(base.GetSamples(), 1))
			if len(wholeRs) != samples || len(merged) != samples {
				t.Fatalf("%d samples in the whole run, %d in the shards; want %d", len(wholeRs), len(merged), samples)
			}
			byKey := map[string]evaluator.Result{}
			for _, r := range wholeRs {
				byKey[fmt.Sprintf("%s#%d", r.TaskID, r.Sample)] = r
			}
			for _, r := range merged {
				w, ok := byKey[fmt.Sprintf("%s#%d", r.TaskID, r.Sample)]
				switch {
				case !ok:
					t.Errorf("%s #%d: in a shard, not in the whole run", r.TaskID, r.Sample)
				case r.Verdict != w.Verdict || r.ExactMatch != w.ExactMatch:
					t.Errorf("%s #%d: %s (exact %v) in its shard, %s (exact %v) in the whole run", r.TaskID, r.Sample, r.Verdict, r.ExactMatch, w.Verdict, w.ExactMatch)
				case base.GetReference() && (r.Completion != w.Completion || r.EditSimilarity != w.EditSimilarity):
					t.Errorf("%s: the reference middle differs", r.TaskID)
				case r.Completion != w.Completion:
					// Two Ollama processes, one greedy model: the same text is
					// expected but not what this test is about.
					t.Logf("%s #%d: the shard's server generated other text", r.TaskID, r.Sample)
				}
				if base.GetReference() && r.Verdict != evaluator.VerdictPassed {
					t.Errorf("reference %s: %s %s", r.TaskID, r.Verdict, r.Reason)
				}
			}
			if !base.GetReference() {
				return // scores of other text may differ in edit similarity
			}
			scores := func(rs []evaluator.Result) metrics.Summary {
				var ss []metrics.Sample
				for _, r := range rs {
					s := r.MetricsSample()
					s.TTFT, s.Total = 0, 0 // each server's own timing
					ss = append(ss, s)
				}
				return metrics.Summarize(ss, 1)
			}
			if got, want := fmt.Sprintf("%+v", scores(merged)), fmt.Sprintf("%+v", scores(wholeRs)); got != want {
				t.Errorf("merged shards score\n%s\nthe whole run\n%s", got, want)
			}
		})
	}

	// A client spreading a run over servers learns how many samples each
	// grades at once.
	if lb, err := hb.eval.ListBenchmarks(context.Background(), &infillv1.ListBenchmarksRequest{}); err != nil || lb.GetWorkers() != 2 {
		t.Errorf("ListBenchmarks: %v, %v; want 2 workers (servertest's)", lb, err)
	}

	// A shard that is not i/n with 0 <= i < n is INVALID_ARGUMENT, saying why.
	for shard, why := range map[string]string{
		"3/2":  "i counts from 0, so with n = 2 it must be 0 to 1",
		"2/2":  "i counts from 0, so with n = 2 it must be 0 to 1",
		"-1/2": "i counts from 0, so with n = 2 it must be 0 to 1",
		"1/0":  "n (the number of shards) must be at least 1",
		"a/b":  "want i/n, two whole numbers with 0 <= i < n",
		"1":    "want i/n, two whole numbers with 0 <= i < n",
	} {
		st, err := ha.eval.RunBenchmark(context.Background(), &infillv1.RunBenchmarkRequest{
			Benchmark: "humaneval-random-span-light", Reference: true, Limit: 1, Shard: shard})
		if err == nil {
			_, err = st.Recv()
		}
		if msg := status.Convert(err).Message(); status.Code(err) != codes.InvalidArgument ||
			!strings.Contains(msg, fmt.Sprintf("shard: invalid shard %q: %s", shard, why)) {
			t.Errorf("shard %q: %v", shard, err)
		}
	}
}

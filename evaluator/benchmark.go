package evaluator

import (
	"context"
	"time"
)

// BenchmarkOptions say how a whole benchmark runs (RunBenchmark).
type BenchmarkOptions struct {
	// Samples is the number of completions per task (default 1).
	Samples int
	// Reference grades each task's own middle (one sample) instead of
	// completions the Runner's Completer makes.
	Reference bool
	// Limit keeps the first Limit tasks (0: all); the shard is cut from
	// those.
	Limit int
	// Shard is the part of the (limited) benchmark this run grades.
	Shard Shard
}

// Progress is a benchmark run's state after each result.
type Progress struct {
	// Total samples of the run, Done of them (Resumed from the journal
	// among them), Passed of those done in this run.
	Total, Done, Passed, Resumed int
	Elapsed                      time.Duration
}

// BenchmarkReport is what a benchmark run produced: its Report, and the
// part of the benchmark it ran.
type BenchmarkReport struct {
	Report
	Shard Shard
	// ShardTasks are the tasks of the part, BenchmarkTasks those of the
	// whole (limited) benchmark.
	ShardTasks, BenchmarkTasks int
}

// RunBenchmark grades tasks, a whole benchmark, as o says: its first
// o.Limit tasks, of those the shard o.Shard, each with o.Samples
// completions (or its reference middle), resuming what the Runner's
// journal (Config.ResultsPath) holds. emit gets each result as it is
// ready, with the run's progress after it; its error stops the run.
func (r *Runner) RunBenchmark(ctx context.Context, tasks []Task, o BenchmarkOptions, emit func(Result, Progress) error) (BenchmarkReport, error) {
	samples := max(o.Samples, 1)
	if l := o.Limit; l > 0 && l < len(tasks) {
		tasks = tasks[:l]
	}
	rep := BenchmarkReport{Shard: o.Shard, BenchmarkTasks: len(tasks)}
	tasks = o.Shard.Select(tasks) // after the limit: the shards of N tasks are those N
	rep.ShardTasks = len(tasks)
	jobs := make([]Job, len(tasks))
	for i, t := range tasks {
		jobs[i] = Job{Task: t, Samples: samples}
		if o.Reference {
			jobs[i].Completions = []Completion{{Text: t.Reference}}
		}
	}
	resumed := 0
	if r.cfg.ResultsPath != "" {
		var err error
		if resumed, err = countJournaled(ctx, r.cfg.ResultsPath, tasks, samples); err != nil {
			return rep, err
		}
	}
	start := time.Now()
	prog := Progress{Total: len(tasks) * samples, Done: resumed, Resumed: resumed}
	report, err := r.RunJobs(ctx, jobs, func(res Result) error {
		prog.Done++
		if res.Passed() {
			prog.Passed++
		}
		prog.Elapsed = time.Since(start)
		if emit == nil {
			return nil
		}
		return emit(res, prog)
	})
	rep.Report = report
	return rep, err
}

// countJournaled counts samples of tasks already in the journal at path.
func countJournaled(ctx context.Context, path string, tasks []Task, samples int) (int, error) {
	j, _, err := OpenJournal(path)
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

// Package humaneval grades the HumanEval infilling sets as a check of the
// evaluator and its sandbox: every task's canonical middle must pass, and
// its empty middle must give the verdict plain python3 gives (the
// reference list, evaluator/testdata/humaneval_empty_passes.txt: 112
// programs pass with an empty middle, 14 of them because the true middle
// is empty). The whole-dataset run is the benchmark cmd/humaneval runs
// (REPORT.md); the evaluator's tests grade a sample with the same code.
package humaneval

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/infill-dev/infill/evaluator"
)

// Timeouts of the two programs of a task: a canonical middle gets 5 s; an
// empty middle, which often turns a loop into an endless one, 2 s (a
// timeout is a failure either way, as for the reference list).
const (
	CanonicalTimeout = 5 * time.Second
	EmptyTimeout     = 2 * time.Second
)

// emptySuffix marks the empty middles' benchmark in results.
const emptySuffix = "/empty-completion"

// ReadEmptyPasses reads the reference list: the task ids whose program
// passes with an empty middle under plain python3.
func ReadEmptyPasses(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ref := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ref[line] = true
		}
	}
	return ref, nil
}

// Report is what grading found.
type Report struct {
	// Tasks were graded, each twice (Programs).
	Tasks, Programs int
	// CanonicalPassed of the canonical middles passed; EmptyPassed of the
	// empty ones, EmptyMiddles of those tasks' true middles are empty.
	CanonicalPassed, EmptyPassed, EmptyMiddles int
	// Verdicts counts every program's verdict.
	Verdicts map[evaluator.Verdict]int
	// Mismatches say where the sandbox's verdicts are not the expected
	// ones (a canonical middle that did not pass, an empty middle whose
	// verdict is not plain python3's).
	Mismatches []string
	Elapsed    time.Duration
}

// Grade grades tasks' canonical and empty middles with r and checks each
// against emptyPasses.
func Grade(ctx context.Context, r *evaluator.Runner, tasks []evaluator.Task, emptyPasses map[string]bool) (Report, error) {
	rep := Report{Tasks: len(tasks), Verdicts: map[evaluator.Verdict]int{}}
	byID := map[string]*evaluator.Task{}
	jobs := make([]evaluator.Job, 0, 2*len(tasks))
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
		canonical := tasks[i]
		canonical.Exec.Timeout = CanonicalTimeout
		empty := tasks[i]
		empty.Benchmark += emptySuffix
		empty.Exec.Timeout = EmptyTimeout
		jobs = append(jobs,
			evaluator.Job{Task: canonical, Completions: []evaluator.Completion{{Text: canonical.Reference}}},
			evaluator.Job{Task: empty, Completions: []evaluator.Completion{{Text: ""}}})
	}
	var mu sync.Mutex
	start := time.Now()
	_, err := r.RunJobs(ctx, jobs, func(res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		rep.Programs++
		rep.Verdicts[res.Verdict]++
		task := byID[res.TaskID]
		if !strings.HasSuffix(res.Benchmark, emptySuffix) {
			if res.Passed() {
				rep.CanonicalPassed++
			} else {
				rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("canonical %s: %s (%s) %s\n%s", res.TaskID, res.Verdict, res.Reason, res.Error, res.StderrTail))
			}
			return nil
		}
		if task.Reference == "" {
			rep.EmptyMiddles++
		}
		if res.Passed() {
			rep.EmptyPassed++
		}
		switch {
		case task.Reference == "" && !res.Passed():
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("empty completion failed where the true middle is empty: %s: %s %s", res.TaskID, res.Reason, res.StderrTail))
		case res.Passed() != emptyPasses[res.TaskID]:
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("empty completion of %s: passed=%v, plain python3 reference says %v (%s %s)",
				res.TaskID, res.Passed(), emptyPasses[res.TaskID], res.Reason, res.StderrTail))
		}
		return nil
	})
	rep.Elapsed = time.Since(start)
	if err == nil && rep.Programs != len(jobs) {
		err = fmt.Errorf("%d results for %d programs", rep.Programs, len(jobs))
	}
	return rep, err
}

// Whole says whether rep covers the four whole sets (8,652 tasks), whose
// totals are known: every canonical middle passes, 112 empty middles pass,
// 14 true middles are empty.
func (rep Report) Whole() bool { return rep.Tasks == 8652 }

// TotalsOK checks a whole run's totals.
func (rep Report) TotalsOK() bool {
	return rep.CanonicalPassed == 8652 && rep.EmptyPassed == 112 && rep.EmptyMiddles == 14
}

// Summary is rep in one line.
func (rep Report) Summary(workers int) string {
	return fmt.Sprintf("%d tasks: canonical passed %d/%d; empty completions passed %d (tasks with an empty true middle: %d); %d programs in %v with %d workers (%.1f programs/s); verdicts %v",
		rep.Tasks, rep.CanonicalPassed, rep.Tasks, rep.EmptyPassed, rep.EmptyMiddles, rep.Programs, rep.Elapsed.Round(time.Millisecond),
		workers, float64(rep.Programs)/rep.Elapsed.Seconds(), rep.Verdicts)
}

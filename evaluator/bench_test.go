package evaluator_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
)

// BenchmarkHumanEvalSingleLine grades canonical middles of the HumanEval
// single-line set (cycled to b.N samples) through loader -> Runner ->
// sandbox, at 1 and 2 workers, and reports samples/s. Use
// -benchtime=1033x for exactly one pass over the set.
func BenchmarkHumanEvalSingleLine(b *testing.B) {
	dir := humanEvalDir(b)
	tasks, err := dataset.LoadHumanEvalDir(dir, dataset.HumanEvalSingleLine)
	if err != nil {
		b.Fatal(err)
	}
	sb := newSandbox(b)
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			r, err := evaluator.NewRunner(evaluator.Config{Workers: workers}, sb, nil, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			jobs := make([]evaluator.Job, b.N)
			for i := range jobs {
				t := tasks[i%len(tasks)]
				t.ID = fmt.Sprintf("%s#%d", t.ID, i)
				jobs[i] = evaluator.Job{Task: t, Completions: []evaluator.Completion{{Text: t.Reference}}}
			}
			failed := 0
			b.ResetTimer()
			_, err = r.RunJobs(context.Background(), jobs, func(res evaluator.Result) error {
				if !res.Passed() {
					failed++
				}
				return nil
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if failed > 0 {
				b.Fatalf("%d canonical solutions failed", failed)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

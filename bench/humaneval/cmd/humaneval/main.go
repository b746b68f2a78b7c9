// Command humaneval grades every HumanEval infilling task's canonical and
// empty middle in the sandbox (bench/humaneval): the check that used to be
// the evaluator's longest test. From the repository's root:
//
//	go run ./bench/humaneval/cmd/humaneval [-sets single-line,...] [-workers N]
//
// It prints one summary line and every mismatch, and exits 1 when a
// canonical middle does not pass, an empty middle's verdict is not plain
// python3's, or (for the four whole sets) the totals are not 8,652
// canonical and 112 empty passes with 14 empty true middles.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/bench/humaneval"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "humaneval:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("humaneval-dir", defaultDir(), "directory of the HumanEval infilling .jsonl.gz files")
	refPath := flag.String("empty-passes", "evaluator/testdata/humaneval_empty_passes.txt", "the reference list: tasks whose program passes with an empty middle under plain python3")
	sets := flag.String("sets", "", "comma-separated sets (default all four: single-line, multi-line, random-span, random-span-light)")
	workers := flag.Int("workers", runtime.NumCPU(), "programs graded at once")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	tasks, err := dataset.LoadHumanEvalDir(*dir, ss...)
	if err != nil {
		return err
	}
	ref, err := humaneval.ReadEmptyPasses(*refPath)
	if err != nil {
		return err
	}
	sb, err := sandbox.New(sandbox.Config{Timeout: 20 * time.Second, WarmWorkers: *workers}, zap.NewNop())
	if err != nil {
		return err
	}
	defer sb.Close()
	r, err := evaluator.NewRunner(evaluator.Config{Workers: *workers}, sb, nil, zap.NewNop())
	if err != nil {
		return err
	}
	rep, err := humaneval.Grade(ctx, r, tasks, ref)
	if err != nil {
		return err
	}
	fmt.Println(rep.Summary(*workers))
	for _, m := range rep.Mismatches {
		fmt.Println(m)
	}
	switch {
	case len(rep.Mismatches) > 0:
		return fmt.Errorf("%d verdicts are not the expected ones", len(rep.Mismatches))
	case rep.Whole() && !rep.TotalsOK():
		return fmt.Errorf("want 8652 canonical passes and 112 empty passes (14 empty true middles)")
	}
	return nil
}

// defaultDir is $INFILL_HUMANEVAL_DIR, else ../shared's copy.
func defaultDir() string {
	if d := os.Getenv("INFILL_HUMANEVAL_DIR"); d != "" {
		return d
	}
	return "../shared/data/human-eval-infilling"
}

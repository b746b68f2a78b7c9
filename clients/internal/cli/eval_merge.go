package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator"
)

type mergeFlags struct {
	out string
	ks  string
}

func newEvalMergeCmd(env *Env) *cobra.Command {
	f := &mergeFlags{}
	cmd := &cobra.Command{
		Use:   "merge -o OUT RESULTS.jsonl...",
		Short: "Join the results files of a benchmark's shards into one, scored as one run",
		Long: `merge joins results files (eval run -o, or the server's RunBenchmark
journals) of the parts of one run into a new results file OUT, and prints
its scores as 'infill eval report' does. The parts are the shards of a
benchmark run with --shard 0/n ... n-1/n (on one server or several): every
score is computed from the samples, and all the samples of a task lie in one
shard, so OUT scores as a run of the whole benchmark would (pass@k, exact
match and edit similarity by benchmark and level; latencies are those of
the servers that graded each sample).

Check that you have every part: each shard's run (--server-side) ends with
"shard i/n: T tasks of the benchmark's N"; the shards' T add up to N, and
the merge reports the tasks it found.

A sample found in two files with the same completion and verdict (a part
run twice) is kept once; with another completion or verdict the files are
not parts of one run, and merge fails naming the sample. OUT must not exist.`,
		Example: `  infill --server gpu1:50051 eval run --server-side --shard 0/2 -o ml.0.jsonl humaneval-multi-line
  infill --server gpu2:50051 eval run --server-side --shard 1/2 -o ml.1.jsonl humaneval-multi-line
  infill eval merge -o ml.jsonl ml.0.jsonl ml.1.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("merge needs the results files to join")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runMerge(env, f, args) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "the merged results `FILE` to write (must not exist)")
	fl.StringVar(&f.ks, "k", "", "comma-separated k of pass@k (default: 1,5,10,100 where every task has enough samples)")
	return cmd
}

func runMerge(env *Env, f *mergeFlags, paths []string) error {
	ks, err := reportKsOf(f.ks)
	if err != nil {
		return err
	}
	if f.out == "" {
		return usageError{errors.New("merge needs -o FILE, the merged results file to write")}
	}
	if _, err := os.Stat(f.out); err == nil {
		return usageError{fmt.Errorf("-o %s exists: merge writes a new file (one of the inputs, or an earlier merge?)", f.out)}
	}
	var merged []evaluator.Result
	dropped := 0
	for _, p := range paths {
		rs, err := readResultsNoting(env, p)
		if err != nil {
			return err
		}
		var d int
		if merged, d, err = evaluator.MergeResults(merged, rs); err != nil {
			return fmt.Errorf("%s and the files before it: %w", p, err)
		}
		dropped += d
	}
	if len(merged) == 0 {
		return fmt.Errorf("%s: no results", strings.Join(paths, ", "))
	}
	var buf bytes.Buffer
	for i := range merged {
		b, err := json.Marshal(&merged[i])
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	}
	if err := writeFileAtomic(f.out, buf.Bytes()); err != nil {
		return err
	}
	sum := summarize(merged, ks)
	fmt.Fprintf(env.Stderr, "merged %s of %s from %s into %s", plural(sum.Overall.Samples, "sample"),
		plural(sum.Overall.Tasks, "task"), strings.Join(paths, ", "), f.out)
	if dropped > 0 {
		fmt.Fprintf(env.Stderr, " (%s in more than one file, kept once)", plural(dropped, "sample"))
	}
	fmt.Fprintln(env.Stderr)
	shown := ks
	if f.ks == "" {
		shown = presentKs(sum)
	}
	fmt.Fprintln(env.Stdout)
	writeTable(env.Stdout, sum, shown)
	return nil
}

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

type compareFlags struct {
	run     evalRunFlags
	workers int
	out     string
}

func newEvalCompareCmd(env *Env) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare FILE",
		Short: "Grade a benchmark's samples with their selected tests and with the whole suite, and list every disagreement",
		Long: `compare checks a benchmark made by 'infill eval mask' whose records name the
tests that execute their spans ("tests"): each sample's reference middle
and its empty middle (a completion that must fail) are graded twice in this
process's own sandbox, once running only the selected tests and once the
whole suite (as --all-tests does), and every pair of verdicts that differ is
listed with both reasons. It prints, per way, the tests run (passed, failed
and erroring tests as pytest counts them: its report, or for a run that
failed the summary line its output ends with) and the wall time of the runs
(sandbox start and the repository's copy included), in total and per
sample, and their ratios.

Both runs of a completion follow each other (their order alternates), so
that a shared machine's load weighs on both alike. -o writes one JSON line
per completion with both results, as each is done.

The exit status is non-zero when any verdict differs, or any run reached
no verdict.`,
		Example: `  infill eval compare mylib.bench.jsonl
  infill eval compare --workers 2 --sandbox-memory 8GiB -o compare.jsonl mylib.bench.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("compare takes the benchmark FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.run.infillFile = args[0]
			return runCompare(cmd, env, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "completions compared at once")
	fl.StringVarP(&f.out, "out", "o", "", "write both results of each completion to `FILE` (JSON lines)")
	fl.IntVar(&f.run.limit, "limit", 0, "compare only the first `N` samples (0: all)")
	fl.DurationVar(&f.run.sampleTimeout, "sample-timeout", 0, "limit of one run's own time, start-up not included (default: the benchmark's)")
	fl.StringVar(&f.run.python, "python", "", "run the tests with this interpreter `PATH` instead of the benchmark's or the repository's own .venv/ or venv/")
	addSandboxFlags(cmd, &f.run.sandbox, "")
	return cmd
}

// comparison is one completion graded both ways.
type comparison struct {
	TaskID     string           `json:"task_id"`
	Level      evaluator.Level  `json:"level,omitempty"`
	Completion string           `json:"completion_kind"` // "reference" or "empty"
	Selected   evaluator.Result `json:"selected"`
	Whole      evaluator.Result `json:"whole_suite"`
	// SelectedWall and WholeWall are the grading's wall time, the sandbox's
	// start and the repository's copy included.
	SelectedWall time.Duration `json:"selected_wall_ns"`
	WholeWall    time.Duration `json:"whole_suite_wall_ns"`
}

func (c *comparison) agree() bool { return c.Selected.Verdict == c.Whole.Verdict }

// compareTotals sums one way's runs.
type compareTotals struct {
	tests       int
	wall, exec  time.Duration
	errors, run int
}

func (t *compareTotals) add(r *evaluator.Result, wall time.Duration) {
	t.run++
	t.wall += wall
	t.exec += r.ExecDuration
	t.tests += testsRun(r)
	if r.Verdict == evaluator.VerdictError {
		t.errors++
	}
}

func runCompare(cmd *cobra.Command, env *Env, f *compareFlags) error {
	if f.workers < 1 {
		return usageError{errors.New("--workers must be at least 1")}
	}
	if f.run.limit < 0 {
		return usageError{errors.New("--limit must not be negative")}
	}
	src, err := f.run.source(cmd, env, "")
	if err != nil {
		return err
	}
	var tasks []evaluator.Task
	selected := 0
	for _, t := range src.tasks {
		if t.Exec.Kind != evaluator.ExecRepository {
			continue
		}
		tasks = append(tasks, t)
		if len(t.Exec.Test.Tests) > 0 {
			selected++
		}
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%s: no repository samples to compare", f.run.infillFile)
	}
	sb, err := newLocalSandbox(sandbox.Config{WarmWorkers: -1}, &f.run.sandbox,
		"compare grades in this process's sandbox: it needs bubblewrap and python3 here (Debian packages bubblewrap python3)")
	if err != nil {
		return err
	}
	defer sb.Close()
	ways := [2]*evaluator.Runner{}
	for i, all := range []bool{false, true} {
		ways[i], err = evaluator.NewRunner(evaluator.Config{Workers: 1, FullErrors: true, AllTests: all, Toolchains: f.run.sandbox.toolchains()}, sb, nil, nil)
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stderr, "comparing %s (%d name their tests) × reference and empty middle, selected tests against the whole suite, %d at once\n",
		plural(len(tasks), "sample"), selected, f.workers)

	type job struct {
		i    int
		t    *evaluator.Task
		kind string
		text string
	}
	var jobs []job
	for i := range tasks {
		jobs = append(jobs, job{len(jobs), &tasks[i], "reference", tasks[i].Reference}, job{len(jobs) + 1, &tasks[i], "empty", ""})
	}
	results := make([]comparison, len(jobs))
	var out *json.Encoder
	if f.out != "" {
		file, err := os.Create(f.out)
		if err != nil {
			return err
		}
		defer file.Close()
		out = json.NewEncoder(file)
	}
	ctx := cmd.Context()
	next := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	start := time.Now()
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				c := comparison{TaskID: j.t.ID, Level: j.t.Level, Completion: j.kind}
				order := []int{0, 1}
				if j.i%2 == 1 {
					order = []int{1, 0}
				}
				for _, w := range order {
					t0 := time.Now()
					res, err := ways[w].Grade(ctx, *j.t, 0, &evaluator.Completion{Text: j.text})
					wall := time.Since(t0)
					if err != nil {
						return // ctx ended
					}
					if w == 0 {
						c.Selected, c.SelectedWall = res, wall
					} else {
						c.Whole, c.WholeWall = res, wall
					}
				}
				results[j.i] = c
				mu.Lock()
				done++
				if out != nil {
					if err := out.Encode(&c); err != nil {
						fmt.Fprintf(env.Stderr, "writing %s: %v\n", f.out, err)
					}
				}
				if !c.agree() {
					fmt.Fprintf(env.Stderr, "DISAGREE %s (%s): selected %s, whole suite %s\n", c.TaskID, c.Completion, c.Selected.Verdict, c.Whole.Verdict)
				}
				if done%10 == 0 || done == len(jobs) {
					fmt.Fprintf(env.Stderr, "%d/%d completions compared, %s\n", done, len(jobs), time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return writeComparison(env.Stdout, results, len(tasks))
}

// writeComparison prints the disagreements and the totals; it returns an
// error when any verdict differs or any run reached none.
func writeComparison(w io.Writer, results []comparison, samples int) error {
	// levelTotals are one level's totals both ways; samples counts its
	// reference completions (one per sample).
	type levelTotals struct {
		samples    int
		sel, whole compareTotals
	}
	var sel, whole compareTotals
	byLevel := map[evaluator.Level]*levelTotals{}
	disagree := 0
	for i := range results {
		c := &results[i]
		sel.add(&c.Selected, c.SelectedWall)
		whole.add(&c.Whole, c.WholeWall)
		lt := byLevel[c.Level]
		if lt == nil {
			lt = &levelTotals{}
			byLevel[c.Level] = lt
		}
		if c.Completion == "reference" {
			lt.samples++
		}
		lt.sel.add(&c.Selected, c.SelectedWall)
		lt.whole.add(&c.Whole, c.WholeWall)
		if !c.agree() {
			if disagree == 0 {
				fmt.Fprintln(w, "disagreements:")
			}
			disagree++
			fmt.Fprintf(w, "  %s (%s middle): selected %s%s; whole suite %s%s\n", c.TaskID, c.Completion,
				c.Selected.Verdict, reasonSuffix(&c.Selected), c.Whole.Verdict, reasonSuffix(&c.Whole))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LEVEL\tSAMPLES\tTESTS RUN SELECTED\tWHOLE SUITE\t\tWALL TIME SELECTED\tWHOLE SUITE\t\t")
	for _, l := range evaluator.Levels() {
		if lt := byLevel[l]; lt != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", l, lt.samples, lt.sel.tests, lt.whole.tests, ratio(float64(lt.whole.tests), float64(lt.sel.tests)),
				lt.sel.wall.Round(time.Second), lt.whole.wall.Round(time.Second), ratio(float64(lt.whole.wall), float64(lt.sel.wall)))
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(tw, "\tRUNS\tTESTS RUN\tPER SAMPLE\tWALL TIME\tPER SAMPLE\tTEST TIME\t")
	for _, row := range []struct {
		name string
		t    *compareTotals
	}{{"selected tests", &sel}, {"whole suite", &whole}} {
		t := row.t
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t\n", row.name, t.run, t.tests, float64(t.tests)/float64(samples),
			t.wall.Round(time.Second), (t.wall / time.Duration(samples)).Round(10*time.Millisecond), t.exec.Round(time.Second))
	}
	fmt.Fprintf(tw, "whole ÷ selected\t\t%s\t\t%s\t\t%s\t\n", ratio(float64(whole.tests), float64(sel.tests)),
		ratio(float64(whole.wall), float64(sel.wall)), ratio(float64(whole.exec), float64(sel.exec)))
	_ = tw.Flush()
	fmt.Fprintf(w, "%s compared over %s (reference and empty middle each): %d disagree\n",
		plural(len(results), "completion"), plural(samples, "sample"), disagree)
	switch {
	case disagree > 0:
		return fmt.Errorf("%d of %d verdicts differ between the selected tests and the whole suite", disagree, len(results))
	case sel.errors+whole.errors > 0:
		return fmt.Errorf("%d runs reached no verdict (ERROR): see -o for why", sel.errors+whole.errors)
	}
	return nil
}

// pytestSummary is pytest's last line ("3 failed, 733 passed in 39.82s",
// "2 errors in 3.07s"), and pytestCount one count in it.
var (
	pytestSummary = regexp.MustCompile(`(?m)^=*\s*(\d+ [a-z]+(?:, \d+ [a-z]+)*) in [0-9.]+s\b.*$`)
	pytestCount   = regexp.MustCompile(`(\d+) (passed|failed|errors?)\b`)
)

// testsRun is how many tests a run passed, failed or stopped on with an
// error: the runner's counts when it passed, else pytest's summary line
// at the end of its output (0 without one: it did not get that far).
func testsRun(r *evaluator.Result) int {
	if r.Tests != nil {
		return r.Tests.Passed + r.Tests.Failed + r.Tests.Errors
	}
	lines := pytestSummary.FindAllStringSubmatch(r.StdoutTail, -1)
	if len(lines) == 0 {
		return 0
	}
	n := 0
	for _, m := range pytestCount.FindAllStringSubmatch(lines[len(lines)-1][1], -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

func reasonSuffix(r *evaluator.Result) string {
	why := firstNonEmpty(r.Reason, r.Error)
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/nextedit"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/internal/editregion"
)

type nextEditFlags struct {
	out, workDir, omitted string
	rev                   string
	commits, samples      int
	perCommit             int
	language, region      string
	tests                 map[string]*string
	expectedTests         int
	python, benchmark     string
	timeout               time.Duration
	noCheck               bool
	sandbox               sandboxFlags
}

func newEvalNextEditCmd(env *Env) *cobra.Command {
	f := &nextEditFlags{}
	cmd := &cobra.Command{
		Use:   "nextedit REPO",
		Short: "Build an executable next-edit benchmark from a git repository's history",
		Long: `nextedit turns a git repository's history (a work tree or a bare repository)
into a next-edit benchmark: for a commit whose diff has two or more hunks,
the state before it with its first k hunks applied is the workspace, those
hunks are the recent edits (unified diffs, oldest first) and hunk k+1 is
the target. The commits are walked from --rev, newest first, merges
skipped; a hunk is a target when it lies in a source file of the language
(the files 'eval mask' masks: not tests, docs or configuration) that the
commit modifies (new, deleted, renamed and binary files are not targets,
and neither is a commit's first hunk).

The editable region is the one the server's edit prediction places around
the cursor (--region: zeta, the server's default format, or instinct), and
the cursor is where an editor leaves it: at the end of the last recent
edit when that is in the target's file and the target fits the region
around it, else at the start of the target's change. A hunk that does not
fit the region is no sample. The reference is the region with the target
edit made; a completion is the region as the model rewrote it.

A sample is executable when its commit changes a test file, the commit's
own tests pass here (run once per commit, per Go package, in the local
bubblewrap sandbox with the runner 'eval mask' gives the language), they
fail with the hunk left out (the region unchanged) and pass with the
reference edit. Its record names the commit's tree, written under
--work-dir (default FILE's stem + .repos beside FILE), and the test,
expecting the commit's pass count. The other samples are written too,
without a test: they are scored by exact match and edit similarity only
("executable": false, "not_executable" says why). At the end a table
counts every hunk examined by its outcome.

FILE also gets a companion, FILE's stem + .omitted.jsonl: the executable
samples' region unchanged as completions (task_id, completion), the edit
left out. 'infill eval run --reference --infill FILE' grades the reference
edits, 'infill eval grade --infill FILE STEM.omitted.jsonl' the omitted
ones (both with --local too), and 'infill eval run --infill FILE' has the
server predict each edit with its edit-prediction path.`,
		Example: `  infill eval nextedit ~/src/mylib -o mylib.nextedit.jsonl
  infill eval nextedit --samples 30 --commits 300 --pytest "-q tests" ~/src/mylib.git -o bench.jsonl
  infill eval run --reference --local --infill bench.jsonl
  infill eval grade --local --infill bench.jsonl bench.omitted.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("nextedit needs the repository directory, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runNextEdit(cmd, env, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "benchmark `FILE` to write (JSON lines; default REPO-NAME.nextedit.jsonl)")
	fl.StringVar(&f.workDir, "work-dir", "", "`DIR` the executable samples' commits are written out in (default FILE's stem + .repos)")
	fl.StringVar(&f.rev, "rev", "HEAD", "newest commit examined")
	fl.IntVar(&f.commits, "commits", 200, "commits examined at most")
	fl.IntVar(&f.samples, "samples", 20, "executable samples wanted: the walk stops once it has them")
	fl.IntVar(&f.perCommit, "per-commit", 4, "targets of one commit checked in the sandbox at most")
	fl.StringVar(&f.language, "language", "", "the repository's language (default: the one with the most files at --rev)")
	fl.StringVar(&f.region, "region", "zeta", "the editable region's rule: zeta or instinct (as the server places it for that format)")
	f.tests = addTestFlags(cmd)
	fl.IntVar(&f.expectedTests, "expected-tests", 0, "with --pytest: tests that must pass (default: as many as pass at the commit)")
	fl.StringVar(&f.python, "python", "", "run the tests with this interpreter `PATH` (default: the commit's .venv/ or venv/, else python3)")
	fl.StringVar(&f.benchmark, "name", "", "benchmark name in the records (default: REPO-NAME-nextedit)")
	fl.DurationVar(&f.timeout, "sample-timeout", 60*time.Second, "limit of one test run's own time (start-up not included); written into the records")
	fl.BoolVar(&f.noCheck, "no-check", false, "make the samples without running any test (all text-only)")
	addSandboxFlags(cmd, &f.sandbox, "")
	return cmd
}

func runNextEdit(cmd *cobra.Command, env *Env, f *nextEditFlags, repoArg string) error {
	absRepo, err := filepath.Abs(repoArg)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(absRepo), ".git")
	if name == "repo" { // a fetched mirror: OWNER+NAME/repo
		name = filepath.Base(filepath.Dir(absRepo))
		if _, n, ok := strings.Cut(name, "+"); ok {
			name = n
		}
	}
	o := nextedit.Options{Rev: f.rev, MaxCommits: f.commits, Samples: f.samples, PerCommit: f.perCommit,
		Language: f.language, Benchmark: f.benchmark, RepoName: name, Timeout: f.timeout, Toolchains: f.sandbox.toolchains()}
	if o.Benchmark == "" {
		o.Benchmark = name + "-nextedit"
	}
	switch f.region {
	case "zeta":
		o.Shape = editregion.Zeta
	case "instinct":
		o.Shape = editregion.Instinct
	default:
		return usageError{fmt.Errorf("--region %q: want zeta or instinct", f.region)}
	}
	if f.commits < 1 || f.samples < 1 || f.perCommit < 1 {
		return usageError{errors.New("--commits, --samples and --per-commit must be at least 1")}
	}
	if o.Test, err = testFlagSpec(f.tests, f.expectedTests); err != nil {
		return usageError{err}
	}
	if f.python != "" {
		if o.Python, err = filepath.Abs(f.python); err != nil {
			return err
		}
	}
	out := f.out
	if out == "" {
		out = name + ".nextedit.jsonl"
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	stem := strings.TrimSuffix(absOut, ".jsonl")
	o.WorkDir = f.workDir
	if o.WorkDir == "" {
		o.WorkDir = stem + ".repos"
	}
	if o.WorkDir, err = filepath.Abs(o.WorkDir); err != nil {
		return err
	}
	o.Name = func(dir string) string {
		if rel, err := filepath.Rel(filepath.Dir(absOut), dir); err == nil {
			return filepath.ToSlash(rel)
		}
		return dir
	}
	ctx := cmd.Context()
	var g nextedit.Grader
	if !f.noCheck {
		sb, err := newLocalSandbox(sandbox.Config{Timeout: f.timeout, WarmWorkers: -1}, &f.sandbox,
			"eval nextedit checks every sample in a local bubblewrap sandbox: "+
				"install bubblewrap (Debian: apt-get install bubblewrap), or pass --no-check for text-only samples")
		if err != nil {
			return err
		}
		defer sb.Close()
		runner, err := evaluator.NewRunner(evaluator.Config{Workers: 1, FullErrors: true, Toolchains: f.sandbox.toolchains()}, sb, nil, zap.NewNop())
		if err != nil {
			return err
		}
		g = runner
		fmt.Fprintf(env.Stderr, "nextedit %s: checking the samples of each commit in the sandbox (the commit's tests, then each target without and with its edit)\n", absRepo)
	}
	recs, stats, err := nextedit.Build(ctx, absRepo, o, g, zap.NewNop())
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		writeNextEditStats(env.Stdout, stats)
		return errors.New("no sample: nothing written")
	}
	var buf, omitted bytes.Buffer
	enc, oenc := json.NewEncoder(&buf), json.NewEncoder(&omitted)
	enc.SetEscapeHTML(false)
	oenc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
		if recs[i].Executable {
			if err := oenc.Encode(map[string]string{"task_id": recs[i].ID, "completion": recs[i].NextEdit.Region}); err != nil {
				return err
			}
		}
	}
	if err := writeFileAtomic(absOut, buf.Bytes()); err != nil {
		return err
	}
	omittedPath := stem + ".omitted.jsonl"
	if stats.Executable > 0 {
		if err := writeFileAtomic(omittedPath, omitted.Bytes()); err != nil {
			return err
		}
	} else if err := os.Remove(omittedPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	writeNextEditStats(env.Stdout, stats)
	fmt.Fprintf(env.Stdout, "wrote %s (%d executable) to %s", plural(len(recs), "sample"), stats.Executable, out)
	if stats.Executable > 0 {
		fmt.Fprintf(env.Stdout, ", the omitted edits to %s; their commits are under %s", filepath.Base(omittedPath), o.Name(o.WorkDir))
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

// writeNextEditStats prints what the build examined and every hunk's
// outcome, most frequent first.
func writeNextEditStats(w io.Writer, s nextedit.Stats) {
	fmt.Fprintf(w, "%s: %s examined", languageTitle(s.Language), plural(s.Commits, "commit"))
	for _, why := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.SkippedCommits {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, ", %d passed over (%s)", s.SkippedCommits[why], why)
	}
	fmt.Fprintf(w, "; %s, %s, %d executable\n", plural(s.Hunks, "hunk"), plural(s.Samples, "sample"), s.Executable)
	for _, f := range s.CommitFailures {
		fmt.Fprintf(w, "the commit's tests do not pass: %s\n", f)
	}
	type row struct {
		why string
		n   int
	}
	rows := []row{{"executable", s.Executable}}
	for why, n := range s.Reasons {
		rows = append(rows, row{why, n})
	}
	slices.SortStableFunc(rows[1:], func(a, b row) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.why, b.why)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HUNKS\tOUTCOME")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\n", r.n, r.why)
	}
	_ = tw.Flush()
}

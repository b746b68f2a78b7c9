package nextedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/*.txtar")

// golden sections of a case: the samples as built (no sandbox) and what
// the sandbox's checks made of them.
const (
	goldenSamples = "samples"
	goldenChecked = "checked"
)

// TestGolden builds each testdata/*.txtar's history (cN/ are the files
// commit cN writes) into a git repository and compares the samples the
// builder makes of it (workspace with region and cursor, recent edits,
// reference region; every hunk's outcome) with the golden "samples"
// section; with the sandbox (bubblewrap and python3-pytest; required
// under CI=true) the checks' outcomes with "checked", and every
// executable sample, loaded back as eval run loads it, passes with its
// reference edit and fails with it left out. -update rewrites both.
func TestGolden(t *testing.T) {
	t.Parallel()
	requireGit(t)
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			repoDir, names := makeHistory(t, ar)
			o := options(t, ar)
			recs, stats, err := Build(context.Background(), repoDir, o, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{goldenSamples: renderSamples(recs, stats, names)}
			if again, _, err := Build(context.Background(), repoDir, o, nil, nil); err != nil || renderSamples(again, stats, names) != got[goldenSamples] {
				t.Fatalf("a second build differs (%v)", err)
			}
			if g := testRunner(t); g != nil {
				o.WorkDir = filepath.Join(t.TempDir(), "repos")
				recs, stats, err := Build(context.Background(), repoDir, o, g, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				got[goldenChecked] = renderChecked(recs, stats, names)
				gradeBack(t, g, recs, o.WorkDir)
			}
			compareGolden(t, file, ar, got)
		})
	}
}

// gradeBack writes the records as eval nextedit does, loads them as eval
// run does, and grades each executable one's reference (it must pass)
// and its region unchanged (it must fail); text-only records are skipped.
func gradeBack(t *testing.T, g *evaluator.Runner, recs []Record, workDir string) {
	t.Helper()
	var buf bytes.Buffer
	for i := range recs {
		if err := writeJSON(&buf, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(filepath.Dir(workDir), "bench.jsonl")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err := dataset.LoadInfill(file)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []evaluator.Job
	executable := 0
	for _, task := range tasks {
		if task.NextEdit == nil || task.Level != evaluator.LevelNextEdit {
			t.Fatalf("%s: loaded without its next edit", task.ID)
		}
		if task.Exec.Kind == evaluator.ExecRepository {
			executable++
		}
		jobs = append(jobs, evaluator.Job{Task: task, Completions: []evaluator.Completion{{Text: task.Reference}, {Text: task.NextEdit.Region}}})
	}
	if executable == 0 {
		t.Fatal("no executable sample to grade")
	}
	_, err = g.RunJobs(context.Background(), jobs, func(r evaluator.Result) error {
		task := tasks[slices.IndexFunc(tasks, func(x evaluator.Task) bool { return x.ID == r.TaskID })]
		want := evaluator.VerdictSkipped
		switch {
		case task.Exec.Kind != evaluator.ExecRepository:
		case r.Sample == 0:
			want = evaluator.VerdictPassed
		default:
			want = evaluator.VerdictFailed
		}
		if r.Verdict != want || r.ExactMatch != (r.Sample == 0) {
			t.Errorf("%s sample %d: %s (%s %s), exact %v; want %s", r.TaskID, r.Sample, r.Verdict, r.Reason, r.Error, r.ExactMatch, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeJSON(buf *bytes.Buffer, rec *Record) error {
	return json.NewEncoder(buf).Encode(rec)
}

// makeHistory commits each cN/ of ar in turn into a new repository, with
// fixed authors and dates (so the same history gives the same commits),
// and returns it and the commits' names by id.
func makeHistory(t *testing.T, ar *txtar.Archive) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	git := func(env []string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}, env...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(nil, "init", "-q", "-b", "main")
	var commits []string
	byCommit := map[string][]txtar.File{}
	for _, f := range ar.Files {
		c, rel, ok := strings.Cut(f.Name, "/")
		if !ok {
			continue
		}
		if _, seen := byCommit[c]; !seen {
			commits = append(commits, c)
		}
		byCommit[c] = append(byCommit[c], txtar.File{Name: rel, Data: f.Data})
	}
	names := map[string]string{}
	for i, c := range commits {
		for _, f := range byCommit[c] {
			p := filepath.Join(dir, filepath.FromSlash(f.Name))
			switch string(f.Data) {
			case "<deleted>\n":
				git(nil, "rm", "-q", f.Name)
				continue
			case "<binary>\n":
				f.Data = []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		date := fmt.Sprintf("GIT_AUTHOR_DATE=2026-01-0%dT12:00:00Z", i+1)
		git([]string{date, strings.Replace(date, "AUTHOR", "COMMITTER", 1)}, "add", "-A")
		git([]string{date, strings.Replace(date, "AUTHOR", "COMMITTER", 1)}, "commit", "-q", "-m", c)
		names[git(nil, "rev-parse", "HEAD")] = c
	}
	return dir, names
}

// options reads the case's "options" section: "language L", "samples N",
// "per-commit N".
func options(t *testing.T, ar *txtar.Archive) Options {
	o := Options{Benchmark: "history", RepoName: "history", Timeout: 30 * time.Second}
	for _, f := range ar.Files {
		if f.Name != "options" {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(f.Data)), "\n") {
			var n int
			switch k, v, _ := strings.Cut(line, " "); k {
			case "language":
				o.Language = v
			case "samples":
				fmt.Sscan(v, &n)
				o.Samples = n
			case "per-commit":
				fmt.Sscan(v, &n)
				o.PerCommit = n
			default:
				t.Fatalf("unknown option %q", line)
			}
		}
	}
	return o
}

// renderSamples writes each sample as the model and the grader see it:
// the workspace's file with the region between ⟦ and ⟧ and the cursor
// ‸, the recent edits, the reference region; then every hunk's outcome.
func renderSamples(recs []Record, s Stats, names map[string]string) string {
	var b strings.Builder
	for _, r := range recs {
		n := r.NextEdit
		file := *r.Prefix + n.Region + *r.Suffix
		marked := file[:n.Cursor] + "‸" + file[n.Cursor:]
		start, end := len(*r.Prefix), len(*r.Prefix)+len(n.Region)
		if n.Cursor < end || n.Cursor == end && n.Cursor == start {
			end += len("‸")
		}
		if n.Cursor < start {
			start += len("‸")
		}
		marked = marked[:start] + "⟦" + marked[start:end] + "⟧" + marked[end:]
		fmt.Fprintf(&b, "=== %s hunk %d of %d: %s (cursor at the %s)\n", names[r.Commit], r.Hunk, r.Hunks, r.Target, r.Cursor)
		for i, e := range n.RecentEdits {
			fmt.Fprintf(&b, "--- recent edit %d: %s\n%s", i+1, e.Path, e.Diff)
		}
		fmt.Fprintf(&b, "--- workspace\n%s\n--- reference region\n%s\n", marked, *r.Middle)
	}
	b.WriteString(renderStats(s))
	return b.String()
}

// renderChecked writes each sample's outcome in the sandbox and the
// counts.
func renderChecked(recs []Record, s Stats, names map[string]string) string {
	var b strings.Builder
	for _, r := range recs {
		what := "executable: " + string(r.Test.Kind)
		if !r.Executable {
			what = "not executable: " + r.NotExecutable
		} else if r.Test.ExpectedTests > 0 {
			what += fmt.Sprintf(", %d tests expected", r.Test.ExpectedTests)
		}
		fmt.Fprintf(&b, "%s hunk %d: %s\n", names[r.Commit], r.Hunk, what)
	}
	for _, f := range s.CommitFailures {
		fmt.Fprintf(&b, "commit failure: %s\n", f)
	}
	b.WriteString(renderStats(s))
	return b.String()
}

func renderStats(s Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "language %s; %d commits (skipped %v); %d hunks, %d samples, %d executable\n",
		s.Language, s.Commits, s.SkippedCommits, s.Hunks, s.Samples, s.Executable)
	reasons := make([]string, 0, len(s.Reasons))
	total := s.Executable
	for why, n := range s.Reasons {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, why))
		total += n
	}
	slices.Sort(reasons)
	for _, r := range reasons {
		b.WriteString(r + "\n")
	}
	fmt.Fprintf(&b, "outcomes %d of %d hunks\n", total, s.Hunks)
	return b.String()
}

func compareGolden(t *testing.T, file string, ar *txtar.Archive, got map[string]string) {
	t.Helper()
	changed := false
	for name, text := range got {
		i := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == name })
		switch {
		case *update && i < 0:
			ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(text)})
			changed = true
		case *update && string(ar.Files[i].Data) != text:
			ar.Files[i].Data = []byte(text)
			changed = true
		case i < 0:
			t.Errorf("no golden section %q (run with -update):\n%s", name, text)
		case string(ar.Files[i].Data) != text:
			t.Errorf("section %q differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, text, ar.Files[i].Data)
		}
	}
	if changed {
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not on PATH")
		}
		t.Skip("git not on PATH")
	}
}

// testRunner is a Runner over a sandbox of its own; nil (the check is
// skipped) without bubblewrap or Debian's python3-pytest, which CI=true
// requires.
func testRunner(t *testing.T) *evaluator.Runner {
	t.Helper()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pytest"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-pytest missing: %v", err)
		}
		t.Logf("python3-pytest missing: the sandbox's checks are not run (%v)", err)
		return nil
	}
	sb, err := sandbox.New(sandbox.Config{Timeout: 30 * time.Second, WarmWorkers: -1}, zap.NewNop())
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Logf("no sandbox: its checks are not run (%v)", err)
			return nil
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2, FullErrors: true}, sb, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

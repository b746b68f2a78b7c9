package contextpack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
)

// qualityHeadings are the sections of every cpquality report.
var qualityHeadings = []string{
	"## Code-identifier recall, all repositories (%)",
	"## Code-identifier recall by language and repository",
	"## Other measures",
	"## What the context is made of",
	"## Cost",
}

// checkQuality reads quality.sh's OUT.md and OUT.jsonl.gz: every section,
// a row per strategy at the budget asked for, samples counted.
func checkQuality(t *testing.T, out string, samples int, log string) {
	t.Helper()
	md, err := os.ReadFile(out + ".md")
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, log)
	}
	for _, h := range qualityHeadings {
		if !strings.Contains(string(md), h) {
			t.Errorf("the report lacks %q", h)
		}
	}
	for _, s := range []string{"none", "execrepobench", "jaccard", "fused", "imports", "definitions", "similar"} {
		if !regexp.MustCompile(`(?m)^\| ` + s + ` \| [0-9.]+ \|$`).Match(md) {
			t.Errorf("the recall table has no row for %s", s)
		}
	}
	if !regexp.MustCompile(`(?m)^` + strconv.Itoa(samples) + ` samples; [0-9]+ code identifiers`).Match(md) {
		t.Errorf("the report does not count %d samples:\n%s", samples, md)
	}
	if fi, err := os.Stat(out + ".jsonl.gz"); err != nil || fi.Size() == 0 {
		t.Errorf("manifests %s.jsonl.gz: %v", out, err)
	}
}

// TestQualityBuiltinSmoke runs quality.sh on one built-in repository (the
// Go distribution's net packages, always present) with 10 samples at one
// budget, then causes.py on its manifests.
func TestQualityBuiltinSmoke(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "quality")
	log := benchtest.Run(t, benchtest.Env(t), 3*time.Minute, "bench/contextpack/quality.sh", "builtin", out,
		"-repo", "go/net", "-samples", "10", "-budgets", "1024", "-boot", "20")
	checkQuality(t, out, 10, log)
	causes := benchtest.Run(t, benchtest.Env(t), time.Minute, "bench/contextpack/causes.py", out+".jsonl.gz")
	for _, h := range []string{"## Where fused loses identifiers", "## Import and definition candidates dropped by the per-file cap",
		"## TypeScript/JavaScript cursor files", "## Markdown windows included by fused", "| go/net (GOROOT) | "} {
		if !strings.Contains(causes, h) {
			t.Errorf("causes.py's output lacks %q:\n%s", h, causes)
		}
	}
}

// TestReposAndTuningSmoke: repos.sh checks out a list's repositories at
// their commits (a local one here: GitHub is not for tests) and leaves one
// already there alone; quality.sh measures that set from the checkouts,
// and causes.py reads its files from them.
func TestReposAndTuningSmoke(t *testing.T) {
	t.Parallel()
	root := benchtest.Root(t)
	src := filepath.Join(t.TempDir(), "src")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	git(src, "init", "-q")
	// A small Go repository: the ghz benchmark's own tool.
	files, _ := filepath.Glob(filepath.Join(root, "bench", "ghz", "benchtool", "*.go"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(src, "add", ".")
	git(src, "commit", "-qm", "pinned")
	commit := git(src, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(src, "later.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(src, "add", ".")
	git(src, "commit", "-qm", "later") // the pin is not the tip
	list := filepath.Join(t.TempDir(), "repos.txt")
	if err := os.WriteFile(list, []byte("# test list\ntuning benchtool go file://"+src+" "+commit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repos := t.TempDir()
	env := benchtest.Env(t, "REPOS_LIST="+list, "REPOS="+repos)
	if out := benchtest.Run(t, env, time.Minute, "bench/contextpack/repos.sh", repos, "tuning"); !strings.Contains(out, "benchtool: checked out "+commit) {
		t.Fatalf("repos.sh: %s", out)
	}
	if got := git(filepath.Join(repos, "benchtool"), "rev-parse", "HEAD"); got != commit {
		t.Fatalf("checked out %s, want %s", got, commit)
	}
	if out := benchtest.Run(t, env, time.Minute, "bench/contextpack/repos.sh", repos); !strings.Contains(out, "benchtool: at "+commit) {
		t.Errorf("repos.sh again: %s; want it left alone", out)
	}
	out := filepath.Join(t.TempDir(), "tuning")
	log := benchtest.Run(t, env, 3*time.Minute, "bench/contextpack/quality.sh", "tuning", out,
		"-samples", "6", "-budgets", "1024", "-boot", "20")
	checkQuality(t, out, 6, log)
	causes := benchtest.Run(t, env, time.Minute, "bench/contextpack/causes.py", "--repos", repos, out+".jsonl.gz")
	if !strings.Contains(causes, "| benchtool | ") {
		t.Errorf("causes.py's output has no row for the repository:\n%s", causes)
	}
}

// TestSweepSmoke runs sweep.sh for the defaults and one override on 3
// samples of one built-in repository: a line each with fused's row.
func TestSweepSmoke(t *testing.T) {
	t.Parallel()
	out := benchtest.Run(t, benchtest.Env(t, "CPQ_FLAGS=-repo go/net -budgets 1024 -boot 20"), 3*time.Minute,
		"bench/contextpack/sweep.sh", "3", "", "LocalShare=0.5")
	for _, set := range []string{"defaults", "LocalShare=0.5"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(set) + ` +\| fused \| [0-9.]+ \|$`).MatchString(out) {
			t.Errorf("sweep.sh printed no fused row for %s:\n%s", set, out)
		}
	}
}

// TestCPBenchSmoke runs contextpack/cmd/cpbench on a generated repository
// of 40 small files, a few builds of each kind, and checks its table.
func TestCPBenchSmoke(t *testing.T) {
	t.Parallel()
	md := filepath.Join(t.TempDir(), "BENCH.md")
	benchtest.Run(t, benchtest.Env(t), 3*time.Minute, "go", "run", "./contextpack/cmd/cpbench",
		"-files", "40", "-file-bytes", "2000", "-cold", "1", "-warm", "5", "-typing", "5", "-md", md)
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^\| cold: whole repository with content, new Builder \| 1 \| `,
		`(?m)^\| warm: one file edited \(content\), cursor at the edit, the other 40 as digests \| 5 \| `,
		`(?m)^\| warm: typing in one file \| 5 \| `,
		`Cache after the run: [0-9]+ entries`,
	} {
		if !regexp.MustCompile(re).Match(data) {
			t.Errorf("BENCH.md does not match %s:\n%s", re, data)
		}
	}
}

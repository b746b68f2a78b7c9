package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/server/servertest"
)

func runTool(ctx context.Context, addr string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, append([]string{"--server", addr}, args...), cli.Env{Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// TestEndToEndEvalRunResume grades HumanEval reference middles through the
// real server and sandbox, interrupts a run, and resumes it: every sample
// once, all passing.
func TestEndToEndEvalRunResume(t *testing.T) {
	srv := servertest.StartEval(t, "")
	out := filepath.Join(t.TempDir(), "light.jsonl")
	base := []string{"eval", "run", "--reference", "--humaneval-dir", srv.HumanEvalDir, "-o", out}

	code, stdout, stderr := runTool(t.Context(), srv.Addr, append(base, "--limit", "4", "humaneval-random-span-light")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := cli.ReadResults(t, out); len(got) != 4 {
		t.Fatalf("%d results", len(got))
	}
	if !strings.Contains(stdout, "humaneval-random-span-light  random-span  4      4        100.0%") {
		t.Errorf("summary:\n%s", stdout)
	}

	// Interrupt a longer run once a few more samples are on disk.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if data, _ := os.ReadFile(out); bytes.Count(data, []byte("\n")) >= 8 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code, _, stderr = runTool(ctx, srv.Addr, append(base, "--limit", "24", "humaneval-random-span-light")...)
	cancel()
	interrupted := cli.ReadResults(t, out)
	t.Logf("interrupted with %d results: exit %d", len(interrupted), code)
	if code != cli.ExitInterrupted && !(code == 0 && len(interrupted) == 24) {
		t.Fatalf("exit %d: %s", code, stderr)
	}

	code, _, stderr = runTool(t.Context(), srv.Addr, append(base, "--limit", "24", "humaneval-random-span-light")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := fmt.Sprintf("(%d already there, %d to go)", len(interrupted), 24-len(interrupted)); len(interrupted) < 24 && !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	got := cli.ReadResults(t, out)
	if len(got) != 24 {
		t.Fatalf("%d results after resuming, want 24", len(got))
	}
	for _, r := range got {
		if r.Verdict != evaluator.VerdictPassed || !r.ExactMatch {
			t.Errorf("reference %s: %s %s %s", r.TaskID, r.Verdict, r.Reason, r.StderrTail)
		}
	}

	// The report of that file matches the run's own numbers.
	code, stdout, stderr = runTool(t.Context(), srv.Addr, "eval", "report", out)
	if code != 0 || !strings.Contains(stdout, "24 samples of 24 tasks") || !strings.Contains(stdout, "100.0%") {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
	}

	// A run that --timeout cuts short says so, and that it can go on.
	code, _, stderr = runTool(t.Context(), srv.Addr, append(base, "--timeout", "1ms", "--limit", "40", "humaneval-random-span-light")...)
	if code != 1 || !strings.Contains(stderr, "DEADLINE_EXCEEDED: the run did not finish within --timeout 1ms") ||
		!strings.Contains(stderr, "run the same command again to go on") {
		t.Errorf("--timeout: exit %d\n%s", code, stderr)
	}
	if n := len(cli.ReadResults(t, out)); n < 24 {
		t.Errorf("%d results after the timed-out run, want the 24 before and more", n)
	}
}

// TestEndToEndEvalRunGenerated lets the server generate completions with
// the tiny model: several samples, pass@k columns, latencies recorded.
func TestEndToEndEvalRunGenerated(t *testing.T) {
	srv := servertest.StartEval(t, "")
	out := filepath.Join(t.TempDir(), "single.jsonl")
	code, stdout, stderr := runTool(t.Context(), srv.Addr, "eval", "run", "--humaneval-dir", srv.HumanEvalDir,
		"--limit", "2", "--samples", "2", "--k", "1,2", "--max-tokens", "8", "-o", out, "humaneval-single-line")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := cli.ReadResults(t, out)
	if len(got) != 4 {
		t.Fatalf("%d results, want 2 tasks × 2 samples", len(got))
	}
	for _, r := range got {
		switch r.Verdict {
		case evaluator.VerdictPassed, evaluator.VerdictFailed, evaluator.VerdictTimeout:
		default:
			t.Errorf("%s #%d: verdict %s (%s %s)", r.TaskID, r.Sample, r.Verdict, r.Reason, r.Error)
		}
		if r.Total <= 0 {
			t.Errorf("%s #%d: no generation latency", r.TaskID, r.Sample)
		}
	}
	if !strings.Contains(stdout, "PASS@1") || !strings.Contains(stdout, "PASS@2") {
		t.Errorf("summary:\n%s", stdout)
	}
	t.Logf("%s", stdout)
}

// TestEndToEndEvalServerSide runs a benchmark the server holds, with the
// server's own journal: the second run is resumed by the server.
func TestEndToEndEvalServerSide(t *testing.T) {
	srv := servertest.StartEval(t, "")
	out := filepath.Join(t.TempDir(), "ss.jsonl")
	args := []string{"eval", "run", "--server-side", "--reference", "--limit", "4", "--run-id", "light-ref", "-o", out,
		"humaneval-random-span-light"}
	code, _, stderr := runTool(t.Context(), srv.Addr, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := cli.ReadResults(t, out); len(got) != 4 {
		t.Fatalf("%d results", len(got))
	}
	code, _, stderr = runTool(t.Context(), srv.Addr, args...)
	if code != 0 || !strings.Contains(stderr, "server: graded 0, resumed 4") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := cli.ReadResults(t, out); len(got) != 4 {
		t.Fatalf("%d results after the resumed run", len(got))
	}
	code, stdout, _ := runTool(t.Context(), srv.Addr, "eval", "list")
	if code != 0 || !strings.Contains(stdout, "humaneval-random-span-light\n") {
		t.Errorf("eval list: exit %d: %s", code, stdout)
	}
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--server-side", "-o", out, "nope")
	if code != 1 || !strings.Contains(stderr, "\ninfill: NOT_FOUND: ") || strings.Count(stderr, "infill:") != 1 {
		t.Errorf("unknown benchmark: exit %d: %s", code, stderr)
	}
}

// miniRepo writes a small Python repository with an ExecRepoBench-style
// evaluate_repo.py under root.
func miniRepo(t *testing.T, root string) string {
	t.Helper()
	repo := filepath.Join(root, "mini")
	files := map[string]string{
		"mathx.py": "def add(a, b):\n    return a + b\n\n\ndef scale(xs, k):\n    out = []\n    for x in xs:\n" +
			"        out.append(x * k)\n    return out\n\n\ndef mean(xs):\n    if not xs:\n        raise ValueError(\"empty\")\n" +
			"    total = 0\n    for x in xs:\n        total = add(total, x)\n    return total / len(xs)\n",
		"evaluate_repo.py": "import mathx\n\nassert mathx.add(2, 3) == 5\nassert mathx.scale([1, 2], 3) == [3, 6]\n" +
			"assert mathx.mean([1, 2, 3]) == 2\ntry:\n    mathx.mean([])\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError(\"no error\")\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// TestEndToEndEvalRepository masks a repository into a benchmark (local
// sandbox), then grades its reference middles and an ExecRepoBench-format
// file through the server's sandbox, and renders the HTML report.
func TestEndToEndEvalRepository(t *testing.T) {
	root := t.TempDir()
	repo := miniRepo(t, root)
	srv := servertest.StartEval(t, root)
	bench := filepath.Join(root, "mini.bench.jsonl")

	code, stdout, stderr := runTool(t.Context(), srv.Addr, "eval", "mask", "--levels", "expression,statement,single-line",
		"--per-level", "2", "--seed", "3", "-o", bench, repo)
	if code != 0 {
		t.Fatalf("mask: exit %d: %s%s", code, stdout, stderr)
	}
	t.Logf("mask:\n%s", stdout)
	if !strings.Contains(stdout, "CANDIDATES  KEPT  NOT COVERED BY TESTS") || !strings.Contains(stdout, "wrote ") {
		t.Errorf("mask output:\n%s", stdout)
	}

	out := filepath.Join(root, "mini.jsonl")
	code, stdout, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--reference", "--infill", bench, "-o", out)
	if code != 0 {
		t.Fatalf("run --infill: exit %d: %s", code, stderr)
	}
	got := cli.ReadResults(t, out)
	if len(got) == 0 {
		t.Fatal("no results")
	}
	for _, r := range got {
		if r.Verdict != evaluator.VerdictPassed {
			t.Errorf("masked reference %s (%s): %s %s %s", r.TaskID, r.Level, r.Verdict, r.Reason, r.StderrTail)
		}
	}
	t.Logf("run:\n%s", stdout)

	// ExecRepoBench format: one sample with the right middle, one whose
	// middle exits early with status 0 (must fail: no pass signal).
	prefix := "def add(a, b):\n    return "
	src, _ := os.ReadFile(filepath.Join(repo, "mathx.py"))
	suffix := strings.TrimPrefix(string(src), prefix+"a + b")
	var lines []string
	for _, middle := range []string{"a + b", "__import__('os')._exit(0)"} {
		rec, _ := json.Marshal(map[string]any{"repo_name": "mini", "file_name": "/mini/mathx.py",
			"prefix_code": prefix, "suffix_code": suffix, "middle_code": middle,
			"context_code": [][2]string{{"/mini/evaluate_repo.py", "import mathx\n"}}, "fill_type": "grammar-based: expression"})
		lines = append(lines, string(rec))
	}
	erb := filepath.Join(root, "erb.jsonl")
	if err := os.WriteFile(erb, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	erbOut := filepath.Join(root, "erb-results.jsonl")
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "run", "--reference", "--execrepobench", erb, "--repos", root, "-o", erbOut)
	if code != 0 {
		t.Fatalf("run --execrepobench: exit %d: %s", code, stderr)
	}
	verdicts := map[string]evaluator.Verdict{}
	for _, r := range cli.ReadResults(t, erbOut) {
		verdicts[r.Completion] = r.Verdict
	}
	if verdicts["a + b"] != evaluator.VerdictPassed || verdicts["__import__('os')._exit(0)"] != evaluator.VerdictFailed {
		t.Errorf("verdicts %v", verdicts)
	}

	html := filepath.Join(root, "report.html")
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "report", "--html", html, out, erbOut)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if page, err := os.ReadFile(html); err != nil || !bytes.Contains(page, []byte("<svg")) {
		t.Fatalf("report.html: %v", err)
	}
}

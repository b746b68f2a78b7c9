package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/metrics"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

	// The same file's tasks graded from a completions file, ids REPO/LINE:
	// results and progress name the benchmark after the file ("erb").
	completions := filepath.Join(root, "erb-completions.jsonl")
	if err := os.WriteFile(completions, []byte(`{"task_id": "mini/1", "completion": "a - b"}`+"\n"+
		`{"task_id": "mini/0", "completion": "a + b"}`+"\n"+`{"task_id": "mini/1", "completion": "b + a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "grade", "--execrepobench", erb, "--repos", root, completions)
	if code != 0 || !strings.Contains(stderr, "erb: 2 tasks, 3 samples (given)") || !strings.Contains(stderr, "erb: 3/3 (100%)") {
		t.Fatalf("grade --execrepobench: exit %d: %s", code, stderr)
	}
	graded := map[string]evaluator.Verdict{}
	for _, r := range cli.ReadResults(t, filepath.Join(root, "erb-completions.results.jsonl")) {
		if r.Benchmark != "erb" {
			t.Errorf("benchmark %q, want the file's name, as progress says", r.Benchmark)
		}
		graded[fmt.Sprintf("%s#%d", r.TaskID, r.Sample)] = r.Verdict
	}
	if graded["mini/1#0"] != evaluator.VerdictFailed || graded["mini/0#0"] != evaluator.VerdictPassed || graded["mini/1#1"] != evaluator.VerdictPassed {
		t.Errorf("graded %v", graded)
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

// referenceHarness returns the human-eval-infilling reference harness
// (../shared/reference) and infill's helper that calls it; it skips without
// them or Debian's python3-numpy/python3-tqdm, and fails under CI=true.
func referenceHarness(t *testing.T) (refDir, helper string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	refDir = filepath.Join(root, "..", "shared", "reference", "human-eval-infilling")
	helper = filepath.Join(root, "bench", "humaneval", "refharness.py")
	_, err := os.Stat(filepath.Join(refDir, "human_eval_infilling", "execution.py"))
	if err == nil {
		if out, perr := exec.Command("/usr/bin/python3", "-c", "import numpy, tqdm").CombinedOutput(); perr != nil {
			err = fmt.Errorf("%v: %s (Debian python3-numpy python3-tqdm)", perr, out)
		}
	}
	servertest.Require(t, err, "human-eval-infilling reference harness")
	return refDir, helper
}

// TestEndToEndEvalGrade grades a samples.jsonl of five lines per task, in
// shuffled order, through the real server and with --local: the verdicts
// agree; the reference-format file, read back by the reference harness's
// own reader, says the same per line; and the reference's pass@k estimator
// over that file equals infill's pass@k.
func TestEndToEndEvalGrade(t *testing.T) {
	t.Parallel()
	refDir, helper := referenceHarness(t)
	srv := servertest.StartEval(t, "")
	tasks, err := dataset.LoadHumanEval(filepath.Join(srv.HumanEvalDir, dataset.HumanEvalSingleLine.FileName()), dataset.HumanEvalSingleLine)
	if err != nil {
		t.Fatal(err)
	}
	tasks = tasks[:6]
	var lines []string
	for j, task := range tasks {
		for i := range 5 {
			c := task.Reference
			if i >= j%6 { // task j: j of 5 right (task 5: all five)
				c = task.Reference[:len(task.Reference)-len(strings.TrimLeft(task.Reference, " "))] + "raise ValueError('wrong middle')\n"
			}
			if j == 5 {
				c = task.Reference
			}
			b, _ := json.Marshal(map[string]string{"task_id": task.ID, "completion": c})
			lines = append(lines, string(b))
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples.jsonl")
	if err := os.WriteFile(samples, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runTool(t.Context(), srv.Addr, "eval", "grade", "--humaneval-dir", srv.HumanEvalDir, "--reference-format", "--k", "1,5,10", samples)
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	t.Logf("grade:\n%s%s", stdout, stderr)
	results := cli.ReadResults(t, filepath.Join(dir, "samples.results.jsonl"))
	if len(results) != 30 {
		t.Fatalf("%d results", len(results))
	}

	// --local: the same verdicts from this process's own sandbox.
	localOut := filepath.Join(dir, "local.jsonl")
	code, _, stderr = runTool(t.Context(), srv.Addr, "eval", "grade", "--humaneval-dir", srv.HumanEvalDir, "--local", "--workers", "2", "-o", localOut, samples)
	if code != 0 {
		t.Fatalf("grade --local: exit %d: %s", code, stderr)
	}
	verdict := map[string]evaluator.Verdict{}
	for _, r := range results {
		verdict[fmt.Sprintf("%s#%d", r.TaskID, r.Sample)] = r.Verdict
	}
	for _, r := range cli.ReadResults(t, localOut) {
		if v := verdict[fmt.Sprintf("%s#%d", r.TaskID, r.Sample)]; v != r.Verdict {
			t.Errorf("%s #%d: server %s, --local %s", r.TaskID, r.Sample, v, r.Verdict)
		}
	}

	// The reference harness's reader and estimator on the reference-format file.
	out, err := exec.Command("/usr/bin/python3", helper, "read", refDir, samples+"_results.jsonl", "--k", "1,5,10").Output()
	if err != nil {
		t.Fatalf("reference reader: %v", err)
	}
	var ref struct {
		Lines []struct {
			TaskID string `json:"task_id"`
			Passed bool   `json:"passed"`
			Result string `json:"result"`
		} `json:"lines"`
		PassAtK map[string]float64 `json:"pass_at_k"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Lines) != len(lines) {
		t.Fatalf("reference read %d lines of %d", len(ref.Lines), len(lines))
	}
	seen := map[string]int{}
	for i, l := range ref.Lines {
		var in map[string]string
		json.Unmarshal([]byte(lines[i]), &in)
		key := fmt.Sprintf("%s#%d", in["task_id"], seen[in["task_id"]])
		seen[in["task_id"]]++
		// A wrong middle fails with its ValueError, or, where it replaced a
		// block's header, with the SyntaxError that leaves.
		ok := l.Result == "passed"
		if verdict[key] != evaluator.VerdictPassed {
			ok = l.Result == "failed: wrong middle" || strings.HasPrefix(l.Result, "failed: unexpected indent (<string>, line ")
		}
		if l.TaskID != in["task_id"] || l.Passed != (verdict[key] == evaluator.VerdictPassed) || !ok {
			t.Errorf("line %d: %+v, infill %s", i+1, l, verdict[key])
		}
	}
	sum := metrics.Summarize(func() []metrics.Sample {
		var s []metrics.Sample
		for _, r := range results {
			s = append(s, r.MetricsSample())
		}
		return s
	}(), 1, 5, 10)
	if _, ok := ref.PassAtK["pass@10"]; ok || len(ref.PassAtK) != 2 {
		t.Errorf("reference pass@k %v: want pass@1 and pass@5 only", ref.PassAtK)
	}
	for _, k := range []int{1, 5} {
		got, want := sum.Overall.PassAtK[k], ref.PassAtK[fmt.Sprintf("pass@%d", k)]
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("pass@%d: infill %v, reference %v", k, got, want)
		}
	}
	if _, ok := sum.Overall.PassAtK[10]; ok {
		t.Error("infill reports pass@10 with 5 samples per task")
	}
}

// TestEndToEndEvalGradeNoVerdict: a test command that is not there (exit
// 127) is no verdict: not recorded, and grade exits 1 saying how many
// samples and why.
func TestEndToEndEvalGradeNoVerdict(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := miniRepo(t, root)
	bench := filepath.Join(root, "broken.jsonl")
	rec, _ := json.Marshal(map[string]any{"id": "add", "repository": repo, "target": "mathx.py",
		"prefix": "def add(a, b):\n    return ", "suffix": "\n", "middle": "a + b", "level": "expression",
		"test": map[string]any{"kind": "command", "command": []string{"sh", "-c", "no-such-test-runner"}}})
	if err := os.WriteFile(bench, append(rec, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	samples := filepath.Join(root, "samples.jsonl")
	if err := os.WriteFile(samples, []byte(`{"task_id": "add", "completion": "a + b"}`+"\n"+`{"task_id": "add", "completion": "b + a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runTool(t.Context(), "unused:1", "eval", "grade", "--local", "--infill", bench, samples)
	want := "infill: 2 samples reached no verdict (ERROR): 2 × sandbox: environment failure: test command not found (exit 127): sh -c no-such-test-runner\n"
	if code != cli.ExitError || !strings.HasSuffix(stderr, want) {
		t.Fatalf("exit %d, want 1 ending %q:\n%s", code, want, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "samples.results.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a results file without results was left: %v", err)
	}
}

package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// requireSandbox skips without bubblewrap on a developer machine and fails
// under CI=true.
func requireSandbox(t *testing.T) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{WarmWorkers: -1}, nil)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sandbox: %v", err)
		}
		t.Skipf("sandbox unavailable: %v", err)
	}
	_ = sb.Close()
}

// TestEndToEndSelectedTests masks a repository with its tests traced (local
// sandbox), compares the benchmark's selected tests with the whole suite
// (no disagreement), then names a test that does not reach one span: the
// empty middle passes its selected test, compare lists the disagreement
// and fails, and eval grade --all-tests fails that middle again.
func TestEndToEndSelectedTests(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := t.TempDir()
	ar, err := txtar.ParseFile("../../../evaluator/testdata/selected/calc.txtar")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "calc")
	fsys, err := txtar.FS(ar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(repo, fsys); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(root, "calc.bench.jsonl")
	code, stdout, stderr := runTool(t.Context(), "127.0.0.1:1", "eval", "mask", "--levels", "expression,statement,function",
		"--per-level", "2", "--seed", "1", "-o", bench, repo)
	if code != 0 {
		t.Fatalf("mask: exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "traced the tests in") || !strings.Contains(stdout, "EXECUTED BY NO TEST") {
		t.Errorf("mask output:\n%s", stdout)
	}
	var recs []dataset.InfillRecord
	data, err := os.ReadFile(bench)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r dataset.InfillRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	forged := -1
	for i, r := range recs {
		if len(r.Test.Tests) > 0 && r.Target == "calc/ops.py" && forged < 0 {
			forged = i
		}
	}
	if forged < 0 {
		t.Fatalf("no record of calc/ops.py names its tests:\n%s", stdout)
	}

	cmp := filepath.Join(root, "cmp.jsonl")
	code, stdout, stderr = runTool(t.Context(), "127.0.0.1:1", "eval", "compare", "--workers", "2", "-o", cmp, bench)
	if code != 0 || !strings.Contains(stdout, ": 0 disagree") || !strings.Contains(stdout, "whole ÷ selected") {
		t.Fatalf("compare: exit %d:\n%s%s", code, stdout, stderr)
	}
	if data, err := os.ReadFile(cmp); err != nil || bytes.Count(data, []byte("\n")) != 2*len(recs) {
		t.Fatalf("compare -o: %v, %d lines for %d samples", err, bytes.Count(data, []byte("\n")), len(recs))
	}

	// A selection that misses the span: its empty middle passes.
	recs[forged].Test.Tests, recs[forged].Test.ExpectedTests = []string{"tests/test_lazy.py::test_other"}, 1
	var buf bytes.Buffer
	if err := dataset.WriteInfill(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bench, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runTool(t.Context(), "127.0.0.1:1", "eval", "compare", "--workers", "2", bench)
	if code == 0 || !strings.Contains(stdout, "disagreements:\n  "+recs[forged].ID+" (empty middle): selected passed; whole suite failed") {
		t.Fatalf("compare of a wrong selection: exit %d:\n%s%s", code, stdout, stderr)
	}

	samples := filepath.Join(root, "samples.jsonl")
	line, _ := json.Marshal(map[string]string{"task_id": recs[forged].ID, "completion": ""})
	if err := os.WriteFile(samples, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		out := filepath.Join(root, "grade.jsonl")
		os.Remove(out)
		args := []string{"eval", "grade", "--local", "--infill", bench, "-o", out, samples}
		if all {
			args = append(args, "--all-tests")
		}
		code, stdout, stderr = runTool(t.Context(), "127.0.0.1:1", args...)
		got := cli.ReadResults(t, out)
		if len(got) != 1 || got[0].Passed() == all {
			t.Fatalf("grade --all-tests=%v: exit %d, results %+v\n%s%s", all, code, got, stdout, stderr)
		}
		if want := evaluator.VerdictFailed; all && got[0].Verdict != want {
			t.Errorf("grade --all-tests: %s, want %s", got[0].Verdict, want)
		}
	}
}

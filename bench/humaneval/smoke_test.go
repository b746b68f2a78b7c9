package humaneval_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
	"github.com/infill-dev/infill/server/servertest"
)

const python = "/usr/bin/python3" // Debian's: the reference harness's packages are its

// requirePython skips the test unless Debian's python3 has modules (fails
// under CI=true).
func requirePython(t *testing.T, modules ...string) {
	t.Helper()
	args := []string{"-c", "import sys"}
	if len(modules) > 0 {
		args = []string{"-c", "import " + strings.Join(modules, ", ")}
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	servertest.Require(t, err, "Debian's python3 with "+strings.Join(modules, ", "))
}

// TestBenchSmoke runs bench.sh on the first 4 single-line tasks (their
// canonical middles and their 8 mutated samples) and checks the report:
// a row per set with the sample count, both harnesses timed, and the
// verdicts compared line by line (the canonical middles all pass, no
// verdict differs).
func TestBenchSmoke(t *testing.T) {
	t.Parallel()
	shared := benchtest.Shared(t)
	if _, err := os.Stat(filepath.Join(shared, "reference", "human-eval-infilling")); err != nil {
		servertest.Require(t, err, "the reference harness in ../shared")
	}
	benchtest.Command(t, "bwrap")
	benchtest.Command(t, "bc")
	requirePython(t, "numpy", "tqdm", "fire")
	report := filepath.Join(t.TempDir(), "BENCH.md")
	log := benchtest.Run(t, benchtest.Env(t), 5*time.Minute, "bench/humaneval/bench.sh", "--limit", "4", report)
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, log)
	}
	for _, re := range []string{
		"Made by `bench/humaneval/bench.sh --limit 4` at commit ",
		`(?m)^\| canonical \| 4 \| [0-9.]+ s \| .* \| 4 passed, 0 timed out \(reference\); 0 verdicts differ, 0 result texts differ \|$`,
		`(?m)^\| mutated \| 8 \| [0-9.]+ s \| .* \| [0-9]+ passed, [0-9]+ timed out \(reference\); [0-9]+ verdicts differ, [0-9]+ result texts differ \|$`,
	} {
		if !regexp.MustCompile(re).Match(data) {
			t.Errorf("the report does not match %s:\n%s", re, data)
		}
	}
}

// TestMutationsReproduce: mutate_humaneval.py makes exactly the committed
// mutated set (evaluator/testdata/humaneval_single_line_mutated.jsonl.gz)
// from the shared single-line set.
func TestMutationsReproduce(t *testing.T) {
	t.Parallel()
	shared := benchtest.Shared(t)
	requirePython(t)
	root := benchtest.Root(t)
	out := filepath.Join(t.TempDir(), "mutated.jsonl.gz")
	benchtest.Run(t, benchtest.Env(t), time.Minute, python, "bench/humaneval/mutate_humaneval.py",
		filepath.Join(shared, "data", "human-eval-infilling", "HumanEval-SingleLineInfilling.jsonl.gz"), out)
	got, want := gunzip(t, out), gunzip(t, filepath.Join(root, "evaluator", "testdata", "humaneval_single_line_mutated.jsonl.gz"))
	if got != want {
		t.Errorf("mutate_humaneval.py's output (%d bytes) differs from the committed set (%d bytes)", len(got), len(want))
	}
}

// TestEmptyReferenceSample runs humaneval_empty_reference.py on a sample
// of every set (up to 2 tasks the committed list says pass with an empty
// middle, and the first 2 it says fail) and checks that it prints exactly
// the passing ones.
func TestEmptyReferenceSample(t *testing.T) {
	t.Parallel()
	shared := benchtest.Shared(t)
	requirePython(t)
	root := benchtest.Root(t)
	passes := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(root, "evaluator", "testdata", "humaneval_empty_passes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			passes[l] = true
		}
	}
	dir := t.TempDir()
	var want []string
	for _, name := range []string{"HumanEval-SingleLineInfilling.jsonl.gz", "HumanEval-MultiLineInfilling.jsonl.gz",
		"HumanEval-RandomSpanInfilling.jsonl.gz", "HumanEval-RandomSpanInfillingLight.jsonl.gz"} {
		var kept []string
		pass, fail := 0, 0
		for _, line := range strings.Split(gunzip(t, filepath.Join(shared, "data", "human-eval-infilling", name)), "\n") {
			if line == "" {
				continue
			}
			var task struct {
				ID string `json:"task_id"`
			}
			if err := json.Unmarshal([]byte(line), &task); err != nil {
				t.Fatal(err)
			}
			switch {
			case passes[task.ID] && pass < 2:
				pass++
				want = append(want, task.ID)
			case !passes[task.ID] && fail < 2:
				fail++
			default:
				continue
			}
			kept = append(kept, line)
		}
		writeGzip(t, filepath.Join(dir, name), strings.Join(kept, "\n")+"\n")
	}
	out := benchtest.Run(t, benchtest.Env(t), 2*time.Minute, python, "bench/humaneval/humaneval_empty_reference.py", dir)
	got := strings.Fields(out)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("humaneval_empty_reference.py printed %q, want %q (the committed list's verdicts)", got, want)
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeGzip(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	if _, err := z.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

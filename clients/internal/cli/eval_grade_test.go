package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSamples writes a samples.jsonl: n lines per task of tasks, shuffled,
// each with an extra field that the reference-format file must keep.
func writeSamples(t *testing.T, tasks []string, n int) (string, []map[string]any) {
	t.Helper()
	var lines []map[string]any
	for _, id := range tasks {
		for i := range n {
			lines = append(lines, map[string]any{"task_id": id, "completion": fmt.Sprintf("c%d", i), "note": i})
		}
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	var buf bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		buf.Write(append(b, '\n'))
		buf.WriteString("\n") // blank lines are skipped, as the reference skips them
	}
	path := filepath.Join(t.TempDir(), "samples.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

func TestEvalGrade(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 3)
	ids := []string{"SingleLineInfilling/HumanEval/0", "SingleLineInfilling/HumanEval/1", "SingleLineInfilling/HumanEval/2"}
	samples, lines := writeSamples(t, ids, 5)
	code, stdout, stderr := run(t.Context(), "eval", "grade", "--humaneval-dir", he, "--reference-format", "--k", "1,5,10", samples)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// One request per task (the set comes from the ids), its completions in
	// file order: the reference harness's completion_id order.
	if len(fake.reqs) != 3 {
		t.Fatalf("%d requests", len(fake.reqs))
	}
	for _, r := range fake.reqs {
		var want []string
		for _, l := range lines {
			if l["task_id"] == r.GetTask().GetTaskId() {
				want = append(want, l["completion"].(string))
			}
		}
		if r.GetTask().GetBenchmark() != "humaneval-single-line" || strings.Join(r.GetCompletions(), ",") != strings.Join(want, ",") || r.GetSamples() != 0 {
			t.Errorf("request for %s: %q, want %q", r.GetTask().GetTaskId(), r.GetCompletions(), want)
		}
	}
	results := strings.TrimSuffix(samples, ".jsonl") + ".results.jsonl"
	if got := readLines(t, results); len(got) != 15 {
		t.Fatalf("%d results", len(got))
	}
	// pass@10 is left out: no task has 10 samples (as the reference does).
	if !strings.Contains(stdout, "PASS@1  PASS@5  EXACT") {
		t.Errorf("table:\n%s", stdout)
	}
	if !strings.Contains(stderr, "humaneval-single-line: 3 tasks, 15 samples (given)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	// The reference-format file: every input line, in order, its fields
	// kept, with result and passed (fake: even tasks pass).
	data, err := os.ReadFile(samples + "_results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(out) != len(lines) {
		t.Fatalf("%d reference lines for %d samples", len(out), len(lines))
	}
	for i, line := range out {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		even := strings.HasSuffix(lines[i]["task_id"].(string), "/0") || strings.HasSuffix(lines[i]["task_id"].(string), "/2")
		want := map[bool]string{true: "passed", false: "failed: "}[even]
		if m["task_id"] != lines[i]["task_id"] || m["completion"] != lines[i]["completion"] || m["note"] != float64(lines[i]["note"].(int)) ||
			m["passed"] != even || m["result"] != want {
			t.Errorf("line %d: %s", i+1, line)
		}
		// Fields in input order (json.Marshal of a map sorts them), then the two.
		if !strings.HasPrefix(line, `{"completion": `) || !strings.HasSuffix(line, `, "passed": `+fmt.Sprint(even)+`}`) {
			t.Errorf("line %d is not laid out as the reference writes it: %s", i+1, line)
		}
	}

	// Again: everything is in the results file, nothing is sent.
	fake.reqs = nil
	code, _, stderr = run(t.Context(), "eval", "grade", "--humaneval-dir", he, samples)
	if code != 0 || len(fake.reqs) != 0 || !strings.Contains(stderr, "nothing to do: all 15 samples are in") {
		t.Fatalf("rerun: exit %d, %d requests: %s", code, len(fake.reqs), stderr)
	}
}

func TestEvalGradeBadInput(t *testing.T) {
	t.Parallel()
	fake := &fakeEval{}
	run := evalEnv(t, fake)
	he := writeHumanEval(t, 2)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no file":         {[]string{"eval", "grade"}, ExitUsage, "grade takes [BENCHMARK] FILE, got 0 arguments"},
		"missing field":   {[]string{"eval", "grade", write("a.jsonl", `{"task_id": "SingleLineInfilling/HumanEval/0"}`+"\n")}, ExitError, `a.jsonl:1: want an object with string fields "task_id" and "completion"`},
		"not json":        {[]string{"eval", "grade", write("b.jsonl", "{\"task_id\": \n")}, ExitError, "b.jsonl:1:"},
		"unknown family":  {[]string{"eval", "grade", write("c.jsonl", `{"task_id": "HumanEval/0", "completion": ""}`+"\n")}, ExitUsage, `task "HumanEval/0" is not a HumanEval infilling task`},
		"unknown task":    {[]string{"eval", "grade", "--humaneval-dir", he, write("d.jsonl", `{"task_id": "SingleLineInfilling/HumanEval/9", "completion": ""}`+"\n")}, ExitError, `task "SingleLineInfilling/HumanEval/9" (sample 1) is not in the benchmark`},
		"empty file":      {[]string{"eval", "grade", write("e.jsonl", "\n\n")}, ExitError, "e.jsonl: no samples"},
		"run flags":       {[]string{"eval", "run", "--reference", "--completions", write("f.jsonl", "{}\n"), "humaneval-single-line"}, ExitUsage, "--completions grades the given samples"},
		"local alone":     {[]string{"eval", "run", "--local", "humaneval-single-line"}, ExitUsage, "--local and --reference-format grade given completions"},
		"reference alias": {[]string{"eval", "grade", "--humaneval-dir", he, "single-line", write("g.jsonl", `{"task_id": "SingleLineInfilling/HumanEval/1", "completion": "x"}`+"\n")}, ExitOK, ""},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := run(t.Context(), tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, stderr)
			}
		})
	}
}

func TestPythonJSONString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"failed: unexpected indent (<string>, line 13)": `"failed: unexpected indent (<string>, line 13)"`,
		"a\"b\\c\n\t\x01": `"a\"b\\c\n\t\u0001"`,
		"é€😀":             `"\u00e9\u20ac\ud83d\ude00"`,
		"\x7f":            `"\u007f"`,
	} {
		got := string(pythonJSONString(in))
		if got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != in {
			t.Errorf("%s does not decode back: %q %v", got, back, err)
		}
	}
}

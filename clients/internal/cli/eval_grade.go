package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator"
)

func newEvalGradeCmd(env *Env, g *globals) *cobra.Command {
	f := &evalRunFlags{}
	cmd := &cobra.Command{
		Use:   "grade [BENCHMARK] FILE",
		Short: "Grade completions made elsewhere (a samples.jsonl), through the server or --local",
		Long: `grade executes completions you already have against their benchmark's tests
and scores them. FILE holds one JSON object per line with "task_id" and
"completion" (human-eval-infilling's samples.jsonl; .gz too): any number of
lines per task, in any order. A task's samples are numbered in file order,
as the reference harness numbers them.

The tasks come from:
  BENCHMARK         a HumanEval infilling set, by infill's name
                    (humaneval-single-line) or the reference harness's
                    (single-line); without it, the task ids tell;
  --execrepobench FILE --repos DIR
                    ExecRepoBench JSON lines; task ids are REPO/LINE (the
                    record's 0-based line in FILE), as 'eval run' names them;
  --infill FILE     a benchmark made by 'infill eval mask'.

Samples are graded by the server's sandbox, or with --local in this
process's own (bubblewrap and python3 needed here). HumanEval programs run
as the reference harness runs them (its reliability guard, 3 s of the
program's own run time unless --sample-timeout), so verdicts agree with it.

The results file (-o, default FILE's stem + .results.jsonl beside it) is
infill's journal: a rerun grades only what it lacks. --reference-format
also writes FILE_results.jsonl as the reference harness does: every input
line with "result" ("passed", "failed: ...", "timed out") and "passed".
pass@k is reported for each k of --k that every task has samples for, with
the reference's unbiased estimator; exact match and edit similarity against
the benchmark's true middle.

Repository tasks run their tests with the benchmark's interpreter, the
repository's own virtual environment (.venv/ or venv/), or --python PATH
(see 'infill eval mask --help'). Each result's reason is the first
meaningful error: the failing test, the exception and where it was raised,
or the limit the run hit and the flag that raises it (--sample-timeout,
--sandbox-memory, --sandbox-processes, --sandbox-file-size: this process's
sandbox with --local, the server's flags of the same names otherwise).

The exit status is non-zero when any sample reached no verdict (ERROR: a
missing interpreter, test runner or entry point, a pytest usage error, a
module the tests import that the unmodified repository cannot import
either, a sandbox that did not start); the last line says how many and
why.`,
		Example: `  infill eval grade samples.jsonl
  infill eval grade single-line samples.jsonl --local --reference-format --k 1,10
  infill eval grade --execrepobench erb.jsonl --repos repos/ completions.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("grade takes [BENCHMARK] FILE, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 2 {
				name = args[0]
			}
			f.completions = args[len(args)-1]
			return runEval(cmd, env, g, f, name)
		},
	}
	fl := cmd.Flags()
	addSourceFlags(cmd, f, "the task ids refer to (with --repos)", "the task ids refer to")
	fl.StringVarP(&f.results, "results", "o", "", "results `FILE` (JSON lines; default FILE's stem + .results.jsonl)")
	fl.StringVar(&f.ks, "k", "1,10,100", "comma-separated k of pass@k, each reported where every task has that many samples")
	addGradeFlags(cmd, f)
	f.samples = 1
	return cmd
}

// addGradeFlags registers the flags of grading given completions.
func addGradeFlags(cmd *cobra.Command, f *evalRunFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.local, "local", false, "grade in this process's own sandbox instead of the server's")
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "with --local: samples graded at once")
	fl.BoolVar(&f.referenceFormat, "reference-format", false, "also write FILE_results.jsonl as human-eval-infilling does")
	addSandboxFlags(cmd, &f.sandbox, "with --local: ")
}

// sampleLine is one line of a samples file.
type sampleLine struct {
	taskID     string
	completion string
	// sample is the line's number among its task's lines (0-based, file
	// order): the reference harness's completion_id.
	sample int
	// raw is the line's object, key by key in file order.
	raw []jsonField
}

type jsonField struct {
	key   string
	value json.RawMessage
}

// samplesFile is a samples.jsonl: completions for tasks, by task id.
type samplesFile struct {
	path  string
	lines []sampleLine
	// keys are the tasks, resolved by match (benchmark and id).
	keys []taskKey
}

// readSamples reads FILE (.jsonl, or .jsonl.gz): blank lines are skipped,
// as the reference harness skips them.
func readSamples(path string) (*samplesFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > 1 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	sf := &samplesFile{path: path}
	perTask := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		fields, err := orderedObject(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		var rec struct {
			TaskID     *string `json:"task_id"`
			Completion *string `json:"completion"`
		}
		if err := json.Unmarshal(line, &rec); err != nil || rec.TaskID == nil || rec.Completion == nil {
			return nil, fmt.Errorf("%s:%d: want an object with string fields \"task_id\" and \"completion\"", path, n)
		}
		sf.lines = append(sf.lines, sampleLine{taskID: *rec.TaskID, completion: *rec.Completion,
			sample: perTask[*rec.TaskID], raw: fields})
		perTask[*rec.TaskID]++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(sf.lines) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return sf, nil
}

// orderedObject splits a JSON object into its fields in order.
func orderedObject(line []byte) ([]jsonField, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []jsonField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonField{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text after the object")
	}
	return out, nil
}

// humanEvalPrefixes maps a HumanEval infilling task id's first element to
// its set.
var humanEvalPrefixes = map[string]string{
	"SingleLineInfilling":      "humaneval-single-line",
	"MultiLineInfilling":       "humaneval-multi-line",
	"RandomSpanInfilling":      "humaneval-random-span",
	"RandomSpanInfillingLight": "humaneval-random-span-light",
}

// humanEvalName works out the HumanEval set(s) from the task ids: one
// set's name, or "humaneval" when they span several.
func (sf *samplesFile) humanEvalName() (string, error) {
	var sets []string
	for _, l := range sf.lines {
		prefix, _, _ := strings.Cut(l.taskID, "/")
		set, ok := humanEvalPrefixes[prefix]
		if !ok {
			return "", fmt.Errorf("%s: task %q is not a HumanEval infilling task: name the benchmark (BENCHMARK, --execrepobench or --infill)", sf.path, l.taskID)
		}
		if !slices.Contains(sets, set) {
			sets = append(sets, set)
		}
	}
	if len(sets) == 1 {
		return sets[0], nil
	}
	return "humaneval", nil
}

// match keeps the tasks the samples name, in the order of their first
// line, and returns each one's completions in file order.
func (sf *samplesFile) match(tasks []evaluator.Task) ([]evaluator.Task, map[taskKey][]string, error) {
	byID := map[string]int{}
	for i := range tasks {
		if _, dup := byID[tasks[i].ID]; dup {
			return nil, nil, fmt.Errorf("task id %q names two tasks of this benchmark: grade one benchmark at a time", tasks[i].ID)
		}
		byID[tasks[i].ID] = i
	}
	var kept []evaluator.Task
	completions := map[taskKey][]string{}
	sf.keys = make([]taskKey, len(sf.lines))
	for i, l := range sf.lines {
		j, ok := byID[l.taskID]
		if !ok {
			return nil, nil, fmt.Errorf("%s: task %q (sample %d) is not in the benchmark", sf.path, l.taskID, i+1)
		}
		key := taskKey{tasks[j].Benchmark, tasks[j].ID}
		if _, seen := completions[key]; !seen {
			kept = append(kept, tasks[j])
		}
		completions[key] = append(completions[key], l.completion)
		sf.keys[i] = key
	}
	return kept, completions, nil
}

// stem is the path without .gz and .jsonl.
func (sf *samplesFile) stem() string {
	p := strings.TrimSuffix(sf.path, ".gz")
	return strings.TrimSuffix(p, ".jsonl")
}

// defaultResults is where infill's results for the file go by default.
func (sf *samplesFile) defaultResults() string { return sf.stem() + ".results.jsonl" }

// referencePath is where the reference harness writes its results.
func (sf *samplesFile) referencePath() string { return sf.path + "_results.jsonl" }

// resultsOf keeps the results of the file's samples.
func (sf *samplesFile) resultsOf(results []evaluator.Result) []evaluator.Result {
	want := map[taskKey]int{}
	for i := range sf.lines {
		want[sf.keys[i]]++
	}
	var out []evaluator.Result
	for _, r := range results {
		if r.Sample < want[taskKey{r.Benchmark, r.TaskID}] {
			out = append(out, r)
		}
	}
	return out
}

// writeReference writes FILE_results.jsonl as the reference harness does:
// each input line, in order, with "result" and "passed" set.
func (sf *samplesFile) writeReference(results []evaluator.Result) error {
	type sampleKey struct {
		key    taskKey
		sample int
	}
	byKey := map[sampleKey]*evaluator.Result{}
	for i := range results {
		r := &results[i]
		byKey[sampleKey{taskKey{r.Benchmark, r.TaskID}, r.Sample}] = r
	}
	var buf bytes.Buffer
	for i, l := range sf.lines {
		r := byKey[sampleKey{sf.keys[i], l.sample}]
		if r == nil {
			return fmt.Errorf("%s: no result for %s sample %d", sf.referencePath(), l.taskID, l.sample)
		}
		result := pythonJSONString(r.ReferenceResult())
		passed, _ := json.Marshal(r.Passed())
		fields := slices.DeleteFunc(slices.Clone(l.raw), func(f jsonField) bool { return f.key == "result" || f.key == "passed" })
		fields = append(fields, jsonField{"result", result}, jsonField{"passed", passed})
		buf.WriteByte('{')
		for j, f := range fields {
			if j > 0 {
				buf.WriteString(", ")
			}
			k, _ := json.Marshal(f.key)
			buf.Write(k)
			buf.WriteString(": ")
			buf.Write(f.value)
		}
		buf.WriteString("}\n")
	}
	return writeFileAtomic(sf.referencePath(), buf.Bytes())
}

// pythonJSONString encodes s as Python's json.dumps does by default: ASCII
// only (\uXXXX, surrogate pairs beyond the BMP), "<", ">" and "&" as they
// are.
func pythonJSONString(s string) []byte {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r >= 0x7f && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.Bytes()
}

package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/infill-dev/infill/evaluator"
)

// HumanEvalSet names one of the four HumanEval infilling sets.
type HumanEvalSet string

// The four sets; the value is the benchmark name given to their tasks.
const (
	HumanEvalSingleLine      HumanEvalSet = "humaneval-single-line"
	HumanEvalMultiLine       HumanEvalSet = "humaneval-multi-line"
	HumanEvalRandomSpan      HumanEvalSet = "humaneval-random-span"
	HumanEvalRandomSpanLight HumanEvalSet = "humaneval-random-span-light"
)

// HumanEvalSets lists the four sets.
func HumanEvalSets() []HumanEvalSet {
	return []HumanEvalSet{HumanEvalSingleLine, HumanEvalMultiLine, HumanEvalRandomSpan, HumanEvalRandomSpanLight}
}

// FileName is the set's file name in the human-eval-infilling release.
func (s HumanEvalSet) FileName() string {
	switch s {
	case HumanEvalSingleLine:
		return "HumanEval-SingleLineInfilling.jsonl.gz"
	case HumanEvalMultiLine:
		return "HumanEval-MultiLineInfilling.jsonl.gz"
	case HumanEvalRandomSpan:
		return "HumanEval-RandomSpanInfilling.jsonl.gz"
	case HumanEvalRandomSpanLight:
		return "HumanEval-RandomSpanInfillingLight.jsonl.gz"
	}
	return ""
}

// Level is the level of the set's tasks.
func (s HumanEvalSet) Level() evaluator.Level {
	switch s {
	case HumanEvalSingleLine:
		return evaluator.LevelSingleLine
	case HumanEvalMultiLine:
		return evaluator.LevelMultiLine
	}
	return evaluator.LevelRandomSpan
}

// ParseHumanEvalSet accepts a set's benchmark name.
func ParseHumanEvalSet(name string) (HumanEvalSet, error) {
	for _, s := range HumanEvalSets() {
		if string(s) == name {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: unknown HumanEval infilling set %q", ErrInvalidData, name)
}

type humanEvalRecord struct {
	TaskID            string  `json:"task_id"`
	EntryPoint        string  `json:"entry_point"`
	Prompt            *string `json:"prompt"`
	Suffix            *string `json:"suffix"`
	CanonicalSolution *string `json:"canonical_solution"`
	Test              string  `json:"test"`
}

// LoadHumanEvalDir loads the given sets (all four when none) from dir, the
// directory of the release's .jsonl.gz files.
func LoadHumanEvalDir(dir string, sets ...HumanEvalSet) ([]evaluator.Task, error) {
	if len(sets) == 0 {
		sets = HumanEvalSets()
	}
	var all []evaluator.Task
	for _, s := range sets {
		tasks, err := LoadHumanEval(filepath.Join(dir, s.FileName()), s)
		if err != nil {
			return nil, err
		}
		all = append(all, tasks...)
	}
	return all, nil
}

// LoadHumanEval loads one set from a .jsonl or .jsonl.gz file.
func LoadHumanEval(path string, set HumanEvalSet) ([]evaluator.Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tasks, err := ReadHumanEval(f, set)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return tasks, nil
}

// ReadHumanEval reads one set's JSON lines, gzip-compressed or not. The
// program each task runs is prompt + completion + suffix + "\n" + test +
// "\n" + "check(" + entry_point + ")".
func ReadHumanEval(r io.Reader, set HumanEvalSet) ([]evaluator.Task, error) {
	if set.FileName() == "" {
		return nil, fmt.Errorf("%w: unknown HumanEval infilling set %q", ErrInvalidData, set)
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidData, err)
		}
		defer gz.Close()
		br = bufio.NewReader(gz)
	}
	var tasks []evaluator.Task
	seen := map[string]bool{}
	err := eachLine(br, func(n int, line []byte) error {
		var rec humanEvalRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrInvalidData, n, err)
		}
		switch {
		case rec.TaskID == "":
			return fmt.Errorf("%w: line %d: missing task_id", ErrInvalidData, n)
		case rec.EntryPoint == "" || !isIdentifier(rec.EntryPoint):
			return fmt.Errorf("%w: line %d (%s): bad entry_point %q", ErrInvalidData, n, rec.TaskID, rec.EntryPoint)
		case rec.Prompt == nil || rec.Suffix == nil || rec.CanonicalSolution == nil || rec.Test == "":
			return fmt.Errorf("%w: line %d (%s): prompt, suffix, canonical_solution and test are required", ErrInvalidData, n, rec.TaskID)
		case seen[rec.TaskID]:
			return fmt.Errorf("%w: line %d: duplicate task_id %q", ErrInvalidData, n, rec.TaskID)
		}
		seen[rec.TaskID] = true
		tasks = append(tasks, evaluator.Task{
			ID: rec.TaskID, Benchmark: string(set), Level: set.Level(), Language: "python",
			Path: "program.py", Prefix: *rec.Prompt, Suffix: *rec.Suffix, Reference: *rec.CanonicalSolution,
			Exec: evaluator.Exec{
				Kind:     evaluator.ExecProgram,
				Epilogue: "\n" + rec.Test + "\n" + "check(" + rec.EntryPoint + ")",
			},
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// eachLine calls fn for every non-blank line (1-based numbers), without a
// line length limit.
func eachLine(br *bufio.Reader, fn func(n int, line []byte) error) error {
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(n, line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func isIdentifier(s string) bool {
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return s != "" && !strings.HasPrefix(s, " ")
}

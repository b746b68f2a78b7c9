package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/infill-dev/infill/evaluator"
)

// InfillName is the default benchmark name of infill-format tasks.
const InfillName = "infill"

// Span is a byte range [Start, End) of the target file.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// InfillRecord is one line of infill's repository-benchmark format:
//
//	{"id": "...", "repository": "myrepo", "target": "pkg/mod.py",
//	 "span": {"start": 120, "end": 168}, "target_sha256": "...",
//	 "level": "expression", "node_type": "call",
//	 "test": {"kind": "pytest", "args": ["-q", "tests"], "expected_tests": 12}}
//
// The masked span is given either as byte offsets into the target file
// (span, optionally pinned by target_sha256) or as explicit prefix, suffix
// and middle. repository is relative to the JSON-lines file's directory
// (or absolute); target is relative to the repository and may not leave it.
type InfillRecord struct {
	ID           string          `json:"id"`
	Benchmark    string          `json:"benchmark,omitempty"`
	Repository   string          `json:"repository"`
	RepoName     string          `json:"repo_name,omitempty"`
	Target       string          `json:"target"`
	Span         *Span           `json:"span,omitempty"`
	TargetSHA256 string          `json:"target_sha256,omitempty"`
	Prefix       *string         `json:"prefix,omitempty"`
	Suffix       *string         `json:"suffix,omitempty"`
	Middle       *string         `json:"middle,omitempty"`
	Level        evaluator.Level `json:"level"`
	// Language is the target file's language ("python" when absent).
	Language string                  `json:"language,omitempty"`
	NodeType string                  `json:"node_type,omitempty"`
	Test     evaluator.TestSpec      `json:"test"`
	TimeoutS float64                 `json:"timeout_s,omitempty"`
	Context  []evaluator.ContextFile `json:"context,omitempty"`
	// NextEdit makes the record a next-edit task (level "next-edit",
	// prefix, suffix and middle given: middle is the region with the
	// target edit made). A next-edit record without a test kind is scored
	// by exact match and edit similarity only (no repository needed).
	NextEdit *evaluator.NextEdit `json:"next_edit,omitempty"`
}

// LoadInfill loads an infill-format JSON-lines file.
func LoadInfill(path string) ([]evaluator.Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	tasks, err := ReadInfill(f, filepath.Dir(abs))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return tasks, nil
}

// ReadInfill reads infill-format JSON lines; relative repository paths are
// resolved against baseDir.
func ReadInfill(r io.Reader, baseDir string) ([]evaluator.Task, error) {
	var tasks []evaluator.Task
	seen := map[string]bool{}
	err := eachLine(bufio.NewReader(r), func(n int, line []byte) error {
		var rec InfillRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrInvalidData, n, err)
		}
		t, err := rec.Task(baseDir)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		key := t.Benchmark + "\x00" + t.ID
		if seen[key] {
			return fmt.Errorf("%w: line %d: duplicate id %q", ErrInvalidData, n, t.ID)
		}
		seen[key] = true
		tasks = append(tasks, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// Task converts the record, reading the target file when the span is given
// as offsets.
func (rec *InfillRecord) Task(baseDir string) (evaluator.Task, error) {
	bad := func(format string, a ...any) (evaluator.Task, error) {
		return evaluator.Task{}, fmt.Errorf("%w: %s: %s", ErrInvalidData, rec.ID, fmt.Sprintf(format, a...))
	}
	if rec.ID == "" {
		return evaluator.Task{}, fmt.Errorf("%w: missing id", ErrInvalidData)
	}
	if rec.NextEdit != nil && rec.Test.Kind == "" {
		return rec.textTask(bad)
	}
	if rec.Repository == "" {
		return bad("missing repository")
	}
	repo := rec.Repository
	if !filepath.IsAbs(repo) {
		repo = filepath.Join(baseDir, filepath.FromSlash(repo))
	}
	repo = filepath.Clean(repo)
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return bad("repository %s is not a directory", repo)
	}
	if err := checkRepo(repo, rec.Test); err != nil {
		return evaluator.Task{}, fmt.Errorf("%s: %w", rec.ID, err)
	}
	if rec.Target == "" || !filepath.IsLocal(filepath.FromSlash(rec.Target)) {
		return bad("target %q must be a relative path inside the repository", rec.Target)
	}
	if !rec.Level.Valid() {
		return bad("unknown level %q", rec.Level)
	}
	name := rec.RepoName
	if name == "" {
		name = filepath.Base(repo)
	}
	bench := rec.Benchmark
	if bench == "" {
		bench = InfillName
	}
	lang := rec.Language
	if lang == "" {
		lang = "python"
	}
	t := evaluator.Task{
		ID: rec.ID, Benchmark: bench, Level: rec.Level, FillType: rec.NodeType, Language: lang,
		RepoName: name, Path: filepath.ToSlash(filepath.Clean(filepath.FromSlash(rec.Target))),
		Context: rec.Context, NextEdit: rec.NextEdit,
		Exec: evaluator.Exec{
			Kind: evaluator.ExecRepository, RepoDir: repo, Test: rec.Test,
			Timeout: time.Duration(rec.TimeoutS * float64(time.Second)),
		},
	}
	switch {
	case rec.Span != nil && (rec.Prefix != nil || rec.Suffix != nil || rec.Middle != nil):
		return bad("give either span or prefix/suffix/middle, not both")
	case rec.Span != nil:
		root, err := os.OpenRoot(repo)
		if err != nil {
			return evaluator.Task{}, err
		}
		data, err := root.ReadFile(filepath.FromSlash(t.Path))
		root.Close()
		if err != nil {
			return bad("reading target: %v", err)
		}
		if rec.TargetSHA256 != "" {
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != rec.TargetSHA256 {
				return bad("target %s changed since the benchmark was built (sha256 mismatch)", t.Path)
			}
		}
		s, e := rec.Span.Start, rec.Span.End
		if s < 0 || e < s || e > len(data) {
			return bad("span [%d, %d) outside the %d-byte target", s, e, len(data))
		}
		if !utf8.Valid(data) || (s < len(data) && !utf8.RuneStart(data[s])) || (e < len(data) && !utf8.RuneStart(data[e])) {
			return bad("span [%d, %d) does not fall on UTF-8 character boundaries", s, e)
		}
		t.Prefix, t.Reference, t.Suffix = string(data[:s]), string(data[s:e]), string(data[e:])
	case rec.Prefix != nil && rec.Suffix != nil:
		t.Prefix, t.Suffix = *rec.Prefix, *rec.Suffix
		if rec.Middle != nil {
			t.Reference = *rec.Middle
		}
	default:
		return bad("missing span (or prefix and suffix)")
	}
	if err := t.Validate(); err != nil {
		return evaluator.Task{}, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	return t, nil
}

// textTask is a next-edit record without a test: exact match and edit
// similarity only.
func (rec *InfillRecord) textTask(bad func(string, ...any) (evaluator.Task, error)) (evaluator.Task, error) {
	if rec.Prefix == nil || rec.Suffix == nil || rec.Middle == nil || rec.Span != nil {
		return bad("a next-edit record gives prefix, suffix and middle")
	}
	bench := rec.Benchmark
	if bench == "" {
		bench = InfillName
	}
	t := evaluator.Task{ID: rec.ID, Benchmark: bench, Level: rec.Level, FillType: rec.NodeType, Language: rec.Language,
		RepoName: rec.RepoName, Path: rec.Target, Prefix: *rec.Prefix, Suffix: *rec.Suffix, Reference: *rec.Middle,
		Context: rec.Context, NextEdit: rec.NextEdit}
	if err := t.Validate(); err != nil {
		return evaluator.Task{}, fmt.Errorf("%w: %v", ErrInvalidData, err)
	}
	return t, nil
}

// WriteInfill writes records as JSON lines.
func WriteInfill(w io.Writer, recs []InfillRecord) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

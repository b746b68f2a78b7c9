package evaluator

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/infill-dev/infill/internal/errkind"
)

// Level is the granularity of a masked span.
type Level string

// Levels. Grammar-based levels follow ExecRepoBench (expression, statement,
// block) with block split into function and class where known; random levels
// cover HumanEval infilling and ExecRepoBench's random masks.
const (
	LevelExpression Level = "expression"
	LevelStatement  Level = "statement"
	LevelBlock      Level = "block"
	LevelFunction   Level = "function"
	LevelClass      Level = "class"
	LevelSingleLine Level = "single-line"
	LevelMultiLine  Level = "multi-line"
	LevelRandomSpan Level = "random-span"
	// LevelNextEdit is a next-edit task's (Task.NextEdit): the edit that
	// follows the recent edits. It is no masking level (Levels).
	LevelNextEdit Level = "next-edit"
)

// Levels lists the masking levels (LevelNextEdit is known too: Valid).
func Levels() []Level {
	return []Level{LevelExpression, LevelStatement, LevelBlock, LevelFunction, LevelClass,
		LevelSingleLine, LevelMultiLine, LevelRandomSpan}
}

// Valid reports whether l is a known level.
func (l Level) Valid() bool {
	for _, x := range Levels() {
		if l == x {
			return true
		}
	}
	return l == LevelNextEdit
}

// ContextFile is one cross-file context entry.
type ContextFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// ExecKind says how a task's completion is executed.
type ExecKind string

const (
	// ExecNone: no tests; only exact match and edit similarity are scored
	// and the verdict is VerdictSkipped.
	ExecNone ExecKind = ""
	// ExecProgram: the file Prefix+completion+Suffix followed by Epilogue is
	// one Python program, run as __main__ (HumanEval infilling).
	ExecProgram ExecKind = "program"
	// ExecRepository: Prefix+completion+Suffix replaces the file Path in a
	// private copy of RepoDir, then Test runs there.
	ExecRepository ExecKind = "repository"
)

// TestKind selects how a repository's tests are run: the test runner of
// the kind (testrunner.go's table) owns everything about it. A kind's name
// is one lower-case word (the wire's enum value is TEST_KIND_ and it in
// upper case).
type TestKind string

const (
	// TestScript runs a Python script like `python SCRIPT ARGS`
	// (ExecRepoBench's evaluate_repo.py). Pass: exit 0 and the runner's
	// nonce after the script returned.
	TestScript TestKind = "script"
	// TestPytest runs pytest ARGS in-process. Pass: exit 0, the nonce, no
	// failures or errors and ExpectedTests passed tests (at least one when
	// ExpectedTests is 0).
	TestPytest TestKind = "pytest"
	// TestCommand runs an arbitrary command. Pass: exit 0 only; this is the
	// weakest signal (an early exit(0) passes) and results say so.
	TestCommand TestKind = "command"
	// TestGo runs `go test -json` on the masked file's package. Pass: every
	// test in the JSON events passed, none failed, and ExpectedTests passed
	// (at least one when ExpectedTests is 0).
	TestGo TestKind = "go"
	// TestNode runs node's built-in test runner, or the repository's
	// vitest (TestSpec.Command). Pass: the runner's report counts
	// ExpectedTests passed (at least one) and no failure.
	TestNode TestKind = "node"
)

// TestSpec is a repository's test entry point.
type TestSpec struct {
	Kind          TestKind `json:"kind"`
	Script        string   `json:"script,omitempty"`
	Args          []string `json:"args,omitempty"`
	Command       []string `json:"command,omitempty"`
	ExpectedTests int      `json:"expected_tests,omitempty"`
	// Python is the interpreter the tests run with: relative to the
	// repository (".venv/bin/python"), or absolute. Empty: the
	// repository's own virtual environment (.venv/ or venv/) when it has
	// one, else the sandbox's default (Config.Python and
	// Config.Pythons come first; see pythonFor).
	Python string `json:"python,omitempty"`
	// Tests, when set, are the only tests run: those that execute the
	// masked span on the pristine code, in the runner's own form (pytest
	// node IDs, Go test names, node test files). Empty: the whole suite.
	Tests []string `json:"tests,omitempty"`
	// SuiteTests is how many tests the whole suite passes on the pristine
	// code, which a run of the whole suite (Config.AllTests) expects of a
	// task with Tests, where ExpectedTests counts only those (0: at least
	// one, none failing).
	SuiteTests int `json:"suite_tests,omitempty"`
}

// Exec describes how to execute a completed task.
type Exec struct {
	Kind ExecKind
	// Epilogue follows the completed file in ExecProgram (HumanEval:
	// "\n" + test + "\n" + "check(" + entry_point + ")").
	Epilogue string
	// RepoDir is the host directory of the pristine repository
	// (ExecRepository). It is copied, never modified.
	RepoDir string
	// Test is the repository's test entry point (ExecRepository).
	Test TestSpec
	// Timeout overrides the sandbox's wall-clock limit when positive.
	Timeout time.Duration
}

// Task is one infilling problem.
type Task struct {
	// ID is unique within Benchmark.
	ID        string
	Benchmark string
	Level     Level
	// FillType is the benchmark's own label (e.g. ExecRepoBench's
	// "grammar-based: expression"); informational.
	FillType string
	Language string
	RepoName string
	// Path is the target file, slash-separated, relative to the repository
	// root (ExecRepository) or the program's file name (ExecProgram).
	Path   string
	Prefix string
	Suffix string
	// Reference is the ground-truth middle; it may be empty.
	Reference string
	// Context is cross-file context, most relevant first.
	Context []ContextFile
	Exec    Exec
	// NextEdit, when set, makes the task a next-edit problem: Prefix and
	// Suffix surround the editable region, Reference is the region with
	// the target edit made, and a completion is the region rewritten.
	NextEdit *NextEdit
}

// ErrInvalidTask wraps every task validation error.
var ErrInvalidTask = errkind.New(errkind.InvalidArgument, "evaluator: invalid task")

// Validate checks the task's fields.
func (t *Task) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidTask, t.ID, fmt.Sprintf(format, a...))
	}
	if t.ID == "" {
		return fmt.Errorf("%w: empty task id", ErrInvalidTask)
	}
	if t.Level != "" && !t.Level.Valid() {
		return bad("unknown level %q", t.Level)
	}
	if err := t.validateNextEdit(); err != nil {
		return bad("%v", err)
	}
	switch t.Exec.Kind {
	case ExecNone:
	case ExecProgram:
	case ExecRepository:
		if t.Exec.RepoDir == "" || !filepath.IsAbs(t.Exec.RepoDir) {
			return bad("repository directory %q must be absolute", t.Exec.RepoDir)
		}
		if t.Path == "" || !filepath.IsLocal(filepath.FromSlash(t.Path)) {
			return bad("target path %q must be relative and stay inside the repository", t.Path)
		}
		if err := validateTestSpec(&t.Exec.Test); err != nil {
			return bad("%v", err)
		}
		if p := t.Exec.Test.Python; p != "" && !filepath.IsAbs(p) && !filepath.IsLocal(filepath.FromSlash(p)) {
			return bad("interpreter %q must be absolute or inside the repository", p)
		}
	default:
		return bad("unknown exec kind %q", t.Exec.Kind)
	}
	return nil
}

// Compose returns the completed target file: Prefix + completion + Suffix.
func (t *Task) Compose(completion string) string {
	return t.Prefix + completion + t.Suffix
}

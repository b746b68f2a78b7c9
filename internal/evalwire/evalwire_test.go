package evalwire

import (
	"reflect"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/outcome"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// notGraded are the wire's levels and test kinds the evaluator does not
// have yet: each is refused as a task's (an empty level, an unknown test
// kind). A new wire value belongs here until the evaluator grades it.
var (
	notGradedLevels = map[infillv1.Level]bool{}
	notGradedKinds  = map[infillv1.TestKind]bool{infillv1.TestKind_TEST_KIND_RUST: true}
)

// TestEnums: every level, verdict and test kind of the evaluator has its
// wire value and comes back from it, and every wire value is one of them
// (or listed as not graded yet).
func TestEnums(t *testing.T) {
	for _, l := range append(evaluator.Levels(), evaluator.LevelNextEdit) {
		w := Level(l)
		if w == infillv1.Level_LEVEL_UNSPECIFIED || LevelOf(w) != l {
			t.Errorf("level %q: wire %v, back %q", l, w, LevelOf(w))
		}
	}
	for v := range infillv1.Level_name {
		w := infillv1.Level(v)
		if w != infillv1.Level_LEVEL_UNSPECIFIED && !notGradedLevels[w] && Level(LevelOf(w)) != w {
			t.Errorf("wire level %v: the evaluator's is %q", w, LevelOf(w))
		}
	}
	if LevelOf(infillv1.Level(99)) != "" || Level("") != infillv1.Level_LEVEL_UNSPECIFIED {
		t.Error("a level the evaluator does not grade must be empty, and empty unspecified")
	}
	for _, v := range []evaluator.Verdict{evaluator.VerdictPassed, evaluator.VerdictFailed, evaluator.VerdictTimeout,
		evaluator.VerdictError, evaluator.VerdictSkipped} {
		if w := Verdict(v); w == infillv1.Verdict_VERDICT_UNSPECIFIED || VerdictOf(w) != v {
			t.Errorf("verdict %q: wire %v, back %q", v, w, VerdictOf(w))
		}
	}
	if VerdictOf(infillv1.Verdict_VERDICT_UNSPECIFIED) != evaluator.VerdictError || VerdictOf(99) != evaluator.VerdictError {
		t.Error("an unknown verdict must read as an error")
	}
	for _, k := range evaluator.TestKinds() {
		w := TestKind(k)
		if w == infillv1.TestKind_TEST_KIND_UNSPECIFIED || TestKindOf(w) != k {
			t.Errorf("test kind %q: wire %v, back %q (give the proto enum its value)", k, w, TestKindOf(w))
		}
	}
	known := map[evaluator.TestKind]bool{}
	for _, k := range evaluator.TestKinds() {
		known[k] = true
	}
	for v := range infillv1.TestKind_name {
		w := infillv1.TestKind(v)
		if w != infillv1.TestKind_TEST_KIND_UNSPECIFIED && !notGradedKinds[w] && !known[TestKindOf(w)] {
			t.Errorf("wire test kind %v: no runner in the evaluator's table (%q)", w, TestKindOf(w))
		}
	}
	if TestKindOf(infillv1.TestKind_TEST_KIND_UNSPECIFIED) != "" {
		t.Error("TEST_KIND_UNSPECIFIED must be no kind")
	}
}

// TestRoundTrips: a task and a result survive the wire, every field it
// carries.
func TestRoundTrips(t *testing.T) {
	task := evaluator.Task{ID: "statement/a.py:1-2", Benchmark: "b", Level: evaluator.LevelStatement, Language: "python",
		RepoName: "r", Path: "a.py", Prefix: "p", Suffix: "s", Reference: "m",
		Context: []evaluator.ContextFile{{Path: "c.py", Content: "x"}},
		Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: "/local/r", Timeout: 3 * time.Second,
			Test: evaluator.TestSpec{Kind: evaluator.TestPytest, Args: []string{"-q"}, ExpectedTests: 4, Python: ".venv/bin/python",
				Tests: []string{"t.py::a"}}}}
	back, repo, err := TaskOf(Task(&task, "/remote/r"))
	if err != nil || repo != "/remote/r" {
		t.Fatalf("TaskOf: %v, repository %q", err, repo)
	}
	back.Exec.RepoDir = task.Exec.RepoDir
	if !reflect.DeepEqual(back, task) {
		t.Errorf("task:\n got  %+v\n want %+v", back, task)
	}
	prog := evaluator.Task{ID: "p", Exec: evaluator.Exec{Kind: evaluator.ExecProgram, Epilogue: "check(f)"}}
	if back, _, err := TaskOf(Task(&prog, "")); err != nil || !reflect.DeepEqual(back, prog) {
		t.Errorf("program task: %+v, %v", back, err)
	}
	next := evaluator.Task{ID: "next-edit/a.py:3", Level: evaluator.LevelNextEdit, Path: "a.py", Prefix: "p\n", Suffix: "\ns",
		Reference: "y", NextEdit: &evaluator.NextEdit{Region: "x", Cursor: 2,
			RecentEdits: []evaluator.RecentEdit{{Path: "b.py", Diff: "@@ -1 +1 @@\n-a\n+b\n"}}}}
	if back, _, err := TaskOf(Task(&next, "")); err != nil || !reflect.DeepEqual(back, next) {
		t.Errorf("next-edit task: %+v, %v", back, err)
	}
	far := Task(&next, "")
	far.NextEdit.CursorOffset = 99
	if _, _, err := TaskOf(far); err == nil || err.(*FieldError).Field != "task.next_edit.cursor_offset" {
		t.Errorf("cursor outside the file: %v", err)
	}
	bad := Task(&task, "/r")
	bad.Context[0].Content = nil
	if _, _, err := TaskOf(bad); err == nil || err.(*FieldError).Field != "task.context[0]" {
		t.Errorf("context without content: %v", err)
	}

	res := evaluator.Result{TaskID: "t", Benchmark: "b", Level: evaluator.LevelBlock, Language: "go", Sample: 3,
		Completion: "c", Verdict: evaluator.VerdictFailed, Reason: "why", ExitCode: 1, WeakSignal: true,
		Tests: &outcome.TestCounts{Passed: 1, Failed: 2, Errors: 3, Skipped: 4}, StdoutTail: "o", StderrTail: "e",
		ExactMatch: true, EditSimilarity: 77, TTFT: time.Second, Total: 2 * time.Second, QueueWait: 3 * time.Second,
		ExecDuration: 4 * time.Second, Exception: &outcome.Exception{Type: "E", Message: "m", Where: "a.py:1"},
		Failure: &outcome.Failure{Test: "t", When: "call", Crash: &outcome.Crash{Path: "a.py", Line: 2, Message: "m"},
			Report: "r", Output: "o"},
		Limit: outcome.LimitMemory, Error: "err"}
	if got := ResultOf(SampleResult(&res)); !reflect.DeepEqual(got, res) {
		t.Errorf("result:\n got  %+v\n want %+v", got, res)
	}
}

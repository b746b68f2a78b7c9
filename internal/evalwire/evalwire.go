// Package evalwire translates between the evaluator's types and the
// EvaluationService's messages (proto/infill/v1), in one place for every
// transport that carries them: the server decodes tasks and encodes
// results and summaries with it, the CLI encodes tasks and decodes results.
// It is not a domain package (the generated package imports gRPC), so the
// evaluator never imports it.
//
// The enums translate by name: evaluator.Level "single-line" is
// LEVEL_SINGLE_LINE, evaluator.TestKind "pytest" is TEST_KIND_PYTEST,
// evaluator.Verdict "passed" is VERDICT_PASSED. A test runner added to the
// evaluator's table reaches the wire as soon as the proto enum has its
// value (TestKinds checks both ways).
package evalwire

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
	"github.com/infill-dev/infill/evaluator/outcome"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// enumName is the proto enum value's name for a Go name: "single-line"
// with prefix "LEVEL_" is "LEVEL_SINGLE_LINE".
func enumName(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// goName is enumName inverted; "" for the unspecified value or a value of
// another enum.
func goName(prefix, enum string) string {
	rest, ok := strings.CutPrefix(enum, prefix)
	if !ok || rest == "UNSPECIFIED" {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
}

// Level is l on the wire; LEVEL_UNSPECIFIED for "" or a level the API
// does not name.
func Level(l evaluator.Level) infillv1.Level {
	return infillv1.Level(infillv1.Level_value[enumName("LEVEL_", string(l))])
}

// LevelOf is the evaluator's level of l: "" for LEVEL_UNSPECIFIED and for
// a level the evaluator does not grade.
func LevelOf(l infillv1.Level) evaluator.Level {
	if lv := evaluator.Level(goName("LEVEL_", l.String())); lv.Valid() {
		return lv
	}
	return ""
}

// Verdict is v on the wire.
func Verdict(v evaluator.Verdict) infillv1.Verdict {
	return infillv1.Verdict(infillv1.Verdict_value[enumName("VERDICT_", string(v))])
}

// VerdictOf is the evaluator's verdict of v: VerdictError for
// VERDICT_UNSPECIFIED or a value this build does not know.
func VerdictOf(v infillv1.Verdict) evaluator.Verdict {
	if name := goName("VERDICT_", v.String()); name != "" {
		return evaluator.Verdict(name)
	}
	return evaluator.VerdictError
}

// TestKind is k on the wire. The test kinds' names are single words
// ("go", "node"), so the mapping is exact both ways.
func TestKind(k evaluator.TestKind) infillv1.TestKind {
	return infillv1.TestKind(infillv1.TestKind_value["TEST_KIND_"+strings.ToUpper(string(k))])
}

// TestKindOf is the evaluator's test kind of k ("" for
// TEST_KIND_UNSPECIFIED, which a task's validation refuses).
func TestKindOf(k infillv1.TestKind) evaluator.TestKind {
	rest, ok := strings.CutPrefix(k.String(), "TEST_KIND_")
	if !ok || rest == "UNSPECIFIED" {
		return ""
	}
	return evaluator.TestKind(strings.ToLower(rest))
}

// TestSpec is ts on the wire. SuiteTests does not travel: a client that
// runs whole suites rewrites its tasks before it sends them
// (evaluator.TestSpec.WholeSuite).
func TestSpec(ts evaluator.TestSpec) *infillv1.TestSpec {
	return &infillv1.TestSpec{Kind: TestKind(ts.Kind), Script: ts.Script, Args: ts.Args,
		Command: ts.Command, ExpectedTests: uint32(max(ts.ExpectedTests, 0)), Python: ts.Python, Tests: ts.Tests}
}

// TestSpecOf is the evaluator's spec of t.
func TestSpecOf(t *infillv1.TestSpec) evaluator.TestSpec {
	return evaluator.TestSpec{Kind: TestKindOf(t.GetKind()), Script: t.GetScript(), Args: t.GetArgs(),
		Command: t.GetCommand(), ExpectedTests: int(t.GetExpectedTests()), Python: t.GetPython(), Tests: t.GetTests()}
}

// Task is t on the wire, its repository (for a repository task) named
// repository: the path the server sees it at.
func Task(t *evaluator.Task, repository string) *infillv1.EvalTask {
	out := &infillv1.EvalTask{
		TaskId: t.ID, Benchmark: t.Benchmark, Level: Level(t.Level), Language: t.Language,
		Path: t.Path, RepoName: t.RepoName, Prefix: t.Prefix, Suffix: t.Suffix, Reference: t.Reference,
	}
	for _, c := range t.Context {
		out.Context = append(out.Context, &infillv1.File{Path: c.Path, Content: proto.String(c.Content)})
	}
	switch t.Exec.Kind {
	case evaluator.ExecProgram:
		out.Execution = &infillv1.EvalTask_Program{Program: &infillv1.ProgramExecution{Epilogue: t.Exec.Epilogue}}
	case evaluator.ExecRepository:
		out.Execution = &infillv1.EvalTask_Repository{Repository: &infillv1.RepositoryExecution{
			Repository: repository, Test: TestSpec(t.Exec.Test)}}
	}
	if t.Exec.Timeout > 0 {
		out.Timeout = durationpb.New(t.Exec.Timeout)
	}
	if n := t.NextEdit; n != nil {
		out.NextEdit = &infillv1.NextEditTask{Region: n.Region, CursorOffset: uint64(max(n.Cursor, 0))}
		for _, e := range n.RecentEdits {
			out.NextEdit.RecentEdits = append(out.NextEdit.RecentEdits, &infillv1.RecentEdit{Path: e.Path, Diff: e.Diff})
		}
	}
	return out
}

// FieldError is a task message the evaluator cannot take: Field names the
// field ("task.context[2]"), Reason why.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// TaskOf is the evaluator's task of pt, and the repository a repository
// task names (resolve it, then set Exec.RepoDir). It does not validate the
// task (Task.Validate does, after the repository is resolved); a malformed
// message is a *FieldError.
func TaskOf(pt *infillv1.EvalTask) (t evaluator.Task, repository string, err error) {
	t = evaluator.Task{
		ID: pt.GetTaskId(), Benchmark: pt.GetBenchmark(), Level: LevelOf(pt.GetLevel()),
		Language: pt.GetLanguage(), RepoName: pt.GetRepoName(), Path: pt.GetPath(),
		Prefix: pt.GetPrefix(), Suffix: pt.GetSuffix(), Reference: pt.GetReference(),
	}
	for i, f := range pt.GetContext() {
		if f.Content == nil || f.GetDigest() != "" || len(f.GetEdits()) > 0 {
			return evaluator.Task{}, "", &FieldError{Field: fmt.Sprintf("task.context[%d]", i), Reason: "context files need content (no digest or edits)"}
		}
		t.Context = append(t.Context, evaluator.ContextFile{Path: f.GetPath(), Content: f.GetContent()})
	}
	if d := pt.GetTimeout(); d != nil {
		t.Exec.Timeout = d.AsDuration()
	}
	if n := pt.GetNextEdit(); n != nil {
		size := uint64(len(t.Prefix) + len(n.GetRegion()) + len(t.Suffix))
		if n.GetCursorOffset() > size {
			return evaluator.Task{}, "", &FieldError{Field: "task.next_edit.cursor_offset",
				Reason: fmt.Sprintf("%d is outside the %d-byte file (prefix + region + suffix)", n.GetCursorOffset(), size)}
		}
		t.NextEdit = &evaluator.NextEdit{Region: n.GetRegion(), Cursor: int(n.GetCursorOffset())}
		for _, e := range n.GetRecentEdits() {
			t.NextEdit.RecentEdits = append(t.NextEdit.RecentEdits, evaluator.RecentEdit{Path: e.GetPath(), Diff: e.GetDiff()})
		}
	}
	switch x := pt.GetExecution().(type) {
	case *infillv1.EvalTask_Program:
		t.Exec.Kind, t.Exec.Epilogue = evaluator.ExecProgram, x.Program.GetEpilogue()
	case *infillv1.EvalTask_Repository:
		t.Exec.Kind, t.Exec.Test = evaluator.ExecRepository, TestSpecOf(x.Repository.GetTest())
		repository = x.Repository.GetRepository()
	}
	return t, repository, nil
}

// SampleResult is r on the wire.
func SampleResult(r *evaluator.Result) *infillv1.SampleResult {
	return &infillv1.SampleResult{
		TaskId: r.TaskID, Benchmark: r.Benchmark, Level: Level(r.Level), Sample: uint32(r.Sample),
		Completion: r.Completion, Verdict: Verdict(r.Verdict), Reason: r.Reason, ExitCode: int32(r.ExitCode),
		WeakSignal: r.WeakSignal, StdoutTail: r.StdoutTail, StderrTail: r.StderrTail,
		ExactMatch: r.ExactMatch, EditSimilarity: uint32(r.EditSimilarity),
		TimeToFirstToken: durationpb.New(r.TTFT), Generation: durationpb.New(r.Total),
		Execution: durationpb.New(r.ExecDuration), Error: r.Error,
		Exception: exception(r.Exception), QueueWait: durationpb.New(r.QueueWait),
		Failure: failure(r.Failure), Limit: string(r.Limit), Tests: testCounts(r.Tests),
		Language: r.Language,
	}
}

// ResultOf is the results file's record of a streamed r (evaluator.Result,
// the same JSON the server's journals hold).
func ResultOf(r *infillv1.SampleResult) evaluator.Result {
	return evaluator.Result{
		TaskID: r.GetTaskId(), Benchmark: r.GetBenchmark(), Level: LevelOf(r.GetLevel()),
		Sample: int(r.GetSample()), Completion: r.GetCompletion(), Verdict: VerdictOf(r.GetVerdict()), Reason: r.GetReason(),
		ExitCode: int(r.GetExitCode()), WeakSignal: r.GetWeakSignal(),
		StdoutTail: r.GetStdoutTail(), StderrTail: r.GetStderrTail(),
		ExactMatch: r.GetExactMatch(), EditSimilarity: int(r.GetEditSimilarity()),
		TTFT: r.GetTimeToFirstToken().AsDuration(), Total: r.GetGeneration().AsDuration(),
		ExecDuration: r.GetExecution().AsDuration(), Error: r.GetError(),
		QueueWait: r.GetQueueWait().AsDuration(),
		Exception: exceptionOf(r.GetException()),
		Failure:   failureOf(r.GetFailure()),
		Limit:     outcome.Limit(r.GetLimit()),
		Tests:     testCountsOf(r.GetTests()),
		Language:  r.GetLanguage(),
	}
}

func testCounts(c *outcome.TestCounts) *infillv1.TestCounts {
	if c == nil {
		return nil
	}
	return &infillv1.TestCounts{Passed: uint32(max(c.Passed, 0)), Failed: uint32(max(c.Failed, 0)),
		Errors: uint32(max(c.Errors, 0)), Skipped: uint32(max(c.Skipped, 0))}
}

func testCountsOf(c *infillv1.TestCounts) *outcome.TestCounts {
	if c == nil {
		return nil
	}
	return &outcome.TestCounts{Passed: int(c.GetPassed()), Failed: int(c.GetFailed()), Errors: int(c.GetErrors()), Skipped: int(c.GetSkipped())}
}

func exception(e *outcome.Exception) *infillv1.TestException {
	if e == nil {
		return nil
	}
	return &infillv1.TestException{Type: e.Type, Message: e.Message, Where: e.Where}
}

func exceptionOf(e *infillv1.TestException) *outcome.Exception {
	if e == nil {
		return nil
	}
	return &outcome.Exception{Type: e.GetType(), Message: e.GetMessage(), Where: e.GetWhere()}
}

func failure(f *outcome.Failure) *infillv1.TestFailure {
	if f == nil {
		return nil
	}
	out := &infillv1.TestFailure{Test: f.Test, When: f.When, Report: f.Report, Output: f.Output}
	if c := f.Crash; c != nil {
		out.Path, out.Line, out.Message = c.Path, uint32(max(c.Line, 0)), c.Message
	}
	return out
}

func failureOf(f *infillv1.TestFailure) *outcome.Failure {
	if f == nil {
		return nil
	}
	out := &outcome.Failure{Test: f.GetTest(), When: f.GetWhen(), Report: f.GetReport(), Output: f.GetOutput()}
	if f.GetPath() != "" || f.GetMessage() != "" {
		out.Crash = &outcome.Crash{Path: f.GetPath(), Line: int(f.GetLine()), Message: f.GetMessage()}
	}
	return out
}

// Summary is a run's report on the wire: its scores overall and by
// benchmark, level, language and (language, level), and how many samples
// it graded and resumed.
func Summary(rep evaluator.Report) *infillv1.EvaluationSummary {
	out := &infillv1.EvaluationSummary{Overall: Group(rep.Summary.Overall),
		Graded: uint32(rep.Graded), Resumed: uint32(rep.Resumed)}
	for _, g := range rep.Summary.ByBenchmark {
		out.ByBenchmark = append(out.ByBenchmark, Group(g))
	}
	for _, g := range rep.Summary.ByLevel {
		out.ByLevel = append(out.ByLevel, Group(g))
	}
	for _, g := range rep.Summary.ByLanguage {
		out.ByLanguage = append(out.ByLanguage, Group(g))
	}
	for _, g := range rep.Summary.ByLanguageLevel {
		out.ByLanguageLevel = append(out.ByLanguageLevel, Group(g))
	}
	return out
}

// BenchmarkSummary is a benchmark run's report on the wire: Summary and
// the part of the benchmark it ran.
func BenchmarkSummary(rep evaluator.BenchmarkReport) *infillv1.EvaluationSummary {
	out := Summary(rep.Report)
	out.Shard, out.ShardTasks, out.BenchmarkTasks = rep.Shard.String(), uint32(rep.ShardTasks), uint32(rep.BenchmarkTasks)
	return out
}

// Progress is a benchmark run's progress on the wire.
func Progress(p evaluator.Progress) *infillv1.Progress {
	return &infillv1.Progress{Total: uint32(p.Total), Done: uint32(p.Done), Passed: uint32(p.Passed),
		Resumed: uint32(p.Resumed), Elapsed: durationpb.New(p.Elapsed)}
}

// Group is one group of scores on the wire.
func Group(g metrics.Group) *infillv1.MetricsGroup {
	out := &infillv1.MetricsGroup{Benchmark: g.Benchmark, Level: Level(evaluator.Level(g.Level)), Tasks: uint32(g.Tasks),
		Samples: uint32(g.Samples), ExactMatch: g.ExactMatch, EditSimilarity: g.EditSimilarity,
		Verdicts: map[string]uint32{}, TimeToFirstToken: latency(g.TTFT), Total: latency(g.Total),
		QueueWait: latency(g.QueueWait), Language: g.Language}
	ks := make([]int, 0, len(g.PassAtK))
	for k := range g.PassAtK {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		out.PassAtK = append(out.PassAtK, &infillv1.PassAtK{K: uint32(k), Value: g.PassAtK[k]})
	}
	for v, n := range g.Verdicts {
		out.Verdicts[v] = uint32(n)
	}
	return out
}

func latency(l metrics.Latency) *infillv1.LatencySummary {
	return &infillv1.LatencySummary{Count: uint32(l.Count), Mean: durationpb.New(l.Mean),
		P50: durationpb.New(l.P50), P95: durationpb.New(l.P95), Max: durationpb.New(l.Max)}
}

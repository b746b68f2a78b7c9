package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/outcome"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"google.golang.org/protobuf/proto"
)

// The API's enums and the evaluator's names, both ways.
var (
	levelsToProto = map[evaluator.Level]infillv1.Level{
		evaluator.LevelExpression: infillv1.Level_LEVEL_EXPRESSION,
		evaluator.LevelStatement:  infillv1.Level_LEVEL_STATEMENT,
		evaluator.LevelBlock:      infillv1.Level_LEVEL_BLOCK,
		evaluator.LevelFunction:   infillv1.Level_LEVEL_FUNCTION,
		evaluator.LevelClass:      infillv1.Level_LEVEL_CLASS,
		evaluator.LevelSingleLine: infillv1.Level_LEVEL_SINGLE_LINE,
		evaluator.LevelMultiLine:  infillv1.Level_LEVEL_MULTI_LINE,
		evaluator.LevelRandomSpan: infillv1.Level_LEVEL_RANDOM_SPAN,
	}
	verdictsFromProto = map[infillv1.Verdict]evaluator.Verdict{
		infillv1.Verdict_VERDICT_PASSED:  evaluator.VerdictPassed,
		infillv1.Verdict_VERDICT_FAILED:  evaluator.VerdictFailed,
		infillv1.Verdict_VERDICT_TIMEOUT: evaluator.VerdictTimeout,
		infillv1.Verdict_VERDICT_ERROR:   evaluator.VerdictError,
		infillv1.Verdict_VERDICT_SKIPPED: evaluator.VerdictSkipped,
	}
	testKindsToProto = map[evaluator.TestKind]infillv1.TestKind{
		evaluator.TestScript:  infillv1.TestKind_TEST_KIND_SCRIPT,
		evaluator.TestPytest:  infillv1.TestKind_TEST_KIND_PYTEST,
		evaluator.TestCommand: infillv1.TestKind_TEST_KIND_COMMAND,
		evaluator.TestGo:      infillv1.TestKind_TEST_KIND_GO,
		evaluator.TestNode:    infillv1.TestKind_TEST_KIND_NODE,
	}
)

func levelFromProto(l infillv1.Level) evaluator.Level {
	for k, v := range levelsToProto {
		if v == l {
			return k
		}
	}
	return ""
}

// resultFromProto turns a streamed SampleResult into the results file's
// record (evaluator.Result, the same JSON the server's journals hold).
func resultFromProto(r *infillv1.SampleResult) evaluator.Result {
	v, ok := verdictsFromProto[r.GetVerdict()]
	if !ok {
		v = evaluator.VerdictError
	}
	return evaluator.Result{
		TaskID: r.GetTaskId(), Benchmark: r.GetBenchmark(), Level: levelFromProto(r.GetLevel()),
		Sample: int(r.GetSample()), Completion: r.GetCompletion(), Verdict: v, Reason: r.GetReason(),
		ExitCode: int(r.GetExitCode()), WeakSignal: r.GetWeakSignal(),
		StdoutTail: r.GetStdoutTail(), StderrTail: r.GetStderrTail(),
		ExactMatch: r.GetExactMatch(), EditSimilarity: int(r.GetEditSimilarity()),
		TTFT: r.GetTimeToFirstToken().AsDuration(), Total: r.GetGeneration().AsDuration(),
		ExecDuration: r.GetExecution().AsDuration(), Error: r.GetError(),
		QueueWait: r.GetQueueWait().AsDuration(),
		Exception: exceptionFromProto(r.GetException()),
		Failure:   failureFromProto(r.GetFailure()),
		Limit:     outcome.Limit(r.GetLimit()),
		Tests:     testCountsFromProto(r.GetTests()),
		Language:  r.GetLanguage(),
	}
}

func testCountsFromProto(c *infillv1.TestCounts) *outcome.TestCounts {
	if c == nil {
		return nil
	}
	return &outcome.TestCounts{Passed: int(c.GetPassed()), Failed: int(c.GetFailed()), Errors: int(c.GetErrors()), Skipped: int(c.GetSkipped())}
}

func exceptionFromProto(e *infillv1.TestException) *outcome.Exception {
	if e == nil {
		return nil
	}
	return &outcome.Exception{Type: e.GetType(), Message: e.GetMessage(), Where: e.GetWhere()}
}

func failureFromProto(f *infillv1.TestFailure) *outcome.Failure {
	if f == nil {
		return nil
	}
	out := &outcome.Failure{Test: f.GetTest(), When: f.GetWhen(), Report: f.GetReport(), Output: f.GetOutput()}
	if f.GetPath() != "" || f.GetMessage() != "" {
		out.Crash = &outcome.Crash{Path: f.GetPath(), Line: int(f.GetLine()), Message: f.GetMessage()}
	}
	return out
}

// repoMap rewrites local repository directories into the server's paths
// (--repo-map LOCAL=REMOTE), for a server that sees the repositories
// elsewhere.
type repoMap struct{ local, remote string }

func parseRepoMap(s string) (*repoMap, error) {
	if s == "" {
		return nil, nil
	}
	local, remote, ok := strings.Cut(s, "=")
	if !ok || local == "" || remote == "" {
		return nil, fmt.Errorf("--repo-map %q: want LOCAL=REMOTE", s)
	}
	abs, err := filepath.Abs(local)
	if err != nil {
		return nil, err
	}
	return &repoMap{local: abs, remote: remote}, nil
}

func (m *repoMap) apply(dir string) string {
	if m == nil {
		return dir
	}
	rel, err := filepath.Rel(m.local, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return dir
	}
	return strings.TrimSuffix(m.remote, "/") + "/" + filepath.ToSlash(rel)
}

// taskToProto converts a task loaded on this machine for Evaluate.
func taskToProto(t *evaluator.Task, m *repoMap) *infillv1.EvalTask {
	out := &infillv1.EvalTask{
		TaskId: t.ID, Benchmark: t.Benchmark, Level: levelsToProto[t.Level], Language: t.Language,
		Path: t.Path, RepoName: t.RepoName, Prefix: t.Prefix, Suffix: t.Suffix, Reference: t.Reference,
	}
	for _, c := range t.Context {
		out.Context = append(out.Context, &infillv1.File{Path: c.Path, Content: proto.String(c.Content)})
	}
	switch t.Exec.Kind {
	case evaluator.ExecProgram:
		out.Execution = &infillv1.EvalTask_Program{Program: &infillv1.ProgramExecution{Epilogue: t.Exec.Epilogue}}
	case evaluator.ExecRepository:
		ts := t.Exec.Test
		out.Execution = &infillv1.EvalTask_Repository{Repository: &infillv1.RepositoryExecution{
			Repository: m.apply(t.Exec.RepoDir),
			Test: &infillv1.TestSpec{Kind: testKindsToProto[ts.Kind], Script: ts.Script, Args: ts.Args,
				Command: ts.Command, ExpectedTests: uint32(max(ts.ExpectedTests, 0)), Python: ts.Python,
				Tests: ts.Tests},
		}}
	}
	if t.Exec.Timeout > 0 {
		out.Timeout = durationpb.New(t.Exec.Timeout)
	}
	return out
}

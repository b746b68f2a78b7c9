package masking

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
)

// passingGrader passes every completion with one test.
type passingGrader struct{}

func (passingGrader) Grade(_ context.Context, t evaluator.Task, _ int, _ *evaluator.Completion) (evaluator.Result, error) {
	return evaluator.Result{TaskID: t.ID, Verdict: evaluator.VerdictPassed}, nil
}

// noTracer traces no test kind.
type noTracer struct{}

func (noTracer) TraceTests(context.Context, evaluator.Task, evaluator.TraceOptions) (*evaluator.TestSelection, error) {
	return nil, evaluator.ErrNoTracer
}

// TestTraceNote checks that a test command the tracer cannot trace is
// said in Stats.TraceNote unless the language selected the samples' tests
// itself: with --node-select-tests, a vitest run (JavaScript) or a
// TypeScript repository's node run selects nothing and keeps the note.
func TestTraceNote(t *testing.T) {
	for _, c := range []struct {
		name, lang, file string
		test             evaluator.TestSpec
	}{
		{"javascript vitest", "javascript", "a.js", evaluator.TestSpec{Kind: evaluator.TestNode, Command: []string{evaluator.NodeRunnerVitest}}},
		{"typescript node", "typescript", "a.ts", evaluator.TestSpec{Kind: evaluator.TestNode}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "export function add(a, b) {\n  return a + b;\n}\n"
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			test := c.test
			o := Options{Language: c.lang, Test: &test, SelectOptIn: true, Tracer: noTracer{}, PerLevel: 1}
			_, stats, err := Build(context.Background(), dir, o, passingGrader{}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if stats.Selection != nil || stats.TraceNote == "" {
				t.Errorf("selection %+v, trace note %q: want no selection and the note", stats.Selection, stats.TraceNote)
			}
		})
	}
}

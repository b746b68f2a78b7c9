package humaneval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// TestSmoke grades the first tasks of the light set as the benchmark does
// (seconds), so that a change that breaks it fails the suite; skipped
// without ../shared's data or bubblewrap, failed then under CI=true.
func TestSmoke(t *testing.T) {
	need := func(err error) {
		if err == nil {
			return
		}
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := filepath.Join("..", "..", "..", "shared", "data", "human-eval-infilling")
	_, err := os.Stat(filepath.Join(dir, dataset.HumanEvalRandomSpanLight.FileName()))
	need(err)
	tasks, err := dataset.LoadHumanEvalDir(dir, dataset.HumanEvalRandomSpanLight)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Config{Timeout: 20 * time.Second}, zaptest.NewLogger(t))
	if errors.Is(err, sandbox.ErrUnavailable) {
		need(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 2}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ReadEmptyPasses(filepath.Join("..", "..", "evaluator", "testdata", "humaneval_empty_passes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Grade(context.Background(), r, tasks[:12], ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Mismatches {
		t.Error(m)
	}
	if rep.Programs != 24 || rep.CanonicalPassed != 12 || rep.Whole() {
		t.Errorf("%s", rep.Summary(2))
	}
}

package dataset

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/infill-dev/infill/evaluator"
)

// SharedHumanEvalDir locates ../shared/data/human-eval-infilling from the
// repository root, or skips (fails with CI=true) when it is absent.
func sharedHumanEvalDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data", "human-eval-infilling")
	if _, err := os.Stat(filepath.Join(dir, HumanEvalSingleLine.FileName())); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("HumanEval infilling data missing: %v", err)
		}
		t.Skipf("HumanEval infilling data missing: %v", err)
	}
	return dir
}

func TestLoadHumanEvalShared(t *testing.T) {
	dir := sharedHumanEvalDir(t)
	want := map[HumanEvalSet]int{HumanEvalSingleLine: 1033, HumanEvalMultiLine: 5815, HumanEvalRandomSpan: 1640, HumanEvalRandomSpanLight: 164}
	wantBlankSuffix := map[HumanEvalSet]int{HumanEvalSingleLine: 164, HumanEvalMultiLine: 1033}
	total, emptyMiddle := 0, 0
	for set, n := range want {
		tasks, err := LoadHumanEval(filepath.Join(dir, set.FileName()), set)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != n {
			t.Errorf("%s: %d tasks, want %d", set, len(tasks), n)
		}
		blank := 0
		for _, task := range tasks {
			if task.Benchmark != string(set) || task.Level != set.Level() || task.Exec.Kind != evaluator.ExecProgram {
				t.Fatalf("%s: bad task %+v", set, task)
			}
			if !strings.HasSuffix(task.Exec.Epilogue, ")") || !strings.Contains(task.Exec.Epilogue, "\ncheck(") {
				t.Fatalf("%s: epilogue %q", task.ID, task.Exec.Epilogue)
			}
			if strings.TrimSpace(task.Suffix) == "" {
				blank++
			}
			if task.Reference == "" {
				emptyMiddle++
			}
		}
		if w, ok := wantBlankSuffix[set]; ok && blank != w {
			t.Errorf("%s: %d tasks with a blank suffix, want %d", set, blank, w)
		}
		total += len(tasks)
	}
	if total != 8652 || emptyMiddle != 14 {
		t.Errorf("total %d (want 8652), empty middles %d (want 14)", total, emptyMiddle)
	}
}

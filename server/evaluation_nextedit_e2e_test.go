package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/internal/editregion"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// TestEvaluateNextEdit grades a next-edit task through the real server, its
// sandbox and the tiny model: the reference edit passes and the edit left
// out (the region unchanged) fails in the repository's pytest run, and a
// sample the server generates goes through the edit-prediction path — its
// completion is the region with the edit a PredictEdit of the same file,
// cursor and recent edits predicts (greedy, the same prompt: the task's
// region is the one Zeta's rule places at the cursor), graded in the
// sandbox with a verdict; the summary has the next-edit level.
func TestEvaluateNextEdit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := filepath.Join(root, "calc")
	workspace := "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
	files := map[string]string{
		"calc.py":      "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
		"test_calc.py": "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := servertest.StartEval(t, root)
	h := dial(t, srv.Server)
	cursor := strings.Index(workspace, "a + b\n\n\n") + len("a + b") // after the last edit
	region, _ := editregion.Zeta.Around(workspace, cursor)
	edits := []*infillv1.RecentEdit{{Path: "test_calc.py", Diff: "@@ -5,0 +6,4 @@\n+\n+\n+def test_sub():\n+    assert sub(5, 3) == 2\n"}}
	oldRegion := workspace[region.Start:region.End]
	reference := oldRegion[:strings.LastIndex(oldRegion, "a + b")] + "a - b" + oldRegion[strings.LastIndex(oldRegion, "a + b")+len("a + b"):]
	task := &infillv1.EvalTask{TaskId: "next-edit/calc:1", Benchmark: "nextedit", Level: infillv1.Level_LEVEL_NEXT_EDIT,
		Language: "python", Path: "calc.py", RepoName: "calc",
		Prefix: workspace[:region.Start], Suffix: workspace[region.End:], Reference: reference,
		NextEdit: &infillv1.NextEditTask{Region: oldRegion, RecentEdits: edits, CursorOffset: uint64(cursor)},
		Execution: &infillv1.EvalTask_Repository{Repository: &infillv1.RepositoryExecution{Repository: repo,
			Test: &infillv1.TestSpec{Kind: infillv1.TestKind_TEST_KIND_PYTEST, Args: []string{"-q"}, ExpectedTests: 2}}}}
	gen := &infillv1.GenerationOptions{MaxTokens: 24}
	results, summary := evaluateAll(t, h.eval, []*infillv1.EvaluateRequest{
		{Task: task, Completions: []string{reference, oldRegion}},
		{Task: task, Generation: gen},
	})
	if len(results) != 3 {
		t.Fatalf("%d results", len(results))
	}
	direct, err := h.client.PredictEdit(context.Background(), &infillv1.PredictEditRequest{
		Repository:  &infillv1.Repository{Name: "calc", Files: []*infillv1.File{{Path: "calc.py", Language: "python", Content: proto.String(workspace)}}},
		Cursor:      &infillv1.Cursor{Path: "calc.py", Offset: uint64(cursor), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		RecentEdits: edits, Generation: &infillv1.GenerationOptions{MaxTokens: 24, Seed: proto.Int64(0), Candidates: 1},
		RequestClass: infillv1.RequestClass_REQUEST_CLASS_EVALUATION,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := direct.GetEditableRegion(); r.GetStartOffset() != uint64(region.Start) || r.GetEndOffset() != uint64(region.End) {
		t.Fatalf("PredictEdit's region %v, the task's [%d, %d)", r, region.Start, region.End)
	}
	predicted := oldRegion
	if e := direct.GetEdit(); e != nil {
		s, end := int(e.GetRange().GetStartOffset())-region.Start, int(e.GetRange().GetEndOffset())-region.Start
		predicted = oldRegion[:s] + e.GetText() + oldRegion[end:]
	}
	for _, r := range results {
		if r.Level != infillv1.Level_LEVEL_NEXT_EDIT {
			t.Errorf("sample %d: level %v", r.Sample, r.Level)
		}
		switch r.Sample {
		case 0:
			if r.Verdict != infillv1.Verdict_VERDICT_PASSED || !r.ExactMatch {
				t.Errorf("the reference edit: %v %s %s", r.Verdict, r.Reason, r.Error)
			}
		case 1:
			if r.Verdict != infillv1.Verdict_VERDICT_FAILED || r.ExactMatch {
				t.Errorf("the edit left out: %v %s %s", r.Verdict, r.Reason, r.Error)
			}
		case 2:
			if r.Completion != predicted {
				t.Errorf("generated completion %q, PredictEdit's edit makes %q (no edit: %q)", r.Completion, predicted, direct.GetNoEditReason())
			}
			if r.Verdict != infillv1.Verdict_VERDICT_PASSED && r.Verdict != infillv1.Verdict_VERDICT_FAILED || r.Generation.AsDuration() <= 0 {
				t.Errorf("generated sample: %v %s %s, generation %v", r.Verdict, r.Reason, r.Error, r.Generation.AsDuration())
			}
		}
	}
	found := false
	for _, g := range summary.GetByLevel() {
		found = found || g.GetLevel() == infillv1.Level_LEVEL_NEXT_EDIT && g.GetSamples() == 3
	}
	if !found {
		t.Errorf("no next-edit level of 3 samples in the summary: %v", summary.GetByLevel())
	}
}

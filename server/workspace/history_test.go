package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file changed on disk is a recent edit: its diff, oldest first, at
// most HistoryEdits of them; created files, files deleted and diffs over
// HistoryDiffBytes are not; the first read records nothing.
func TestRecentEdits(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.py": "x = 1\ny = 2\n", "b.py": "z = 3\n"})
	cfg := testConfig()
	cfg.HistoryEdits, cfg.HistoryDiffBytes = 2, 200
	w := open(t, root, cfg)
	if got := w.RecentEdits(); len(got) != 0 {
		t.Fatalf("after the first read: %v", got)
	}
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, w, rel, has(rel, content))
	}
	write("a.py", "x = 10\ny = 2\n")
	write("new.py", "created\n")
	write("b.py", "z = 30\n")
	write("a.py", strings.Repeat("long line\n", 40)) // a diff over 200 bytes
	if err := os.Remove(filepath.Join(root, "b.py")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "b.py gone", hasNot("b.py"))
	write("a.py", strings.Repeat("long line\n", 39)+"last line\n")
	got := w.RecentEdits()
	if len(got) != 2 || got[0].Path != "b.py" || got[1].Path != "a.py" || got[0].Time.After(got[1].Time) ||
		!strings.HasSuffix(got[1].Diff, "-long line\n+last line\n") {
		t.Fatalf("recent edits %+v", got)
	}
	if d := got[0].Diff; !strings.Contains(d, "--- a/b.py\n+++ b/b.py\n@@") || !strings.Contains(d, "-z = 3\n+z = 30\n") {
		t.Errorf("b.py's diff %q", d)
	}
}

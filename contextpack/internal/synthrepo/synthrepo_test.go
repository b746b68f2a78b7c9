package synthrepo

import "testing"

func TestGenerate(t *testing.T) {
	fs := Generate(Options{})
	if len(fs) != 2000 {
		t.Fatalf("%d files", len(fs))
	}
	total := 0
	seen := map[string]bool{}
	for _, f := range fs {
		total += len(f.Content)
		if seen[f.Path] {
			t.Fatalf("duplicate path %s", f.Path)
		}
		seen[f.Path] = true
	}
	if total < 18e6 || total > 24e6 {
		t.Fatalf("total %d bytes, want about 20 MB", total)
	}
	again := Generate(Options{})
	for i := range fs {
		if fs[i] != again[i] {
			t.Fatal("not deterministic")
		}
	}
	t.Logf("%d files, %.1f MB", len(fs), float64(total)/1e6)
}

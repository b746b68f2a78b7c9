package assemble

import (
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

func TestNearDuplicate(t *testing.T) {
	tc := func(pairs ...int) []syntax.TermCount {
		var out []syntax.TermCount
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, syntax.TermCount{Term: syntax.Term(pairs[i]), Count: uint16(pairs[i+1])})
		}
		return out
	}
	if !nearDuplicate(tc(1, 5, 2, 3, 3, 2), tc(1, 5, 2, 3, 3, 2)) {
		t.Error("identical windows are not near-duplicates")
	}
	// 1:5 and 2:3 shared (8), 3:2 and 4:1 apart: 8/11 < 0.8.
	if nearDuplicate(tc(1, 5, 2, 3, 3, 2), tc(1, 5, 2, 3, 4, 1)) {
		t.Error("8/11 similar windows reported as near-duplicates")
	}
	if !nearDuplicate(tc(1, 10, 2, 5, 3, 2), tc(1, 10, 2, 5, 3, 1)) { // 16/17
		t.Error("16/17 similar windows not reported as near-duplicates")
	}
}

func TestIsTestPath(t *testing.T) {
	for p, want := range map[string]bool{
		"pkg/store_test.go": true, "tests/test_x.py": true, "lib/test_util.py": true, "src/conftest.py": true,
		"src/a.test.ts": true, "src/a.spec.tsx": true, "src/__tests__/a.ts": true,
		"src/test/java/a/FooTest.java": true, "core/FooIT.java": true, "src/ring_unittest.cc": true,
		"pkg/store.go": false, "src/contest.py": false, "src/attest/x.go": false, "src/latest.ts": false,
	} {
		if got := isTestPath(p); got != want {
			t.Errorf("isTestPath(%q) = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]bool{"README.md": true, "docs/guide.rst": true, "LICENSE": true, "notes.txt": true, "main.go": false} {
		if got := isProsePath(p); got != want {
			t.Errorf("isProsePath(%q) = %v, want %v", p, got, want)
		}
	}
}

package contextpack

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// contextpack's packages import one way only: syntax ← index ← assemble ←
// the façade (the façade may use any of them; tokenizer is a leaf any may
// use). The memos live with the state (the façade's record, the index),
// the algorithm in assemble; an import against the arrows would let them
// mix again. Every package under internal/ must be listed here, so a new
// one states its arrows.
func TestPackageArrows(t *testing.T) {
	t.Parallel()
	const module = "github.com/infill-dev/infill/"
	allowed := map[string][]string{
		"contextpack":                     {"contextpack/internal/assemble", "contextpack/internal/index", "contextpack/internal/syntax", "contextpack/tokenizer", "internal/logctx"},
		"contextpack/internal/assemble":   {"contextpack/internal/index", "contextpack/internal/syntax", "contextpack/tokenizer"},
		"contextpack/internal/index":      {"contextpack/internal/syntax", "contextpack/tokenizer"},
		"contextpack/internal/syntax":     {"contextpack/tokenizer"},
		"contextpack/internal/synthrepo":  nil,
		"contextpack/internal/testcorpus": {"contextpack/tokenizer"},
		"contextpack/tokenizer":           nil,
	}
	dirs, err := filepath.Glob("internal/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, ok := allowed["contextpack/"+filepath.ToSlash(d)]; !ok {
			t.Errorf("contextpack/%s: not in this test's table; say which packages it may import", d)
		}
	}
	for pkg, ok := range allowed {
		for _, dep := range moduleDeps(t, module, pkg) {
			if !slices.Contains(ok, dep) {
				t.Errorf("%s depends on %s, against the arrows (allowed: %v)", pkg, dep, ok)
			}
		}
	}
}

// moduleDeps lists the packages of this module that pkg (a path relative
// to the module) imports directly or not, without tests.
func moduleDeps(t *testing.T, module, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		bp, err := build.ImportDir(filepath.Join("..", filepath.FromSlash(p)), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if ok && !seen[rel] {
				seen[rel] = true
				visit(rel)
			}
		}
	}
	visit(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

package masking

import (
	"reflect"
	"testing"

	"github.com/infill-dev/infill/evaluator"
)

// TestDefaultNodeTest checks that a test given in Options is the one a
// JavaScript or TypeScript repository gets (the runner's own choice is
// evaluator's TestNodeDetect).
func TestDefaultNodeTest(t *testing.T) {
	given := evaluator.TestSpec{Kind: evaluator.TestNode, Tests: []string{"t.js"}}
	if got := javascriptLanguage.defaultTest(t.TempDir(), Options{Test: &given}); !reflect.DeepEqual(got, given) {
		t.Errorf("Options.Test: got %+v", got)
	}
	if got := typescriptLanguage.defaultTest(t.TempDir(), Options{}); !reflect.DeepEqual(got, evaluator.TestSpec{Kind: evaluator.TestNode}) {
		t.Errorf("default: got %+v", got)
	}
}

// TestScriptSource checks which files are masked.
func TestScriptSource(t *testing.T) {
	for rel, want := range map[string]bool{
		"index.js": true, "lib/a.mjs": true, "src/b.cjs": true, "src/v.jsx": true,
		"src/a.ts":  false, // not JavaScript
		"test/a.js": false, "src/__tests__/a.js": false, "src/a.test.js": false, "src/a.spec.mjs": false, "a_test.js": false,
		"node_modules/x/a.js": false, "dist/a.js": false, "build/a.js": false, "coverage/a.js": false, ".hidden/a.js": false,
		"src/a.min.js": false, "eslint.config.js": false, "vitest.config.mjs": false, "webpack.config.js": false,
		"src/generated/a.js": false, "src/contest.js": true, "src/latest.js": true,
	} {
		if got := scriptSource(rel, evaluator.JavaScriptExtensions); got != want {
			t.Errorf("javascript %s: %v, want %v", rel, got, want)
		}
	}
	for rel, want := range map[string]bool{
		"src/a.ts": true, "src/a.tsx": true, "src/a.mts": true, "src/a.cts": true,
		"src/a.d.ts": false, "src/a.d.mts": false, "src/a.spec.ts": false, "src/a.test.tsx": false, "src/a.js": false,
	} {
		if got := scriptSource(rel, evaluator.TypeScriptExtensions); got != want {
			t.Errorf("typescript %s: %v, want %v", rel, got, want)
		}
	}
}

package masking

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/infill-dev/infill/evaluator"
)

// TestDefaultNodeTest checks the test a JavaScript or TypeScript
// repository gets by default, from its package.json and files.
func TestDefaultNodeTest(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  evaluator.TestSpec
	}{
		{"node --test, JavaScript: node discovers the files",
			map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`, "test/a.test.js": "", "lib/a.js": ""},
			evaluator.TestSpec{Kind: evaluator.TestNode}},
		{"vitest in the test script",
			map[string]string{"package.json": `{"scripts": {"test": "vitest run && tsc"}, "devDependencies": {"vitest": "^2"}}`, "src/a.test.ts": ""},
			evaluator.TestSpec{Kind: evaluator.TestNode, Command: []string{"vitest"}}},
		{"vitest the only runner",
			map[string]string{"package.json": `{"scripts": {"test": "npm run test:vi"}, "devDependencies": {"vitest": "^4"}}`},
			evaluator.TestSpec{Kind: evaluator.TestNode, Command: []string{"vitest"}}},
		{"TypeScript through the script's loader: the files listed",
			map[string]string{"package.json": `{"scripts": {"test": "node --import=tsx --test 'test/*.test.ts'"}}`,
				"test/b.test.ts": "", "test/a.test.ts": "", "src/a.ts": "", "src/types.d.ts": "", "node_modules/x/test/c.test.ts": ""},
			evaluator.TestSpec{Kind: evaluator.TestNode, Args: []string{"--import", "tsx"}, Tests: []string{"test/a.test.ts", "test/b.test.ts"}}},
		{"TypeScript, tsx installed, no loader named",
			map[string]string{"package.json": `{}`, "node_modules/tsx/package.json": "{}", "src/q.spec.ts": "", "src/q.test.ts": ""},
			evaluator.TestSpec{Kind: evaluator.TestNode, Args: []string{"--import", "tsx"}, Tests: []string{"src/q.test.ts"}}},
		{"no package.json", map[string]string{"a.js": ""}, evaluator.TestSpec{Kind: evaluator.TestNode}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := defaultNodeTest(dir, Options{}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	given := evaluator.TestSpec{Kind: evaluator.TestNode, Tests: []string{"t.js"}}
	if got := defaultNodeTest(t.TempDir(), Options{Test: &given}); !reflect.DeepEqual(got, given) {
		t.Errorf("Options.Test: got %+v", got)
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
		if got := scriptSource(rel, jsExtensions); got != want {
			t.Errorf("javascript %s: %v, want %v", rel, got, want)
		}
	}
	for rel, want := range map[string]bool{
		"src/a.ts": true, "src/a.tsx": true, "src/a.mts": true, "src/a.cts": true,
		"src/a.d.ts": false, "src/a.d.mts": false, "src/a.spec.ts": false, "src/a.test.tsx": false, "src/a.js": false,
	} {
		if got := scriptSource(rel, tsExtensions); got != want {
			t.Errorf("typescript %s: %v, want %v", rel, got, want)
		}
	}
}

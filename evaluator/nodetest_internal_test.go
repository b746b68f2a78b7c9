package evaluator

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNodeDetect checks the test a JavaScript or TypeScript repository
// gets by default, from its package.json and files.
func TestNodeDetect(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  TestSpec
	}{
		{"node --test, JavaScript: node discovers the files",
			map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`, "test/a.test.js": "", "lib/a.js": ""},
			TestSpec{Kind: TestNode}},
		{"vitest in the test script",
			map[string]string{"package.json": `{"scripts": {"test": "vitest run && tsc"}, "devDependencies": {"vitest": "^2"}}`, "src/a.test.ts": ""},
			TestSpec{Kind: TestNode, Command: []string{"vitest"}}},
		{"vitest the only runner",
			map[string]string{"package.json": `{"scripts": {"test": "npm run test:vi"}, "devDependencies": {"vitest": "^4"}}`},
			TestSpec{Kind: TestNode, Command: []string{"vitest"}}},
		{"TypeScript through the script's loader: the files listed",
			map[string]string{"package.json": `{"scripts": {"test": "node --import=tsx --test 'test/*.test.ts'"}}`,
				"test/b.test.ts": "", "test/a.test.ts": "", "src/a.ts": "", "src/types.d.ts": "", "node_modules/x/test/c.test.ts": ""},
			TestSpec{Kind: TestNode, Args: []string{"--import", "tsx"}, Tests: []string{"test/a.test.ts", "test/b.test.ts"}}},
		{"TypeScript, tsx installed, no loader named",
			map[string]string{"package.json": `{}`, "node_modules/tsx/package.json": "{}", "src/q.spec.ts": "", "src/q.test.ts": ""},
			TestSpec{Kind: TestNode, Args: []string{"--import", "tsx"}, Tests: []string{"src/q.test.ts"}}},
		{"no package.json", map[string]string{"a.js": ""}, TestSpec{Kind: TestNode}},
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
			if got, ok := (nodeRunner{}).Detect(dir); !ok || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

package cli

import (
	"path"
	"strings"

	"github.com/infill-dev/infill/evaluator"
)

// scriptExtensions are the test files' extensions --node-test and --vitest
// tell from options.
var scriptExtensions = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".jsx": true,
	".ts": true, ".mts": true, ".cts": true, ".tsx": true}

// nodeTestSpec is the test of --node-test ARGS or --vitest ARGS: the
// arguments that are JavaScript or TypeScript files (not options) are the
// test files, the others the runner's options.
func nodeTestSpec(nodeTest, vitest string, expected int) *evaluator.TestSpec {
	t := &evaluator.TestSpec{Kind: evaluator.TestNode, ExpectedTests: expected}
	args := nodeTest
	if vitest != "" {
		t.Command, args = []string{evaluator.NodeRunnerVitest}, vitest
	}
	for _, a := range strings.Fields(args) {
		if !strings.HasPrefix(a, "-") && scriptExtensions[path.Ext(a)] {
			t.Tests = append(t.Tests, a)
		} else {
			t.Args = append(t.Args, a)
		}
	}
	return t
}

// languageTitle is a language's name in prose.
func languageTitle(name string) string {
	switch name {
	case "", "python":
		return "Python"
	case "javascript":
		return "JavaScript"
	case "typescript":
		return "TypeScript"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

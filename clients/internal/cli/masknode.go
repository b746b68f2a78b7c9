package cli

import (
	"strings"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/masking"
)

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
		if !strings.HasPrefix(a, "-") && masking.IsScriptFile(a) {
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

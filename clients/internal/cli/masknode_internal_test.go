package cli

import (
	"slices"
	"testing"

	"github.com/infill-dev/infill/evaluator"
)

// TestNodeTestSpec checks that --node-test and --vitest split their
// arguments into the runner's options and the test files.
func TestNodeTestSpec(t *testing.T) {
	t.Parallel()
	n := nodeTestSpec("--import tsx test/a.test.ts lib/b.test.mjs -x", "", 3)
	if n.Kind != evaluator.TestNode || n.NodeRunner() != evaluator.NodeRunnerBuiltin || n.ExpectedTests != 3 {
		t.Errorf("--node-test: %+v", n)
	}
	if want := []string{"test/a.test.ts", "lib/b.test.mjs"}; !slices.Equal(n.Tests, want) {
		t.Errorf("--node-test files %q, want %q", n.Tests, want)
	}
	if want := []string{"--import", "tsx", "-x"}; !slices.Equal(n.Args, want) {
		t.Errorf("--node-test options %q, want %q", n.Args, want)
	}
	v := nodeTestSpec("", "--reporter=dot src/x.spec.tsx README.md", 0)
	if v.NodeRunner() != evaluator.NodeRunnerVitest || !slices.Equal(v.Tests, []string{"src/x.spec.tsx"}) ||
		!slices.Equal(v.Args, []string{"--reporter=dot", "README.md"}) {
		t.Errorf("--vitest: %+v", v)
	}
}

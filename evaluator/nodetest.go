package evaluator

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Node test runners (TestNode). TestSpec.Command names the runner:
//
//   - empty: node's built-in runner, `node [Args] --test [Tests]`: Args
//     are node options ("--import", "tsx" to load TypeScript through the
//     repository's own tsx), Tests the test files (none: node's default
//     discovery);
//   - ["vitest", options...]: the repository's vitest from its
//     node_modules, `vitest run [options] [Args] [Tests]`.
//
// Either way the repository's node_modules, when present, is bound
// read-only into the private copy, and the runner's report gives the
// counts the verdict is judged from.
const (
	NodeRunnerBuiltin = "node"
	NodeRunnerVitest  = "vitest"
)

// NodeRunner is the runner t runs: NodeRunnerBuiltin or NodeRunnerVitest.
func (t *TestSpec) NodeRunner() string {
	if len(t.Command) == 0 || t.Command[0] == NodeRunnerBuiltin {
		return NodeRunnerBuiltin
	}
	return t.Command[0]
}

// validateNode checks a TestNode spec.
func (t *TestSpec) validateNode() error {
	switch r := t.NodeRunner(); r {
	case NodeRunnerBuiltin:
		if len(t.Command) > 1 {
			return fmt.Errorf("node test command %q: node's runner takes its options in args", t.Command)
		}
	case NodeRunnerVitest:
	default:
		return fmt.Errorf("unknown node test runner %q (known: %s, %s)", r, NodeRunnerBuiltin, NodeRunnerVitest)
	}
	for _, f := range t.Tests {
		if f == "" || !filepath.IsLocal(filepath.FromSlash(f)) {
			return fmt.Errorf("test file %q must be a relative path inside the repository", f)
		}
	}
	return nil
}

// nodeSpec completes spec, a repository run, for the TestNode spec ts.
func nodeSpec(spec *sandbox.Spec, repoDir string, ts *TestSpec) error {
	spec.Environment = sandbox.NodeEnvironment(repoDir)
	switch ts.NodeRunner() {
	case NodeRunnerVitest:
		entry, err := VitestEntry(repoDir)
		if err != nil {
			return err
		}
		spec.Mode, spec.Target = sandbox.ModeVitest, entry
		spec.Args = slices.Concat(ts.Command[1:], ts.Args, ts.Tests)
	default:
		spec.Mode = sandbox.ModeNode
		spec.Args = slices.Concat(ts.Args, ts.Tests)
	}
	return nil
}

// VitestEntry is vitest's command-line script in the repository's
// node_modules (its package.json's bin), relative to the repository. An
// error wraps sandbox.ErrEnvironment when vitest is not installed there.
func VitestEntry(repoDir string) (string, error) {
	dir := filepath.Join(repoDir, "node_modules", "vitest")
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("%w: vitest is not installed in %s/node_modules (install the repository's dependencies first: npm ci)", sandbox.ErrEnvironment, repoDir)
	}
	var pkg struct {
		Bin json.RawMessage `json:"bin"`
	}
	_ = json.Unmarshal(data, &pkg)
	bin := "vitest.mjs"
	var one string
	var many map[string]string
	switch {
	case json.Unmarshal(pkg.Bin, &one) == nil && one != "":
		bin = one
	case json.Unmarshal(pkg.Bin, &many) == nil && many["vitest"] != "":
		bin = many["vitest"]
	}
	rel := path.Join("node_modules/vitest", filepath.ToSlash(bin))
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("%w: vitest's bin %q leaves its package", sandbox.ErrEnvironment, bin)
	}
	if _, err := os.Stat(filepath.Join(repoDir, filepath.FromSlash(rel))); err != nil {
		return "", fmt.Errorf("%w: vitest's entry script: %v", sandbox.ErrEnvironment, err)
	}
	return rel, nil
}

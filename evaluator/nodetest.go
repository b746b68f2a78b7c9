package evaluator

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// nodeRunner runs JavaScript and TypeScript repositories' tests
// (TestNode). TestSpec.Command names the runner:
//
//   - empty: node's built-in runner, `node [Args] --test [Tests]`: Args
//     are node options ("--import", "tsx" to load TypeScript through the
//     repository's own tsx), Tests the test files (none: node's default
//     discovery);
//   - ["vitest", options...]: the repository's vitest from its
//     node_modules, `vitest run [options] [Args] [Tests]`.
//
// Either way node (Toolchains.Node) runs with a reporter of infill's
// loaded into the test runner's own process: it reads the run's nonce from
// stdin before any test runs, says START, and at the end reports the tests
// that passed, failed, errored and were skipped and the first failure on
// the status descriptor. The tests themselves run in child processes
// (node --test runs each file in its own; vitest in its worker pool). The
// pass signal is that report; the verdict is judged from its counts, never
// from the exit status alone. The repository's node_modules, when present,
// is bound read-only into the private copy (NodeEnvironment). With node's
// runner, the test files that reach each span of a JavaScript repository
// are found once (nodeSelector), when asked for.
type nodeRunner struct{}

// The node test runners TestSpec.Command names.
const (
	NodeRunnerBuiltin = "node"
	NodeRunnerVitest  = "vitest"
)

// JavaScriptExtensions and TypeScriptExtensions are the source files of
// the two languages node's runners run.
var (
	JavaScriptExtensions = []string{".js", ".mjs", ".cjs", ".jsx"}
	TypeScriptExtensions = []string{".ts", ".mts", ".cts", ".tsx"}
)

// IsScriptFile reports a file name with a JavaScript or TypeScript
// extension.
func IsScriptFile(name string) bool {
	ext := path.Ext(name)
	return slices.Contains(JavaScriptExtensions, ext) || slices.Contains(TypeScriptExtensions, ext)
}

//go:embed node_reporter.mjs
var nodeReporterMjs string

//go:embed vitest_reporter.mjs
var vitestReporterMjs string

// nodeAddressSpace is RLIMIT_AS for JavaScript runs at the least. V8
// reserves address space it never writes: about 10 GiB per WebAssembly
// memory for its guard regions (tsx and vitest's esbuild and
// es-module-lexer instantiate some), which a few-GiB limit refuses ("Cannot
// allocate Wasm memory"). What a run writes stays bounded by RLIMIT_DATA
// (the sandbox's memory limit), which counts those pages once they are
// writable.
const nodeAddressSpace = 1 << 40

func (nodeRunner) checkEntry(string, TestSpec) error { return nil }

// Flags: --node-test ARGS, --vitest[=ARGS] (NodeTestSpec).
func (nodeRunner) Flags() []TestFlag {
	return []TestFlag{
		{Name: "node-test", Usage: "JavaScript/TypeScript: run node's built-in test runner with these space-separated `ARGS`: node options (--import tsx), then test files",
			Expected: true, Spec: func(v string, n int) TestSpec { return *NodeTestSpec(v, "", n) }},
		{Name: "vitest", Usage: "JavaScript/TypeScript: run the repository's vitest (from its node_modules); --vitest=\"ARGS\" adds these space-separated `ARGS` (options, test files)",
			NoValue: " ", Expected: true, Spec: func(v string, n int) TestSpec { return *NodeTestSpec("", v, n) }},
	}
}

func (nodeRunner) Kind() TestKind { return TestNode }

// NodeRunner is the runner t runs: NodeRunnerBuiltin or NodeRunnerVitest.
func (t *TestSpec) NodeRunner() string {
	if len(t.Command) == 0 || t.Command[0] == NodeRunnerBuiltin {
		return NodeRunnerBuiltin
	}
	return t.Command[0]
}

func (nodeRunner) validate(t *TestSpec) error {
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

func (nodeRunner) Counts() bool                       { return true }
func (nodeRunner) Unit(string) (string, bool)         { return "", false }
func (nodeRunner) selector() testSelector             { return nodeSelector{} }
func (nodeRunner) suspect(out *sandbox.Result) string { return environmentSuspect(out) }
func (nodeRunner) unmodifiedFailure(imp string) error { return pythonUnmodifiedFailure(imp) }

func (nodeRunner) Fix(string, TestSpec, *Result) (TestSpec, string, bool) {
	return TestSpec{}, "", false
}

// Prepare does nothing yet: the repository's dependencies are installed by
// its owner (npm ci), which the suite builder does here.
func (nodeRunner) Prepare(context.Context, string, Toolchains) ([]string, error) { return nil, nil }

func (nodeRunner) judge(ts *TestSpec) testRun {
	return testRun{name: ts.NodeRunner(), counts: true, read: readPython(false, true)}
}

func (nodeRunner) plan(p *planner, t *Task, file string) (*testRun, error) {
	node := p.cfg.Toolchains.Node
	if fi, err := os.Stat(node); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("%w: node not found at %s (install Node.js 20 or later, or configure its path)", sandbox.ErrEnvironment, node)
	}
	run := p.repositoryRun(nodeRunner{}, t, file)
	spec := &run.spec
	ts := t.Exec.Test
	spec.Environment = NodeEnvironment(t.Exec.RepoDir)
	if !sandbox.SystemDir(node) {
		// Its installation: node and what it loads beside it (the sandbox
		// binds it for its user, or says why it cannot).
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: filepath.Dir(filepath.Dir(node))})
	}
	spec.Reports, spec.AddressSpace = true, nodeAddressSpace
	spec.Env = map[string]string{"CI": "true", "NO_COLOR": "1", "FORCE_COLOR": "0", "NODE_ENV": "test"}
	switch ts.NodeRunner() {
	case NodeRunnerVitest:
		entry, err := VitestEntry(t.Exec.RepoDir)
		if err != nil {
			return nil, err
		}
		spec.RunnerFiles = map[string]string{"vitest_reporter.mjs": vitestReporterMjs}
		spec.Command = append([]string{node, entry, "run", "--no-cache", "--reporter=default",
			"--reporter=" + sandbox.RunnerDir + "/vitest_reporter.mjs"}, slices.Concat(ts.Command[1:], ts.Args, ts.Tests)...)
	default:
		spec.RunnerFiles = map[string]string{"node_reporter.mjs": nodeReporterMjs}
		spec.Command = nodeArgv(node, slices.Concat(ts.Args, ts.Tests))
	}
	return run, nil
}

// nodeArgv is the command line of node's built-in runner with infill's
// reporter (and the spec reporter on stdout for people): node, then args
// (node options such as "--import tsx", then test files) with --test
// before the files: `node [options] --test [files]`. No files: node's own
// discovery in the working directory.
func nodeArgv(node string, args []string) []string {
	argv := []string{node,
		"--test-reporter=spec", "--test-reporter-destination=stdout",
		"--test-reporter=" + sandbox.RunnerDir + "/node_reporter.mjs", "--test-reporter-destination=/dev/null"}
	// node options come before --test, the files after it; args holds both
	// in that order, options starting with "-" (and an option's value right
	// after an option that takes one).
	i := 0
	for i < len(args) && len(args[i]) > 0 && args[i][0] == '-' {
		if nodeOptionTakesValue[args[i]] {
			i++
		}
		i++
	}
	i = min(i, len(args))
	argv = append(argv, args[:i]...)
	argv = append(argv, "--test")
	return append(argv, args[i:]...)
}

// nodeOptionTakesValue are node options whose value may follow as the next
// argument.
var nodeOptionTakesValue = map[string]bool{
	"--import": true, "--loader": true, "--experimental-loader": true, "-r": true, "--require": true,
	"--test-name-pattern": true, "--test-concurrency": true, "--test-timeout": true, "--conditions": true, "-C": true,
	"--test-skip-pattern": true, "--env-file": true, "--stack-size": true,
}

// NodeEnvironment is the environment of a JavaScript repository's tests:
// its node_modules, when it has one, bound read-only into the private copy
// instead of being copied (the copy then costs only the repository's own
// files; the completion's file stays private). nil when the repository has
// no node_modules.
func NodeEnvironment(repoDir string) *sandbox.Environment {
	nm := filepath.Join(repoDir, "node_modules")
	real, err := filepath.EvalSymlinks(nm)
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil
	}
	return &sandbox.Environment{
		Name:   "node_modules",
		Mounts: []sandbox.Mount{{Source: real, Target: "node_modules"}},
		Skip:   []string{"node_modules"},
	}
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

// NodeTestSpec is the test of the command-line spellings --node-test ARGS
// (vitest empty) or --vitest ARGS: the arguments that are JavaScript or
// TypeScript files (not options) are the test files, the others the
// runner's options.
func NodeTestSpec(nodeTest, vitest string, expected int) *TestSpec {
	t := &TestSpec{Kind: TestNode, ExpectedTests: expected}
	args := nodeTest
	if vitest != "" {
		t.Command, args = []string{NodeRunnerVitest}, vitest
	}
	for _, a := range strings.Fields(args) {
		if !strings.HasPrefix(a, "-") && IsScriptFile(a) {
			t.Tests = append(t.Tests, a)
		} else {
			t.Args = append(t.Args, a)
		}
	}
	return t
}

// packageJSON is what Detect reads of a package.json.
type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	DevDependencies map[string]string `json:"devDependencies"`
	Dependencies    map[string]string `json:"dependencies"`
}

// nodeLoaderOption finds a loader option in a test script: --import X,
// --loader X, --require X, -r X (or their = forms).
var nodeLoaderOption = regexp.MustCompile(`(?:^|\s)(--import|--loader|--experimental-loader|--require|-r)(?:=|\s+)(\S+)`)

// Detect is the test command of a JavaScript or TypeScript repository:
// vitest when package.json's test script runs it (or vitest is its only
// test dependency), else node's built-in runner on the repository's test
// files, with the loader options the test script gives node (--import
// tsx) — for TypeScript test files without one, --import tsx when tsx is
// installed.
func (nodeRunner) Detect(repoDir string) (TestSpec, bool) {
	var pkg packageJSON
	if data, err := os.ReadFile(filepath.Join(repoDir, "package.json")); err == nil {
		_ = json.Unmarshal(data, &pkg)
	}
	script := pkg.Scripts["test"]
	if strings.Contains(script, "vitest") || !strings.Contains(script, "node") && pkg.DevDependencies["vitest"] != "" {
		return TestSpec{Kind: TestNode, Command: []string{NodeRunnerVitest}}, true
	}
	t := TestSpec{Kind: TestNode}
	for _, m := range nodeLoaderOption.FindAllStringSubmatch(script, -1) {
		t.Args = append(t.Args, m[1], strings.Trim(m[2], `"'`))
	}
	files := nodeTestFiles(repoDir)
	ts := slices.ContainsFunc(files, func(f string) bool { return slices.Contains(TypeScriptExtensions, path.Ext(f)) })
	if ts {
		if len(t.Args) == 0 {
			if _, err := os.Stat(filepath.Join(repoDir, "node_modules", "tsx")); err == nil {
				t.Args = []string{"--import", "tsx"}
			}
		}
		// node discovers only JavaScript test files itself.
		t.Tests = files
	}
	return t, true
}

// nodeTestFile matches the test files node's runner discovers by itself
// (JavaScript) and their TypeScript equivalents.
var nodeTestFile = regexp.MustCompile(`^(.*[.\-_])?test\.[cm]?[jt]sx?$|^test-.*\.[cm]?[jt]sx?$|(^|/)test/.*\.[cm]?[jt]sx?$`)

// nodeTestFiles lists the repository's test files in the form node's
// runner takes them (slash-separated, relative), node_modules, __pycache__
// and hidden directories skipped, sorted.
func nodeTestFiles(repoDir string) []string {
	var out []string
	_ = filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(repoDir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, ".") || n == "__pycache__" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		base := path.Base(rel)
		if d.Type().IsRegular() && !strings.HasSuffix(base, ".d.ts") &&
			(nodeTestFile.MatchString(base) || nodeTestFile.MatchString(rel)) {
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// Describe words a TestNode spec as a command line.
func (nodeRunner) Describe(t TestSpec) string {
	if t.NodeRunner() == NodeRunnerVitest {
		return strings.TrimSpace("vitest run " + shellJoin(slices.Concat(t.Command[1:], t.Args, t.Tests)))
	}
	return strings.TrimSpace("node " + shellJoin(t.Args) + " --test " + shellJoin(t.Tests))
}

// nodeModuleMissing matches node's and vitest's words for a module that
// cannot be found.
var nodeModuleMissing = regexp.MustCompile(`Cannot find (?:module|package) '([^']+)'|ERR_MODULE_NOT_FOUND|Failed to load url (\S+)|is not installed in`)

// Explain is for a JavaScript or TypeScript repository whose tests fail
// unmodified.
func (n nodeRunner) Explain(b *BaselineFailure) string {
	return explainRun(b, "node", nil, nodeFix(n, b))
}

func nodeFix(n nodeRunner, b *BaselineFailure) string {
	r := &b.Result
	text := r.Error + "\n" + r.Reason + "\n" + r.StderrTail + "\n" + r.StdoutTail
	switch {
	case r.Limit != "":
		return "the reason names the limit and the flag that raises it"
	case nodeModuleMissing.MatchString(text):
		return "install the repository's dependencies on the host first (npm ci, or the package manager its lockfile names): " +
			"the sandbox has no network and mounts node_modules read-only"
	case r.Failure != nil:
		return fmt.Sprintf("some tests fail on the repository as it is, here (first: %s): choose the test files that pass "+
			"with --node-test \"[node options] FILES\" or --vitest=\"[options] FILES\", or give them what they need", r.Failure.Test)
	}
	return "run the tests yourself (" + n.Describe(b.Test) + ") to see why, then choose them with --node-test or --vitest"
}

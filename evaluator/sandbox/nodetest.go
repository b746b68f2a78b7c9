package sandbox

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// JavaScript test runners. A run in one of these modes executes node
// (Config.NodePath, or Spec.Environment's Interpreter) directly, with a
// reporter of infill's loaded into the test runner's own process: it reads
// the run's nonce from stdin before any test runs, says START, and at the
// end reports the tests that passed, failed, errored and were skipped
// (Result.Tests) and the first failure (Result.Failure) on the status
// descriptor. The tests themselves run in child processes (node --test
// runs each file in its own; vitest in its worker pool). The pass signal
// is that report; the verdict is judged from its counts, never from the
// exit status alone.
//
// The values stand apart from the Python modes' so that other languages'
// modes can be added without renumbering.
const (
	// ModeNode runs node's built-in test runner: node, infill's reporter
	// (and the spec reporter on stdout for people), Spec.Args (node options
	// such as "--import tsx", then test files), and --test before the
	// files: `node [options] --test [files]`. No files: node's own
	// discovery in the working directory.
	ModeNode Mode = 20 + iota
	// ModeVitest runs vitest's command-line entry Spec.Target (a script in
	// the repository's node_modules, such as node_modules/vitest/vitest.mjs)
	// with node: `node TARGET run --no-cache --reporter=default
	// --reporter=<infill's> ARGS`, ARGS being vitest options and test
	// files. --no-cache: node_modules, where vitest keeps its results
	// cache, is read-only.
	ModeVitest
)

//go:embed node_reporter.mjs
var nodeReporterMjs []byte

//go:embed vitest_reporter.mjs
var vitestReporterMjs []byte

// DefaultNodePath is Config.NodePath's default.
const DefaultNodePath = "/usr/bin/node"

// CountsTests reports a mode whose runner reports test counts
// (Result.Tests): pytest, the JavaScript runners and go test.
func (m Mode) CountsTests() bool {
	return m == ModePytest || m == ModeNode || m == ModeVitest || m == ModeGo
}

func (m Mode) isNode() bool { return m == ModeNode || m == ModeVitest }

// nodeArgv is the command line of a ModeNode or ModeVitest run: node and
// its arguments, paths as the sandbox sees them.
func (s *Sandbox) nodeArgv(spec *Spec, cwd string) []string {
	node := s.cfg.NodePath
	if e := spec.Environment; e != nil && e.Interpreter != "" {
		node = inside(e.Interpreter, cwd)
	}
	if spec.Mode == ModeVitest {
		argv := []string{node, spec.Target, "run", "--no-cache", "--reporter=default", "--reporter=/run/infill/vitest_reporter.mjs"}
		return append(argv, spec.Args...)
	}
	argv := []string{node,
		"--test-reporter=spec", "--test-reporter-destination=stdout",
		"--test-reporter=/run/infill/node_reporter.mjs", "--test-reporter-destination=/dev/null"}
	// node options come before --test, the files after it; Args holds both
	// in that order, options starting with "-" (and an option's value right
	// after an option that takes one).
	i := 0
	for i < len(spec.Args) && len(spec.Args[i]) > 0 && spec.Args[i][0] == '-' {
		if nodeOptionTakesValue[spec.Args[i]] {
			i++
		}
		i++
	}
	i = min(i, len(spec.Args))
	argv = append(argv, spec.Args[:i]...)
	argv = append(argv, "--test")
	return append(argv, spec.Args[i:]...)
}

// nodeOptionTakesValue are node options whose value may follow as the next
// argument.
var nodeOptionTakesValue = map[string]bool{
	"--import": true, "--loader": true, "--experimental-loader": true, "-r": true, "--require": true,
	"--test-name-pattern": true, "--test-concurrency": true, "--test-timeout": true, "--conditions": true, "-C": true,
	"--test-skip-pattern": true, "--env-file": true, "--stack-size": true,
}

// nodeEnv are variables every JavaScript run gets: no colours, no
// interactive or watch mode.
func nodeEnv(m Mode) [][2]string {
	if !m.isNode() {
		return nil
	}
	return [][2]string{{"CI", "true"}, {"NO_COLOR", "1"}, {"FORCE_COLOR", "0"}, {"NODE_ENV", "test"}}
}

// checkNode reports, as ErrEnvironment, a node binary the run cannot use.
func (s *Sandbox) checkNode(spec *Spec) error {
	if !spec.Mode.isNode() || spec.Environment != nil && spec.Environment.Interpreter != "" {
		return nil
	}
	fi, err := os.Stat(s.cfg.NodePath)
	if err != nil || fi.IsDir() {
		return fmt.Errorf("%w: node not found at %s (install Node.js 20 or later, or configure its path)", ErrEnvironment, s.cfg.NodePath)
	}
	if !s.cfg.visible(s.cfg.NodePath) {
		return fmt.Errorf("%w: node %s is not under /usr or a read-only path of the sandbox", ErrEnvironment, s.cfg.NodePath)
	}
	return nil
}

// NodeEnvironment is the environment of a JavaScript repository's tests:
// its node_modules, when it has one, bound read-only into the private copy
// instead of being copied (the copy then costs only the repository's own
// files; the completion's file stays private). nil when the repository has
// no node_modules.
func NodeEnvironment(repoDir string) *Environment {
	nm := filepath.Join(repoDir, "node_modules")
	real, err := filepath.EvalSymlinks(nm)
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil
	}
	return &Environment{
		Name:   "node_modules",
		Mounts: []Mount{{Source: real, Target: "node_modules"}},
		Skip:   []string{"node_modules"},
	}
}

// nodeAddressSpace is RLIMIT_AS for JavaScript runs at the least. V8
// reserves address space it never writes: about 10 GiB per WebAssembly
// memory for its guard regions (tsx and vitest's esbuild and
// es-module-lexer instantiate some), which a few-GiB limit refuses ("Cannot
// allocate Wasm memory"). What a run writes stays bounded by RLIMIT_DATA
// (Config.MemoryBytes), which counts those pages once they are writable.
const nodeAddressSpace = 1 << 40

// nodeRlimits raises RLIMIT_AS for a JavaScript run.
func nodeRlimits(m Mode, rs []rlimit) []rlimit {
	if !m.isNode() {
		return rs
	}
	for i := range rs {
		if rs[i].prlimit == "as" {
			rs[i].soft, rs[i].hard = max(rs[i].soft, nodeAddressSpace), max(rs[i].hard, nodeAddressSpace)
		}
	}
	return rs
}

package impact

// What only the package's tests use: tracing through a Runner of their
// own, the selection of the attribution rule alone (without the shape
// check graders make: SelectShaped), and a selection checked against a
// map.

import (
	"context"
	"fmt"
)

// Command is one run of a test command in a private copy of a repository.
type Command struct {
	// Dir is the repository on the host; a Runner never changes it.
	Dir string
	// Files are written into the copy before the run, by slash-separated
	// relative path.
	Files map[string]string
	// Argv runs in the root of the copy.
	Argv []string
	// Env adds variables to the environment of the run.
	Env map[string]string
}

// Runner runs repository code in isolation (the evaluator's sandbox; never
// the host itself, since the code is untrusted).
type Runner interface {
	// Run runs cmd and returns everything it wrote to stdout, whatever its
	// exit status: tests failing on the pristine code are normal. An error
	// means there is no complete output (it could not start, it was cut
	// short, ctx ended); a Runner that keeps only the end of stdout must
	// fail when it dropped some. The map arrives on stdout as one line
	// (compressed: 103 KB of JSON for more-itertools' 736 tests).
	Run(ctx context.Context, cmd Command) (stdout []byte, err error)
}

// Command is r run with python from dir.
func (r PytestRun) Command(dir, python string) Command {
	return Command{Dir: dir, Files: r.Files, Env: r.Env, Argv: append([]string{python, "-m", "pytest"}, r.Args...)}
}

// TracePytest runs the repository's whole suite in dir once, through r,
// with python3, and returns which tests execute which lines.
func TracePytest(ctx context.Context, r Runner, dir string, cfg PytestConfig) (*Map, error) {
	return TracePytestWith(ctx, r, dir, cfg, "python3")
}

// TracePytestWith is TracePytest with the interpreter python.
func TracePytestWith(ctx context.Context, r Runner, dir string, cfg PytestConfig, python string) (*Map, error) {
	tr, err := NewPytestTrace(cfg)
	if err != nil {
		return nil, err
	}
	out, err := r.Run(ctx, tr.Run.Command(dir, python))
	if err != nil {
		return nil, fmt.Errorf("impact: trace run: %w", err)
	}
	return tr.Parse(out)
}

// Select returns the tests that execute any line of span, or reach it
// where it holds no code (see FileImpact.Anchors), in collection order,
// under the attribution rule in the package doc: every test for a span in a
// test file or over a line run at import time, none for a span no test
// reaches (a file never executed included).
func Select(m *Map, span Span) ([]TestID, error) {
	ids, _, err := selectTests(m, span, false)
	return ids, err
}

// PytestSelection returns the pytest run of just ids (from Select on m).
// It names the test files on the command line (short whatever the ids:
// parametrised ids with brackets and spaces stay off it) and lists the ids
// in a file the plugin reads; the plugin deselects every other item and
// stops the run with exit status 4 if a listed id is not collected (unless
// collection failed: a test module that no longer imports is the run's
// failure, reported as pytest reports it).
func PytestSelection(m *Map, ids []TestID, cfg PytestConfig) (PytestRun, error) {
	known := make(map[TestID]bool, len(m.Tests))
	for _, t := range m.Tests {
		known[t] = true
	}
	for _, id := range ids {
		if !known[id] {
			return PytestRun{}, fmt.Errorf("impact: test %q is not in the map", id)
		}
	}
	return selectionRun(ids, m.RootDir, cfg)
}

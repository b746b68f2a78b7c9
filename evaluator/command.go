package evaluator

import (
	"context"
	"fmt"
	"strings"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// commandRunner runs any command (TestCommand) in the repository's copy,
// with the repository's Python environment (its venv first on PATH), timed
// from its launch. Pass: exit status 0 only — the weakest signal (an early
// exit(0) passes), which results mark (Result.WeakSignal). Exit status 127
// (command not found) and 126 (not executable) are the environment's.
type commandRunner struct{}

func (commandRunner) checkEntry(string, TestSpec) error { return nil }

// Flags: --test-command COMMAND.
func (commandRunner) Flags() []TestFlag {
	return []TestFlag{{Name: "test-command", Usage: "run this space-separated `COMMAND` as the tests (exit status 0 is the only pass signal: weak)",
		Spec: func(v string, _ int) TestSpec { return TestSpec{Kind: TestCommand, Command: strings.Fields(v)} }}}
}

func (commandRunner) Kind() TestKind { return TestCommand }

// Detect never chooses a command: the user names it.
func (commandRunner) Detect(string) (TestSpec, bool) { return TestSpec{}, false }

func (commandRunner) Describe(ts TestSpec) string        { return shellJoin(ts.Command) }
func (commandRunner) Counts() bool                       { return false }
func (commandRunner) Unit(string) (string, bool)         { return "", false }
func (commandRunner) selector() testSelector             { return nil }
func (commandRunner) suspect(out *sandbox.Result) string { return pythonSuspect(out) }
func (commandRunner) unmodifiedFailure(imp string) error { return pythonUnmodifiedFailure(imp) }
func (commandRunner) Explain(b *BaselineFailure) string  { return explainPython(b, nil) }

func (commandRunner) Fix(string, TestSpec, *Result) (TestSpec, string, bool) {
	return TestSpec{}, "", false
}

func (commandRunner) Prepare(context.Context, string, Toolchains) ([]string, error) { return nil, nil }

func (commandRunner) validate(ts *TestSpec) error {
	if len(ts.Command) == 0 {
		return fmt.Errorf("empty test command")
	}
	return nil
}

func (commandRunner) judge(ts *TestSpec) testRun {
	cmd := strings.Join(ts.Command, " ")
	if len(cmd) > 120 {
		cmd = cmd[:120] + "..."
	}
	return testRun{name: "command", weak: true, read: func(out *sandbox.Result) error {
		switch out.ExitCode {
		case 127:
			return fmt.Errorf("%w: test command not found (exit 127): %s", sandbox.ErrEnvironment, cmd)
		case 126:
			return fmt.Errorf("%w: test command cannot be executed (exit 126): %s", sandbox.ErrEnvironment, cmd)
		}
		return nil
	}}
}

func (commandRunner) plan(p *planner, t *Task, file string) (*testRun, error) {
	run := p.repositoryRun(commandRunner{}, t, file)
	if err := pythonRun(p, t, &run.spec); err != nil {
		return nil, err
	}
	run.spec.Command = t.Exec.Test.Command
	return run, nil
}

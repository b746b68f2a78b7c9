package evaluator

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// The Python test runners: programs (HumanEval, as its reference harness
// runs them), scripts (ExecRepoBench's evaluate_repo.py) and pytest. Each
// runs in the sandbox's trusted Python runner (runner.py), under the
// repository's interpreter (pythonFor), which reads the run's nonce before
// untrusted code runs and reports on the status pipe: the pass signal is
// its PASS after the code returned, pytest's with the counts.

// programRunner runs HumanEval-family programs (ExecProgram): the file
// Prefix + completion + Suffix + Epilogue, as human-eval-infilling runs
// it (its reliability guard, a fresh globals dict), so that verdicts match
// that harness's. It is not a repository test kind: the table holds those.
type programRunner struct{}

// plan is the run of program file (the completed file and its epilogue).
func (programRunner) plan(cfg *Config, t *Task, file string) *testRun {
	name := defaultProgramName
	if t.Path != "" && filepath.IsLocal(filepath.FromSlash(t.Path)) && strings.HasSuffix(t.Path, ".py") {
		name = t.Path
	}
	timeout := t.Exec.Timeout
	if timeout <= 0 {
		timeout = cfg.ProgramTimeout
	}
	return &testRun{name: "program", read: readPython(false, false), target: name, spec: sandbox.Spec{
		Python: []string{"humaneval", name}, Files: map[string]string{name: file + t.Exec.Epilogue},
		Timeout: timeout, Warm: true,
	}}
}

// readPython reads a run of the Python runner: ENV (the environment
// failed) is ErrEnvironment, except for pytest a conftest.py that does not
// import, which the completion may have broken; a runner that counts keeps
// the counts, and its PASS without them is no pass.
func readPython(pytest, counts bool) func(out *sandbox.Result) error {
	return func(out *sandbox.Result) error {
		env := out.Env
		if env != "" && pytest && strings.Contains(out.Stderr+out.Stdout, "ImportError while loading conftest") {
			// pytest calls a conftest.py that does not import a usage error
			// (exit 4), but what breaks it may be the code under test: a
			// failure like any other, whose import error the caller judges.
			env = ""
		}
		if env != "" {
			if line := usageLine(out.Stderr + "\n" + out.Stdout); line != "" && pytest {
				return fmt.Errorf("%w: %s: %s", sandbox.ErrEnvironment, env, line)
			}
			return fmt.Errorf("%w: %s", sandbox.ErrEnvironment, env)
		}
		if !counts {
			out.Tests = nil
		} else if out.PassSignal && out.Tests == nil {
			out.PassSignal = false
		}
		return nil
	}
}

// pythonRun is what the Python test runners share of a repository run:
// the task's interpreter and its environment (pythonFor).
func pythonRun(p *planner, t *Task, spec *sandbox.Spec) error {
	env, err := p.cfg.pythonFor(t)
	if err != nil {
		return err
	}
	spec.Environment = env
	return nil
}

// pythonSuspect is an import that failed (or a module a toolchain
// lacks): the environment's when the unmodified repository's tests fail
// so too.
func pythonSuspect(out *sandbox.Result) string { return environmentSuspect(out) }

func pythonUnmodifiedFailure(imp string) error {
	return fmt.Errorf("%w: the unmodified repository's tests fail on an import too: %s; "+
		"the interpreter lacks what they import (give the repository a virtual environment that has it: .venv/, or --python)", sandbox.ErrEnvironment, imp)
}

// scriptRunner runs `python SCRIPT ARGS` (TestScript). Pass: exit 0 and
// the runner's nonce after the script returned (SystemExit(0) counts).
type scriptRunner struct{}

// Flags: --script FILE.
func (scriptRunner) Flags() []TestFlag {
	return []TestFlag{{Name: "script", Usage: "run this Python `FILE` (relative to REPO) as the tests, like evaluate_repo.py",
		Spec: func(v string, _ int) TestSpec { return TestSpec{Kind: TestScript, Script: v} }}}
}

func (scriptRunner) Kind() TestKind { return TestScript }

// Detect accepts a repository with an evaluate_repo.py (ExecRepoBench's
// entry point).
func (scriptRunner) Detect(repoDir string) (TestSpec, bool) {
	fi, err := os.Stat(filepath.Join(repoDir, "evaluate_repo.py"))
	if err != nil || !fi.Mode().IsRegular() {
		return TestSpec{}, false
	}
	return TestSpec{Kind: TestScript, Script: "evaluate_repo.py"}, true
}

func (scriptRunner) Describe(ts TestSpec) string {
	return strings.TrimSpace("python " + ts.Script + " " + shellJoin(ts.Args))
}

func (scriptRunner) Counts() bool                       { return false }
func (scriptRunner) Unit(string) (string, bool)         { return "", false }
func (scriptRunner) selector() testSelector             { return nil }
func (scriptRunner) suspect(out *sandbox.Result) string { return pythonSuspect(out) }
func (scriptRunner) unmodifiedFailure(imp string) error { return pythonUnmodifiedFailure(imp) }

func (scriptRunner) Fix(string, TestSpec, *Result) (TestSpec, string, bool) {
	return TestSpec{}, "", false
}

func (scriptRunner) Explain(b *BaselineFailure) string { return explainPython(b, nil) }

func (scriptRunner) Prepare(context.Context, string, Toolchains) ([]string, error) { return nil, nil }

func (scriptRunner) judge(*TestSpec) testRun {
	return testRun{name: "script", read: readPython(false, false)}
}

func (scriptRunner) validate(ts *TestSpec) error {
	if s := ts.Script; s == "" || !filepath.IsLocal(filepath.FromSlash(s)) {
		return fmt.Errorf("test script %q must be a relative path inside the repository", s)
	}
	return nil
}

// checkEntry reports a repository at dir without the script ts runs.
func (scriptRunner) checkEntry(dir string, ts TestSpec) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = root.Stat(filepath.FromSlash(ts.Script))
	return err
}

func (scriptRunner) plan(p *planner, t *Task, file string) (*testRun, error) {
	run := p.repositoryRun(scriptRunner{}, t, file)
	if err := pythonRun(p, t, &run.spec); err != nil {
		return nil, err
	}
	run.spec.Python = append([]string{"script", path.Clean(t.Exec.Test.Script)}, t.Exec.Test.Args...)
	return run, nil
}

// pytestRunner runs pytest ARGS inside the runner (TestPytest). Pass: exit
// 0, the nonce, no failures or errors and ExpectedTests passed tests (at
// least one when ExpectedTests is 0). A spec naming its tests
// (TestSpec.Tests) runs only those, with the test-impact plugin
// (selectPytest), and the tests are traced once per repository
// (pytestSelector).
type pytestRunner struct{}

// Flags: --pytest ARGS.
func (pytestRunner) Flags() []TestFlag {
	return []TestFlag{{Name: "pytest", Usage: "run pytest with these space-separated `ARGS` as the tests", Expected: true,
		Spec: func(v string, n int) TestSpec {
			return TestSpec{Kind: TestPytest, Args: strings.Fields(v), ExpectedTests: n}
		}}}
}

func (pytestRunner) Kind() TestKind { return TestPytest }

// Detect is pytest -q, for any repository.
func (pytestRunner) Detect(string) (TestSpec, bool) {
	return TestSpec{Kind: TestPytest, Args: []string{"-q", "-p", "no:cacheprovider"}}, true
}

func (pytestRunner) Describe(ts TestSpec) string        { return "pytest " + shellJoin(ts.Args) }
func (pytestRunner) Counts() bool                       { return true }
func (pytestRunner) Unit(string) (string, bool)         { return "", false }
func (pytestRunner) selector() testSelector             { return pytestSelector{} }
func (pytestRunner) suspect(out *sandbox.Result) string { return pythonSuspect(out) }
func (pytestRunner) unmodifiedFailure(imp string) error { return pythonUnmodifiedFailure(imp) }
func (pytestRunner) validate(*TestSpec) error           { return nil }
func (pytestRunner) checkEntry(string, TestSpec) error  { return nil }

func (pytestRunner) judge(*TestSpec) testRun {
	return testRun{name: "pytest", counts: true, read: readPython(true, true)}
}

func (pytestRunner) Prepare(context.Context, string, Toolchains) ([]string, error) { return nil, nil }

// Fix neutralises what pytest refused of the repository's configuration
// (fixPytest).
func (pytestRunner) Fix(repoDir string, ts TestSpec, res *Result) (TestSpec, string, bool) {
	cfg, cerr := readPytestConfig(repoDir)
	fixed, note, ok := fixPytest(repoDir, cfg, ts, res)
	if !ok && cerr != nil {
		return ts, "(could not read the pytest configuration: " + cerr.Error() + ")", false
	}
	return fixed, note, ok
}

func (pytestRunner) Explain(b *BaselineFailure) string { return explainPython(b, pytestExits) }

func (pytestRunner) plan(p *planner, t *Task, file string) (*testRun, error) {
	run := p.repositoryRun(pytestRunner{}, t, file)
	if err := pythonRun(p, t, &run.spec); err != nil {
		return nil, err
	}
	run.spec.Python = append([]string{"pytest"}, t.Exec.Test.Args...)
	if err := selectPytest(&run.spec, t, path.Clean(t.Path)); err != nil {
		return nil, err
	}
	env := run.spec.Env
	run.widened = func(out *sandbox.Result) bool { return impact.Widened(env, out.Stdout) }
	return run, nil
}

// usageLine picks, from the output of a pytest that stopped on a usage
// error, the line that says what was wrong: argparse's "error:" line, the
// warning filter pytest could not parse and why, a plugin it could not
// load.
func usageLine(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.Contains(t, ": error: "):
			return t[strings.Index(t, ": error: ")+2:]
		case strings.HasPrefix(t, "ERROR: while parsing the following warning configuration"):
			entry := ""
			for _, n := range lines[i+1:] {
				if n = strings.TrimSpace(n); n != "" {
					entry = n
					break
				}
			}
			cause := ""
			for _, n := range lines[i+1:] {
				n = strings.TrimSpace(n)
				if strings.HasPrefix(n, "ModuleNotFoundError:") || strings.HasPrefix(n, "ImportError:") || strings.HasPrefix(n, "AttributeError:") {
					cause = n
				}
			}
			return strings.TrimSpace("warning filter " + entry + ": " + cause)
		case strings.HasPrefix(t, "ImportError: Error importing plugin"), strings.HasPrefix(t, "Missing required plugins"),
			strings.HasPrefix(t, "ERROR: file or directory not found"), strings.HasPrefix(t, "ERROR: not found"):
			return strings.TrimPrefix(t, "ERROR: ")
		}
	}
	return ""
}

// pythonFor is the environment the tests of repository task t run in: the
// task's own interpreter (a benchmark's "python", the CLI's --python),
// else the Config.Pythons rule of its repository (the server's
// --eval-python), else the repository's own virtual environment (.venv/
// or venv/), else nil: the sandbox's default interpreter. An absolute
// interpreter named by the task must lie under an allowed repository
// root or be one the Pythons rules name.
func (c *Config) pythonFor(t *Task) (*sandbox.Environment, error) {
	repo := t.Exec.RepoDir
	python := t.Exec.Test.Python
	if filepath.IsAbs(python) && !c.pythonAllowed(python) {
		return nil, &fs.PathError{Op: "run tests with", Path: python, Err: ErrPythonNotAllowed}
	}
	if python == "" {
		best := ""
		for _, r := range c.Pythons {
			if underDirOrSame(repo, r.Dir) && len(r.Dir) > len(best) {
				best, python = r.Dir, r.Python
			}
		}
	}
	if python == "" {
		python = sandbox.RepositoryPython(repo)
	}
	if python == "" {
		return nil, nil
	}
	return sandbox.PythonEnvironment(filepath.FromSlash(python), repo)
}

// pythonAllowed says whether a task may name the interpreter python.
func (c *Config) pythonAllowed(python string) bool {
	if len(c.AllowedRepoRoots) == 0 || c.repoAllowed(python) {
		return true
	}
	for _, r := range c.Pythons {
		if filepath.Clean(r.Python) == filepath.Clean(python) {
			return true
		}
	}
	return false
}

func underDirOrSame(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// maxFixes bounds the changes made to a pytest command.
const maxFixes = 4

var (
	unrecognizedArgs = regexp.MustCompile(`unrecognized arguments: ([^\n]+)`)
	badWarningFilter = regexp.MustCompile(`(?s)while parsing the following warning configuration:\s*\n\s*([^\n]+)\n.*?((?:ModuleNotFoundError|ImportError|AttributeError): [^\n]+)`)
	shortFilterError = regexp.MustCompile(`warning filter (\S.*?): ((?:ModuleNotFoundError|ImportError|AttributeError): [^\n]+)`)
	badPlugin        = regexp.MustCompile(`Error importing plugin "([^"]+)"`)
	missingPlugins   = regexp.MustCompile(`Missing required plugins: ([^\n]+)`)
	noModule         = regexp.MustCompile(`No module named '([\w.]+)'`)
)

// pluginOf guesses the plugin an unrecognised option belongs to.
func pluginOf(opt string) string {
	for prefix, plugin := range map[string]string{
		"--cov": "pytest-cov", "--no-cov": "pytest-cov", "--timeout": "pytest-timeout", "-n": "pytest-xdist",
		"--dist": "pytest-xdist", "--numprocesses": "pytest-xdist", "--benchmark": "pytest-benchmark",
		"--mypy": "pytest-mypy", "--flake8": "pytest-flake8", "--reruns": "pytest-rerunfailures",
		"--randomly": "pytest-randomly", "--hypothesis": "hypothesis", "--black": "pytest-black",
		"--isort": "pytest-isort", "--pylint": "pytest-pylint", "--ds": "pytest-django", "--asyncio": "pytest-asyncio",
	} {
		if opt == prefix || strings.HasPrefix(opt, prefix+"-") || strings.HasPrefix(opt, prefix+"=") {
			return plugin
		}
	}
	return ""
}

// fixPytest changes test so that the failure res shows goes away, when
// it is one of the configuration failures it knows; note says what it did
// and why.
func fixPytest(repoDir string, cfg pytestConfig, test TestSpec, res *Result) (TestSpec, string, bool) {
	text := res.Error + "\n" + res.Reason + "\n" + res.StderrTail + "\n" + res.StdoutTail
	file := firstNonEmpty(cfg.File, "the pytest configuration")
	addopts := cfg.Addopts
	if v, ok := overridden(test.Args, "addopts"); ok {
		addopts = shellSplit(v)
	}
	setAddopts := func(rest []string) TestSpec {
		t := test
		t.Args = withOverride(test.Args, "addopts", shellJoin(rest))
		return t
	}
	if m := unrecognizedArgs.FindStringSubmatch(text); m != nil {
		var dropped, plugins []string
		rest := slices.Clone(addopts)
		for _, tok := range strings.Fields(m[1]) {
			i := slices.Index(rest, tok)
			if i < 0 {
				continue
			}
			n := 1
			if strings.HasPrefix(tok, "-") && !strings.Contains(tok, "=") && i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") {
				n = 2 // the option's value
			}
			dropped = append(dropped, rest[i:i+n]...)
			rest = slices.Delete(rest, i, i+n)
			if p := pluginOf(tok); p != "" && !slices.Contains(plugins, p) {
				plugins = append(plugins, p)
			}
		}
		if len(dropped) == 0 {
			return test, "", false // they are the command's own: the user's to change
		}
		why := "no installed pytest plugin takes them"
		if len(plugins) > 0 {
			why = strings.Join(plugins, ", ") + " is not installed"
		}
		return setAddopts(rest), fmt.Sprintf("dropped %s from the addopts of %s (%s): pytest -o addopts=%q",
			strings.Join(dropped, " "), file, why, shellJoin(rest)), true
	}
	entry, cause := "", ""
	if m := badWarningFilter.FindStringSubmatch(text); m != nil {
		entry, cause = strings.TrimSpace(m[1]), m[2]
	} else if m := shortFilterError.FindStringSubmatch(text); m != nil {
		entry, cause = strings.TrimSpace(m[1]), m[2]
	}
	if entry != "" {
		filters := cfg.Filterwarnings
		if v, ok := overridden(test.Args, "filterwarnings"); ok {
			filters = lines(v)
		}
		i := slices.Index(filters, entry)
		if i < 0 {
			return test, "", false
		}
		rest := slices.Delete(slices.Clone(filters), i, i+1)
		t := test
		t.Args = withOverride(test.Args, "filterwarnings", strings.Join(rest, "\n"))
		return t, fmt.Sprintf("dropped the warning filter %q from %s: it names a module the interpreter cannot import (%s)",
			entry, file, strings.TrimSpace(cause)), true
	}
	if m := badPlugin.FindStringSubmatch(text); m != nil {
		rest := slices.Clone(addopts)
		for i := 0; i < len(rest); i++ {
			switch {
			case rest[i] == "-p" && i+1 < len(rest) && rest[i+1] == m[1]:
				rest = slices.Delete(rest, i, i+2)
			case rest[i] == "-p"+m[1]:
				rest = slices.Delete(rest, i, i+1)
			default:
				continue
			}
			return setAddopts(rest), fmt.Sprintf("dropped -p %s from the addopts of %s: the plugin is not installed", m[1], file), true
		}
		return test, "", false
	}
	if m := missingPlugins.FindStringSubmatch(text); m != nil {
		if _, ok := overridden(test.Args, "required_plugins"); ok {
			return test, "", false
		}
		t := test
		t.Args = withOverride(test.Args, "required_plugins", "")
		return t, fmt.Sprintf("ignored required_plugins of %s (%s not installed): pytest -o required_plugins=", file, strings.TrimSpace(m[1])), true
	}
	if m := noModule.FindStringSubmatch(text); m != nil {
		top := strings.Split(m[1], ".")[0]
		if !ownSrcPackage(repoDir, top) {
			return test, "", false
		}
		paths := cfg.Pythonpath
		if v, ok := overridden(test.Args, "pythonpath"); ok {
			paths = shellSplit(v)
		}
		if slices.Contains(paths, "src") {
			return test, "", false
		}
		paths = append(slices.Clone(paths), "src")
		t := test
		t.Args = withOverride(test.Args, "pythonpath", shellJoin(paths))
		return t, fmt.Sprintf("added src to pytest's pythonpath: the tests import %s, the repository's own package under src/, "+
			"which is not installed (pytest -o pythonpath=%s)", top, shellJoin(paths)), true
	}
	return test, "", false
}

// ownSrcPackage says whether the repository holds module name under src/.
func ownSrcPackage(repoDir, name string) bool {
	for _, p := range []string{filepath.Join("src", name, "__init__.py"), filepath.Join("src", name+".py")} {
		if fi, err := os.Stat(filepath.Join(repoDir, p)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	if fi, err := os.Stat(filepath.Join(repoDir, "src", name)); err == nil && fi.IsDir() {
		return true // a namespace package
	}
	return false
}

// pytestExits say what pytest's exit statuses mean.
var pytestExits = map[int]string{
	1: "some tests failed",
	2: "pytest was interrupted: a test module could not be collected (an error while importing it)",
	3: "pytest hit an internal error",
	4: "pytest usage error: an option or configuration value it does not accept",
	5: "pytest collected no tests",
}

// explainPython is Explain for the Python test runners (exits: the
// runner's words for its exit statuses).
func explainPython(b *BaselineFailure, exits map[int]string) string {
	return explainRun(b, firstNonEmpty(b.Python, "the sandbox's python3"), exits, pythonFix(b))
}

// explainRun is the explanation of a failed check of the unmodified
// repository: the test command and what it ran with, the fixes tried, what
// its exit status means (exits), the reason, the last lines of its output
// and the fix.
func explainRun(b *BaselineFailure, with string, exits map[int]string, fix string) string {
	var sb strings.Builder
	r := &b.Result
	fmt.Fprintf(&sb, "the unmodified repository does not pass its tests (%s, with %s)\n", mustRunner(b.Test.Kind).Describe(b.Test), with)
	for _, f := range b.Fixes {
		fmt.Fprintf(&sb, "  tried: %s\n", f)
	}
	switch {
	case r.Verdict == VerdictTimeout:
		sb.WriteString("  the tests ran out of time\n")
	case r.ExitCode > 0 && exits[r.ExitCode] != "":
		fmt.Fprintf(&sb, "  exit status %d: %s\n", r.ExitCode, exits[r.ExitCode])
	case r.ExitCode > 0:
		fmt.Fprintf(&sb, "  exit status %d: the test command reported a failure\n", r.ExitCode)
	}
	if why := firstNonEmpty(r.Error, r.Reason); why != "" {
		fmt.Fprintf(&sb, "  why: %s\n", why)
	}
	b.writeOutputTail(&sb)
	fmt.Fprintf(&sb, "  fix: %s", fix)
	return sb.String()
}

// pythonFix is the remedy for a Python repository whose tests fail
// unmodified.
func pythonFix(b *BaselineFailure) string {
	r := &b.Result
	text := r.Error + "\n" + r.Reason + "\n" + r.StderrTail + "\n" + r.StdoutTail
	interp := firstNonEmpty(b.Python, "the sandbox's python3")
	switch {
	case r.Limit != "":
		return "the reason names the limit and the flag that raises it"
	case strings.Contains(text, "pytest is not installed"):
		return "install pytest for " + interp + " (see the reason)"
	case strings.Contains(text, "cannot reach") && strings.Contains(text, "sandbox's user"):
		return "the sandbox runs the tests as another user (nobody, when eval mask runs as root), which must reach " + interp +
			"'s installation: make every directory above it searchable (chmod o+x, e.g. chmod o+x /root) or run as root where the " +
			"sandbox can make a mount namespace (it binds the installation for nobody then), install the interpreter where others can " +
			"read it (PYENV_ROOT=/opt/pyenv), or make the virtual environment from Debian's /usr/bin/python3 (docs/evaluation.md, Environments)"
	case noModule.MatchString(text) && b.ownModule(noModule.FindStringSubmatch(text)[1]):
		m := noModule.FindStringSubmatch(text)
		return fmt.Sprintf("%s belongs to the repository's own package but is not in the repository: its build makes it "+
			"(a version file written by setuptools-scm or hatch-vcs, an extension module). Build the repository into a "+
			"virtual environment: python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation -e . "+
			"(offline, its build backend must be installed, e.g. Debian's python3-hatchling python3-hatch-vcs or "+
			"python3-setuptools-scm; docs/evaluation.md, Environments)", m[1])
	case noModule.MatchString(text):
		m := noModule.FindStringSubmatch(text)
		return fmt.Sprintf("the module %s is not installed for %s: give the repository a virtual environment with "+
			"its test dependencies (python3 -m venv --system-site-packages .venv, then .venv/bin/pip install them), or name "+
			"an interpreter that has them with --python PATH (docs/evaluation.md, Environments)", m[1], interp)
	case unrecognizedArgs.MatchString(text):
		return "the options named are not pytest's nor an installed plugin's: remove them from --pytest, or install the plugin"
	case r.ExitCode == 5:
		return "point pytest at the tests: --pytest \"-q tests\" (and check the repository's testpaths)"
	case r.ExitCode == 1 && r.Failure != nil:
		return fmt.Sprintf("some tests fail on the repository as it is, here: leave them out with --pytest \"-q --deselect %s\" "+
			"(one --deselect per test), or give them what they need", r.Failure.Test)
	}
	return "run the tests yourself with the same interpreter and arguments to see why, then choose them with --pytest, --script or --test-command"
}

package masking

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/infill-dev/infill/evaluator"
)

// BaselineError is a failed check of the unmodified repository: the test
// command, what it did, and the changes Build made to the command before
// giving up. Explain says what it means and what to do.
type BaselineError struct {
	// Repo is the repository's directory.
	Repo   string
	Test   evaluator.TestSpec
	Result evaluator.Result
	// Fixes are the changes made to the test command (Stats.Fixes).
	Fixes []string
	// Unit is the Go package checked, for languages checked per package.
	Unit string
}

func (e *BaselineError) Error() string {
	why := firstNonEmpty(e.Result.Error, e.Result.Reason, string(e.Result.Verdict))
	return fmt.Sprintf("%v: %s", ErrBaselineFails, why)
}

func (e *BaselineError) Unwrap() error { return ErrBaselineFails }

// maxFixes bounds the changes Build makes to a pytest command.
const maxFixes = 4

// checkBaseline runs the unmodified repository's tests (the target file's
// own text as the completion: exactly the file on disk). A pytest run
// that stops on an option, warning filter or plugin the configuration
// names and the environment lacks, or on the repository's own package
// under src/ not being importable, is run again with that neutralised
// through pytest's -o overrides, at most maxFixes times; each change is
// returned in words. The test spec returned is the one that passed.
func checkBaseline(ctx context.Context, g Grader, repoDir string, base evaluator.Task) (evaluator.TestSpec, evaluator.Result, []string, error) {
	test := base.Exec.Test
	var fixes []string
	for {
		base.Exec.Test = test
		res, err := g.Grade(ctx, base, 0, &evaluator.Completion{Text: base.Reference})
		if err != nil {
			return test, res, fixes, err
		}
		if res.Passed() {
			return test, res, fixes, nil
		}
		if test.Kind != evaluator.TestPytest || len(fixes) == maxFixes {
			return test, res, fixes, &BaselineError{Repo: repoDir, Test: test, Result: res, Fixes: fixes}
		}
		cfg, cerr := readPytestConfig(repoDir)
		fixed, note, ok := fixPytest(repoDir, cfg, test, &res)
		if !ok {
			berr := &BaselineError{Repo: repoDir, Test: test, Result: res, Fixes: fixes}
			if cerr != nil {
				berr.Fixes = append(berr.Fixes, "(could not read the pytest configuration: "+cerr.Error()+")")
			}
			return test, res, fixes, berr
		}
		test, fixes = fixed, append(fixes, note)
	}
}

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
func fixPytest(repoDir string, cfg pytestConfig, test evaluator.TestSpec, res *evaluator.Result) (evaluator.TestSpec, string, bool) {
	text := res.Error + "\n" + res.Reason + "\n" + res.StderrTail + "\n" + res.StdoutTail
	file := firstNonEmpty(cfg.File, "the pytest configuration")
	addopts := cfg.Addopts
	if v, ok := overridden(test.Args, "addopts"); ok {
		addopts = shellSplit(v)
	}
	setAddopts := func(rest []string) evaluator.TestSpec {
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

// Explain says, in a few lines, what the failed check means and what to
// do: the test command, what its exit status means, the reason, the last
// lines of its output and the fix for the common cases. python names the
// interpreter the tests ran with.
func (e *BaselineError) Explain(python string) string {
	if e.Test.Kind == evaluator.TestGo {
		return e.explainGo()
	}
	var b strings.Builder
	r := &e.Result
	with := firstNonEmpty(python, "the sandbox's python3")
	if e.Test.Kind == evaluator.TestNode {
		with = "node"
	}
	fmt.Fprintf(&b, "the unmodified repository does not pass its tests (%s, with %s)\n", describeTest(e.Test), with)
	for _, f := range e.Fixes {
		fmt.Fprintf(&b, "  tried: %s\n", f)
	}
	switch {
	case r.Verdict == evaluator.VerdictTimeout:
		b.WriteString("  the tests ran out of time\n")
	case r.ExitCode > 0 && e.Test.Kind == evaluator.TestPytest && pytestExits[r.ExitCode] != "":
		fmt.Fprintf(&b, "  exit status %d: %s\n", r.ExitCode, pytestExits[r.ExitCode])
	case r.ExitCode > 0:
		fmt.Fprintf(&b, "  exit status %d: the test command reported a failure\n", r.ExitCode)
	}
	if why := firstNonEmpty(r.Error, r.Reason); why != "" {
		fmt.Fprintf(&b, "  why: %s\n", why)
	}
	writeOutputTail(&b, r)
	fmt.Fprintf(&b, "  fix: %s", e.fix(python))
	return b.String()
}

// writeOutputTail writes the last lines of a run's output, indented.
func writeOutputTail(b *strings.Builder, r *evaluator.Result) {
	if out := lastLines(r.StdoutTail+"\n"+r.StderrTail, 12); strings.TrimSpace(out) != "" {
		b.WriteString("  last lines of its output:\n")
		for _, l := range strings.Split(out, "\n") {
			fmt.Fprintf(b, "    | %s\n", l)
		}
	}
}

func (e *BaselineError) fix(python string) string {
	r := &e.Result
	text := r.Error + "\n" + r.Reason + "\n" + r.StderrTail + "\n" + r.StdoutTail
	interp := firstNonEmpty(python, "the sandbox's python3")
	if e.Test.Kind == evaluator.TestNode {
		return nodeFix(e)
	}
	switch {
	case r.Limit != "":
		return "the reason names the limit and the flag that raises it"
	case strings.Contains(text, "pytest is not installed"):
		return "install pytest for " + interp + " (see the reason)"
	case noModule.MatchString(text) && e.ownModule(noModule.FindStringSubmatch(text)[1]):
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

// ownModule says whether the dotted module name lies in a package of the
// repository (at its root or under src/).
func (e *BaselineError) ownModule(name string) bool {
	top, _, dotted := strings.Cut(name, ".")
	if !dotted || e.Repo == "" {
		return false
	}
	for _, dir := range []string{filepath.Join(e.Repo, top), filepath.Join(e.Repo, "src", top)} {
		if fi, err := os.Stat(filepath.Join(dir, "__init__.py")); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

func describeTest(t evaluator.TestSpec) string {
	switch t.Kind {
	case evaluator.TestPytest:
		return "pytest " + shellJoin(t.Args)
	case evaluator.TestScript:
		return strings.TrimSpace("python " + t.Script + " " + shellJoin(t.Args))
	case evaluator.TestCommand:
		return shellJoin(t.Command)
	case evaluator.TestNode:
		return describeNodeTest(t)
	}
	return string(t.Kind)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

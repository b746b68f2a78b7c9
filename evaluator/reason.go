package evaluator

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"syscall"

	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// LimitFlags name the flag that raises each sandbox limit: infill-server
// and the CLI's local sandbox (eval mask, eval run/grade --local) take
// the same ones, so a reason can name it wherever the run happened.
var LimitFlags = map[outcome.Limit]string{
	outcome.LimitTime:      "--sample-timeout",
	outcome.LimitCPU:       "--sample-timeout",
	outcome.LimitMemory:    "--sandbox-memory",
	outcome.LimitThreads:   "--sandbox-processes or --sandbox-memory",
	outcome.LimitProcesses: "--sandbox-processes",
	outcome.LimitFileSize:  "--sandbox-file-size",
}

// limitNames say what each limit is, in reasons.
var limitNames = map[outcome.Limit]string{
	outcome.LimitTime:      "timed out after",
	outcome.LimitCPU:       "CPU time limit hit:",
	outcome.LimitMemory:    "memory limit hit:",
	outcome.LimitThreads:   "could not start a thread (process or memory limit):",
	outcome.LimitProcesses: "process limit hit:",
	outcome.LimitFileSize:  "file size limit hit:",
	outcome.LimitOpenFiles: "open-file limit hit:",
	outcome.LimitOutput:    "output limit hit:",
}

// limitReason words the limit out hit: "memory limit hit: 4 GiB per
// process (--sandbox-memory raises it)".
func limitReason(out *sandbox.Result) string {
	s := limitNames[out.Limit] + " " + out.LimitValue
	if f := LimitFlags[out.Limit]; f != "" {
		s += " (" + f + " raises it)"
	}
	return s
}

// verdict judges a run and says why it did not pass.
func (r *testRun) verdict(out *sandbox.Result, expected int) (Verdict, string) {
	var v Verdict
	var why string
	switch out.Status {
	case sandbox.StatusTimeout:
		return VerdictTimeout, limitReason(out)
	case sandbox.StatusOutputLimit:
		return VerdictFailed, limitReason(out)
	case sandbox.StatusSignaled:
		v, why = VerdictFailed, fmt.Sprintf("killed by signal %d (%s)", out.Signal, signalName(out.Signal))
	}
	switch {
	case v != "":
	case out.ExitCode != 0:
		v, why = VerdictFailed, fmt.Sprintf("exit status %d", out.ExitCode)
	case !r.passed(out):
		v, why = VerdictFailed, "exited 0 without the pass signal (the tests did not run to the end)"
	case r.counts:
		v, why = countsVerdict(out.Tests, expected, r.name)
	}
	if v == "" {
		return VerdictPassed, ""
	}
	first := r.firstErrorOf(out)
	switch {
	case out.Limit != "":
		why = limitReason(out) + joinReason(first)
	case first != "":
		why = first + " (" + why + ")"
	}
	return v, why
}

// countsVerdict judges the test counts of a run that exited 0 with its
// pass signal: it fails on no report, on a failure or error, on a number
// of passed tests other than expected (when expected > 0), and on no test
// passed. "" when the counts pass.
func countsVerdict(tc *outcome.TestCounts, expected int, runner string) (Verdict, string) {
	switch {
	case tc == nil:
		return VerdictFailed, fmt.Sprintf("no %s report", runner)
	case tc.Failed+tc.Errors > 0:
		return VerdictFailed, fmt.Sprintf("%s: %d failed, %d errors", runner, tc.Failed, tc.Errors)
	case expected > 0 && tc.Passed != expected:
		return VerdictFailed, fmt.Sprintf("%s: %d passed, expected %d", runner, tc.Passed, expected)
	case tc.Passed == 0:
		return VerdictFailed, fmt.Sprintf("%s: no test passed", runner)
	}
	return "", ""
}

func joinReason(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

func signalName(sig int) string {
	if name := syscall.Signal(sig).String(); !strings.HasPrefix(name, "signal ") {
		return name
	}
	return "unknown signal"
}

// firstErrorOf is the first meaningful error line of a run that did not
// pass, in its runner's words (firstError), else the Python runner's.
func (r *testRun) firstErrorOf(out *sandbox.Result) string {
	if r.firstError != nil {
		return r.firstError(out)
	}
	return firstError(out, &r.spec)
}

// firstError is the first meaningful error line of a run that did not
// pass: the first failing test with its exception and where it was
// raised, the exception the program or script raised, or else the line
// of its output that says what went wrong. Paths are relative to the
// repository.
func firstError(out *sandbox.Result, spec *sandbox.Spec) string {
	rel := relativizer(spec)
	if f := out.Failure; f != nil {
		return failureLine(f, rel)
	}
	if e := out.Exception; e != nil && e.Type != "SystemExit" {
		s := e.Type
		if m := firstLine(e.Message); m != "" {
			s += ": " + m
		}
		if e.Where != "" {
			s += " at " + rel(e.Where)
		}
		return s
	}
	return outputError(out.Stdout+"\n"+out.Stderr, rel)
}

// failureLine words a failing pytest test: "tests/test_ops.py::test_add:
// AssertionError: assert 3 == 4 at calc/ops.py:5".
func failureLine(f *outcome.Failure, rel func(string) string) string {
	what := f.Test
	switch f.When {
	case "collect":
		what = "collecting " + f.Test
	case "setup", "teardown":
		what = f.Test + " (" + f.When + ")"
	}
	msg, where := "", ""
	if c := f.Crash; c != nil {
		msg = firstLine(c.Message)
		if strings.HasPrefix(msg, "assert ") {
			msg = "AssertionError: " + msg // pytest's rewritten assert
		}
		if c.Path != "" && c.Line > 0 {
			where = rel(fmt.Sprintf("%s:%d", c.Path, c.Line))
		}
	}
	if msg == "" || where == "" {
		m, w := reportError(f.Report)
		if msg == "" {
			msg = m
		}
		if where == "" && w != "" {
			where = rel(w)
		}
	}
	s := what
	if msg != "" {
		s += ": " + msg
	}
	if where != "" {
		s += " at " + where
	}
	return s
}

var (
	// pytest's "E   Name: message" lines, and "E   Name" alone.
	reportErrorLine = regexp.MustCompile(`^E\s+((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Warning|Failed)\b.*)$`)
	// A traceback's `File "x.py", line 5` (also inside E lines).
	fileLine = regexp.MustCompile(`File "([^"]+)", line (\d+)`)
	// pytest's short traceback location "x.py:5: in f" or "x.py:5: Error".
	shortLoc = regexp.MustCompile(`^(\S+\.py):(\d+): `)
	// A Python exception line at the end of a traceback.
	exceptionLine = regexp.MustCompile(`^((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Warning|Failed|Iteration))(:.*)?$`)
	// pytest's notice of a conftest.py that could not be imported.
	conftestLine = regexp.MustCompile(`ImportError while loading conftest '([^']+)'`)
	// pytest's short test summary.
	summaryLine = regexp.MustCompile(`^(FAILED|ERROR) (\S+)(?: - (.*))?$`)
)

// reportError finds, in a pytest failure report, the exception line and
// the place it names: the last "E   Error: ..." line, and the last
// `File "...", line N` inside the E lines or else the last "x.py:N: in"
// line.
func reportError(report string) (msg, where string) {
	var eWhere, locWhere string
	for _, line := range strings.Split(report, "\n") {
		line = strings.TrimRight(line, " \r")
		if m := reportErrorLine.FindStringSubmatch(line); m != nil {
			msg = strings.TrimSpace(m[1])
		}
		if strings.HasPrefix(line, "E ") {
			if m := fileLine.FindStringSubmatch(line); m != nil {
				eWhere = m[1] + ":" + m[2]
			}
		} else if m := shortLoc.FindStringSubmatch(line); m != nil {
			locWhere = m[1] + ":" + m[2]
		}
	}
	if eWhere != "" {
		return msg, eWhere
	}
	return msg, locWhere
}

// outputError finds the meaningful error line in a run's output (a script
// or command, which reports nothing else): pytest's first FAILED or ERROR
// summary line, else the exception that ends the last traceback with
// where it was raised, else the last line pytest marked with E, else "".
func outputError(output string, rel func(string) string) string {
	output = stripANSI(output)
	lines := strings.Split(output, "\n")
	for _, l := range lines {
		if m := summaryLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			s, msg := m[2], m[3]
			if m[1] == "ERROR" && !strings.Contains(m[2], "::") {
				s = "collecting " + s
			}
			// pytest cuts the summary to the terminal's width, and gives
			// collection errors none: the first report's E line says it.
			first, where := firstReportError(lines)
			if msg == "" || strings.HasSuffix(msg, "...") && strings.Contains(first, strings.TrimSuffix(msg, "...")) {
				msg = first
			}
			if strings.HasPrefix(msg, "assert ") {
				msg = "AssertionError: " + msg
			}
			if msg != "" {
				s += ": " + msg
			}
			if where != "" {
				s += " at " + rel(where)
			}
			return s
		}
	}
	if m := conftestLine.FindStringSubmatch(output); m != nil {
		// A conftest.py that did not import: pytest's short traceback.
		msg, w := reportError(output)
		s := "loading " + rel(m[1])
		if msg != "" {
			s += ": " + msg
		}
		if w != "" {
			s += " at " + rel(w)
		}
		return s
	}
	exc, where, inTraceback := "", "", false
	for _, l := range lines {
		t := strings.TrimRight(l, " \r")
		switch {
		case strings.HasPrefix(t, "Traceback (most recent call last):"):
			inTraceback, where = true, ""
		case inTraceback && fileLine.MatchString(t):
			m := fileLine.FindStringSubmatch(t)
			where = m[1] + ":" + m[2]
		case inTraceback && exceptionLine.MatchString(t):
			exc = t
			if where != "" {
				exc += " at " + rel(where)
			}
			inTraceback = false
		}
	}
	if exc != "" {
		return exc
	}
	msg, w := reportError(output)
	if msg != "" && w != "" {
		return msg + " at " + rel(w)
	}
	return msg
}

// firstReportError finds the first failure report's exception line in
// pytest's output, and where it was raised: a `File "x", line N` among
// its E lines (a module that did not compile), else the "x.py:N:" line
// that follows them (pytest writes a frame's place after its code).
func firstReportError(lines []string) (msg, where string) {
	var eWhere string
	for _, line := range lines {
		line = strings.TrimRight(line, " \r")
		if msg != "" {
			if m := shortLoc.FindStringSubmatch(line); m != nil {
				return msg, firstNonEmpty(eWhere, m[1]+":"+m[2])
			}
			if strings.HasPrefix(line, "___") || strings.HasPrefix(line, "===") {
				break
			}
			if strings.HasPrefix(line, "E ") {
				if m := fileLine.FindStringSubmatch(line); m != nil {
					eWhere = m[1] + ":" + m[2]
				}
			}
			continue
		}
		if !strings.HasPrefix(line, "E ") {
			continue
		}
		if m := fileLine.FindStringSubmatch(line); m != nil {
			eWhere = m[1] + ":" + m[2]
		}
		if m := reportErrorLine.FindStringSubmatch(line); m != nil {
			msg = strings.TrimSpace(m[1])
		} else if t := strings.TrimSpace(line[1:]); strings.HasPrefix(t, "assert ") {
			msg = "AssertionError: " + t
		}
	}
	return msg, eWhere
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// relativizer returns a function that writes a path inside the sandbox
// (or the repository's own path, where the environment shows the copy
// there too) relative to the repository; others stay as they are.
func relativizer(spec *sandbox.Spec) func(string) string {
	var roots []string
	if spec.SourceDir != "" {
		work := spec.WorkName
		if work == "" {
			work = "repo"
		}
		roots = append(roots, path.Join("/work", work)+"/", strings.TrimSuffix(spec.SourceDir, "/")+"/")
	} else {
		roots = append(roots, "/work/")
	}
	return func(p string) string {
		for _, r := range roots {
			if strings.HasPrefix(p, r) {
				return strings.TrimPrefix(p, r)
			}
		}
		return p
	}
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// stripANSI removes terminal colour and cursor sequences.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiEscape.ReplaceAllString(s, "")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// importFailure says whether a failed run failed on an import: the
// first failing test's or the program's exception, or the error in its
// output, is an ImportError (ModuleNotFoundError included). It returns
// that error line, or "".
func importFailure(out *sandbox.Result) string {
	var texts []string
	if f := out.Failure; f != nil {
		if f.Crash != nil {
			texts = append(texts, f.Crash.Message)
		}
		msg, _ := reportError(f.Report)
		texts = append(texts, msg)
	} else if e := out.Exception; e != nil {
		texts = append(texts, e.Type+": "+e.Message)
	} else {
		texts = append(texts, outputError(out.Stdout+"\n"+out.Stderr, func(s string) string { return s }))
	}
	for _, t := range texts {
		if m := importError.FindString(t); m != "" {
			return placeSuffix.ReplaceAllString(strings.TrimSpace(firstLine(m)), "")
		}
	}
	return ""
}

var (
	importError = regexp.MustCompile(`(ModuleNotFoundError|ImportError): .*`)
	// placeSuffix is the " at file:line" a reason line ends with.
	placeSuffix = regexp.MustCompile(` at \S+:\d+$`)
)

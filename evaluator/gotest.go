package evaluator

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Go repositories (TestGo). A sample's tests are its target file's
// package: `go test -json` runs in that directory of the private copy
// (sandbox.ModeGo), with TestSpec.Args as further go test flags and
// TestSpec.Tests, when set, as a -run pattern of exactly those tests. The
// verdict comes from the test2json events: passed when the package
// passed, no test failed and ExpectedTests tests passed (subtests
// included; at least one when ExpectedTests is 0). A completion that does
// not compile, or that go vet's test checks reject, fails with the
// compiler's first error as the reason; a panic fails its test.

// goRunnerFlags are the go test flags the runner sets or that would stop
// it (no test2json events, no test run, another program running the test
// binary): a spec's Args may not give them.
var goRunnerFlags = []string{"json", "c", "o", "exec"}

// validateGo checks a TestGo spec.
func validateGo(ts *TestSpec) error {
	for _, a := range ts.Args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		// go's flags take one dash or two, and a value after "=" or as the
		// next argument.
		name, _, _ := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if slices.Contains(goRunnerFlags, name) {
			return fmt.Errorf("go test flag %q is the runner's own", a)
		}
	}
	for _, name := range ts.Tests {
		if name == "" || strings.ContainsAny(name, " \t\n") {
			return fmt.Errorf("bad Go test name %q", name)
		}
	}
	return nil
}

// goSpec fills spec for a TestGo task: the package directory of the
// target file and the go test flags.
func goSpec(spec *sandbox.Spec, t *Task) {
	ts := t.Exec.Test
	spec.Mode = sandbox.ModeGo
	spec.Target = path.Dir(path.Clean(t.Path))
	spec.Environment = nil
	spec.Args = append([]string(nil), ts.Args...)
	if len(ts.Tests) > 0 {
		spec.Args = append(spec.Args, "-run", goRunPattern(ts.Tests))
	}
}

// goRunPattern matches exactly the named top-level tests (a subtest name
// "TestX/case" selects that subtest).
func goRunPattern(tests []string) string {
	top := make([]string, 0, len(tests))
	subs := []string{}
	for _, name := range tests {
		first, rest, sub := strings.Cut(name, "/")
		top = append(top, regexp.QuoteMeta(first))
		if sub {
			subs = append(subs, regexp.QuoteMeta(rest))
		}
	}
	pat := "^(" + strings.Join(top, "|") + ")$"
	if len(subs) == len(tests) {
		pat += "/^(" + strings.Join(subs, "|") + ")$"
	}
	return pat
}

// goFirstError is the first meaningful error of a go test run that did
// not pass: the compiler's (or vet's) first error, the failing test with
// its first error line or panic, or go's own message.
func goFirstError(out *sandbox.Result) string {
	f := out.Failure
	if f == nil {
		if l := goErrorLine(out.Stdout + "\n" + out.Stderr); l != "" {
			return l
		}
		if out.Tests != nil && out.Tests.Passed == 0 && strings.Contains(out.Stdout, "[no test files]") {
			return "no test files"
		}
		return ""
	}
	if f.When == "build" {
		if l := goErrorLine(f.Report); l != "" {
			return "build failed: " + l
		}
		return "build failed"
	}
	if l := goErrorLine(f.Report); l != "" {
		return f.Test + ": " + l
	}
	return f.Test + " failed"
}

var (
	// goPanic is a panic line, "panic: runtime error: ..."; goRecovered
	// the note testing adds when it re-panics ("[recovered]",
	// "[recovered, repanicked]").
	goPanic     = regexp.MustCompile(`^panic: .*`)
	goRecovered = regexp.MustCompile(` \[recovered[^\]]*\]$`)
	// goPosition is an error at a position: "./x.go:3:2: undefined: y",
	// "    x_test.go:12: got 1, want 2".
	goPosition = regexp.MustCompile(`^\s*(\S+\.go:\d+(:\d+)?: .*)`)
)

// goErrorLine picks the line that says what went wrong: a panic first,
// else the first error at a source position, else go's own "go: ..."
// line.
func goErrorLine(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if m := goPanic.FindString(strings.TrimSpace(l)); m != "" {
			return goRecovered.ReplaceAllString(m, "")
		}
	}
	for _, l := range lines {
		if m := goPosition.FindStringSubmatch(l); m != nil {
			return strings.TrimPrefix(m[1], "./")
		}
	}
	for _, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "go: ") || strings.HasPrefix(t, "package ") {
			return t
		}
	}
	return ""
}

// goModuleError matches go's words for a package the module cache or
// go.mod cannot provide: the environment's failure when the unmodified
// repository fails the same way (baseline.go), else the completion's (an
// import of a module the repository does not require).
var goModuleError = regexp.MustCompile(`(no required module provides package \S+|cannot find module providing package \S+|missing go\.sum entry[^\n]*|module lookup disabled by GOPROXY=off[^\n]*|package \S+ is not in std[^\n]*)`)

// environmentSuspect says why a failed run may be the environment's
// rather than the completion's: a Python import that failed, or a Go
// package the module cache cannot provide. "" when it is the
// completion's.
func environmentSuspect(out *sandbox.Result) string {
	if imp := importFailure(out); imp != "" {
		return imp
	}
	if f := out.Failure; f != nil && f.When == "build" {
		return goModuleError.FindString(f.Report)
	}
	return goModuleError.FindString(out.Stdout + "\n" + out.Stderr)
}

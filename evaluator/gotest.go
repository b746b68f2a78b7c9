package evaluator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// goRunner runs Go repositories' tests (TestGo). A sample's tests are its
// target file's package: `go test -json -count=1 -p=4` in that directory
// of the private copy, with TestSpec.Args as further go test flags and
// TestSpec.Tests, when set, as a -run pattern of exactly those tests.
// There is no trusted runner: the pass signal is the test2json event
// stream, parsed as it arrives (GoEvents). The verdict: passed when the
// package's own event is "pass", no test failed and ExpectedTests tests
// passed (subtests included; at least one when ExpectedTests is 0). A
// completion that does not compile, or that go vet's test checks reject,
// fails with the compiler's first error as the reason (a Failure whose
// Report is the compiler's output); a panic fails its test.
//
// The Go toolchain (Toolchains.GoRoot, else `go env GOROOT`) and the
// module cache (Toolchains.GoModCache, else `go env GOMODCACHE`) are bound
// read-only; nothing is fetched (GOPROXY=off, GOSUMDB=off,
// GOTOOLCHAIN=local, no network): Prepare downloads the modules first, on
// the host. `-mod` is left to go's default: readonly, or vendor when the
// module vendors its dependencies. -p=4 bounds the compilers run at once,
// whose threads count against the sandbox's process limit on a machine
// with many cores. The build cache is private to the run and kept for the
// next (a sandbox.Cache per toolchain), each starting as a copy of a seed
// the sandbox builds once, from no repository's code: the standard
// library's packages that tests use, compiled as go test compiles them.
// Building (compiling, go vet's checks) is start-up, bounded by
// Toolchains.GoBuildTimeout: the run's own clock starts at the first
// event of the test binary. A build past its limit is a timeout, not a
// setup failure: a completion can make compiling slow.
type goRunner struct{}

func (goRunner) checkEntry(string, TestSpec) error { return nil }

// Flags: none (a Go repository's test is its packages').
func (goRunner) Flags() []TestFlag { return nil }

func (goRunner) Kind() TestKind { return TestGo }

// Detect is go test of the masked file's package, for any repository.
func (goRunner) Detect(string) (TestSpec, bool) { return TestSpec{Kind: TestGo}, true }

func (goRunner) Describe(ts TestSpec) string {
	return strings.TrimSpace("go test -json " + shellJoin(ts.Args))
}

func (goRunner) Counts() bool { return true }

// Unit is the file's package directory: the unmodified repository is
// checked package by package, and a sample expects its package's count.
func (goRunner) Unit(rel string) (string, bool) { return path.Dir(rel), true }

func (goRunner) selector() testSelector             { return nil }
func (goRunner) suspect(out *sandbox.Result) string { return environmentSuspect(out) }
func (goRunner) validate(ts *TestSpec) error        { return validateGo(ts) }
func (goRunner) Fix(string, TestSpec, *Result) (TestSpec, string, bool) {
	return TestSpec{}, "", false
}

func (goRunner) unmodifiedFailure(imp string) error {
	return fmt.Errorf("%w: the unmodified repository fails to build too: %s; "+
		"the module cache lacks a dependency (eval mask runs go mod download into it; it must be readable by the sandbox's user: GOMODCACHE, or --sandbox-go-modcache here and on infill-server)", sandbox.ErrEnvironment, imp)
}

// Prepare downloads the modules of the repository's Go modules into the
// module cache the sandbox binds (PrepareGo).
func (goRunner) Prepare(ctx context.Context, repoDir string, tc Toolchains) ([]string, error) {
	mods, err := PrepareGo(ctx, repoDir, tc.GoModCache)
	if err != nil || len(mods) == 0 {
		return nil, err
	}
	return []string{"go mod download: fetched the modules of " + strings.Join(mods, ", ")}, nil
}

func (goRunner) judge(*TestSpec) testRun {
	return testRun{name: "go test", counts: true, read: readGo, firstError: goFirstError}
}

// Go's paths inside the sandbox: the build cache and the directory go
// builds in (its GOTMPDIR: a test binary outgrows the /tmp tmpfs).
const (
	goCacheInside = "/gocache"
	goPathInside  = "/tmp/gopath"
)

func (goRunner) plan(p *planner, t *Task, file string) (*testRun, error) {
	tc, err := p.goToolchain()
	if err != nil {
		return nil, err
	}
	run := p.repositoryRun(goRunner{}, t, file)
	ts := t.Exec.Test
	args := append([]string(nil), ts.Args...)
	if len(ts.Tests) > 0 {
		args = append(args, "-run", goRunPattern(ts.Tests))
	}
	g := goRun{tc: tc, modCache: p.reachableDir(tc.ModCache), build: p.cfg.Toolchains.GoBuildTimeout}
	g.spec(&run.spec, path.Dir(path.Clean(t.Path)), args)
	seed := &sandbox.Spec{WorkName: "seed", Files: map[string]string{"go.mod": "module seed\n\ngo 1.21\n", "seed_test.go": seedTest}}
	g.spec(seed, ".", nil)
	seed.Cache = nil
	run.spec.Cache.Seed = seed
	return run, nil
}

// goRun is a Go run's toolchain: GOROOT, the module cache the sandbox can
// bind ("": none, an empty one) and the build's limit.
type goRun struct {
	tc       GoToolchain
	modCache string
	build    time.Duration
}

// spec sets spec's command (go test of the package in directory dir, with
// args), binds, variables and build cache.
func (g goRun) spec(spec *sandbox.Spec, dir string, args []string) {
	modCache := goPathInside + "/pkg/mod"
	if !sandbox.SystemDir(g.tc.Root) {
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: g.tc.Root})
	}
	if g.modCache != "" {
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: g.modCache})
		modCache = g.modCache
	}
	spec.Path = []string{g.tc.Root + "/bin"}
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	for k, v := range map[string]string{
		"GOROOT": g.tc.Root, "GOPATH": goPathInside, "GOMODCACHE": modCache,
		"GOCACHE": goCacheInside + "/cache", "GOTMPDIR": goCacheInside + "/tmp",
		"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off",
		"GOENV": "off", "GOWORK": "off", "GOFLAGS": "-buildvcs=false",
	} {
		spec.Env[k] = v
	}
	spec.Command = append([]string{g.tc.Root + "/bin/go", "-C", filepath.ToSlash(filepath.Clean(dir)),
		"test", "-json", "-count=1", "-p=4"}, args...)
	spec.Command = append(spec.Command, ".")
	spec.Output = func(start func()) io.Writer {
		ev := NewGoEvents(outputTail)
		ev.OnStart = start
		return ev
	}
	spec.Build = g.build
	spec.Cache = &sandbox.Cache{Key: "go " + g.tc.Root, Target: goCacheInside, Dirs: []string{"cache", "tmp"}, Scratch: []string{"tmp"}}
}

// outputTail is how much of each text GoEvents keeps.
const outputTail = sandbox.DefaultOutputTailBytes

// goToolchain is the configured toolchain (Toolchains.GoRoot), else the
// host's, detected once per Runner. The detection (a quick `go env`)
// ignores the sample's cancel: its result, error included, is kept for
// every later run.
func (p *planner) goToolchain() (GoToolchain, error) {
	v, err := p.r.hostOnce("go toolchain", func() (any, error) {
		tc := GoToolchain{Root: p.cfg.Toolchains.GoRoot, ModCache: p.cfg.Toolchains.GoModCache}
		if tc.Root == "" {
			det, err := DetectGoToolchain(context.Background())
			if err != nil {
				return nil, err
			}
			tc.Root = det.Root
			if tc.ModCache == "" {
				tc.ModCache = det.ModCache
			}
		}
		if _, err := os.Stat(filepath.Join(tc.Root, "bin", "go")); err != nil {
			return nil, fmt.Errorf("%w: Go toolchain: %v", sandbox.ErrEnvironment, err)
		}
		if tc.ModCache != "" {
			if err := p.reachable(tc.ModCache); err != nil {
				p.r.log.Warn("evaluator: the Go module cache is out of the sandbox's reach; Go runs get an empty one "+
					"(set GOMODCACHE, or --sandbox-go-modcache, to a directory its user can read)", zap.Error(err))
			}
		}
		return tc, nil
	})
	if err != nil {
		return GoToolchain{}, err
	}
	return v.(GoToolchain), nil
}

// reachable says why the sandbox's user cannot reach dir (nil: it can, or
// the Executor does not say).
func (p *planner) reachable(dir string) error {
	if r, ok := p.r.exec.(reacher); ok {
		return r.Reachable(dir)
	}
	return nil
}

// reachableDir is dir when it is a directory the sandbox's user can reach,
// else "".
func (p *planner) reachableDir(dir string) string {
	if dir == "" {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || p.reachable(dir) != nil {
		return ""
	}
	return dir
}

// GoToolchain is the Go installation runs use: GOROOT and the module
// cache. DetectGoToolchain finds the host's.
type GoToolchain struct {
	// Root is GOROOT (holding bin/go).
	Root string
	// ModCache is GOMODCACHE; empty, or a directory the sandbox's user
	// cannot reach, leaves the run an empty module cache (a module without
	// dependencies still builds).
	ModCache string
}

// DetectGoToolchain asks the go command on PATH (or the one in
// $GOROOT/bin) for GOROOT and GOMODCACHE.
func DetectGoToolchain(ctx context.Context) (GoToolchain, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if r := os.Getenv("GOROOT"); r != "" {
			goCmd = filepath.Join(r, "bin", "go")
		} else {
			return GoToolchain{}, fmt.Errorf("%w: no go command on PATH (install Go, or give its GOROOT)", sandbox.ErrEnvironment)
		}
	}
	out, err := exec.CommandContext(ctx, goCmd, "env", "GOROOT", "GOMODCACHE").Output()
	if err != nil {
		return GoToolchain{}, fmt.Errorf("%w: %s env: %v", sandbox.ErrEnvironment, goCmd, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] == "" {
		return GoToolchain{}, fmt.Errorf("%w: %s env printed %q", sandbox.ErrEnvironment, goCmd, out)
	}
	return GoToolchain{Root: lines[0], ModCache: lines[1]}, nil
}

// seedTest imports the standard packages tests commonly use, so that the
// seed cache holds them compiled.
const seedTest = `package seed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

var _ = []any{bufio.NewReader, bytes.NewReader, context.Background, json.Marshal, errors.New, fmt.Sprint,
	io.EOF, maps.Keys[map[int]int], math.Abs, os.Getenv, filepath.Join, reflect.DeepEqual, regexp.MustCompile,
	slices.Sort[[]int], sort.Ints, strconv.Itoa, strings.Cut, new(sync.Mutex), time.Now, utf8.RuneLen}

func TestSeed(t *testing.T) {}
`

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

// readGo sets a Go run's pass signal, counts and failure from its events,
// and its stdout to the tests' output (not the JSON it came in). A run
// that never started the package's tests and printed why in go's own
// words for the environment (no Go files, no go.mod) is an
// sandbox.ErrEnvironment.
func readGo(res *sandbox.Result) error {
	ev, ok := res.Output.(*GoEvents)
	if !ok {
		return nil // a recorded result: read already
	}
	res.Stdout = ev.Text()
	if res.Status != sandbox.StatusExited && res.Status != sandbox.StatusSignaled {
		return nil // cut short: its limit says why
	}
	c := ev.Counts()
	res.Tests = &c
	res.Failure = ev.Failure()
	pkg := ev.Package()
	res.PassSignal = pkg == "pass" && c.Failed == 0
	if res.Status == sandbox.StatusExited && pkg == "" && res.Failure == nil {
		for _, l := range strings.Split(res.Stderr+"\n"+res.Stdout, "\n") {
			for _, p := range goSetupErrors {
				if strings.Contains(l, p) {
					return fmt.Errorf("%w: go test: %s", sandbox.ErrEnvironment, strings.TrimSpace(l))
				}
			}
		}
	}
	return nil
}

// goSetupErrors are go's words for a package it cannot test for reasons
// of the environment, not the code.
var goSetupErrors = []string{
	"go.mod file not found", "no Go files in", "cannot find main module", "directory not found",
	"go: cannot find GOROOT", "requires go >=", "not in std",
}

// GoEvent is one line of `go test -json` (test2json) output; build
// events (Action "build-output", "build-fail") carry ImportPath instead.
type GoEvent struct {
	Action     string `json:"Action"`
	Package    string `json:"Package"`
	ImportPath string `json:"ImportPath"`
	Test       string `json:"Test"`
	Output     string `json:"Output"`
}

// GoEvents parses a `go test -json` stream as it is written: it keeps each
// test's outcome and output, the package's outcome, the build output, and
// the tail of the plain output. Lines that are not events (go's own
// errors before any test ran) are kept as output.
type GoEvents struct {
	// OnStart, if set, is called once, at the first event of the test
	// binary (the build is over).
	OnStart func()

	mu       sync.Mutex
	line     []byte
	max      int
	text     *sandbox.Tail
	outcome  map[string]string // test -> pass, fail, skip
	order    []string          // tests in the order they ended
	output   map[string]*sandbox.Tail
	pkg      string // the package's own final action
	build    *sandbox.Tail
	buildBad bool
	other    *sandbox.Tail // lines that are not events
}

// NewGoEvents keeps up to tail bytes of each text it keeps.
func NewGoEvents(tail int) *GoEvents {
	return &GoEvents{max: tail, text: sandbox.NewTail(tail), build: sandbox.NewTail(tail), other: sandbox.NewTail(tail),
		outcome: map[string]string{}, output: map[string]*sandbox.Tail{}}
}

// Write parses complete lines; a partial line waits for its end.
func (g *GoEvents) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.line = append(g.line, p...)
	for {
		i := bytes.IndexByte(g.line, '\n')
		if i < 0 {
			break
		}
		g.event(g.line[:i])
		g.line = g.line[i+1:]
	}
	if len(g.line) > 1<<20 {
		// A line longer than any event: output, not JSON.
		_, _ = g.other.Write(g.line)
		g.line = g.line[:0]
	}
	return len(p), nil
}

func (g *GoEvents) event(line []byte) {
	var e GoEvent
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
		_, _ = g.other.Write(append(line, '\n'))
		return
	}
	if e.Package != "" && e.Action != "start" && g.OnStart != nil {
		g.OnStart()
		g.OnStart = nil
	}
	switch e.Action {
	case "build-output":
		_, _ = g.build.Write([]byte(e.Output))
		return
	case "build-fail":
		g.buildBad = true
		return
	case "output":
		_, _ = g.text.Write([]byte(e.Output))
		if e.Test != "" {
			o := g.output[e.Test]
			if o == nil {
				o = sandbox.NewTail(g.max)
				g.output[e.Test] = o
			}
			_, _ = o.Write([]byte(e.Output))
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			g.pkg = e.Action
			return
		}
		if _, ok := g.outcome[e.Test]; !ok {
			g.order = append(g.order, e.Test)
		}
		g.outcome[e.Test] = e.Action
	}
}

// Counts are the tests that passed, failed and were skipped, subtests
// included.
func (g *GoEvents) Counts() outcome.TestCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	var c outcome.TestCounts
	for _, a := range g.outcome {
		switch a {
		case "pass":
			c.Passed++
		case "fail":
			c.Failed++
		case "skip":
			c.Skipped++
		}
	}
	return c
}

// Package is the package's own outcome: "pass", "fail", "skip" (no test
// files), or "" when the stream ended without one (a build failure before
// Go 1.24, a run killed).
func (g *GoEvents) Package() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pkg
}

// Failure is the first test that failed, innermost first (a subtest rather
// than the test holding it), with its output; the build's output when the
// package did not build; nil when nothing failed.
func (g *GoEvents) Failure() *outcome.Failure {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b := strings.TrimSpace(g.build.String()); g.buildBad || (b != "" && g.pkg != "pass") {
		return &outcome.Failure{Test: "build", When: "build", Report: b}
	}
	for _, t := range g.order {
		if g.outcome[t] != "fail" {
			continue
		}
		// A failed subtest fails its parent after it: report the subtest.
		sub := slices.IndexFunc(g.order, func(s string) bool {
			return strings.HasPrefix(s, t+"/") && g.outcome[s] == "fail"
		})
		if sub >= 0 {
			t = g.order[sub]
		}
		out := ""
		if o := g.output[t]; o != nil {
			out = o.String()
		}
		return &outcome.Failure{Test: t, When: "call", Report: out}
	}
	return nil
}

// Text is the tail of the run's plain output: the tests' output as go
// test without -json prints it, and what go printed outside events.
func (g *GoEvents) Text() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.text.String()
	if b := g.build.String(); b != "" {
		t = b + t
	}
	if o := g.other.String(); o != "" {
		t += o
	}
	return t
}

// PrepareGo fetches, on the host and before any sandbox, the dependencies
// of every Go module in the repository (each go.mod outside vendor/,
// testdata/ and hidden directories): `go mod download` into modCache
// (empty: go's own GOMODCACHE), which the sandbox then binds read-only.
// A module that vendors its dependencies (vendor/modules.txt) needs
// nothing. It returns the modules it fetched for.
func PrepareGo(ctx context.Context, repoDir, modCache string) ([]string, error) {
	var mods []string
	err := filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != repoDir && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			mods = append(mods, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var fetched []string
	for _, dir := range mods {
		if _, err := os.Stat(filepath.Join(dir, "vendor", "modules.txt")); err == nil {
			continue
		}
		cmd := exec.CommandContext(ctx, "go", "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if modCache != "" {
			cmd.Env = append(cmd.Env, "GOMODCACHE="+modCache)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) || errors.Is(err, exec.ErrNotFound) {
				return fetched, fmt.Errorf("go mod download in %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
			}
			return fetched, err
		}
		rel, _ := filepath.Rel(repoDir, dir)
		fetched = append(fetched, filepath.ToSlash(rel))
	}
	return fetched, nil
}

// Explain is for a Go package whose unmodified tests could not be judged.
func (goRunner) Explain(e *BaselineFailure) string {
	var b strings.Builder
	r := &e.Result
	fmt.Fprintf(&b, "the unmodified repository does not pass its tests (go test -json of package %s)\n", firstNonEmpty(e.Unit, "."))
	if why := firstNonEmpty(r.Error, r.Reason, string(r.Verdict)); why != "" {
		fmt.Fprintf(&b, "  why: %s\n", why)
	}
	e.writeOutputTail(&b)
	text := r.Error + "\n" + r.Reason + "\n" + r.StdoutTail + "\n" + r.StderrTail
	fix := "run go test -count=1 in that package yourself to see why"
	switch {
	case r.Limit != "":
		fix = "the reason names the limit and the flag that raises it"
	case strings.Contains(text, "GOPROXY=off") || strings.Contains(text, "module cache") || strings.Contains(text, "missing go.sum entry"):
		fix = "the sandbox builds offline against the module cache (GOMODCACHE, --sandbox-go-modcache): eval mask ran go mod download into it; " +
			"it must be readable by the sandbox's user (started as root, that is nobody: a cache under root's 0700 home is not), " +
			"e.g. GOMODCACHE=/var/cache/go-mod infill eval mask ..., and the same for eval run --local and infill-server"
	case strings.Contains(text, "requires go >="):
		fix = "the module needs a newer Go than the sandbox's toolchain (--sandbox-go-root, here and on infill-server)"
	}
	fmt.Fprintf(&b, "  fix: %s", fix)
	return b.String()
}

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/internal/logctx"
)

// ModeGo runs `go test -json -count=1 -p=4` on the package in the directory
// Spec.Target (relative to the working directory; "." is its root) with
// Spec.Args as further `go test` flags (-run ...). There is no trusted
// runner: the pass signal is the test2json event stream, parsed as it
// arrives (GoEvents). Result.PassSignal is set when the package's own
// event is "pass" and no test failed; Result.Tests counts the tests that
// passed, failed and were skipped, subtests included. A build failure (the
// completion does not compile, go vet's test checks fail) is a Failure
// whose Report is the compiler's output.
//
// The Go toolchain (Config.GoRoot) and the module cache
// (Config.GoModCache) are bound read-only; nothing is fetched (GOPROXY=off,
// GOSUMDB=off, GOTOOLCHAIN=local, no network). `-mod` is left to go's
// default: readonly, or vendor when the module vendors its dependencies.
// -p=4 bounds the compilers run at once, whose threads count against
// Config.Processes (RLIMIT_NPROC) on a machine with many cores.
// The build cache is private to the run and kept for the next: a Sandbox
// holds a pool of cache directories, each used by one run at a time, so
// that a worker's samples compile the repository's dependencies once.
// Each cache starts as a copy of a seed the Sandbox builds once, in the
// sandbox, from no repository's code: the standard library's packages
// that tests use, compiled as go test compiles them.
// Building (compiling, go vet's checks) is start-up, bounded by
// Config.GoBuildTimeout: the run's own clock (Config.Timeout) starts at
// the first event of the test binary. A build past its limit is a
// timeout, not a setup failure: a completion can make compiling slow.
const ModeGo Mode = 16

// Go's paths inside the sandbox: the build cache and the directory go
// builds in (its GOTMPDIR: a test binary outgrows the /tmp tmpfs).
const (
	goCacheInside = "/gocache"
	goPathInside  = "/tmp/gopath"
)

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
			return GoToolchain{}, fmt.Errorf("%w: no go command on PATH (install Go, or give its GOROOT)", ErrEnvironment)
		}
	}
	out, err := exec.CommandContext(ctx, goCmd, "env", "GOROOT", "GOMODCACHE").Output()
	if err != nil {
		return GoToolchain{}, fmt.Errorf("%w: %s env: %v", ErrEnvironment, goCmd, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] == "" {
		return GoToolchain{}, fmt.Errorf("%w: %s env printed %q", ErrEnvironment, goCmd, out)
	}
	return GoToolchain{Root: lines[0], ModCache: lines[1]}, nil
}

// goToolchain is the configured toolchain, detected on first use when
// Config.GoRoot is empty. The detection (a quick `go env`) ignores ctx's
// cancel: its result, error included, is kept for every later run.
func (s *Sandbox) goToolchain(ctx context.Context) (GoToolchain, error) {
	s.gocache.once.Do(func() {
		tc := GoToolchain{Root: s.cfg.GoRoot, ModCache: s.cfg.GoModCache}
		if tc.Root == "" {
			det, err := DetectGoToolchain(context.WithoutCancel(ctx))
			if err != nil {
				s.gocache.tcErr = err
				return
			}
			tc.Root = det.Root
			if tc.ModCache == "" {
				tc.ModCache = det.ModCache
			}
		}
		if _, err := os.Stat(filepath.Join(tc.Root, "bin", "go")); err != nil {
			s.gocache.tcErr = fmt.Errorf("%w: Go toolchain: %v", ErrEnvironment, err)
			return
		}
		if tc.ModCache != "" {
			if err := s.goReachable(tc.ModCache); err != nil {
				s.log.Warn("sandbox: the Go module cache is out of the sandbox's reach; Go runs get an empty one "+
					"(set GOMODCACHE, or Config.GoModCache, to a directory its user can read)", zap.Error(err))
			}
		}
		s.gocache.tc = tc
	})
	return s.gocache.tc, s.gocache.tcErr
}

// goReachable says why the sandbox could not bind dir: started as root,
// bubblewrap runs as Config.UID, which must be able to reach it (a module
// cache under root's 0700 home is out of its reach); otherwise it runs as
// the caller, who can.
func (s *Sandbox) goReachable(dir string) error {
	if !s.asRoot {
		return nil
	}
	return reachable(dir, s.cfg.UID, s.cfg.GID)
}

// goCaches is a Sandbox's pool of private build caches.
type goCaches struct {
	once  sync.Once
	tc    GoToolchain
	tcErr error

	seedOnce sync.Once
	seed     string // the seed cache; "" when it could not be built
	seedDir  string

	mu   sync.Mutex
	free []string
	all  []string
}

// take returns a cache directory no other run holds, making one (a copy
// of seed, when there is one) when none is free. The copy is made outside
// the lock: runs that start together do not wait on each other's copies.
func (p *goCaches) take(tempDir, seed string) (string, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		dir := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return dir, nil
	}
	dir, err := os.MkdirTemp(tempDir, "infill-gocache-")
	if err == nil {
		p.all = append(p.all, dir)
	}
	p.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSetup, err)
	}
	if seed != "" {
		if err := copyTree(seed, dir, nil, nil); err != nil {
			return "", fmt.Errorf("%w: copying the seed build cache: %v", ErrSetup, err)
		}
	}
	return dir, nil
}

// give hands dir back for the next run.
func (p *goCaches) give(dir string) {
	p.mu.Lock()
	p.free = append(p.free, dir)
	p.mu.Unlock()
}

// remove deletes every cache (Close).
func (p *goCaches) remove() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, d := range p.all {
		errs = append(errs, removeTree(d))
	}
	if p.seedDir != "" {
		errs = append(errs, removeTree(p.seedDir))
	}
	p.all, p.free, p.seed, p.seedDir = nil, nil, "", ""
	return errors.Join(errs...)
}

// goRun prepares a ModeGo run: a build cache held for the run (released by
// the returned func), its bind mounts and environment.
func (s *Sandbox) goRun(ctx context.Context, spec *Spec) (func(), error) {
	tc, err := s.goToolchain(ctx)
	if err != nil {
		return nil, err
	}
	cache, err := s.gocache.take(s.cfg.TempDir, s.goSeed(ctx, tc))
	if err != nil {
		return nil, err
	}
	release := func() {
		// The build directory is the run's own; the cache stays.
		_ = removeTree(filepath.Join(cache, "tmp"))
		s.gocache.give(cache)
	}
	if err := s.prepareGoCache(cache); err != nil {
		release()
		return nil, err
	}
	s.goSpec(spec, tc, cache)
	return release, nil
}

// prepareGoCache makes the cache's directories, the sandbox user's.
func (s *Sandbox) prepareGoCache(cache string) error {
	for _, d := range []string{"cache", "tmp"} {
		if err := os.MkdirAll(filepath.Join(cache, d), 0o755); err != nil {
			return fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	if s.asRoot {
		if err := chownTree(cache, s.cfg.UID, s.cfg.GID); err != nil {
			return fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	return nil
}

// goSpec sets a ModeGo spec's mounts, variables and command for the
// toolchain tc and the build cache directory cache.
func (s *Sandbox) goSpec(spec *Spec, tc GoToolchain, cache string) {
	modCache := goPathInside + "/pkg/mod"
	spec.binds = [][2]string{{cache, goCacheInside}}
	if !underAny(tc.Root, systemDirs) {
		spec.roBinds = append(spec.roBinds, [2]string{tc.Root, tc.Root})
	}
	if tc.ModCache != "" {
		if fi, err := os.Stat(tc.ModCache); err == nil && fi.IsDir() && s.goReachable(tc.ModCache) == nil {
			spec.roBinds = append(spec.roBinds, [2]string{tc.ModCache, tc.ModCache})
			modCache = tc.ModCache
		}
	}
	spec.goBin = tc.Root + "/bin"
	spec.goEnv = [][2]string{
		{"GOROOT", tc.Root}, {"GOPATH", goPathInside}, {"GOMODCACHE", modCache},
		{"GOCACHE", goCacheInside + "/cache"}, {"GOTMPDIR", goCacheInside + "/tmp"},
		{"GOPROXY", "off"}, {"GOSUMDB", "off"}, {"GOTOOLCHAIN", "local"}, {"GOTELEMETRY", "off"},
		{"GOENV", "off"}, {"GOWORK", "off"}, {"GOFLAGS", "-buildvcs=false"},
	}
	spec.goCmd = append([]string{tc.Root + "/bin/go", "-C", filepath.ToSlash(filepath.Clean(spec.Target)),
		"test", "-json", "-count=1", "-p=4"}, spec.Args...)
	spec.goCmd = append(spec.goCmd, ".")
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

// goSeed returns the seed build cache, building it on first use: a
// package of no repository whose test imports seedTest's packages, tested
// in the sandbox like any ModeGo run. "" when it could not be built (each
// cache then starts empty).
func (s *Sandbox) goSeed(ctx context.Context, tc GoToolchain) string {
	p := &s.gocache
	p.seedOnce.Do(func() {
		dir, err := os.MkdirTemp(s.cfg.TempDir, "infill-gocache-seed-")
		if err != nil {
			return
		}
		p.mu.Lock()
		p.seedDir = dir
		p.mu.Unlock()
		cache, work := filepath.Join(dir, "cache"), filepath.Join(dir, "work")
		defer func() { _ = removeTree(work) }()
		cwd := filepath.Join(work, "seed")
		if err := writeFiles(cwd, map[string]string{"go.mod": "module seed\n\ngo 1.21\n", "seed_test.go": seedTest}); err != nil {
			return
		}
		if err := s.prepareGoCache(cache); err != nil {
			return
		}
		if s.asRoot {
			if err := chownTree(work, s.cfg.UID, s.cfg.GID); err != nil {
				return
			}
		}
		spec := &Spec{Mode: ModeGo, Target: "."}
		s.goSpec(spec, tc, cache)
		res, err := s.exec(ctx, spec, work, cwd, "/work/seed")
		if err != nil || !res.Passed(ModeGo) {
			logctx.From(ctx, s.log).Warn("sandbox: the seed Go build cache failed to build; each cache starts empty",
				zap.Error(err), zap.String("output", lastLine(res.Stdout+"\n"+res.Stderr)))
			return
		}
		_ = removeTree(filepath.Join(cache, "tmp"))
		p.seed = cache
	})
	return p.seed
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
	text     tailWriter
	outcome  map[string]string // test -> pass, fail, skip
	order    []string          // tests in the order they ended
	output   map[string]*tailWriter
	pkg      string // the package's own final action
	build    tailWriter
	buildBad bool
	other    tailWriter // lines that are not events
}

// NewGoEvents keeps up to tail bytes of each text it keeps.
func NewGoEvents(tail int) *GoEvents {
	return &GoEvents{max: tail, text: tailWriter{max: tail}, build: tailWriter{max: tail}, other: tailWriter{max: tail},
		outcome: map[string]string{}, output: map[string]*tailWriter{}}
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
				o = &tailWriter{max: g.max}
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

// finishGo sets a ModeGo run's pass signal, counts and failure from its
// events. A run that never started the package's tests and printed why
// in go's own words for the environment (no Go files, no go.mod) is an
// ErrEnvironment.
func finishGo(res *Result, ev *GoEvents) error {
	c := ev.Counts()
	res.Tests = &c
	res.Failure = ev.Failure()
	pkg := ev.Package()
	res.PassSignal = pkg == "pass" && c.Failed == 0
	if res.Status == StatusExited && pkg == "" && res.Failure == nil {
		for _, l := range strings.Split(res.Stderr+"\n"+res.Stdout, "\n") {
			for _, p := range goSetupErrors {
				if strings.Contains(l, p) {
					return fmt.Errorf("%w: go test: %s", ErrEnvironment, strings.TrimSpace(l))
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

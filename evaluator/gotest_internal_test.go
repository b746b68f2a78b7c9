package evaluator

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"go.uber.org/zap/zaptest"
)

// goModule writes testdata/go/gomodule.txtar into a directory.
func goModule(t testing.TB) string {
	t.Helper()
	return GoTestdata(t, "testdata/go/gomodule.txtar")
}

// newGoRunner is a Runner for the Go runner's runs (toolchains: tc) over
// a sandbox of its own with cfg, or the tests' shared one when cfg is nil.
func newGoRunner(t testing.TB, cfg *sandbox.Config, tc Toolchains) *Runner {
	t.Helper()
	var sb *sandbox.Sandbox
	var err error
	if cfg == nil {
		sb, err = SharedTestSandbox()
	} else {
		sb, err = sandbox.New(*cfg, zaptest.NewLogger(t))
		if err == nil {
			t.Cleanup(func() { _ = sb.Close() })
		}
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("sandbox unavailable: %v", err)
		}
		t.Fatalf("sandbox.New: %v", err)
	}
	r, err := NewRunner(Config{Workers: 1, FullErrors: true, Toolchains: tc}, sb, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goRunIn runs the tests of the package of file (relative to mod) with
// file's content (its own on disk when content is nil) and the extra
// variables env, as the Go runner plans and reads a sample's run.
func goRunIn(t testing.TB, r *Runner, mod, file string, content *string, env map[string]string) (sandbox.Result, error) {
	t.Helper()
	text := ""
	if content != nil {
		text = *content
	} else {
		data, err := os.ReadFile(filepath.Join(mod, file))
		if err != nil {
			t.Fatal(err)
		}
		text = string(data)
	}
	task := Task{ID: "t", Path: file, Prefix: text, Exec: Exec{Kind: ExecRepository, RepoDir: mod, Test: TestSpec{Kind: TestGo}}}
	run, err := r.planRun(&task, "")
	if err != nil {
		return sandbox.Result{}, err
	}
	maps.Copy(run.spec.Env, env)
	out, err := r.exec.Run(t.Context(), run.spec)
	if err == nil {
		err = run.finish(&out)
	}
	return out, err
}

// TestGoRunner runs the module's packages in one sandbox (one seed build):
// verdicts first, then the build caches.
func TestGoRunner(t *testing.T) {
	RequireGo(t)
	r := newGoRunner(t, nil, Toolchains{})
	mod := goModule(t)
	t.Run("runs", func(t *testing.T) { testGoRuns(t, r, mod) })
	t.Run("caches", func(t *testing.T) { testGoCachePrivate(t, r, mod) })
}

func testGoRuns(t *testing.T, r *Runner, mod string) {
	// The file each package's samples complete (restored as it is, unless
	// the case gives its text).
	fileOf := map[string]string{"ok": "ok/ok.go", "mixed": "mixed/mixed.go", "net": "net/net_test.go", "vendored": "vendored/v.go"}
	cases := []struct {
		name, pkg string
		env       map[string]string
		files     map[string]string
		pass      bool
		counts    outcome.TestCounts
		failure   string // outcome.Failure.Test
		report    string // in outcome.Failure.Report
	}{
		{name: "pass, subtests counted", pkg: "ok", pass: true, counts: outcome.TestCounts{Passed: 3}},
		{name: "one test fails", pkg: "mixed", env: map[string]string{"MIXED": "fail"},
			counts: outcome.TestCounts{Passed: 1, Failed: 1}, failure: "TestFails", report: "One() = 1, want 2"},
		{name: "panic", pkg: "mixed", env: map[string]string{"MIXED": "panic"},
			counts: outcome.TestCounts{Passed: 1, Failed: 1}, failure: "TestFails", report: "assignment to entry in nil map"},
		{name: "compile error", pkg: "ok", files: map[string]string{"ok/ok.go": "package ok\n\nfunc Double(x int) int { return }\n"},
			failure: "build", report: "not enough return values"},
		{name: "vet check", pkg: "ok", files: map[string]string{"ok/ok.go": "package ok\n\nimport \"fmt\"\n\nfunc Double(x int) int { fmt.Printf(\"%s\", x); return 2 * x }\n"},
			failure: "build", report: "fmt.Printf format %s has arg x of wrong type int"},
		{name: "no network", pkg: "net", pass: true, counts: outcome.TestCounts{Passed: 1}},
		{name: "vendored module", pkg: "vendored", pass: true, counts: outcome.TestCounts{Passed: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var content *string
			if text, ok := c.files[fileOf[c.pkg]]; ok {
				content = &text
			}
			res, err := goRunIn(t, r, mod, fileOf[c.pkg], content, c.env)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := res.Passed(); got != c.pass {
				t.Errorf("passed %v, want %v: %+v\n%s\n%s", got, c.pass, res, res.Stdout, res.Stderr)
			}
			if res.Tests == nil || *res.Tests != c.counts {
				t.Errorf("counts %+v, want %+v", res.Tests, c.counts)
			}
			switch {
			case c.failure == "" && res.Failure != nil:
				t.Errorf("failure %+v", res.Failure)
			case c.failure != "" && (res.Failure == nil || res.Failure.Test != c.failure || !strings.Contains(res.Failure.Report, c.report)):
				t.Errorf("failure %+v, want %s with %q", res.Failure, c.failure, c.report)
			}
			if res.Startup <= 0 || res.Duration <= 0 {
				t.Errorf("build %v, run %v: both should be measured", res.Startup, res.Duration)
			}
		})
	}
}

// testGoCachePrivate checks that concurrent runs never share a build
// cache and that a later run gets one of its own too (the sandbox's Cache:
// its pool is sandbox.TestCachePrivate's).
func testGoCachePrivate(t *testing.T, r *Runner, mod string) {
	run := func(mark string) sandbox.Result {
		res, err := goRunIn(t, r, mod, "cache/cache_test.go", nil, map[string]string{"MARK": mark})
		if err != nil {
			t.Error(err)
		}
		return res
	}
	var wg sync.WaitGroup
	out := make([]sandbox.Result, 2)
	for i := range out {
		wg.Go(func() { out[i] = run(string(rune('a' + i))) })
	}
	wg.Wait()
	for i, res := range out {
		if !res.Passed() || !strings.Contains(res.Stdout, "MARKERS 1\n") {
			t.Errorf("run %d: passed %v, output %q: a cache seen by two runs at once", i, res.Passed(), res.Stdout)
		}
	}
	if res := run("c"); !strings.Contains(res.Stdout, "MARKERS 1\n") {
		t.Errorf("third run: %q", res.Stdout)
	}
}

func TestGoEvents(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"run","Package":"p","Test":"TestA/x"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    a_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA/x"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`not an event`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n") + "\n"
	ev := NewGoEvents(1 << 10)
	started := 0
	ev.OnStart = func() { started++ }
	// Written in pieces that split lines.
	for i := 0; i < len(stream); i += 7 {
		_, _ = ev.Write([]byte(stream[i:min(i+7, len(stream))]))
	}
	if c := ev.Counts(); c != (outcome.TestCounts{Passed: 1, Failed: 2, Skipped: 1}) {
		t.Errorf("counts %+v", c)
	}
	if f := ev.Failure(); f == nil || f.Test != "TestA/x" || !strings.Contains(f.Report, "boom") {
		t.Errorf("failure %+v", f)
	}
	if ev.Package() != "fail" || started != 1 {
		t.Errorf("package %q, started %d", ev.Package(), started)
	}
	if txt := ev.Text(); !strings.Contains(txt, "=== RUN   TestA\n") || !strings.Contains(txt, "not an event\n") {
		t.Errorf("text %q", txt)
	}
}

// TestGoBuildTimeout checks that a build past GoBuildTimeout is a timeout
// that says it was building, not a setup failure.
func TestGoBuildTimeout(t *testing.T) {
	RequireGo(t)
	r := newGoRunner(t, &sandbox.Config{Timeout: 30 * time.Second, WarmWorkers: -1}, Toolchains{GoBuildTimeout: 200 * time.Millisecond})
	res, err := goRunIn(t, r, goModule(t), "ok/ok.go", nil, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != sandbox.StatusTimeout || res.Limit != outcome.LimitTime || !strings.HasSuffix(res.LimitValue, " building") || res.Passed() {
		t.Errorf("status %s, limit %s %q, passed %v", res.Status, res.Limit, res.LimitValue, res.Passed())
	}
}

// TestGoEnv checks a Go run's environment: the toolchain's bin directory
// first on PATH (the sandbox puts Spec.Path before its own: its
// TestSpecPath), the toolchain bound where it lies outside /usr, and go's
// own variables.
func TestGoEnv(t *testing.T) {
	spec := &sandbox.Spec{}
	goRun{tc: GoToolchain{Root: "/opt/go"}}.spec(spec, ".", nil)
	if !slices.Equal(spec.Path, []string{"/opt/go/bin"}) || len(spec.Binds) != 1 || spec.Binds[0].Source != "/opt/go" {
		t.Errorf("path %q, binds %+v", spec.Path, spec.Binds)
	}
	for k, want := range map[string]string{"GOROOT": "/opt/go", "GOPROXY": "off", "GOMODCACHE": goPathInside + "/pkg/mod"} {
		if got := spec.Env[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := spec.Env["PATH"]; ok {
		t.Error("the Go runner sets PATH itself: the sandbox's would be lost")
	}
}

// TestGoToolchainOnce checks that the Go toolchain is detected once per
// Runner, on the host, and never with a sample's context: a sample
// cancelled while it is detected cannot leave the Runner without one.
func TestGoToolchainOnce(t *testing.T) {
	RequireGo(t)
	r, err := NewRunner(Config{}, noRuns{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &planner{r: r, cfg: &r.cfg}
	a, err := p.goToolchain()
	if err != nil || a.Root == "" {
		t.Fatalf("toolchain: %+v, %v", a, err)
	}
	b, err := p.goToolchain()
	if err != nil || b != a {
		t.Errorf("second ask: %+v, %v; first %+v", b, err, a)
	}
}

// noRuns is an Executor that runs nothing.
type noRuns struct{}

func (noRuns) Run(context.Context, sandbox.Spec) (sandbox.Result, error) {
	return sandbox.Result{}, errors.New("no runs here")
}

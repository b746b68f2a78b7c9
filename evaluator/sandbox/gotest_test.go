package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator/outcome"
	"golang.org/x/tools/txtar"
)

// requireGo skips (fails with CI=true) when the go command is missing.
func requireGo(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go not on PATH")
		}
		t.Skip("go not on PATH")
	}
}

// goModule writes testdata/gomodule.txtar into a directory.
func goModule(t testing.TB) string {
	t.Helper()
	ar, err := txtar.ParseFile("testdata/gomodule.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range ar.Files {
		mustWrite(t, filepath.Join(dir, f.Name), string(f.Data))
	}
	return dir
}

// TestGo runs the module's packages in one sandbox (one seed build):
// verdicts first, then the build caches.
func TestGo(t *testing.T) {
	requireGo(t)
	sb := newTestSandbox(t, Config{Timeout: 30 * time.Second, WarmWorkers: -1})
	mod := goModule(t)
	t.Run("runs", func(t *testing.T) { testGoRuns(t, sb, mod) })
	t.Run("caches", func(t *testing.T) { testGoCachePrivate(t, sb, mod) })
}

func testGoRuns(t *testing.T, sb *Sandbox, mod string) {
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
			res, err := sb.Run(t.Context(), Spec{Mode: ModeGo, SourceDir: mod, Target: c.pkg, Env: c.env, Files: c.files})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := res.Passed(ModeGo); got != c.pass {
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
// cache, that a later run reuses one (the pool keeps as many as ran at
// once: the runs before left one), and that Close removes them.
func testGoCachePrivate(t *testing.T, sb *Sandbox, mod string) {
	if n := len(sb.gocache.all); n != 1 {
		t.Fatalf("%d caches after sequential runs, want 1", n)
	}
	run := func(mark string) Result {
		res, err := sb.Run(t.Context(), Spec{Mode: ModeGo, SourceDir: mod, Target: "cache", Env: map[string]string{"MARK": mark}})
		if err != nil {
			t.Error(err)
		}
		return res
	}
	var wg sync.WaitGroup
	out := make([]Result, 2)
	for i := range out {
		wg.Go(func() { out[i] = run(string(rune('a' + i))) })
	}
	wg.Wait()
	for i, r := range out {
		if !r.Passed(ModeGo) || !strings.Contains(r.Stdout, "MARKERS 1\n") {
			t.Errorf("run %d: passed %v, output %q: a cache seen by two runs at once", i, r.Passed(ModeGo), r.Stdout)
		}
	}
	if n := len(sb.gocache.all); n != 2 {
		t.Errorf("%d caches after two concurrent runs, want 2", n)
	}
	if r := run("c"); !strings.Contains(r.Stdout, "MARKERS 1\n") {
		t.Errorf("third run: %q", r.Stdout)
	}
	if n := len(sb.gocache.all); n != 2 {
		t.Errorf("%d caches after a third, sequential run, want 2 (reused)", n)
	}
	caches := append([]string(nil), sb.gocache.all...)
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range caches {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cache %s left after Close: %v", d, err)
		}
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
	requireGo(t)
	sb := newTestSandbox(t, Config{Timeout: 30 * time.Second, GoBuildTimeout: 200 * time.Millisecond, WarmWorkers: -1})
	res, err := sb.Run(t.Context(), Spec{Mode: ModeGo, SourceDir: goModule(t), Target: "ok"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != StatusTimeout || res.Limit != outcome.LimitTime || !strings.HasSuffix(res.LimitValue, " building") || res.Passed(ModeGo) {
		t.Errorf("status %s, limit %s %q, passed %v", res.Status, res.Limit, res.LimitValue, res.Passed(ModeGo))
	}
}

// TestGoEnv checks a ModeGo run's environment: the toolchain's bin
// directory first on the one PATH, then the shared variables and go's own.
func TestGoEnv(t *testing.T) {
	s := &Sandbox{}
	spec := &Spec{Mode: ModeGo, Target: "."}
	s.goSpec(spec, GoToolchain{Root: "/opt/go"}, t.TempDir())
	env := map[string][]string{}
	for _, kv := range s.env(spec, "/work/m") {
		env[kv[0]] = append(env[kv[0]], kv[1])
	}
	for k, want := range map[string]string{"PATH": "/opt/go/bin:" + defaultPath, "GOROOT": "/opt/go", "HOME": "/tmp", "GOPROXY": "off"} {
		if got := env[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want once %q", k, got, want)
		}
	}
}

// TestGoToolchainAfterCancel checks that a run cancelled while the Go
// toolchain is detected does not leave the Sandbox without one: the
// detection is done once, for every later run.
func TestGoToolchainAfterCancel(t *testing.T) {
	requireGo(t)
	sb := newTestSandbox(t, Config{WarmWorkers: -1})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := sb.goToolchain(ctx); err != nil {
		t.Errorf("toolchain with a cancelled context: %v", err)
	}
	if tc, err := sb.goToolchain(t.Context()); err != nil || tc.Root == "" {
		t.Errorf("toolchain after a cancelled detection: %+v, %v", tc, err)
	}
}

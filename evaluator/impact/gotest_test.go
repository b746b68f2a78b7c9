package impact_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/evaluator/impact"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// goSandboxRunner is a sandbox with room for a Go build: GOCACHE on a
// private /tmp, the toolchain that runs this test bound read-only.
func goSandboxRunner(t *testing.T) (sandboxRunner, impact.GoConfig) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no go command: %v", err)
		}
		t.Skipf("no go command: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	goBin := filepath.Join(goroot, "bin", "go")
	var ro []string
	if !strings.HasPrefix(goroot, "/usr/") {
		ro = []string{goroot}
	}
	sb, err := sandbox.New(sandbox.Config{Timeout: 5 * time.Minute, WarmWorkers: -1, MemoryBytes: 4 << 30, Processes: 256,
		TmpfsBytes: 2 << 30, OutputTailBytes: 32 << 20, OutputLimitBytes: 64 << 20, ReadOnlyPaths: ro}, zaptest.NewLogger(t))
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("sandbox unavailable: %v", err)
		}
		t.Fatalf("sandbox.New: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sandboxRunner{sb}, impact.GoConfig{Go: goBin, Env: map[string]string{
		"GOCACHE": "/tmp/gocache", "GOPATH": "/tmp/gopath", "GOFLAGS": "-buildvcs=false"}}
}

// TestTraceGo traces testdata/gorepo (two packages with tests, one
// without, a package-level var set at init) in the sandbox and checks the
// packages each span selects, then runs one selection.
func TestTraceGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the standard library with a fresh GOCACHE in the sandbox (a minute or more)")
	}
	r, cfg := goSandboxRunner(t)
	const dir = "testdata/gorepo"
	m, err := impact.TraceGo(context.Background(), r, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const calc, text = "example.com/gorepo/calc", "example.com/gorepo/text"
	if !slices.Equal(m.Tests, []string{calc, text}) || !slices.Equal(m.Outcomes, []string{"passed", "passed"}) {
		t.Fatalf("tests %q outcomes %q", m.Tests, m.Outcomes)
	}
	if !slices.Equal(m.TestFiles, []string{"calc/calc_test.go", "text/text_test.go"}) {
		t.Errorf("test files %q", m.TestFiles)
	}
	for _, tc := range []struct {
		name        string
		file        string
		first, last int
		want        []string
	}{
		{"called from both packages' tests", "calc/calc.go", 11, 11, []string{calc, text}},
		{"loop run by calc's tests only", "calc/calc.go", 17, 19, []string{calc}},
		{"var initialiser run at init", "calc/calc.go", 5, 5, []string{calc, text}},
		{"called at init", "calc/calc.go", 7, 7, []string{calc, text}},
		{"text only", "text/text.go", 12, 12, []string{text}},
		{"branch no test takes", "text/text.go", 18, 18, nil},
		{"package with no tests, imported by none", "never/never.go", 6, 6, nil},
		{"test file", "calc/calc_test.go", 6, 6, []string{calc, text}},
	} {
		got, err := impact.Select(m, impact.Span{File: tc.file, First: tc.first, Last: tc.last})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %s:%d-%d selects %q, want %q", tc.name, tc.file, tc.first, tc.last, got, tc.want)
		}
	}
	cmd, err := impact.GoSelection(m, []string{text}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = dir
	out, err := r.Run(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev struct{ Action, Package, Test string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.Action == "pass" && ev.Test != "" {
			ran = append(ran, ev.Package+"."+ev.Test)
		}
	}
	if !slices.Equal(ran, []string{text + ".TestBar", text + ".TestSum"}) {
		t.Errorf("selection ran %q", ran)
	}
	if _, err := impact.GoSelection(m, nil, cfg); !errors.Is(err, impact.ErrNoTests) {
		t.Errorf("empty selection: %v", err)
	}
}

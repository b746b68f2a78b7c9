package impact_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/infill-dev/infill/evaluator/impact"
)

var update = flag.Bool("update", false, "rewrite testdata/pyrepo.map.json")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const pyrepo = "testdata/pyrepo"

var (
	traceOnce sync.Once
	traced    *impact.Map
	traceErr  error
)

// pyrepoMap traces testdata/pyrepo once, in the sandbox.
func pyrepoMap(t *testing.T) *impact.Map {
	t.Helper()
	r := newSandboxRunner(t, time.Minute)
	traceOnce.Do(func() {
		traced, traceErr = impact.TracePytest(context.Background(), r, pyrepo, impact.PytestConfig{})
	})
	if traceErr != nil {
		t.Fatalf("TracePytest: %v", traceErr)
	}
	return traced
}

// comparable drops what depends on the interpreter, not on the repository.
func comparable(m *impact.Map) impact.Map {
	c := *m
	c.Python, c.Tracer = "", ""
	return c
}

// TestTracePytestMap checks the whole map of testdata/pyrepo against
// testdata/pyrepo.map.json (rewrite it with -update after reading the diff).
func TestTracePytestMap(t *testing.T) {
	m := pyrepoMap(t)
	got, err := json.MarshalIndent(comparable(m), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/pyrepo.map.json"
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != string(got) {
		t.Errorf("map differs from %s (run with -update and read the diff):\n%s", golden, got)
	}
	if m.Tracer != "sys.settrace" && m.Tracer != "sys.monitoring" {
		t.Errorf("tracer %q", m.Tracer)
	}
	for i, o := range m.Outcomes {
		if o != "passed" {
			t.Errorf("%s: %s on the pristine code", m.Tests[i], o)
		}
	}
}

// selectCases are spans of testdata/pyrepo and exactly the tests reaching
// them; each names the rule it checks.
var selectCases = []struct {
	name        string
	file        string
	first, last int
	want        []string // test names after "tests/"; "*" is every test
}{
	{"function body", "calc/ops.py", 7, 7, []string{"test_ops.py::test_add", "test_ops.py::test_mul[two by three]"}},
	{"loop body run by one parameter", "calc/ops.py", 13, 13, []string{"test_ops.py::test_mul[two by three]"}},
	{"whole function body", "calc/ops.py", 11, 14, []string{"test_ops.py::test_mul[two by three]", "test_ops.py::test_mul[times [zero]]"}},
	{"parametrised", "calc/ops.py", 18, 18, []string{"test_ops.py::test_scaled[1]", "test_ops.py::test_scaled[2]"}},
	{"session fixture: every user, not only the first", "calc/ops.py", 22, 22, []string{"test_ops.py::test_squared", "test_ops.py::test_squared_again"}},
	{"module constant", "calc/ops.py", 3, 3, []string{"*"}},
	{"def line", "calc/ops.py", 17, 18, []string{"*"}},
	{"never called", "calc/ops.py", 26, 26, nil},
	{"second line of an uncalled statement", "calc/ops.py", 27, 27, nil},
	{"method, second line of a statement", "calc/text.py", 18, 18, []string{"test_text.py::TestGreeter::test_greet"}},
	{"inside a multi-line literal", "calc/text.py", 24, 24, []string{"test_text.py::test_table"}},
	{"class body", "calc/text.py", 14, 14, []string{"*"}},
	{"constant computed at import", "calc/text.py", 5, 5, []string{"*"}},
	{"lazy import inside a test", "calc/text.py", 30, 30, []string{"test_text.py::test_lazy"}},
	{"docstring (no code): reached with the next statement", "calc/text.py", 9, 9, []string{"test_text.py::test_shout"}},
	{"global (no code)", "calc/text.py", 29, 29, []string{"test_text.py::test_lazy"}},
	{"module first imported inside a test", "calc/late.py", 3, 3, []string{"*"}},
	{"module never imported", "calc/never.py", 5, 5, nil},
	{"blank line", "calc/ops.py", 8, 9, nil},
	{"test file", "tests/test_ops.py", 7, 7, []string{"*"}},
	{"conftest", "tests/conftest.py", 8, 8, []string{"*"}},
}

func TestSelect(t *testing.T) {
	m := pyrepoMap(t)
	for _, tc := range selectCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := impact.Select(m, impact.Span{File: tc.file, First: tc.first, Last: tc.last})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if slices.Equal(tc.want, []string{"*"}) {
				want = m.Tests
			}
			for _, w := range tc.want {
				if w != "*" {
					want = append(want, "tests/"+w)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s:%d-%d: got %q, want %q", tc.file, tc.first, tc.last, got, want)
			}
		})
	}
}

func TestSelectInvalidSpan(t *testing.T) {
	m := &impact.Map{Version: impact.MapVersion}
	for _, s := range []impact.Span{{"", 1, 1}, {"/etc/passwd", 1, 1}, {"../x.py", 1, 1}, {"a//b.py", 1, 1}, {"a.py", 0, 1}, {"a.py", 3, 2}} {
		if _, err := impact.Select(m, s); !errors.Is(err, impact.ErrInvalidSpan) {
			t.Errorf("%+v: err %v, want ErrInvalidSpan", s, err)
		}
	}
}

func TestByteSpan(t *testing.T) {
	src := []byte("a = 1\nb = (2,\n     3)\n")
	for _, tc := range []struct {
		start, end  int
		first, last int
	}{{0, 5, 1, 1}, {0, 6, 1, 1}, {6, 7, 2, 2}, {4, 13, 1, 2}, {13, 13, 2, 2}, {14, 22, 3, 3}, {22, 22, 4, 4}} {
		got, err := impact.ByteSpan("m.py", src, tc.start, tc.end)
		if err != nil || got != (impact.Span{File: "m.py", First: tc.first, Last: tc.last}) {
			t.Errorf("[%d,%d): %+v %v, want lines %d-%d", tc.start, tc.end, got, err, tc.first, tc.last)
		}
	}
	for _, r := range [][2]int{{-1, 0}, {3, 2}, {0, 23}} {
		if _, err := impact.ByteSpan("m.py", src, r[0], r[1]); !errors.Is(err, impact.ErrInvalidSpan) {
			t.Errorf("%v: err %v, want ErrInvalidSpan", r, err)
		}
	}
}

func TestMapJSONRoundTrip(t *testing.T) {
	m := pyrepoMap(t)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back impact.Map
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range selectCases {
		s := impact.Span{File: tc.file, First: tc.first, Last: tc.last}
		a, _ := impact.Select(m, s)
		b, _ := impact.Select(&back, s)
		if !slices.Equal(a, b) {
			t.Errorf("%s: %q after a round trip, %q before", tc.name, b, a)
		}
	}
	bad := back
	bad.Outcomes = bad.Outcomes[1:]
	if bad.Validate() == nil {
		t.Error("Validate accepted outcomes that do not match the tests")
	}
}

// TestPytestSelectionRunsExactlyThose runs selections in the sandbox and
// checks from pytest's own summary that just those tests ran, brackets and
// spaces in parametrised ids included, and that an id no longer collected
// fails the run instead of passing it by running nothing.
func TestPytestSelectionRunsExactlyThose(t *testing.T) {
	m := pyrepoMap(t)
	r := newSandboxRunner(t, time.Minute)
	ctx := context.Background()
	for _, ids := range [][]string{
		{"tests/test_ops.py::test_mul[times [zero]]"},
		{"tests/test_ops.py::test_mul[two by three]", "tests/test_text.py::TestGreeter::test_greet", "tests/test_ops.py::test_squared_again"},
		m.Tests,
	} {
		run, err := impact.PytestSelection(m, ids, impact.PytestConfig{Options: []string{"-rA"}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(ctx, run.Command(pyrepo, "python3"))
		if err != nil {
			t.Fatal(err)
		}
		passed := summary(string(out), "PASSED ")
		if !equalSets(passed, ids) {
			t.Errorf("selected %q; pytest passed %q\n%s", ids, passed, out)
		}
	}
	if _, err := impact.PytestSelection(m, nil, impact.PytestConfig{}); !errors.Is(err, impact.ErrNoTests) {
		t.Errorf("empty selection: %v, want ErrNoTests", err)
	}
	if _, err := impact.PytestSelection(m, []string{"tests/test_ops.py::test_gone"}, impact.PytestConfig{}); err == nil {
		t.Error("an id not in the map was accepted")
	}
	// A stale map: the id is in the map but the repository lost the test.
	stale := *m
	stale.Tests = append(slices.Clone(m.Tests), "tests/test_ops.py::test_gone")
	stale.Outcomes = append(slices.Clone(m.Outcomes), "passed")
	run, err := impact.PytestSelection(&stale, []string{"tests/test_ops.py::test_add", "tests/test_ops.py::test_gone"}, impact.PytestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := run.Command(pyrepo, "sh")
	cmd.Argv = []string{"sh", "-c", `python3 -m pytest "$@"; echo "exit=$?"`, "sh"}
	cmd.Argv = append(cmd.Argv, run.Args...)
	out, err := r.Run(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "exit=4") || !strings.Contains(string(out), "test_gone") {
		t.Errorf("a missing selected test did not stop the run with status 4:\n%s", out)
	}
}

// summary returns the node ids of pytest's -rA short summary lines that
// start with prefix ("PASSED ", "FAILED ", "ERROR ").
func summary(out, prefix string) []string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			id, _, _ := strings.Cut(rest, " - ")
			ids = append(ids, id)
		}
	}
	return ids
}

func equalSets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestMonitoringAgreesWithSettrace traces testdata/pyrepo with each Python
// 3.12+ (sys.monitoring) found on PATH or named in INFILL_TEST_PYTHONS
// (interpreter paths separated by colons) and wants the map the sandbox's
// Debian Python (sys.settrace) gives. It runs them on the host (trusted test
// data, hostRunner) and skips where there is none: Debian 12 has 3.11 only.
func TestMonitoringAgreesWithSettrace(t *testing.T) {
	want := comparable(pyrepoMap(t))
	found := 0
	pythons := []string{"python3.12", "python3.13", "python3.14"}
	if env := os.Getenv("INFILL_TEST_PYTHONS"); env != "" {
		pythons = strings.Split(env, ":")
	}
	for _, py := range pythons {
		path, err := exec.LookPath(py)
		if err != nil || exec.Command(path, "-c", "import sys; assert sys.version_info >= (3, 12)").Run() != nil {
			continue
		}
		var env []string
		if exec.Command(path, "-c", "import pytest").Run() != nil {
			// Debian's pytest is pure Python: lend it to the other interpreter.
			if exec.Command(path, "-c", "import sys; sys.path.append('/usr/lib/python3/dist-packages'); import pytest").Run() != nil {
				t.Logf("%s: no pytest, skipped", py)
				continue
			}
			env = []string{"PYTHONPATH=" + impact.PluginDir + ":/usr/lib/python3/dist-packages"}
		}
		found++
		t.Run(py, func(t *testing.T) {
			m, err := impact.TracePytestWith(context.Background(), hostRunner{t: t, env: env}, pyrepo,
				impact.PytestConfig{Options: []string{"-W", "ignore::DeprecationWarning"}}, path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Tracer != "sys.monitoring" {
				t.Errorf("%s traced with %s", m.Python, m.Tracer)
			}
			got, _ := json.Marshal(comparable(m))
			w, _ := json.Marshal(want)
			if string(got) != string(w) {
				t.Errorf("%s: map differs from sys.settrace's:\n%s\nwant\n%s", m.Python, got, w)
			}
		})
	}
	if found == 0 {
		t.Skip("no Python 3.12+ with pytest on PATH")
	}
}

func TestParseTraceRejects(t *testing.T) {
	r := fixedRunner("collected 3 items\ninfill-impact 00 not-base64\n")
	if _, err := impact.TracePytest(context.Background(), r, pyrepo, impact.PytestConfig{}); !errors.Is(err, impact.ErrNoOutput) {
		t.Errorf("output without this run's nonce: %v, want ErrNoOutput", err)
	}
}

type fixedRunner string

func (f fixedRunner) Run(context.Context, impact.Command) ([]byte, error) { return []byte(f), nil }

// TestTestReplacingTracer: a test that replaces the tracer (sys.settrace
// here; a debugger or coverage would) is selected for every span, even one
// it was not seen executing, and the tests after it are traced again.
func TestTestReplacingTracer(t *testing.T) {
	r := newSandboxRunner(t, time.Minute)
	m, err := impact.TracePytest(context.Background(), r, "testdata/pysettrace", impact.PytestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tracer == "sys.monitoring" {
		t.Skip("sys.monitoring is not replaced by sys.settrace")
	}
	if !slices.Equal(m.Always, []int{0}) {
		t.Errorf("always %v, want [0] (%q)", m.Always, m.Tests)
	}
	for line, want := range map[int][]string{
		2: {"test_mod.py::test_drops_tracer"},
		6: {"test_mod.py::test_drops_tracer", "test_mod.py::test_after"},
	} {
		got, err := impact.Select(m, impact.Span{File: "mod.py", First: line, Last: line})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("mod.py:%d selects %q (%v), want %q", line, got, err, want)
		}
	}
}

// TestFixtureAskedForByName: a session fixture reached through
// request.getfixturevalue (not in the test's fixture closure) belongs to
// every test asking for it, the one that ran it and those given the cached
// value alike.
func TestFixtureAskedForByName(t *testing.T) {
	r := newSandboxRunner(t, time.Minute)
	m, err := impact.TracePytest(context.Background(), r, "testdata/pydynamic", impact.PytestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := impact.Select(m, impact.Span{File: "mod.py", First: 2, Last: 2})
	want := []string{"test_fixture.py::test_by_name_first", "test_fixture.py::test_declared", "test_fixture.py::test_by_name_cached"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("mod.py:2 selects %q (%v), want %q", got, err, want)
	}
}

// TestChildProcesses: lines a Python child process runs (started from
// another working directory) belong to the test that started it; a child
// that ends without writing its lines (os._exit, a multiprocessing fork)
// makes its test selected for every span.
func TestChildProcesses(t *testing.T) {
	r := newSandboxRunner(t, time.Minute)
	m, err := impact.TracePytest(context.Background(), r, "testdata/pysubprocess", impact.PytestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const child, hard, fork = "test_sub.py::test_child", "test_sub.py::test_child_exits_hard", "test_sub.py::test_fork"
	for line, want := range map[int][]string{
		6:  {child, hard, fork},
		10: {hard, fork},
		18: {child, hard, fork},
	} {
		got, err := impact.Select(m, impact.Span{File: "mod.py", First: line, Last: line})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("mod.py:%d selects %q (%v), want %q", line, got, err, want)
		}
	}
	// The forked child ends with os._exit too (multiprocessing does).
	if !slices.Equal(m.Always, []int{1, 3}) {
		t.Errorf("always %v, want [1 3] (%q)", m.Always, m.Tests)
	}
}

package impact_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator/impact"
)

// probe is a statement alone on its line, to be replaced by a raise.
type probe struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Indent int    `json:"indent"`
}

// listProbes parses files (relative to dir) with Python's ast (nothing is
// executed) and returns every simple statement alone on one line.
func listProbes(t *testing.T, dir string, files []string) []probe {
	t.Helper()
	const script = `
import ast, json, sys
out = []
for rel in sys.argv[1:]:
    lines = open(rel, encoding="utf-8").read().split("\n")
    for node in ast.walk(ast.parse("\n".join(lines), rel)):
        if not isinstance(node, ast.stmt) or hasattr(node, "body") or node.lineno != node.end_lineno:
            continue
        line = lines[node.lineno - 1]
        rest = line[node.end_col_offset:].strip()
        if line[:node.col_offset].strip() == "" and (rest == "" or rest.startswith("#")):
            out.append({"file": rel, "line": node.lineno, "indent": node.col_offset})
json.dump(sorted(out, key=lambda p: (p["file"], p["line"])), sys.stdout)
`
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", script}, files...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing statements: %v", err)
	}
	var ps []probe
	if err := json.Unmarshal(out, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// breakAt returns a copy of dir whose probe line raises RuntimeError.
func breakAt(t *testing.T, dir string, p probe) string {
	t.Helper()
	broken := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(broken, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(broken, filepath.FromSlash(p.File))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	lines[p.Line-1] = strings.Repeat(" ", p.Indent) + `raise RuntimeError("impact probe")`
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return broken
}

// outcome is a pytest run's verdict: its exit status and the failing or
// erroring node ids (or files, for collection errors).
type outcome struct {
	exit   int
	failed []string
	ran    int
}

var countsRE = regexp.MustCompile(`(\d+) (passed|failed|error|errors|xfailed|xpassed|skipped)\b`)

func runPytest(t *testing.T, r impact.Runner, dir string, run impact.PytestRun) outcome {
	t.Helper()
	cmd := run.Command(dir, "python3")
	cmd.Argv = append([]string{"sh", "-c", `python3 -m pytest "$@"; echo "pytest-exit=$?"`, "sh"}, run.Args...)
	out, err := r.Run(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	i := strings.LastIndex(text, "pytest-exit=")
	if i < 0 {
		t.Fatalf("no exit status:\n%s", text)
	}
	exit, err := strconv.Atoi(strings.TrimSpace(text[i+len("pytest-exit="):]))
	if err != nil {
		t.Fatal(err)
	}
	o := outcome{exit: exit, failed: append(summary(text, "FAILED "), summary(text, "ERROR ")...)}
	slices.Sort(o.failed)
	o.failed = slices.Compact(o.failed)
	if j := strings.LastIndex(text[:i], "\n="); j >= 0 {
		for _, m := range countsRE.FindAllStringSubmatch(text[j:i], -1) {
			n, _ := strconv.Atoi(m[1])
			o.ran += n
		}
	}
	return o
}

// checkVerdicts breaks each probe in turn and wants the selected tests'
// verdict (and failing tests) to be the whole suite's. It returns the tests
// run both ways and the wall times, summed.
func checkVerdicts(t *testing.T, r impact.Runner, dir string, m *impact.Map, cfg impact.PytestConfig, probes []probe) (selRan, fullRan int, selWall, fullWall time.Duration) {
	t.Helper()
	full := impact.PytestRun{Args: append([]string{"-p", "no:cacheprovider", "-rfE"}, cfg.Options...), Env: cfg.Env}
	full.Args = append(full.Args, cfg.Paths...)
	for _, p := range probes {
		ids, err := impact.Select(m, impact.Span{File: p.File, First: p.Line, Last: p.Line})
		if err != nil {
			t.Fatal(err)
		}
		broken := breakAt(t, dir, p)
		start := time.Now()
		want := runPytest(t, r, broken, full)
		fullWall += time.Since(start)
		fullRan += want.ran
		var got outcome
		if len(ids) > 0 {
			sel := cfg
			sel.Options = append([]string{"-rfE"}, cfg.Options...)
			run, err := impact.PytestSelection(m, ids, sel)
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			got = runPytest(t, r, broken, run)
			selWall += time.Since(start)
			selRan += got.ran
		}
		if len(ids) > 0 {
			args := 0
			for _, id := range ids {
				args += len(id) + 1
			}
			t.Logf("%s:%d: %d node ids would take %d bytes of command line", p.File, p.Line, len(ids), args)
		}
		pass := func(o outcome) bool { return o.exit == 0 }
		if pass(got) != pass(want) || !slices.Equal(got.failed, want.failed) {
			t.Errorf("%s:%d broken: %d selected tests: exit %d, failing %q; whole suite: exit %d, failing %q",
				p.File, p.Line, len(ids), got.exit, got.failed, want.exit, want.failed)
		} else {
			t.Logf("%s:%d broken: %d/%d tests selected, whole suite exit %d with %d failing", p.File, p.Line, len(ids), len(m.Tests), want.exit, len(want.failed))
		}
	}
	return
}

// TestSelectedVerdictsMatchWholeSuite breaks every statement of
// testdata/pyrepo's package in turn (a raise in its place) and checks that
// running only the selected tests fails exactly the tests the whole suite
// fails.
func TestSelectedVerdictsMatchWholeSuite(t *testing.T) {
	m := pyrepoMap(t)
	r := newSandboxRunner(t, time.Minute)
	files := []string{"calc/__init__.py", "calc/late.py", "calc/never.py", "calc/ops.py", "calc/text.py"}
	probes := listProbes(t, pyrepo, files)
	if len(probes) < 20 {
		t.Fatalf("only %d statements to break", len(probes))
	}
	if testing.Short() { // every third statement: a third of a minute
		var some []probe
		for i := 0; i < len(probes); i += 3 {
			some = append(some, probes[i])
		}
		probes = some
	}
	selRan, fullRan, _, _ := checkVerdicts(t, r, pyrepo, m, impact.PytestConfig{}, probes)
	t.Logf("%d broken statements: %d test executions selected, %d whole suite", len(probes), selRan, fullRan)
}

// TestSelectedVerdictsRealRepository does the same on a real repository
// named by INFILL_IMPACT_REPO (a Python repository whose suite passes under
// Debian's pytest with no extra packages), breaking INFILL_IMPACT_PROBES
// statements (default 8) spread over its executed source files. Skipped
// without it: the suite of a real repository takes minutes per statement.
func TestSelectedVerdictsRealRepository(t *testing.T) {
	dir := os.Getenv("INFILL_IMPACT_REPO")
	if dir == "" {
		t.Skip("INFILL_IMPACT_REPO names no repository")
	}
	n := 8
	if s := os.Getenv("INFILL_IMPACT_PROBES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("INFILL_IMPACT_PROBES=%q", s)
		}
	}
	r := newSandboxRunner(t, 10*time.Minute)
	start := time.Now()
	m, err := impact.TracePytest(context.Background(), r, dir, impact.PytestConfig{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	t.Logf("traced %d tests over %d files in %s with %s (Python %s); map %d bytes of JSON",
		len(m.Tests), len(m.Files), time.Since(start).Round(time.Millisecond), m.Tracer, m.Python, len(raw))
	var files []string
	for f := range m.Files {
		files = append(files, f)
	}
	slices.Sort(files)
	all := listProbes(t, dir, files)
	var probes []probe
	for i := 0; i < n && len(all) > 0; i++ {
		probes = append(probes, all[(2*i+1)*len(all)/(2*n)])
	}
	selRan, fullRan, selWall, fullWall := checkVerdicts(t, r, dir, m, impact.PytestConfig{}, probes)
	t.Logf("%d broken statements: %d test executions selected vs %d whole suite; pytest wall %s selected vs %s whole suite",
		len(probes), selRan, fullRan, selWall.Round(time.Millisecond), fullWall.Round(time.Millisecond))
}

package impact_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/evaluator/impact"
)

// TestPytestReach maps byte spans of testdata/pyrepo onto selections: tests
// that execute the span (skipped ones left out), the whole suite for a line
// run at import time, none for a line no test runs; ids are relative to the
// repository root when pytest's rootdir is not.
func TestPytestReach(t *testing.T) {
	m := pyrepoMap(t)
	src := []byte("def add(a, b):\n    return a + b\n")
	m.Files["calc/x.py"] = impact.FileImpact{All: []int{1}, Lines: map[int][]int{2: {0, 1}}}
	m.Outcomes = slices.Clone(m.Outcomes)
	m.Outcomes[1] = "skipped"
	reach := impact.PytestReach{Map: m}
	at := strings.Index(string(src), "a + b")
	sel, err := reach.Span("calc/x.py", src, at, at+5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sel.Tests, []string{m.Tests[0]}) || sel.Passing != 1 || sel.Whole || sel.Empty() {
		t.Errorf("body: %+v", sel)
	}
	if sel, _ := reach.Span("calc/x.py", src, 0, 3); !sel.Whole || sel.Empty() || sel.Tests != nil {
		t.Errorf("def line: %+v", sel)
	}
	if sel, _ := reach.Span("calc/never.py", src, 0, 3); !sel.Empty() {
		t.Errorf("a file no test runs: %+v", sel)
	}
	// A whole function: its def line runs at import but lies outside the
	// body, so a grader checking the shape selects the body's tests.
	m.Files["calc/x.py"] = impact.FileImpact{All: []int{1}, Lines: map[int][]int{2: {0}}, Bodies: [][2]int{{2, 2}}}
	if sel, _ := reach.Span("calc/x.py", src, 0, len(src)); !slices.Equal(sel.Tests, []string{m.Tests[0]}) || sel.Whole {
		t.Errorf("whole function: %+v", sel)
	}
	if ids, _ := impact.Select(m, impact.Span{File: "calc/x.py", First: 1, Last: 2}); len(ids) != len(m.Tests) {
		t.Errorf("Select (no shape check) of a whole function: %d tests, want all %d", len(ids), len(m.Tests))
	}
	// A body line run at import (the function is called there): every test.
	m.Files["calc/x.py"] = impact.FileImpact{All: []int{1, 2}, Bodies: [][2]int{{2, 2}}}
	if sel, _ := reach.Span("calc/x.py", src, at, at+5); !sel.Whole {
		t.Errorf("a body line run at import: %+v", sel)
	}
	m.Files["calc/x.py"] = impact.FileImpact{Lines: map[int][]int{2: {1}}}
	if sel, _ := reach.Span("calc/x.py", src, at, at+5); !sel.Empty() {
		t.Errorf("a line only a skipped test runs: %+v", sel)
	}
	if _, err := reach.Span("calc/x.py", src, 5, 100); !errors.Is(err, impact.ErrInvalidSpan) {
		t.Errorf("span past the end: %v", err)
	}

	sub := *m
	sub.RootDir = "pkg"
	got := sub.RootRelative([]string{"tests/test_a.py::test_x[a::b]", "tests/test_b.py"})
	if want := []string{"pkg/tests/test_a.py::test_x[a::b]", "pkg/tests/test_b.py"}; !slices.Equal(got, want) {
		t.Errorf("RootRelative: %q, want %q", got, want)
	}
}

// TestPytestTests builds the selected run from root-relative ids alone.
func TestPytestTests(t *testing.T) {
	run, err := impact.PytestTests([]string{"tests/test_ops.py::test_add", "tests/test_ops.py::test_mul[x]", "tests/test_text.py::test_shout"},
		impact.PytestConfig{Options: []string{"-q"}, Compile: []string{"calc/ops.py"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-p", "infill_impact", "-p", "no:cacheprovider", "--rootdir=.", "-q", "tests/test_ops.py", "tests/test_text.py"}
	if !slices.Equal(run.Args, want) {
		t.Errorf("args %q, want %q", run.Args, want)
	}
	if run.Env["INFILL_IMPACT_COMPILE"] != `["calc/ops.py"]` || run.Env["INFILL_IMPACT_SELECT"] == "" || run.Env["PYTHONPATH"] != impact.PluginDir {
		t.Errorf("env %q", run.Env)
	}
	if _, err := impact.PytestTests(nil, impact.PytestConfig{}); !errors.Is(err, impact.ErrNoTests) {
		t.Errorf("no ids: %v", err)
	}
	for _, bad := range []string{"/abs/test_x.py::t", "../up.py::t", "--co", "::t", "tests/t\x00.py::t"} {
		if _, err := impact.PytestTests([]string{bad}, impact.PytestConfig{}); err == nil {
			t.Errorf("id %q accepted", bad)
		}
	}
	if _, err := impact.PytestTests([]string{"tests/t.py::t"}, impact.PytestConfig{Compile: []string{"../x.py"}}); err == nil {
		t.Error("a file to compile outside the repository accepted")
	}
}

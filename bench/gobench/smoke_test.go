package gobench_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
)

// packages are those holding Go benchmarks outside evaluator/ (whose own
// tests cover its benchmarks' code), each with the test flags of its
// smallest run: contextpack's generated repository of 100 files instead
// of 2,000.
var packages = []struct {
	dir   string
	flags []string
}{
	{"./server", nil}, {"./server/httpapi", nil}, {"./inference", nil}, {"./clients/go/infill", nil},
	{"./contextpack/internal/syntax", nil}, {"./contextpack/tokenizer", nil},
	{"./contextpack", []string{"-synth-files", "100"}},
}

var benchFunc = regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)

// TestEveryBenchmarkRunsOnce runs every benchmark of those packages with
// -benchtime 1x (one iteration each, the real backend where it uses one)
// and checks that each reported a result and that the packages passed.
func TestEveryBenchmarkRunsOnce(t *testing.T) {
	root := benchtest.Root(t)
	var want []string
	for _, p := range packages {
		files, _ := filepath.Glob(filepath.Join(root, p.dir, "*_test.go"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range benchFunc.FindAllSubmatch(data, -1) {
				want = append(want, string(m[1]))
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no benchmarks found")
	}
	env := benchtest.Env(t, benchtest.Backend(t)...)
	var out string
	var plain []string
	run := func(pkgs []string, flags []string) {
		args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchtime", "1x", "-count", "1"}, pkgs...)
		if len(flags) > 0 {
			args = append(append(args, "-args"), flags...)
		}
		out += benchtest.Run(t, env, 5*time.Minute, "go", args...)
	}
	for _, p := range packages {
		if p.flags == nil {
			plain = append(plain, p.dir)
		} else {
			run([]string{p.dir}, p.flags)
		}
	}
	run(plain, nil)
	for _, name := range want {
		// A result line: the benchmark's name (with its sub-benchmarks and
		// the -cpu suffix), then the iteration count.
		if !regexp.MustCompile(`(?m)^` + name + `(/\S*)?(-[0-9]+)?\s+1\s`).MatchString(out) {
			t.Errorf("%s reported no result:\n%s", name, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a benchmark failed:\n%s", out)
	}
}

package evaluator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/reasons/*.txtar")

// TestReasons: each testdata/reasons case is a run as the sandbox reports
// it (spec.json, result.json, and stdout and stderr sections); its golden
// sections are the verdict with its reason, and the import error that
// makes the unmodified repository decide (empty: none). -update rewrites
// them.
func TestReasons(t *testing.T) {
	files, err := filepath.Glob("testdata/reasons/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := map[string]string{}
			for _, f := range ar.Files {
				sec[f.Name] = string(f.Data)
			}
			// spec.json: the run's test kind ("": a program) and its sandbox spec.
			var spec struct {
				Kind TestKind
				sandbox.Spec
			}
			if err := json.Unmarshal([]byte(sec["spec.json"]), &spec); err != nil {
				t.Fatalf("spec.json: %v", err)
			}
			run := testRun{name: "program", read: readPython(false, false)}
			if spec.Kind != "" {
				run = mustRunner(spec.Kind).judge(&TestSpec{Kind: spec.Kind})
			}
			run.spec = spec.Spec
			var out sandbox.Result
			if err := json.Unmarshal([]byte(sec["result.json"]), &out); err != nil {
				t.Fatalf("result.json: %v", err)
			}
			out.Stdout, out.Stderr = sec["stdout"], sec["stderr"]
			expected := 0
			if s := strings.TrimSpace(sec["expected"]); s != "" {
				if expected, err = strconv.Atoi(s); err != nil {
					t.Fatal(err)
				}
			}
			v, why := run.verdict(&out, expected)
			got := map[string]string{"reason": string(v) + ": " + why + "\n", "import": importFailure(&out)}
			if got["import"] != "" {
				got["import"] += "\n"
			}
			if *update {
				for i, f := range ar.Files {
					if g, ok := got[f.Name]; ok {
						ar.Files[i].Data = []byte(g)
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for name, g := range got {
				if want, ok := sec[name]; !ok {
					t.Errorf("section %s missing", name)
				} else if g != want {
					t.Errorf("%s:\n got  %q\n want %q", name, g, want)
				}
			}
		})
	}
}

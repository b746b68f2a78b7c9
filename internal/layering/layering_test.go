package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/infill-dev/infill/"

// pkg is what `go list -json` says of one of the module's packages.
type pkg struct {
	ImportPath string
	Imports    []string // direct, without tests
	Deps       []string // every package it depends on, without tests
}

// listModule lists the module's packages (skips where go is not on PATH,
// fails under CI=true).
func listModule(t *testing.T) map[string]pkg {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go not on PATH")
		}
		t.Skip("go not on PATH")
	}
	cmd := exec.Command(goCmd, "list", "-json=ImportPath,Imports,Deps", module+"...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// under reports whether p (relative to the module, or a standard or
// external path) is one of the trees (a trailing "/..." takes the tree,
// else the package alone; "..." alone takes everything).
func under(p string, trees ...string) bool {
	for _, tr := range trees {
		if tr == "..." {
			return true
		}
		if base, ok := strings.CutSuffix(tr, "/..."); ok {
			if p == base || strings.HasPrefix(p, base+"/") {
				return true
			}
		} else if p == tr {
			return true
		}
	}
	return false
}

// domain are the packages that never see a transport: what one
// completion or one evaluation does, whatever carries it. Binaries
// (.../cmd/...) wire packages together and are none.
var domain = []string{"contextpack/...", "inference/...", "evaluator/...", "server/pipeline", "server/auth",
	"server/workspace", "internal/errkind", "internal/logctx", "internal/repofs", "internal/editregion"}

// binaries are the module's commands.
var binaries = []string{"contextpack/cmd/...", "evaluator/cmd/...", "server/cmd/...", "clients/cmd/..."}

// rule is one import rule: the packages in from (but not in except)
// depend (with direct, import) on none of the module's packages in forbid
// (but those in unless) and on no package outside the module in external.
type rule struct {
	what           string
	from, except   []string
	forbid, unless []string
	external       []string
	direct         bool
}

var rules = []rule{
	{what: "domain packages depend on neither gRPC nor the generated API (it imports gRPC)",
		from: domain, except: binaries, forbid: []string{"proto/..."}, external: []string{"google.golang.org/grpc/..."}},
	{what: "domain packages import no net/http (inference's backends speak HTTP)",
		from: domain, except: append([]string{"inference/..."}, binaries...), external: []string{"net/http"}, direct: true},
	{what: "the pipeline depends on no evaluator, sandbox, dataset or auth package",
		from: []string{"server/pipeline"}, forbid: []string{"evaluator/...", "server/auth"}},
	{what: "the editable region's placement is a leaf (the pipeline and the next-edit builder share it)",
		from: []string{"internal/editregion"}, forbid: []string{"..."}},
	{what: "the result types are a leaf: nothing of the module",
		from: []string{"evaluator/outcome"}, forbid: []string{"..."}},
	{what: "the sandbox knows of the evaluator only the result types",
		from: []string{"evaluator/sandbox/..."}, forbid: []string{"evaluator/..."}, unless: []string{"evaluator/outcome", "evaluator/sandbox/..."}},
	{what: "grading builds on no benchmark loader or builder (they build on it)",
		from: []string{"evaluator"}, forbid: []string{"evaluator/masking", "evaluator/dataset"}},
	{what: "the evaluator knows nothing of contextpack, inference, the server or the clients",
		from: []string{"evaluator/..."}, except: binaries, forbid: []string{"contextpack/...", "inference/...", "server/...", "clients/..."}},
	{what: "contextpack knows nothing of inference, evaluation, the server or the clients",
		from: []string{"contextpack/..."}, except: binaries, forbid: []string{"inference/...", "evaluator/...", "server/...", "clients/..."}},
	{what: "inference knows nothing of contextpack, evaluation, the server or the clients",
		from: []string{"inference/..."}, except: binaries, forbid: []string{"contextpack/...", "evaluator/...", "server/...", "clients/..."}},
	{what: "the server's handlers carry results without importing the sandbox (its binary and servertest make one)",
		from: []string{"server"}, forbid: []string{"evaluator/sandbox"}, direct: true},
	{what: "the evaluation wire conversion is the transports' (the server and the CLI)",
		from: []string{"..."}, except: []string{"server", "clients/internal/cli", "internal/evalwire"}, forbid: []string{"internal/evalwire"}, direct: true},
}

// TestLayering checks every rule on the module as `go list` sees it (the
// rules are docs/architecture.md's, Layering).
func TestLayering(t *testing.T) {
	pkgs := listModule(t)
	for _, r := range rules {
		matched := 0
		for rel, p := range pkgs {
			if !under(rel, r.from...) || under(rel, r.except...) {
				continue
			}
			matched++
			deps := p.Deps
			if r.direct {
				deps = p.Imports
			}
			for _, d := range deps {
				dep, own := strings.CutPrefix(d, module)
				if own && under(dep, r.forbid...) && !under(dep, r.unless...) || !own && under(dep, r.external...) {
					t.Errorf("%s: %s depends on %s", r.what, rel, dep)
				}
			}
		}
		if matched == 0 {
			t.Errorf("%s: no package matched %v (a rule about nothing)", r.what, r.from)
		}
	}
}

package masking

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/golang"

	"github.com/infill-dev/infill/evaluator"
)

// goLanguage masks Go repositories, tested with `go test -json` of the
// masked file's package. The levels (docs/evaluation.md has the table):
//
//   - expression: calls, operators, composite literals, function
//     literals, selectors, index/slice expressions, type assertions and
//     conversions (not the function of a call: the call is masked);
//   - statement: simple statements (assignments, short variable
//     declarations, returns, increments, sends, go and defer) and
//     var/const/import declarations;
//   - block: if, for, switch, type switch, select and labeled statements;
//   - function: a function or method declaration, signature and body;
//   - class: a type declaration (struct, interface or other named type):
//     what a class's fields and method set are in Go; its methods are
//     separate declarations, masked at the function level.
var goLanguage = &Language{
	Name:        "go",
	grammar:     func(string) *sitter.Language { return goGrammar },
	level:       goLevel,
	include:     GoInclude,
	test:        goTest,
	repoInclude: goRepoInclude,
	packageOf:   func(rel string) string { return path.Dir(rel) },
}

var goGrammar = golang.GetLanguage()

var goExpressionTypes = map[string]bool{
	"call_expression": true, "binary_expression": true, "unary_expression": true,
	"composite_literal": true, "func_literal": true, "selector_expression": true,
	"index_expression": true, "slice_expression": true, "type_assertion_expression": true,
	"type_conversion_expression": true,
}

var goStatementTypes = map[string]bool{
	"expression_statement": true, "assignment_statement": true, "short_var_declaration": true,
	"return_statement": true, "inc_statement": true, "dec_statement": true, "send_statement": true,
	"go_statement": true, "defer_statement": true, "var_declaration": true, "const_declaration": true,
	"import_declaration": true,
}

var goBlockTypes = map[string]bool{
	"if_statement": true, "for_statement": true, "expression_switch_statement": true,
	"type_switch_statement": true, "select_statement": true, "labeled_statement": true,
}

// goLevel is the level a Go node is masked at.
func goLevel(n *sitter.Node) evaluator.Level {
	typ := n.Type()
	switch {
	case typ == "function_declaration" || typ == "method_declaration":
		return evaluator.LevelFunction
	case typ == "type_declaration":
		return evaluator.LevelClass
	case goBlockTypes[typ]:
		return evaluator.LevelBlock
	case goStatementTypes[typ]:
		return evaluator.LevelStatement
	case goExpressionTypes[typ] && !isFunctionOf(n, "call_expression"):
		return evaluator.LevelExpression
	}
	return ""
}

// GoInclude accepts .go files that are not tests, outside vendor/,
// testdata/ and the directories go ignores (_name, .name).
func GoInclude(rel string) bool {
	if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
		return false
	}
	parts := strings.Split(rel, "/")
	for _, d := range parts[:len(parts)-1] {
		if d == "vendor" || d == "testdata" || strings.HasPrefix(d, "_") || strings.HasPrefix(d, ".") {
			return false
		}
	}
	return !strings.HasPrefix(parts[len(parts)-1], "_") && !strings.HasPrefix(parts[len(parts)-1], ".")
}

// generated is the line that marks a generated Go file
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// isGenerated reports a Go file marked generated before its package
// clause.
func isGenerated(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if generated.MatchString(line) {
			return true
		}
		if strings.HasPrefix(line, "package ") {
			return false
		}
	}
	return false
}

// goRepoInclude refines GoInclude for a repository: a generated file, a
// file its build constraints leave out on this platform (go/build's
// rules: runewidth_windows.go on Linux), or a file whose package
// directory has no _test.go file (nothing would test it), is not masked. The second result lists, in words, what was
// left out and why.
func goRepoInclude(repoDir string, include func(rel string) bool) (func(rel string) bool, func() []string) {
	tested := map[string]bool{}
	var notes []string
	noted := map[string]bool{}
	hasTests := func(dir string) bool {
		t, ok := tested[dir]
		if !ok {
			m, _ := filepath.Glob(filepath.Join(repoDir, filepath.FromSlash(dir), "*_test.go"))
			t = len(m) > 0
			tested[dir] = t
		}
		return t
	}
	accept := func(rel string) bool {
		if !include(rel) {
			return false
		}
		dir := path.Dir(rel)
		if !hasTests(dir) {
			if !noted[dir] {
				noted[dir] = true
				notes = append(notes, "package "+dir+": no tests")
			}
			return false
		}
		if ok, err := build.Default.MatchFile(filepath.Join(repoDir, filepath.FromSlash(dir)), path.Base(rel)); err == nil && !ok {
			notes = append(notes, rel+": not built here ("+build.Default.GOOS+"/"+build.Default.GOARCH+")")
			return false
		}
		src, err := os.ReadFile(filepath.Join(repoDir, filepath.FromSlash(rel)))
		if err == nil && isGenerated(src) {
			notes = append(notes, rel+": generated")
			return false
		}
		return true
	}
	return accept, func() []string { return notes }
}

// goTest is the test entry point: Options.Test, else go test of the
// masked file's package.
func goTest(_ string, o Options) evaluator.TestSpec {
	if o.Test != nil {
		return *o.Test
	}
	return evaluator.TestSpec{Kind: evaluator.TestGo}
}

// PrepareGo fetches, on the host and before any sandbox, the dependencies
// of every Go module in the repository (each go.mod outside vendor/,
// testdata/ and hidden directories): `go mod download` into modCache
// (empty: go's own GOMODCACHE), which the sandbox then binds read-only.
// A module that vendors its dependencies (vendor/modules.txt) needs
// nothing. It returns the modules it fetched for.
func PrepareGo(ctx context.Context, repoDir, modCache string) ([]string, error) {
	var mods []string
	err := filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != repoDir && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			mods = append(mods, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var fetched []string
	for _, dir := range mods {
		if _, err := os.Stat(filepath.Join(dir, "vendor", "modules.txt")); err == nil {
			continue
		}
		cmd := exec.CommandContext(ctx, "go", "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if modCache != "" {
			cmd.Env = append(cmd.Env, "GOMODCACHE="+modCache)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) || errors.Is(err, exec.ErrNotFound) {
				return fetched, fmt.Errorf("go mod download in %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
			}
			return fetched, err
		}
		rel, _ := filepath.Rel(repoDir, dir)
		fetched = append(fetched, filepath.ToSlash(rel))
	}
	return fetched, nil
}

// packageBaselines checks the unmodified repository per unit (Go package)
// on first need: the unit's first file restored exactly, its tests run.
// A unit that passes gives its samples its pass count as ExpectedTests
// (tests and subtests that passed, as the runner counts them); one whose
// tests fail, or that has none, gives none (Stats.FailingPackages says
// why). A unit that cannot be judged (VerdictError: the toolchain or the
// module cache lacks something) stops the build.
func (p *plan) packageBaselines(ctx context.Context, g Grader, repoDir string, o Options, test evaluator.TestSpec) func(Candidate) (evaluator.TestSpec, bool, error) {
	type unit struct {
		test evaluator.TestSpec
		ok   bool
	}
	units := map[string]*unit{}
	return func(c Candidate) (evaluator.TestSpec, bool, error) {
		key := p.lang.packageOf(c.Path)
		if u := units[key]; u != nil {
			return u.test, u.ok, nil
		}
		bt, err := p.baseTask(o, repoDir, test, func(rel string) bool { return p.lang.packageOf(rel) == key })
		if err != nil {
			return test, false, err
		}
		t, res, _, err := checkBaseline(ctx, g, repoDir, bt)
		u := &unit{test: t}
		units[key] = u
		var be *BaselineError
		switch {
		case errors.As(err, &be) && res.Verdict != evaluator.VerdictError:
			p.stats.FailingPackages = append(p.stats.FailingPackages, key+": "+firstNonEmpty(res.Reason, string(res.Verdict)))
			return t, false, nil
		case err != nil:
			if be != nil {
				be.Unit = key
			}
			return t, false, err
		case res.Tests == nil || res.Tests.Passed == 0:
			p.stats.FailingPackages = append(p.stats.FailingPackages, key+": no test passed")
			return t, false, nil
		}
		if u.test.ExpectedTests == 0 {
			u.test.ExpectedTests = res.Tests.Passed
		}
		u.ok = true
		p.stats.Packages++
		p.stats.BaselineTests += res.Tests.Passed
		return u.test, true, nil
	}
}

// explainGo is Explain for a Go package whose unmodified tests could not
// be judged.
func (e *BaselineError) explainGo() string {
	var b strings.Builder
	r := &e.Result
	fmt.Fprintf(&b, "the unmodified repository does not pass its tests (go test -json of package %s)\n", firstNonEmpty(e.Unit, "."))
	if why := firstNonEmpty(r.Error, r.Reason, string(r.Verdict)); why != "" {
		fmt.Fprintf(&b, "  why: %s\n", why)
	}
	writeOutputTail(&b, r)
	text := r.Error + "\n" + r.Reason + "\n" + r.StdoutTail + "\n" + r.StderrTail
	fix := "run go test -count=1 in that package yourself to see why"
	switch {
	case r.Limit != "":
		fix = "the reason names the limit and the flag that raises it"
	case strings.Contains(text, "GOPROXY=off") || strings.Contains(text, "module cache") || strings.Contains(text, "missing go.sum entry"):
		fix = "the sandbox builds offline against the module cache (GOMODCACHE, --sandbox-go-modcache): eval mask ran go mod download into it; " +
			"it must be readable by the sandbox's user (started as root, that is nobody: a cache under root's 0700 home is not), " +
			"e.g. GOMODCACHE=/var/cache/go-mod infill eval mask ..., and the same for eval run --local and infill-server"
	case strings.Contains(text, "requires go >="):
		fix = "the module needs a newer Go than the sandbox's toolchain (--sandbox-go-root, here and on infill-server)"
	}
	fmt.Fprintf(&b, "  fix: %s", fix)
	return b.String()
}

package masking

import (
	"bufio"
	"bytes"
	"go/build"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/golang"

	"github.com/infill-dev/infill/evaluator"
)

// goLanguage masks Go repositories, tested with `go test -json` of the
// masked file's package (the evaluator's Go runner). The levels (docs/evaluation.md has the table):
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
	Title:       "Go",
	grammar:     func(string) *sitter.Language { return goGrammar },
	level:       goLevel,
	include:     GoInclude,
	tests:       []evaluator.TestKind{evaluator.TestGo},
	repoInclude: goRepoInclude,
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

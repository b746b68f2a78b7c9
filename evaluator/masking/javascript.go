package masking

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
)

// javascriptLanguage masks JavaScript repositories (.js, .mjs, .cjs, .jsx),
// typescriptLanguage TypeScript ones (.ts, .mts, .cts, .tsx); both are
// tested with node's built-in test runner or the repository's vitest
// (defaultNodeTest). Only JavaScript's tests are selected per sample
// (selectNodeTests): the coverage of TypeScript tests is of the
// transformed code, not of the source's spans.
var (
	javascriptLanguage = scriptLanguage("javascript", jsExtensions, selectNodeTests)
	typescriptLanguage = scriptLanguage("typescript", tsExtensions, nil)
)

// scriptLanguage is the language name masking the files with extensions
// exts, its per-sample test selection selectTests (nil: none).
func scriptLanguage(name string, exts []string, selectTests func(context.Context, Grader, string, []dataset.InfillRecord, evaluator.TestSpec, Options, *zap.Logger) (*Selection, error)) *Language {
	return &Language{
		Name:        name,
		grammar:     scriptGrammar,
		level:       scriptLevel,
		include:     func(rel string) bool { return scriptSource(rel, exts) },
		test:        defaultNodeTest,
		selectTests: selectTests,
	}
}

var (
	jsExtensions = []string{".js", ".mjs", ".cjs", ".jsx"}
	tsExtensions = []string{".ts", ".mts", ".cts", ".tsx"}
)

// IsScriptFile reports a file name with a JavaScript or TypeScript
// extension.
func IsScriptFile(name string) bool {
	ext := path.Ext(name)
	return slices.Contains(jsExtensions, ext) || slices.Contains(tsExtensions, ext)
}

// scriptGrammar is tree-sitter's JavaScript grammar for .js, .mjs and .cjs,
// TypeScript's for .ts, .mts and .cts, and TSX's for .tsx and .jsx (JSX
// with or without types).
func scriptGrammar(rel string) *sitter.Language {
	switch path.Ext(rel) {
	case ".ts", ".mts", ".cts":
		return typescript.GetLanguage()
	case ".tsx", ".jsx":
		return tsx.GetLanguage()
	}
	return javascript.GetLanguage()
}

// scriptExpressionTypes are masked at the expression level.
var scriptExpressionTypes = map[string]bool{
	"call_expression": true, "new_expression": true, "binary_expression": true, "unary_expression": true,
	"ternary_expression": true, "member_expression": true, "subscript_expression": true,
	"await_expression": true, "assignment_expression": true, "augmented_assignment_expression": true,
	"object": true, "array": true, "template_string": true, "arrow_function": true,
	"update_expression": true, "as_expression": true, "satisfies_expression": true, "non_null_expression": true,
}

// scriptStatementTypes are masked at the statement level (simple
// statements).
var scriptStatementTypes = map[string]bool{
	"expression_statement": true, "return_statement": true, "throw_statement": true,
	"lexical_declaration": true, "variable_declaration": true, "import_statement": true,
}

// scriptBlockTypes are compound statements masked at the block level.
var scriptBlockTypes = map[string]bool{
	"if_statement": true, "for_statement": true, "for_in_statement": true, "while_statement": true,
	"do_statement": true, "switch_statement": true, "try_statement": true,
}

// scriptLevel is the level a JavaScript or TypeScript node is masked at:
//
//   - function: a function or generator declaration, a class's method, and
//     a function or arrow function with a block body bound to a name
//     (`const f = () => {...}`, `f: function () {...}`);
//   - class: a class declaration (abstract ones too) and a class
//     expression bound to a name;
//   - block: if, for, for-in/of, while, do, switch and try statements;
//   - statement: expression statements, return, throw, let/const/var
//     declarations and imports;
//   - expression: calls, new, operators, member access (not the callee of a
//     call: the call is the better mask), await, assignments, object and
//     array literals, template strings, other arrow functions, TypeScript's
//     as/satisfies/! expressions.
//
// Types (interfaces, type aliases, annotations) are never masked: the
// tests run the code without checking types, so they cannot tell.
func scriptLevel(n *sitter.Node) evaluator.Level {
	typ := n.Type()
	switch {
	case typ == "function_declaration" || typ == "generator_function_declaration" || typ == "method_definition":
		return evaluator.LevelFunction
	case (typ == "arrow_function" || typ == "function_expression" || typ == "function") && boundToName(n) && hasBlockBody(n):
		return evaluator.LevelFunction
	case typ == "class_declaration" || typ == "abstract_class_declaration" || typ == "class" && boundToName(n):
		return evaluator.LevelClass
	case scriptBlockTypes[typ]:
		return evaluator.LevelBlock
	case scriptStatementTypes[typ] && !isStringStatement(n): // "use strict" and the like
		return evaluator.LevelStatement
	case scriptExpressionTypes[typ] && n.Parent() != nil && !(typ == "member_expression" && isFunctionOf(n, "call_expression")):
		return evaluator.LevelExpression
	}
	return ""
}

// boundToName reports a function or class expression that is the value of
// a variable declarator, an object's property or a class field.
func boundToName(n *sitter.Node) bool {
	p := n.Parent()
	if p == nil {
		return false
	}
	switch p.Type() {
	case "variable_declarator", "pair", "public_field_definition", "field_definition":
		v := p.ChildByFieldName("value")
		return v != nil && v.Equal(n)
	}
	return false
}

func hasBlockBody(n *sitter.Node) bool {
	b := n.ChildByFieldName("body")
	return b != nil && b.Type() == "statement_block"
}

// scriptSkippedDirs are directories whose files are never masked: tests,
// fixtures, dependencies, build output, documentation and examples.
var scriptSkippedDirs = map[string]bool{
	"node_modules": true, "dist": true, "build": true, "coverage": true, "out": true,
	"test": true, "tests": true, "__tests__": true, "__mocks__": true, "__fixtures__": true, "fixtures": true,
	"spec": true, "e2e": true, "bench": true, "benchmark": true, "benchmarks": true,
	"docs": true, "doc": true, "examples": true, "example": true, "generated": true, "vendor": true,
}

// scriptGenerated matches file names that are tests, type declarations,
// minified or bundled output, or configuration.
var scriptGenerated = regexp.MustCompile(`(^|[.\-_])(test|spec)\.[^/]*$|\.d\.[cm]?ts$|\.min\.[cm]?js$|\.bundle\.[cm]?js$|` +
	`(^|[.\-_])(config|conf)\.[cm]?[jt]s$|^(eslint|prettier|vite|vitest|jest|rollup|webpack|babel|tsup|karma|gulpfile|gruntfile)\b`)

// scriptSource accepts a source file with one of exts outside the
// directories scriptSkippedDirs names and hidden ones, and not a test,
// declaration, minified, bundled or configuration file.
func scriptSource(rel string, exts []string) bool {
	if !slices.Contains(exts, path.Ext(rel)) {
		return false
	}
	parts := strings.Split(rel, "/")
	for _, d := range parts[:len(parts)-1] {
		if scriptSkippedDirs[d] || strings.HasPrefix(d, ".") {
			return false
		}
	}
	return !scriptGenerated.MatchString(strings.ToLower(parts[len(parts)-1]))
}

// packageJSON is what defaultNodeTest reads of a package.json.
type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	DevDependencies map[string]string `json:"devDependencies"`
	Dependencies    map[string]string `json:"dependencies"`
}

// nodeLoaderOption finds a loader option in a test script: --import X,
// --loader X, --require X, -r X (or their = forms).
var nodeLoaderOption = regexp.MustCompile(`(?:^|\s)(--import|--loader|--experimental-loader|--require|-r)(?:=|\s+)(\S+)`)

// defaultNodeTest is the test command of a JavaScript or TypeScript
// repository: Options.Test, else vitest when package.json's test script
// runs it (or vitest is its only test dependency), else node's built-in
// runner on the repository's test files, with the loader options the
// test script gives node (--import tsx) — for TypeScript test files
// without one, --import tsx when tsx is installed.
func defaultNodeTest(repoDir string, o Options) evaluator.TestSpec {
	if o.Test != nil {
		return *o.Test
	}
	var pkg packageJSON
	if data, err := os.ReadFile(filepath.Join(repoDir, "package.json")); err == nil {
		_ = json.Unmarshal(data, &pkg)
	}
	script := pkg.Scripts["test"]
	if strings.Contains(script, "vitest") || !strings.Contains(script, "node") && pkg.DevDependencies["vitest"] != "" {
		return evaluator.TestSpec{Kind: evaluator.TestNode, Command: []string{evaluator.NodeRunnerVitest}}
	}
	t := evaluator.TestSpec{Kind: evaluator.TestNode}
	for _, m := range nodeLoaderOption.FindAllStringSubmatch(script, -1) {
		t.Args = append(t.Args, m[1], strings.Trim(m[2], `"'`))
	}
	files := nodeTestFiles(repoDir)
	ts := slices.ContainsFunc(files, func(f string) bool { return slices.Contains(tsExtensions, path.Ext(f)) })
	if ts {
		if len(t.Args) == 0 {
			if _, err := os.Stat(filepath.Join(repoDir, "node_modules", "tsx")); err == nil {
				t.Args = []string{"--import", "tsx"}
			}
		}
		// node discovers only JavaScript test files itself.
		t.Tests = files
	}
	return t
}

// nodeTestFile matches the test files node's runner discovers by itself
// (JavaScript) and their TypeScript equivalents.
var nodeTestFile = regexp.MustCompile(`^(.*[.\-_])?test\.[cm]?[jt]sx?$|^test-.*\.[cm]?[jt]sx?$|(^|/)test/.*\.[cm]?[jt]sx?$`)

// nodeTestFiles lists the repository's test files in the form node's
// runner takes them (slash-separated, relative), node_modules and hidden
// directories skipped, sorted.
func nodeTestFiles(repoDir string) []string {
	var out []string
	_ = filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(repoDir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		base := path.Base(rel)
		if d.Type().IsRegular() && !strings.HasSuffix(base, ".d.ts") &&
			(nodeTestFile.MatchString(base) || nodeTestFile.MatchString(rel)) {
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// describeNodeTest words a TestNode spec as a command line.
func describeNodeTest(t evaluator.TestSpec) string {
	if t.NodeRunner() == evaluator.NodeRunnerVitest {
		return strings.TrimSpace("vitest run " + shellJoin(slices.Concat(t.Command[1:], t.Args, t.Tests)))
	}
	return strings.TrimSpace("node " + shellJoin(t.Args) + " --test " + shellJoin(t.Tests))
}

// nodeModuleMissing matches node's and vitest's words for a module that
// cannot be found.
var nodeModuleMissing = regexp.MustCompile(`Cannot find (?:module|package) '([^']+)'|ERR_MODULE_NOT_FOUND|Failed to load url (\S+)|is not installed in`)

// nodeFix is the fix for a JavaScript repository whose tests fail
// unmodified.
func nodeFix(e *BaselineError) string {
	r := &e.Result
	text := r.Error + "\n" + r.Reason + "\n" + r.StderrTail + "\n" + r.StdoutTail
	switch {
	case r.Limit != "":
		return "the reason names the limit and the flag that raises it"
	case nodeModuleMissing.MatchString(text):
		return "install the repository's dependencies on the host first (npm ci, or the package manager its lockfile names): " +
			"the sandbox has no network and mounts node_modules read-only"
	case r.Failure != nil:
		return fmt.Sprintf("some tests fail on the repository as it is, here (first: %s): choose the test files that pass "+
			"with --node-test \"[node options] FILES\" or --vitest=\"[options] FILES\", or give them what they need", r.Failure.Test)
	}
	return "run the tests yourself (" + describeNodeTest(e.Test) + ") to see why, then choose them with --node-test or --vitest"
}

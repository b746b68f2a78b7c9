package masking

import (
	"path"
	"regexp"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"

	"github.com/infill-dev/infill/evaluator"
)

// javascriptLanguage masks JavaScript repositories (.js, .mjs, .cjs, .jsx),
// typescriptLanguage TypeScript ones (.ts, .mts, .cts, .tsx); both are
// tested with node's built-in test runner or the repository's vitest (the
// evaluator's node runner, which also selects the tests of JavaScript
// repositories: the coverage of TypeScript tests is of the transformed
// code, not of the source's spans).
var (
	javascriptLanguage = scriptLanguage("javascript", "JavaScript", evaluator.JavaScriptExtensions)
	typescriptLanguage = scriptLanguage("typescript", "TypeScript", evaluator.TypeScriptExtensions)
)

// scriptLanguage is the language name (title in prose) masking the files
// with extensions exts.
func scriptLanguage(name, title string, exts []string) *Language {
	return &Language{
		Name:    name,
		Title:   title,
		grammar: scriptGrammar,
		level:   scriptLevel,
		include: func(rel string) bool { return scriptSource(rel, exts) },
		tests:   []evaluator.TestKind{evaluator.TestNode},
	}
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

package masking

import (
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/python"

	"github.com/infill-dev/infill/evaluator"
)

// pythonLanguage masks Python repositories, tested with pytest (or ExecRepoBench's
// evaluate_repo.py).
var pythonLanguage = &Language{
	Name:        "python",
	Title:       "Python",
	grammar:     func(string) *sitter.Language { return pythonGrammar },
	level:       pythonLevel,
	include:     DefaultInclude,
	tests:       []evaluator.TestKind{evaluator.TestScript, evaluator.TestPytest},
	interpreter: true,
}

var pythonGrammar = python.GetLanguage()

// expressionTypes are masked at the expression level.
var expressionTypes = map[string]bool{
	"call": true, "binary_operator": true, "boolean_operator": true, "comparison_operator": true,
	"conditional_expression": true, "not_operator": true, "unary_operator": true,
	"list_comprehension": true, "dictionary_comprehension": true, "set_comprehension": true,
	"generator_expression": true, "lambda": true, "subscript": true, "attribute": true,
	"list": true, "dictionary": true, "tuple": true, "set": true, "await": true,
}

// statementTypes are masked at the statement level (simple statements).
var statementTypes = map[string]bool{
	"expression_statement": true, "return_statement": true, "raise_statement": true,
	"assert_statement": true, "import_statement": true, "import_from_statement": true,
	"delete_statement": true, "global_statement": true, "nonlocal_statement": true,
}

// blockTypes are compound statements masked at the block level.
var blockTypes = map[string]bool{
	"if_statement": true, "for_statement": true, "while_statement": true,
	"try_statement": true, "with_statement": true, "match_statement": true,
}

// pythonLevel is the level a Python node is masked at.
func pythonLevel(n *sitter.Node) evaluator.Level {
	typ := n.Type()
	switch {
	case typ == "function_definition":
		return evaluator.LevelFunction
	case typ == "class_definition":
		return evaluator.LevelClass
	case blockTypes[typ]:
		return evaluator.LevelBlock
	case statementTypes[typ] && !isStringStatement(n): // a docstring
		return evaluator.LevelStatement
	case expressionTypes[typ] && n.Parent() != nil && !(typ == "attribute" && isFunctionOf(n, "call")):
		return evaluator.LevelExpression
	}
	return ""
}

// DefaultInclude accepts .py files outside test, docs and build trees,
// except test files, conftest.py, setup.py and evaluate_repo.py.
func DefaultInclude(rel string) bool {
	if !strings.HasSuffix(rel, ".py") {
		return false
	}
	parts := strings.Split(rel, "/")
	for _, d := range parts[:len(parts)-1] {
		switch d {
		case "tests", "test", "testing", "docs", "doc", "build", "dist", "examples", "venv", ".venv", "node_modules":
			return false
		}
		if strings.HasPrefix(d, ".") {
			return false
		}
	}
	base := parts[len(parts)-1]
	switch {
	case base == "evaluate_repo.py", base == "setup.py", base == "conftest.py",
		strings.HasPrefix(base, "test_"), strings.HasSuffix(base, "_test.py"):
		return false
	}
	return true
}

// Package masking owns benchmark construction by multi-level grammar-based
// masking (the ExecRepoBench method) for Python repositories: tree-sitter
// finds maskable expressions, statements, blocks, functions and classes;
// random single-line, multi-line and span masks are added; a seeded
// generator picks samples deterministically; and every kept sample is
// checked in the sandbox (the original repository must pass its tests and,
// optionally, the empty completion must fail them) before it is emitted in
// infill's own benchmark format (dataset.InfillRecord).
package masking

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/python"

	"github.com/infill-dev/infill/evaluator"
)

// Candidate is one maskable span of a file.
type Candidate struct {
	Path     string          `json:"path"`
	Start    int             `json:"start"`
	End      int             `json:"end"`
	Level    evaluator.Level `json:"level"`
	NodeType string          `json:"node_type"`
}

// ErrSyntax is returned by GrammarCandidates for a file that does not parse.
var ErrSyntax = errors.New("masking: syntax error")

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

// GrammarCandidates parses Python source and returns its grammar-based
// candidates (expression, statement, block, function, class) in source
// order. Docstrings and comments are never candidates.
func GrammarCandidates(ctx context.Context, path string, src []byte) ([]Candidate, error) {
	parser := sitter.NewParser()
	defer parser.Close()
	parser.SetLanguage(python.GetLanguage())
	tree, err := parser.ParseCtx(ctx, nil, src)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	root := tree.RootNode()
	if root.HasError() {
		return nil, fmt.Errorf("%w: %s", ErrSyntax, path)
	}
	var out []Candidate
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		typ := n.Type()
		level := evaluator.Level("")
		switch {
		case typ == "function_definition":
			level = evaluator.LevelFunction
		case typ == "class_definition":
			level = evaluator.LevelClass
		case blockTypes[typ]:
			level = evaluator.LevelBlock
		case statementTypes[typ] && !isDocstring(n):
			level = evaluator.LevelStatement
		case expressionTypes[typ] && n.Parent() != nil && !isCallee(n):
			level = evaluator.LevelExpression
		}
		if level != "" {
			out = append(out, Candidate{Path: path, Start: int(n.StartByte()), End: int(n.EndByte()), Level: level, NodeType: typ})
		}
		for i := range int(n.NamedChildCount()) {
			walk(n.NamedChild(i))
		}
	}
	walk(root)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End))
	})
	return out, nil
}

// isDocstring reports an expression statement that is only a string.
func isDocstring(n *sitter.Node) bool {
	return n.Type() == "expression_statement" && n.NamedChildCount() == 1 && n.NamedChild(0).Type() == "string"
}

// isCallee reports an attribute that is the function of a call (obj.meth in
// obj.meth(x)): the call itself is the better expression to mask.
func isCallee(n *sitter.Node) bool {
	p := n.Parent()
	return n.Type() == "attribute" && p.Type() == "call" && p.ChildByFieldName("function") != nil &&
		p.ChildByFieldName("function").Equal(n)
}

// LineCandidates returns every non-blank line as a single-line candidate;
// the span excludes the newline, which stays in the suffix (as ExecRepoBench
// leaves it in prefix and suffix).
func LineCandidates(path string, src []byte) []Candidate {
	var out []Candidate
	start := 0
	for start < len(src) {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if len(bytes.TrimSpace(src[start:end])) > 0 {
			out = append(out, Candidate{Path: path, Start: start, End: end, Level: evaluator.LevelSingleLine, NodeType: "line"})
		}
		start = end + 1
	}
	return out
}

// lineStarts returns the byte offset of each line start.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, b := range src {
		if b == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// runeBoundary moves off back to the start of the rune containing it.
func runeBoundary(src []byte, off int) int {
	for off > 0 && off < len(src) && !utf8.RuneStart(src[off]) {
		off--
	}
	return off
}

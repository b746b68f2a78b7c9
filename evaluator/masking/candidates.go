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

// GrammarCandidates parses source of the language that masks path and
// returns its grammar-based candidates (expression, statement, block,
// function, class) in source order. Comments (and Python's docstrings) are
// never candidates.
func GrammarCandidates(ctx context.Context, path string, src []byte) ([]Candidate, error) {
	lang := languageOfFile(path)
	if lang == nil {
		return nil, fmt.Errorf("%w: %s: no language masks this file (known: %v)", ErrInvalidOptions, path, Languages())
	}
	return lang.candidates(ctx, path, src)
}

// candidates parses src with the language's grammar and collects the nodes
// its level function names, in source order.
func (lang *Language) candidates(ctx context.Context, path string, src []byte) ([]Candidate, error) {
	parser := sitter.NewParser()
	defer parser.Close()
	parser.SetLanguage(lang.grammar(path))
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
		if level := lang.level(n); level != "" {
			out = append(out, Candidate{Path: path, Start: int(n.StartByte()), End: int(n.EndByte()), Level: level, NodeType: n.Type()})
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

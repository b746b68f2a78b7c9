package masking

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
)

// Language is one source language masking knows: its grammar and the
// syntax nodes masked at each grammar level, the repository files it masks,
// and how a repository in it runs its tests by default.
type Language struct {
	// Name is the records' language ("python", "go", ...).
	Name string
	// grammar is the tree-sitter grammar for the file rel (a language may
	// have several: TypeScript and TSX).
	grammar func(rel string) *sitter.Language
	// level is the grammar level a node is masked at; "" for none.
	level func(n *sitter.Node) evaluator.Level
	// include accepts a repository file (slash-separated, relative) as
	// one to mask: a source file of the language that is not a test,
	// generated, vendored or documentation file.
	include func(rel string) bool
	// test is the repository's default test entry point.
	test func(repoDir string, o Options) evaluator.TestSpec
	// repoInclude, if set, refines the file rule for one repository (Go:
	// a package without tests has nothing to mask); its second result
	// lists what it left out, in words, for Stats.Excluded.
	repoInclude func(repoDir string, include func(rel string) bool) (func(rel string) bool, func() []string)
	// packageOf, if set, is the unit a sample's tests run on (Go: the
	// file's package directory): the unmodified repository is checked
	// per unit, and ExpectedTests is that unit's count.
	packageOf func(rel string) string
	// selectTests, if set, chooses the tests each record runs after
	// masking (Options.SelectNodeTests; JavaScript: selectNodeTests);
	// nil *Selection when the repository's test command is not one it
	// can select for.
	selectTests func(ctx context.Context, g Grader, repoDir string, recs []dataset.InfillRecord, test evaluator.TestSpec, o Options, log *zap.Logger) (*Selection, error)
}

// languages are the languages masking knows, in the order detection prefers
// them on a tie.
var languages = []*Language{pythonLanguage, goLanguage, javascriptLanguage, typescriptLanguage}

// Languages returns the names of the languages masking knows.
func Languages() []string {
	names := make([]string, len(languages))
	for i, l := range languages {
		names[i] = l.Name
	}
	return names
}

// LanguageNamed returns the language called name.
func LanguageNamed(name string) (*Language, error) {
	for _, l := range languages {
		if l.Name == name {
			return l, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown language %q (known: %s)", ErrInvalidOptions, name, strings.Join(Languages(), ", "))
}

// languageOfFile returns the language whose include accepts rel, or nil.
func languageOfFile(rel string) *Language {
	for _, l := range languages {
		if l.include(rel) {
			return l
		}
	}
	return nil
}

// DetectLanguage returns the language with the most files to mask in the
// repository (hidden directories, node_modules and vendor trees skipped).
func DetectLanguage(repoDir string) (*Language, error) {
	counts := map[*Language]int{}
	err := walkFiles(repoDir, func(rel string) {
		if l := languageOfFile(rel); l != nil {
			counts[l]++
		}
	})
	if err != nil {
		return nil, err
	}
	best := slices.MaxFunc(languages, func(a, b *Language) int { return counts[a] - counts[b] })
	if counts[best] == 0 {
		return nil, fmt.Errorf("%w in %s (languages: %s)", ErrNoFiles, repoDir, strings.Join(Languages(), ", "))
	}
	return best, nil
}

// walkFiles calls visit with the slash-separated relative path of every
// regular file under repoDir, in lexical order, skipping the directories
// masking never reads (skippedDir).
func walkFiles(repoDir string, visit func(rel string)) error {
	return filepath.WalkDir(repoDir, func(pth string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoDir, pth)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			visit(rel)
		}
		return nil
	})
}

// skippedDir reports a directory never walked for files to mask.
func skippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules"
}

// The languages' level functions share these node tests.

// isStringStatement reports an expression statement that is only a string:
// a Python docstring, a JavaScript directive ("use strict"). Masking one
// asks for prose, not code.
func isStringStatement(n *sitter.Node) bool {
	return n.Type() == "expression_statement" && n.NamedChildCount() == 1 && n.NamedChild(0).Type() == "string"
}

// isFunctionOf reports a node that is the function of its parent call, a
// node of type call (obj.meth in obj.meth(x), strings.Cut in
// strings.Cut(s, sep)): the call itself is the better expression to mask.
func isFunctionOf(n *sitter.Node, call string) bool {
	p := n.Parent()
	if p == nil || p.Type() != call {
		return false
	}
	f := p.ChildByFieldName("function")
	return f != nil && f.Equal(n)
}

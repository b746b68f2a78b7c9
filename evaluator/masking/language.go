package masking

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/sandbox"
)

// Language is one source language masking knows: its grammar and the
// syntax nodes masked at each grammar level, the repository files it masks,
// and the test runners that test a repository in it by default. Everything
// about running the tests is the runners' (evaluator.TestRunner).
type Language struct {
	// Name is the records' language ("python", "go", ...), and Title its
	// name in prose ("Python", "JavaScript").
	Name, Title string
	// grammar is the tree-sitter grammar for the file rel (a language may
	// have several: TypeScript and TSX).
	grammar func(rel string) *sitter.Language
	// level is the grammar level a node is masked at; "" for none.
	level func(n *sitter.Node) evaluator.Level
	// include accepts a repository file (slash-separated, relative) as
	// one to mask: a source file of the language that is not a test,
	// generated, vendored or documentation file.
	include func(rel string) bool
	// tests are the test kinds a repository in the language is tested
	// with by default, in order: the first whose runner detects the
	// repository (evaluator.TestRunner.Detect).
	tests []evaluator.TestKind
	// interpreter says the records name the Python interpreter the tests
	// run with (Options.Python, else the repository's own virtual
	// environment), so that a benchmark says what it runs with.
	interpreter bool
	// repoInclude, if set, refines the file rule for one repository (Go:
	// a package without tests has nothing to mask); its second result
	// lists what it left out, in words, for Stats.Excluded.
	repoInclude func(repoDir string, include func(rel string) bool) (func(rel string) bool, func() []string)
}

// defaultTest is the repository's test entry point: Options.Test, else the
// first of the language's test runners that detects the repository; with
// the interpreter Options.Python, else the repository's own virtual
// environment, where the language names one.
func (l *Language) defaultTest(repoDir string, o Options) evaluator.TestSpec {
	var t evaluator.TestSpec
	if o.Test != nil {
		t = *o.Test
	} else {
		for _, k := range l.tests {
			if r, ok := evaluator.TestRunnerFor(k); ok {
				if d, ok := r.Detect(repoDir); ok {
					t = d
					break
				}
			}
		}
	}
	if !l.interpreter {
		return t
	}
	switch {
	case o.Python != "":
		t.Python = o.Python
		if rel, err := filepath.Rel(repoDir, o.Python); err == nil && filepath.IsAbs(o.Python) && filepath.IsLocal(rel) {
			t.Python = filepath.ToSlash(rel)
		}
	case t.Python == "":
		t.Python = sandbox.RepositoryPython(repoDir)
	}
	return t
}

// Source reports whether rel (slash-separated, relative to the
// repository) is a source file of the language that masking would mask:
// not a test, generated, vendored or documentation file. The next-edit
// builder takes its target edits from such files.
func (l *Language) Source(rel string) bool { return l.include(rel) }

// DefaultTest is the test entry point masking gives a repository of the
// language at repoDir (Options.Test, else the first of its runners that
// detects it; the interpreter Options.Python, else the repository's own
// virtual environment, where the language names one).
func (l *Language) DefaultTest(repoDir string, o Options) evaluator.TestSpec {
	return l.defaultTest(repoDir, o)
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

// LanguageTitle is the language called name in prose ("TypeScript"); for
// "" the first language's (what a record without a language is).
func LanguageTitle(name string) string {
	if name == "" {
		return languages[0].Title
	}
	if l, err := LanguageNamed(name); err == nil {
		return l.Title
	}
	return strings.ToUpper(name[:1]) + name[1:]
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
	var rels []string
	err := walkFiles(repoDir, func(rel string) { rels = append(rels, rel) })
	if err != nil {
		return nil, err
	}
	l, err := LanguageOfFiles(rels)
	if err != nil {
		return nil, fmt.Errorf("%w in %s", err, repoDir)
	}
	return l, nil
}

// LanguageOfFiles is DetectLanguage over a list of a repository's files
// (slash-separated, relative; a commit's tree, say), in which the
// directories DetectLanguage skips are skipped too.
func LanguageOfFiles(rels []string) (*Language, error) {
	counts := map[*Language]int{}
	for _, rel := range rels {
		if slices.ContainsFunc(strings.Split(rel, "/")[:strings.Count(rel, "/")], skippedDir) {
			continue
		}
		if l := languageOfFile(rel); l != nil {
			counts[l]++
		}
	}
	best := slices.MaxFunc(languages, func(a, b *Language) int { return counts[a] - counts[b] })
	if counts[best] == 0 {
		return nil, fmt.Errorf("%w (languages: %s)", ErrNoFiles, strings.Join(Languages(), ", "))
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

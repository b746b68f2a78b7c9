package syntax

import (
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
)

// corpusFile is a source file of the test corpus and its language.
type corpusFile struct {
	lang Lang
	src  string
}

// corpusSamples returns up to n source files of several languages found on
// this machine (Go distribution, Python library), for property tests.
func corpusSamples(t testing.TB, n int) []corpusFile {
	t.Helper()
	var out []corpusFile
	for _, f := range testcorpus.Samples(t, n) {
		out = append(out, corpusFile{DetectLang(f.Path, ""), f.Text})
	}
	return out
}

// goldenSources returns the source files of the golden cases that are in
// a language with a grammar.
func goldenSources(t testing.TB) []corpusFile {
	t.Helper()
	var out []corpusFile
	for _, f := range testcorpus.Golden(t, "../../testdata/golden") {
		if lang := DetectLang(f.Path, ""); lang != LangPlain {
			out = append(out, corpusFile{lang, f.Text})
		}
	}
	return out
}

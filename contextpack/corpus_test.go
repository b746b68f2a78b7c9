package contextpack

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// corpusFile is a source file of the test corpus and its language.
type corpusFile struct {
	lang langID
	src  string
}

// corpusSamples returns up to n source files of several languages found on
// this machine (Go distribution, Python library), for property tests.
func corpusSamples(t testing.TB, n int) []corpusFile {
	t.Helper()
	roots := []string{filepath.Join(runtime.GOROOT(), "src", "net", "http"), filepath.Join(runtime.GOROOT(), "src", "go", "types")}
	if m, _ := filepath.Glob("/usr/lib/python3*/json"); len(m) > 0 {
		roots = append(roots, m[0], filepath.Dir(m[0])+"/email")
	}
	var paths []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".py")) {
				paths = append(paths, p)
			}
			return nil
		})
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		t.Skip("no source corpus on this machine")
	}
	var out []corpusFile
	step := max(1, len(paths)/n)
	for i := 0; i < len(paths) && len(out) < n; i += step {
		b, err := os.ReadFile(paths[i])
		if err == nil {
			out = append(out, corpusFile{detectLang(paths[i], ""), string(b)})
		}
	}
	return out
}

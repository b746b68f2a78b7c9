// Package testcorpus gives contextpack's tests and benchmarks their
// inputs: source files of several languages found on this machine (the Go
// distribution, the Python library), the sources of the golden cases, a
// typist that types a text key by key, and the tokenizers the tests count
// with. It imports nothing of contextpack but the tokenizer, so the tests
// of every package under it can use it.
package testcorpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack/tokenizer"
	"golang.org/x/tools/txtar"
)

// Qwen returns the real Qwen2.5 tokenizer.
func Qwen(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	tok, err := tokenizer.Qwen25()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// ByteTokens counts a token per byte, a fast stand-in for a tokenizer,
// and neutralises the end-of-text token's literal text.
type ByteTokens struct{}

// Count is len(s).
func (ByteTokens) Count(s string) int { return len(s) }

// Neutralize breaks "<|endoftext|>" with a zero-width space.
func (ByteTokens) Neutralize(s string) string {
	return strings.ReplaceAll(s, "<|endoftext|>", "<\u200b|endoftext|>")
}

// File is a source file: its path (for its language) and its text.
type File struct {
	Path string
	Text string
}

// Samples returns up to n source files of several languages found on this
// machine (Go distribution, Python library), for property tests; it skips
// the test when there are none.
func Samples(tb testing.TB, n int) []File {
	tb.Helper()
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
		tb.Skip("no source corpus on this machine")
	}
	var out []File
	step := max(1, len(paths)/n)
	for i := 0; i < len(paths) && len(out) < n; i += step {
		b, err := os.ReadFile(paths[i])
		if err == nil {
			out = append(out, File{paths[i], string(b)})
		}
	}
	return out
}

// Golden returns the files of the golden cases (dir/*/*.txtar, see
// contextpack's TestGolden), but for their want.* sections.
func Golden(tb testing.TB, dir string) []File {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no golden cases in %s", dir)
	}
	var out []File
	for _, path := range paths {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want.") {
				out = append(out, File{f.Name, string(f.Data)})
			}
		}
	}
	return out
}

// TypeKeys types text at off in content key by key, over and over (b.N
// keys), calls build with each version and the cursor after its key, and
// reports the percentiles of build's time.
func TypeKeys(b *testing.B, content string, off int, text string, build func(content string, off int) error) {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		content = content[:off] + text[i%len(text):i%len(text)+1] + content[off:]
		off++
		t := time.Now()
		if err := build(content, off); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	ReportPercentiles(b, ds)
}

// ReportPercentiles reports the p50 and p99 of ds in milliseconds.
func ReportPercentiles(b *testing.B, ds []time.Duration) {
	p50, p99 := Percentiles(ds)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
}

// Percentiles returns the p50 and p99 of ds in milliseconds.
func Percentiles(ds []time.Duration) (p50, p99 float64) {
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	return at(0.5), at(0.99)
}

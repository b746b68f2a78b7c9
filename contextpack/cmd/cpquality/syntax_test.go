package main

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the code, prose and counted sections of testdata/syntax/*.txtar")

// TestFileWords runs the cases in testdata/syntax: each archive holds one
// source file (its extension names the language) and the distinct words
// the tool must read from it, sorted: "code" (code identifiers), "prose"
// (words of comments and strings) and "counted" (the code identifiers a
// middle spanning the whole file counts: predeclared names left out).
func TestFileWords(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "syntax", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(p)
			if err != nil {
				t.Fatal(err)
			}
			src := ar.Files[0]
			l := langOf(src.Name, strings.HasSuffix(src.Name, ".cc"))
			if l == langNone {
				t.Fatalf("%s: no language", src.Name)
			}
			fs := analyzeFile(string(src.Data), l)
			if !fs.parsed {
				t.Fatal("not parsed")
			}
			code, prose := map[string]bool{}, map[string]bool{}
			for _, o := range fs.occs {
				if o.code {
					code[o.name] = true
				} else {
					prose[o.name] = true
				}
				if got := string(src.Data[o.start:o.end]); got != o.name && "#"+o.name != got {
					t.Errorf("occurrence %q at [%d, %d) reads %q", o.name, o.start, o.end, got)
				}
			}
			counted, _ := fs.middleWords(0, len(src.Data))
			got := map[string]string{"code": joinSorted(keys(code)), "prose": joinSorted(keys(prose)),
				"counted": joinSorted(counted)}
			changed := false
			for i := range ar.Files[1:] {
				f := &ar.Files[i+1]
				want := strings.TrimSpace(string(f.Data))
				g, ok := got[f.Name]
				if !ok {
					t.Fatalf("unknown section %q", f.Name)
				}
				if g != want {
					if *update {
						f.Data, changed = []byte(g+"\n"), true
						continue
					}
					t.Errorf("%s:\n got: %s\nwant: %s", f.Name, g, want)
				}
			}
			if changed {
				if err := os.WriteFile(p, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func joinSorted(xs []string) string {
	xs = append([]string(nil), xs...)
	sort.Strings(xs)
	return strings.Join(xs, " ")
}

// TestMiddleWords checks what a mask counts: every identifier it overlaps,
// whole (a span that cuts a name needs the whole name), and prose words
// that are not also code identifiers of the middle.
func TestMiddleWords(t *testing.T) {
	src := "x := computeTotal(items) // total of items\ny := len(otherName)\n"
	fs := analyzeFile(src, langGo)
	for _, tc := range []struct {
		mid         string // a substring of src
		code, prose string
	}{
		{"computeTotal(items)", "computeTotal items", ""},
		{"uteTotal(it", "computeTotal items", ""},
		{"(items) // total of items", "items", "of total"},
		{"// total of", "", "of total"},
		{"y := len(otherName)", "otherName", ""},
		{"len(", "", ""},
	} {
		s := strings.Index(src, tc.mid)
		if s < 0 {
			t.Fatalf("%q not in the source", tc.mid)
		}
		code, prose := fs.middleWords(s, s+len(tc.mid))
		if got := joinSorted(code); got != tc.code {
			t.Errorf("%q: code %q, want %q", tc.mid, got, tc.code)
		}
		if got := joinSorted(prose); got != tc.prose {
			t.Errorf("%q: prose %q, want %q", tc.mid, got, tc.prose)
		}
	}
}

func TestScanWords(t *testing.T) {
	var got []string
	scanWords("a bc 9lives x_1 $el naïve 2x _ é日本", func(w string, _ int) { got = append(got, w) })
	want := "bc x_1 $el naïve é日本"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("got %q, want %q", g, want)
	}
}

// TestMatchLines reads a context block back to its file's lines across
// elision marks.
func TestMatchLines(t *testing.T) {
	content := "package p\n\nfunc Alpha() {\n\treturn\n}\n\n// ...\nfunc Beta() {}\n"
	fs := analyzeFile(content, langGo)
	body := "func Alpha() {\n\t// ...\n}\n// ...\nfunc Beta() {}\nnot in the file\n"
	lines, unmatched := matchLines(body, content, fs)
	if want := []int{2, 4, 7}; !equalInts(lines, want) || unmatched != 1 {
		t.Errorf("lines %v unmatched %d, want %v and 1", lines, unmatched, want)
	}
	code := map[string]bool{}
	for _, i := range lines {
		fs.lineCode(i, code)
	}
	if got := joinSorted(keys(code)); got != "Alpha Beta" {
		t.Errorf("code on matched lines %q, want \"Alpha Beta\"", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestIsTestPath(t *testing.T) {
	for p, want := range map[string]bool{
		"pkg/store_test.go": true, "pkg/store.go": false, "tests/test_api.py": true, "scrapy/http.py": false,
		"conftest.py": true, "src/app.spec.ts": true, "packages/x/src/__tests__/unit/a.ts": true,
		"src/test/java/org/a/ElementTest.java": true, "src/main/java/org/a/Element.java": false,
		"src/main/java/org/a/Contest.java": false, "crates/core/tests/search.rs": true, "db/db_test.cc": true,
		"src/latest.ts": false, "util/testutil.h": false,
	} {
		if got := isTestPath(p); got != want {
			t.Errorf("isTestPath(%q) = %v, want %v", p, got, want)
		}
	}
}

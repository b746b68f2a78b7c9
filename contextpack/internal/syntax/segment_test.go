package syntax

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSegmentStarts checks where files are cut: at column-0 declarations
// outside strings, comments, braces and #if blocks, before the first of a
// run of decorators, and never inside a literal whose lines look like
// declarations. "‸" marks each expected cut (and is removed).
func TestSegmentStarts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		lang Lang
		src  string
	}{
		{"go", LangGo, "package p\n\n‸import \"fmt\"\n\n‸func a() {\n\tx := `\nfunc notACut() {\n`\n\t_ = '{'\n\t_ = \"}\"\n}\n\n// doc\n‸func b() {}\n‸var (\n\tv = 1\n)\n‸type T struct {\n}\n/*\nfunc c() {}\n*/\n"},
		{"go unbalanced brace", LangGo, "package p\n‸func a() {\n\tif x {\nfunc b() {}\nfunc c() {}\n"},
		{"go unterminated string ends at its line", LangGo, "package p\n‸func a() {\n\ts := \"abc\n}\n‸func b() {}\n"},
		{"python", LangPython, "import os\n\n‸def a():\n    s = '''\ndef not_a_cut():\n'''\n    return s\n\n‸@dec(\n    x,\n)\n@other\ndef b():\n    pass\n\nif __name__ == '__main__':\n    b()\n‸class C:  # def d():\n    def m(self): pass\n‸async def e(): pass\n"},
		{"javascript", LangJS, "import x from 'x';\n‸const a = `\n${`nested ${1}`}\nfunction notACut() {}\n`;\n‸function b() {\n}\n‸export class C {\n  m() {}\n}\n‸@dec\nexport class D {}\n"},
		{"typescript", LangTS, "‸interface I {\n  a: string;\n}\n‸type T = {\n};\n‸export function f(): void {}\n"},
		{"java", LangJava, "package p;\n\n‸import java.util.List;\n\n‸@Deprecated\npublic class A {\n    public void m() {}\n}\n‸@interface Ann {}\n"},
		{"rust", LangRust, "‸use std::io;\n\n‸#[derive(Debug)]\n#[allow(x)]\npub struct S<'a> {\n    s: &'a str,\n}\n‸fn a() {\n    let c = '{';\n    let r = r#\"\nfn not_a_cut() {\n\"#;\n    /* /* nested */\nfn still_comment() {}\n */\n}\n‸impl S<'_> {}\n"},
		{"c", LangC, "#include <stdio.h>\n‸static int\nf(void)\n{\n\treturn '}';\n}\n‸int g(void) {\n#if X\n}\nint h(void) {\n#endif\n\treturn 0;\n}\n#ifdef Y\nint i;\n#endif\n‸struct s { int a; };\n"},
		{"cpp raw string", LangCPP, "‸int a() {\n\tauto s = R\"x(\n}\n)x\";\n}\n‸int b();\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []int32
			src := c.src
			for {
				i := strings.Index(src, "‸")
				if i < 0 {
					break
				}
				want = append(want, int32(i))
				src = src[:i] + src[i+len("‸"):]
			}
			if len(want) == 0 || want[0] != 0 {
				want = append([]int32{0}, want...)
			}
			if got := segmentStarts(src, c.lang); !slices.Equal(got, want) {
				t.Errorf("cuts at %v, want %v", lineNumbers(src, got), lineNumbers(src, want))
			}
		})
	}
}

func lineNumbers(src string, offs []int32) []int {
	var out []int
	for _, o := range offs {
		out = append(out, strings.Count(src[:o], "\n")+1)
	}
	return out
}

// A file without a syntax error is cut only between its top-level nodes:
// every segment parses without an error, and the segments' tags are the
// whole file's. So whether a file has an error is the same question for
// the whole file and for its segments, and a segmented analysis is the
// whole-file one wherever the error is not. Checked on the golden cases'
// sources in every language and on the Go and Python corpus; sources from
// the module cache (about 4,800 files without errors in the nine
// languages) gave the same.
func TestSegmentsMatchWholeOnValidFiles(t *testing.T) {
	t.Parallel()
	g := NewGrammars(2)
	defer g.Close()
	files := append(corpusSamples(t, 300), goldenSources(t)...)
	valid, cut := 0, 0
	for _, f := range files {
		whole, err := Analyze(context.Background(), g, f.src, f.lang, testAnalyzeOptions())
		if err != nil {
			t.Fatal(err)
		}
		if whole.segs != nil || whole.Note != "" {
			continue // has an error
		}
		valid++
		st, err := g.acquire(f.lang)
		if err != nil {
			t.Fatal(err)
		}
		p := st.getParser()
		seg := &Analysis{Lang: f.lang, Content: f.src, Lines: LineStarts(f.src)}
		errs, err := seg.parseSegments(context.Background(), st, p, nil)
		st.putParser(p)
		g.release()
		if err != nil {
			t.Fatal(err)
		}
		seg.nestDefs()
		seg.cleanLocals()
		if len(seg.segs) > 1 {
			cut++
		}
		for _, s := range seg.segs {
			if s.errs {
				t.Fatalf("%s segment at line %d has a syntax error:\n%.300s", f.lang, s.line+1, s.text)
			}
		}
		if errs || !reflect.DeepEqual(seg.Defs, whole.Defs) || !reflect.DeepEqual(seg.Imports, whole.Imports) ||
			!reflect.DeepEqual(seg.Locals, whole.Locals) || seg.pkg != whole.pkg || seg.pkgLine != whole.pkgLine {
			t.Fatalf("%s file of %d bytes: the segments' tags differ from the whole file's", f.lang, len(f.src))
		}
	}
	if valid < len(files)/2 || cut < valid/2 {
		t.Fatalf("%d files, %d without an error, %d of them cut: too few to show anything", len(files), valid, cut)
	}
	t.Logf("%d files, %d without an error, %d of them cut", len(files), valid, cut)
}

// While a statement is half typed, the definitions outside its segment
// keep their tags. On Go's net/http/client.go, at the cursor of the ghz
// payload (after "case 307, 308:"), tree-sitter's error recovery over the
// whole file loses 14 of its 50 definitions once "resp, err :=
// c.send(req, d" is typed; the segmented analysis keeps them all.
func TestSegmentsKeepDefinitionsAfterAnError(t *testing.T) {
	t.Parallel()
	g := NewGrammars(1)
	defer g.Close()
	const typed = "resp77, err := c.send(req, d"
	var b strings.Builder
	b.WriteString("package p\n\nfunc (c *Client) do(req *Request) error {\n\tswitch req.Method {\n\tcase \"GET\":\n\t\t‸\n\t\treturn nil\n\t}\n}\n")
	for i := range 20 {
		n := "helper" + string(rune('A'+i))
		b.WriteString("\n// " + n + " does things.\nfunc (c *Client) " + n + "(req *Request) error {\n\treturn c.send(req, 0)\n}\n")
	}
	files := map[string]string{"synthetic": b.String()}
	if src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "client.go")); err == nil {
		if s := string(src); strings.Contains(s, "\tcase 307, 308:\n\t\t") {
			files["client.go"] = strings.Replace(s, "\tcase 307, 308:\n\t\t", "\tcase 307, 308:\n\t\t‸", 1)
		}
	}
	if files["client.go"] == "" && os.Getenv("CI") == "true" {
		// The synthetic file alone loses nothing to whole-file error
		// recovery either; client.go is the case that shows the point.
		t.Fatal("GOROOT's net/http/client.go with \"case 307, 308:\" is missing")
	}
	for name, src := range files {
		clean, err := Analyze(context.Background(), g, strings.Replace(src, "‸", "", 1), LangGo, testAnalyzeOptions())
		if err != nil {
			t.Fatal(err)
		}
		a, err := Analyze(context.Background(), g, strings.Replace(src, "‸", typed, 1), LangGo, testAnalyzeOptions())
		if err != nil {
			t.Fatal(err)
		}
		if clean.segs != nil || a.segs == nil {
			t.Fatalf("%s: segmented without the typed text %v, with it %v; want false, true", name, clean.segs != nil, a.segs != nil)
		}
		// Outside the segment with the error (the function being edited),
		// the definitions are the clean file's.
		var bad segment
		for _, sg := range a.segs {
			if sg.errs {
				bad = sg
			}
		}
		in := func(d Def) bool {
			return d.Start >= bad.line && d.Start < bad.line+int32(strings.Count(bad.text, "\n"))
		}
		var got, want []Def
		for _, d := range a.Defs {
			if !in(d) {
				d.Parent = 0 // indexes differ when the error's segment has other definitions
				got = append(got, d)
			}
		}
		for _, d := range clean.Defs {
			if !in(d) {
				d.Parent = 0
				want = append(want, d)
			}
		}
		if len(want) < 20 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d definitions outside the edited segment while typing, %d without the typed text", name, len(got), len(want))
		}
	}
}

// FuzzSegmentStarts: any text in any language is cut at increasing line
// starts, without a panic.
func FuzzSegmentStarts(f *testing.F) {
	for _, s := range []string{"func a() {}\nfunc b() {}\n", "x = `${`${'\n", "r#\"\nfn a", "#if\n#endif\nint a;\nint b;\n",
		"@d\n@e\ndef f(): '''\ndef g\n", "/* /* */\nfn a() {}\n", "'\\", "R\"(\n"} {
		for l := Lang(0); l < NumLangs; l++ {
			f.Add(s, uint8(l))
		}
	}
	f.Fuzz(func(t *testing.T, s string, l uint8) {
		starts := segmentStarts(s, Lang(l%uint8(NumLangs)))
		if len(starts) == 0 || starts[0] != 0 {
			t.Fatalf("starts %v", starts)
		}
		for k := 1; k < len(starts); k++ {
			if starts[k] <= starts[k-1] || int(starts[k]) >= len(s) || s[starts[k]-1] != '\n' {
				t.Fatalf("start %d at %d is not a line start after %d", k, starts[k], starts[k-1])
			}
		}
	})
}

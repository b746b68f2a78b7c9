package syntax

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"
)

// Incremental analysis (parsing from a cached tree, querying the edited
// top-level nodes only, keeping the terms of unchanged windows, patching
// identifier counts) extracts exactly what an analysis from scratch does.
func TestIncrementalParseMatchesFull(t *testing.T) {
	t.Parallel()
	h := newEditHarness(t, 5, 9)
	var st editStats
	for si, f := range corpusSamples(t, 12) {
		st.add(h.editAndCompare(t, "repo\x00file"+string(rune('a'+si)), f.src, f.lang, 25))
	}
	st.check(t, 5, 5)
}

// The same in every language, on the sources of the golden cases, with
// more steps. Tree-sitter's error recovery depends on the tree a parse
// starts from: edits that left a syntax error made incremental analyses
// of Java, JavaScript and C++ files differ from fresh ones (found on
// sources from the module cache).
func TestIncrementalAnalysisAllLanguages(t *testing.T) {
	t.Parallel()
	h := newEditHarness(t, 7, 3)
	langs := map[Lang]int{}
	var st editStats
	for i, f := range goldenSources(t) {
		if len(f.src) < 200 {
			continue
		}
		st.add(h.editAndCompare(t, fmt.Sprintf("repo\x00golden%d", i), f.src, f.lang, 150))
		langs[f.lang]++
	}
	if len(langs) != int(NumLangs)-1 {
		t.Fatalf("sources in %d languages, want all %d: %v", len(langs), NumLangs-1, langs)
	}
	// Small files where most edits leave an error: fewer take the
	// incremental path than above.
	st.check(t, 30, 5)
}

// editHarness analyses edited versions of files incrementally (with a
// tree cache) and from scratch.
type editHarness struct {
	g   *Grammars
	opt Options
	r   *rand.Rand
}

func newEditHarness(t *testing.T, seed1, seed2 uint64) *editHarness {
	h := &editHarness{g: NewGrammars(2), opt: testAnalyzeOptions(), r: rand.New(rand.NewPCG(seed1, seed2))}
	h.opt.Trees = NewTreeCache(4)
	t.Cleanup(func() {
		h.opt.Trees.Close()
		h.g.Close()
	})
	return h
}

// editStats counts the paths the analyses of editAndCompare took.
type editStats struct {
	steps     int
	partial   int // the edited region alone was queried
	segmented int // a syntax error: tags from segments
}

func (s *editStats) add(o editStats) {
	s.steps, s.partial, s.segmented = s.steps+o.steps, s.partial+o.partial, s.segmented+o.segmented
}

// check fails unless at least 1/partial of the steps took the edited
// region path and 1/segmented the segments: both must be exercised, or
// the test proves little about them.
func (s editStats) check(t *testing.T, partial, segmented int) {
	t.Helper()
	t.Logf("%d steps: %d queried the edited region alone, %d had a syntax error", s.steps, s.partial, s.segmented)
	if s.partial < s.steps/partial || s.segmented < s.steps/segmented {
		t.Fatalf("want at least 1/%d of the steps on the edited region path and 1/%d with segments", partial, segmented)
	}
}

// editAndCompare edits src steps times at random (typing a line a
// character at a time, replacing a few bytes with a fragment that often
// breaks the syntax, or going back to src), analysing each version incrementally (under
// key) and from scratch; every result must be equal. It returns the
// paths the incremental analyses took.
func (h *editHarness) editAndCompare(t *testing.T, key, src string, lang Lang, steps int) (st editStats) {
	t.Helper()
	g, opt, r := h.g, h.opt, h.r
	edits := []string{"", "x", "(", ")", "{", "}\n", "\n\n", "def ", "func f() {", "\"", "'", "`", "'''", "é",
		"  return y\n", "/*", "*/", "#if X\n", "<", ">", ";", "class A {", "fn a() {", "@d\n", "\\"}
	lines := []string{"value = compute(x, y)\n", "if err != nil { return err }\n", "result.append(item);\n",
		"let v: Vec<u8> = a.b();\n", "int f(int a) { return a; }\n"}
	cur := src
	typing, typeAt := "", 0
	for step := 0; step < steps; step++ {
		switch {
		case cur != src && r.IntN(5) == 0:
			// Undo everything: the edits above mostly leave a syntax
			// error, and one that stayed would keep every later step
			// off the incremental path.
			cur, typing = src, ""
		case typing != "" || r.IntN(3) == 0:
			if typing == "" {
				// Type a line character by character, as in an editor.
				typing = lines[r.IntN(len(lines))]
				typeAt = strings.LastIndexByte(cur[:r.IntN(len(cur)+1)], '\n') + 1
			}
			cur = cur[:typeAt] + typing[:1] + cur[typeAt:]
			typeAt++
			typing = typing[1:]
		default:
			at := r.IntN(len(cur) + 1)
			for at < len(cur) && cur[at]&0xC0 == 0x80 {
				at++
			}
			cut := min(len(cur)-at, r.IntN(6))
			for at+cut < len(cur) && cur[at+cut]&0xC0 == 0x80 {
				cut++
			}
			cur = cur[:at] + edits[r.IntN(len(edits))] + cur[at+cut:]
		}
		o := opt
		o.TreeKey = key
		inc, err := Analyze(context.Background(), g, cur, lang, o)
		if err != nil {
			t.Fatal(err)
		}
		st.steps++
		if inc.partial {
			st.partial++
		}
		if inc.segs != nil {
			st.segmented++
		}
		o.TreeKey = ""
		full, err := Analyze(context.Background(), g, cur, lang, o)
		if err != nil {
			t.Fatal(err)
		}
		// The identifier counts too (the next step patches these).
		if !reflect.DeepEqual(inc.Identifiers(), full.Identifiers()) {
			t.Fatalf("%s step %d: identifier counts differ from a full scan", key, step)
		}
		if !reflect.DeepEqual(inc.Defs, full.Defs) || !reflect.DeepEqual(inc.Imports, full.Imports) ||
			!reflect.DeepEqual(inc.Locals, full.Locals) || !reflect.DeepEqual(inc.Chunks, full.Chunks) ||
			inc.pkg != full.pkg || inc.pkgLine != full.pkgLine {
			for _, part := range []struct {
				name      string
				inc, full any
			}{{"defs", inc.Defs, full.Defs}, {"imports", inc.Imports, full.Imports}, {"locals", inc.Locals, full.Locals},
				{"chunks", len(inc.Chunks), len(full.Chunks)}, {"package", inc.pkg, full.pkg}, {"package line", inc.pkgLine, full.pkgLine}} {
				if !reflect.DeepEqual(part.inc, part.full) {
					t.Errorf("%s differ:\nincremental %v\nfull        %v", part.name, part.inc, part.full)
				}
			}
			t.Fatalf("%s (%s) step %d: incremental analysis differs from a full parse", key, lang, step)
		}
	}
	return st
}

// Error recovery can make up a zero-width (MISSING) identifier where a
// name belongs. It is not a local, and an incremental parse need not make
// it up where a parse from scratch does (found by the test above with
// another seed: the incremental analysis had no such local, the full one
// had one at the typed line).
func TestAnalyzeSkipsMissingNames(t *testing.T) {
	t.Parallel()
	g := NewGrammars(1)
	defer g.Close()
	// Go-like text read as Python: the assignment target is made up.
	src := "\tif err != nil {\n\t}\n\tn, err := res.Body.Read(buf)\n\t}\n"
	a, err := Analyze(context.Background(), g, src, LangPython, testAnalyzeOptions())
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.acquire(LangPython)
	if err != nil {
		t.Fatal(err)
	}
	p := st.getParser()
	tree, err := p.ParseCtx(context.Background(), nil, []byte(src))
	st.putParser(p)
	g.release()
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if !strings.Contains(tree.RootNode().String(), "(MISSING identifier)") {
		t.Fatalf("the sample no longer makes up a name: %s", tree.RootNode())
	}
	for _, l := range a.Locals {
		if l.Term == HashIdent("") {
			t.Fatalf("a local without a name at line %d: %v", l.Line, a.Locals)
		}
	}
}

// Patterns anchored at the root are found, so that a region holding such a
// top-level node is queried from the root.
func TestRootedKinds(t *testing.T) {
	t.Parallel()
	g := NewGrammars(1)
	defer g.Close()
	for lang, want := range map[Lang][]string{
		LangGo:     {"const_declaration", "var_declaration"},
		LangPython: {"expression_statement"},
		LangJS:     {"lexical_declaration", "variable_declaration", "export_statement"},
		LangRust:   nil,
	} {
		st, err := g.acquire(lang)
		if err != nil {
			t.Fatal(err)
		}
		g.release()
		var got []string
		for sym := range st.rooted {
			got = append(got, st.lang.SymbolName(sym))
		}
		slices.Sort(got)
		got = slices.Compact(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: rooted kinds %v, want %v", lang, got, want)
		}
	}
	// A pattern over several lines, with an anchor; a commented-out one.
	st, err := g.acquire(LangGo)
	if err != nil {
		t.Fatal(err)
	}
	g.release()
	q := "(source_file\n  . (const_declaration) @x)\n; (source_file (var_declaration))\n(function_declaration) @f\n"
	got := rootedKinds(st.lang, q)
	if len(got) != 1 || st.lang.SymbolName(slices.Collect(maps.Keys(got))[0]) != "const_declaration" {
		t.Errorf("rootedKinds(%q) = %v, want const_declaration alone", q, got)
	}
}

// testAnalyzeOptions are the analysis options the tests and benchmarks use:
// generous limits, 20-line windows every 10 lines.
func testAnalyzeOptions() Options {
	return Options{MaxParseBytes: 1 << 20, ParseTimeoutUS: 1e6, WindowLines: 20, WindowStride: 10}
}

// TestEditBetween checks the chunked prefix/suffix scan against the
// definition (longest common prefix, then longest common suffix of what
// is left; points as rows and byte columns) on random edits of text with
// repeats, where a chunk boundary falls anywhere.
func TestEditBetween(t *testing.T) {
	t.Parallel()
	naivePoint := func(s string, off int) sitter.Point {
		var p sitter.Point
		for i := 0; i < off; i++ {
			if s[i] == '\n' {
				p.Row, p.Column = p.Row+1, 0
			} else {
				p.Column++
			}
		}
		return p
	}
	naive := func(old, new string) sitter.EditInput {
		p := 0
		for p < len(old) && p < len(new) && old[p] == new[p] {
			p++
		}
		s := 0
		for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
			s++
		}
		return sitter.EditInput{StartIndex: uint32(p), OldEndIndex: uint32(len(old) - s), NewEndIndex: uint32(len(new) - s),
			StartPoint: naivePoint(old, p), OldEndPoint: naivePoint(old, len(old)-s), NewEndPoint: naivePoint(new, len(new)-s)}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "ab\n\t é"
	text := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 3000; i++ {
		old := text(r.IntN(400))
		if r.IntN(4) == 0 {
			old = strings.Repeat(old[:min(len(old), 3)], r.IntN(100)) // long repeats
		}
		at := r.IntN(len(old) + 1)
		cut := min(len(old)-at, r.IntN(8))
		new := old[:at] + text(r.IntN(8)) + old[at+cut:]
		if got, want := editBetween(old, new), naive(old, new); got != want {
			t.Fatalf("%q → %q: got %+v, want %+v", old, new, got, want)
		}
	}
}

// BenchmarkEditBetween: one keystroke in the middle of a 36 KB file, the
// diff every edit of a cached file pays.
func BenchmarkEditBetween(b *testing.B) {
	line := "\tif err := c.send(req, deadline); err != nil {\n"
	old := strings.Repeat(line, 36<<10/len(line))
	mid := len(old) / 2
	new := old[:mid] + "x" + old[mid:]
	b.SetBytes(int64(len(old)))
	for range b.N {
		editBetween(old, new)
	}
}

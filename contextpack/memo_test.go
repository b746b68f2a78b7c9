package contextpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/assemble"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
)

// The warm path keeps memos (identifiers of cursor files, import rankings,
// import outlines, recent prompts). Whatever a sequence of requests did before, a warm
// Builder must build exactly the prompt and manifest that a new Builder
// builds for the same request.
func TestWarmBuildMatchesCold(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	gen := synthrepo.Generate(synthrepo.Options{Files: 60, FileBytes: 3000, Seed: 3})
	files := []File{{Path: "go.mod", Content: synthrepo.GoMod, HasContent: true}}
	for _, f := range gen {
		files = append(files, File{Path: f.Path, Content: f.Content, HasContent: true})
	}
	warm, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()

	r := rand.New(rand.NewPCG(5, 8))
	comment := func(p string) string {
		if strings.HasSuffix(p, ".py") {
			return "# "
		}
		return "// "
	}
	// defNames returns names defined in f as the assembler sees them.
	defNames := func(f File) []string {
		a, err := syntax.Analyze(context.Background(), warm.grammars, f.Content, syntax.DetectLang(f.Path, ""), warm.analyzeOptions)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range a.Defs {
			out = append(out, d.Name)
		}
		return out
	}
	cur := 1 + r.IntN(len(files)-1)
	off := len(files[cur].Content) / 2
	dropped := -1
	withImports := 0
	budget, maxNew := 4096, 64
	for step := 0; step < 50; step++ {
		op := "repeat"
		switch k := r.IntN(7); k {
		case 0: // the cursor file names a definition of another file
			other := files[1+r.IntN(len(files)-1)]
			for range 20 { // most often one it imports (same directory)
				if path.Dir(other.Path) == path.Dir(files[cur].Path) && path.Ext(other.Path) == path.Ext(files[cur].Path) {
					break
				}
				other = files[1+r.IntN(len(files)-1)]
			}
			if names := defNames(other); len(names) > 0 {
				name := names[r.IntN(len(names))]
				c := files[cur].Content
				at := strings.LastIndex(c[:off], "\n") + 1
				files[cur].Content = c[:at] + comment(files[cur].Path) + "uses " + name + "\n" + c[at:]
				off += len(files[cur].Content) - len(c)
				op = "cursor file names " + name
			}
		case 1: // a file in the cursor file's directory (an import) comes to
			// define a name the cursor file uses; the cursor file is unchanged
			dir := path.Dir(files[cur].Path)
			var used []string
			syntax.ScanIdents(files[cur].Content, syntax.DetectLang(files[cur].Path, ""), func(id string, _ int) bool {
				used = append(used, id)
				return true
			})
			for i := range files {
				if i == cur || path.Dir(files[i].Path) != dir || path.Ext(files[i].Path) != path.Ext(files[cur].Path) || len(used) == 0 {
					continue
				}
				name := used[r.IntN(len(used))]
				switch path.Ext(files[i].Path) {
				case ".py":
					files[i].Content += "\n\ndef " + name + "(x):\n    return x\n"
				case ".go":
					files[i].Content += "\nfunc " + name + "() int { return 1 }\n"
				default:
					files[i].Content += "\nexport function " + name + "(): number { return 1; }\n"
				}
				op = files[i].Path + " defines " + name
				break
			}
		case 2: // the cursor moves
			c := files[cur].Content
			off = r.IntN(len(c) + 1)
			for off > 0 && off < len(c) && c[off]&0xC0 == 0x80 {
				off--
			}
			op = "cursor moves"
		case 3: // another cursor file
			cur = 1 + r.IntN(len(files)-1)
			off = r.IntN(len(files[cur].Content) + 1)
			op = "cursor file " + files[cur].Path
		case 5: // another budget
			budget, maxNew = []int{4096, 2048}[r.IntN(2)], []int{64, 32}[r.IntN(2)]
			op = fmt.Sprintf("budget %d, generation %d", budget, maxNew)
		case 4: // a file leaves the request, or comes back
			if dropped < 0 {
				dropped = 1 + r.IntN(len(files)-1)
				if dropped == cur {
					dropped = -1
				}
				op = "a file leaves"
			} else {
				dropped = -1
				op = "the file comes back"
			}
		}
		req := Request{RepoName: "synth", TokenBudget: budget, MaxNewTokens: maxNew,
			Cursor: Cursor{Path: files[cur].Path, Offset: off, Encoding: EncodingByteOffset}}
		for i, f := range files {
			if i != dropped {
				req.Files = append(req.Files, f)
			}
		}
		got, err := warm.Build(context.Background(), req)
		if err != nil {
			t.Fatalf("step %d (%s): %v", step, op, err)
		}
		want := coldBuild(t, tok, req)
		if got.Text != want.Text || got.Tokens != want.Tokens {
			t.Fatalf("step %d (%s): warm prompt differs from a new builder's (%d vs %d tokens)", step, op, got.Tokens, want.Tokens)
		}
		if !reflect.DeepEqual(got.Manifest, want.Manifest) {
			for i := range min(len(got.Manifest.Sources), len(want.Manifest.Sources)) {
				if got.Manifest.Sources[i] != want.Manifest.Sources[i] {
					t.Errorf("source %d: warm %+v\ncold %+v", i, got.Manifest.Sources[i], want.Manifest.Sources[i])
					break
				}
			}
			t.Fatalf("step %d (%s): warm manifest differs from a new builder's", step, op)
		}
		// Callers may change what they get (the server appends warnings);
		// a memoized prompt must not see it.
		got.Manifest.CheckEvaluated(1)
		got.Manifest.Sources[0].Reason = "changed by the caller"
		if slices.ContainsFunc(got.Manifest.Sources, func(s Source) bool { return s.Kind == SourceImport }) {
			withImports++
		}
	}
	// The memos are only exercised where there are imports.
	if withImports < 20 {
		t.Fatalf("only %d of 50 steps had import sources; the test does not exercise the import memos", withImports)
	}
}

// An import's outline lists the headers the cursor file uses first; when
// they do not all fit, which ones are shown depends on the cursor file,
// and the memo must follow it.
func TestOutlineMemoFollowsUsedNames(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 8192)
	defer b.Close()
	var sb strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&sb, "def function_number_%d(first_argument, second_argument):\n    return first_argument\n\n", i)
	}
	a, err := syntax.Analyze(context.Background(), b.grammars, sb.String(), syntax.LangPython, b.analyzeOptions)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 300
	c := b.params.Counter
	rec := newRecord()
	all := assemble.OutlineOf(assemble.OutlineQuery{Counter: c, File: a, Limit: limit})
	if len(all.Ranges) == 0 || len(all.Ranges) >= 200 {
		t.Fatalf("outline of %d ranges, %d tokens: the test needs headers that do not all fit", len(all.Ranges), all.Tokens)
	}
	for _, used := range []syntax.IdentCounts{
		{"function_number_150": 1},
		{"function_number_190": 2, "function_number_20": 1},
		{"function_number_150": 1},
		{},
	} {
		bits, _ := a.UsedDefs(used)
		q := assemble.OutlineQuery{Counter: c, File: a, Used: used, UsedDefs: bits, Limit: limit}
		o := rec.Outline(q)
		got, n := o.Ranges, o.Tokens
		want := assemble.OutlineOf(q)
		if !slices.Equal(got, want.Ranges) || n != want.Tokens {
			t.Fatalf("used %v: memo gave %v (%d tokens), want %v", used, got, n, want.Ranges)
		}
		for name := range used {
			var line int32 = -1
			for _, d := range a.Defs {
				if d.Name == name {
					line = d.Start
				}
			}
			if !slices.ContainsFunc(got, func(r assemble.LineRange) bool { return r.First <= line && line <= r.Last }) {
				t.Fatalf("used %v: the outline leaves out %s", used, name)
			}
		}
	}
}

// While only the cursor file is typed in, the import ranking carries over
// from one keystroke to the next, and is ranked again at the keystroke
// that makes a definition of a resolved file appear (or disappear): the
// one that completes its name on the cursor's line (the key after it), or
// the newline that leaves the line. Every prompt equals a new builder's.
func TestImportRankingFollowsTyping(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	files := []File{
		{Path: "go.mod", Content: "module example.com/m\n\ngo 1.22\n", HasContent: true},
		{Path: "p/a.go", Content: "package p\n\nfunc run() int {\n\tx := 1\n\t\n\treturn x\n}\n", HasContent: true},
		{Path: "p/b.go", Content: "package p\n\n// Alpha is one.\nfunc Alpha() int { return 1 }\n", HasContent: true},
		{Path: "p/c.go", Content: "package p\n\n// Gamma is three.\nfunc Gamma() int { return 3 }\n\nfunc Delta() int { return 4 }\n", HasContent: true},
	}
	const cur = 1
	off := strings.Index(files[cur].Content, "\t\n") + 1
	warm, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	ranked := func() *assemble.Ranking {
		r := warm.store.Held("m")
		if r == nil {
			t.Fatal("no repository index")
		}
		return r.Record.ranking.ranking
	}
	hasC := func(m *assemble.Ranking) bool {
		return slices.ContainsFunc(m.Imports, func(h assemble.RankedImport) bool { return h.File.Path == "p/c.go" })
	}
	build := func(typed string) {
		t.Helper()
		req := Request{RepoName: "m", TokenBudget: 2048, MaxNewTokens: 32, Files: slices.Clone(files),
			Cursor: Cursor{Path: files[cur].Path, Offset: off, Encoding: EncodingByteOffset}}
		got, err := warm.Build(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if want := coldBuild(t, tok, req); got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) {
			t.Fatalf("after typing %q: warm prompt differs from a new builder's", typed)
		}
	}
	build("")
	carried, ranks := 0, 0
	const text = "_ = Gamma() // go\n\t"
	for i := range len(text) {
		before := ranked()
		was, wasC := before.Resolved, hasC(before)
		c := files[cur].Content
		files[cur].Content = c[:off] + text[i:i+1] + c[off:]
		off++
		build(text[:i+1])
		m := ranked()
		if len(m.Resolved) == 0 || len(was) == 0 {
			t.Fatal("the imports resolved to no file")
		}
		if &m.Resolved[0] == &was[0] {
			carried++
			if hasC(m) != wasC {
				t.Fatalf("after typing %q: the ranking carried over but p/c.go came or went", text[:i+1])
			}
		} else {
			ranks++
		}
		k := strings.Index(text[:i+1], "Gamma")
		if want := k >= 0 && k+len("Gamma") < i+1; hasC(m) != want { // complete: a key followed it
			t.Fatalf("after typing %q: p/c.go ranked %v, want %v", text[:i+1], hasC(m), want)
		}
	}
	// Keys inside a name carry over; completing a name or a newline ranks again.
	if carried < len(text)/2 || ranks == 0 {
		t.Fatalf("ranking carried over at %d keystrokes and recomputed at %d of %d", carried, ranks, len(text))
	}
}

// The import ranking of the previous keystroke is not carried over when
// anything else it depends on changed with the keystroke.
func TestImportRankingNotCarriedOver(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	base := []File{
		{Path: "go.mod", Content: "module example.com/m\n\ngo 1.22\n", HasContent: true},
		{Path: "p/a.go", Content: "package p\n\nfunc run() int {\n\ttotal := 1\n\t\n\treturn total\n}\n", HasContent: true},
		{Path: "p/c.go", Content: "package p\n\nfunc Gamma() int { return 3 }\n", HasContent: true},
		{Path: "q/d.go", Content: "package q\n\n// Zeta is zero.\nfunc Zeta() int { return 0 }\n", HasContent: true},
	}
	for name, tc := range map[string]struct {
		// change edits files; unranked builds them without repository
		// context, which does not rank imports.
		change func(files []File, unranked func())
		want   string // a file the ranking must hold afterwards
	}{
		// A keystroke in the cursor file, and in the same request another
		// file comes to define a name the cursor file uses already.
		"another file changes": {func(files []File, _ func()) {
			files[1].Content = strings.Replace(files[1].Content, "\t\n", "\t \n", 1)
			files[2].Content += "\nvar total = 2\n"
		}, "p/c.go"},
		// The keystroke completes an import statement.
		"the imports change": {func(files []File, _ func()) {
			files[1].Content = strings.Replace(files[1].Content, "package p\n", "package p\n\nimport \"example.com/m/q\"\n", 1)
		}, "q/d.go"},
		// The version before this keystroke was never ranked: what changed
		// since the ranked one is more than this keystroke's edit.
		"a version was not ranked": {func(files []File, unranked func()) {
			files[1].Content = strings.Replace(files[1].Content, "\treturn", "\t_ = Gamma()\n\treturn", 1)
			unranked()
			files[1].Content = strings.Replace(files[1].Content, "\t\n", "\t \n", 1)
		}, "p/c.go"},
	} {
		t.Run(name, func(t *testing.T) {
			files := slices.Clone(base)
			warm, err := NewBuilder(DefaultConfig(), tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer warm.Close()
			req := func() Request {
				off := strings.Index(files[1].Content, "return total")
				return Request{RepoName: "m", TokenBudget: 2048, MaxNewTokens: 32, Files: slices.Clone(files),
					Cursor: Cursor{Path: files[1].Path, Offset: off, Encoding: EncodingByteOffset}}
			}
			// Two versions of the cursor file first, so that the next one
			// is patched from counts that exist.
			for _, c := range []string{"", "\t// y\n"} {
				files[1].Content = strings.Replace(files[1].Content, "\treturn total", c+"\treturn total", 1)
				if _, err := warm.Build(context.Background(), req()); err != nil {
					t.Fatal(err)
				}
			}
			tc.change(files, func() {
				if _, err := warm.BuildStrategy(context.Background(), req(), StrategyNone); err != nil {
					t.Fatal(err)
				}
			})
			got, err := warm.Build(context.Background(), req())
			if err != nil {
				t.Fatal(err)
			}
			if want := coldBuild(t, tok, req()); got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) {
				t.Fatal("warm prompt differs from a new builder's")
			}
			if !slices.ContainsFunc(got.Manifest.Sources, func(s Source) bool { return s.Kind == SourceImport && s.Path == tc.want }) {
				t.Fatalf("%s is not among the import sources", tc.want)
			}
		})
	}
}

// coldBuild builds req with a new Builder: what a warm one must match.
func coldBuild(t *testing.T, tok Tokenizer, req Request) *Prompt {
	t.Helper()
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.Build(context.Background(), req)
	if err != nil {
		t.Fatalf("new builder: %v", err)
	}
	return p
}

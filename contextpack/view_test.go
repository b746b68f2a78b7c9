package contextpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// typingView is the view of content for a cursor at off, and its line; ok
// is false when the line is empty (the view is content).
func typingView(content string, off int) (view string, line int32, ok bool) {
	ls, le, line := index.CursorLine(content, off)
	return content[:ls] + content[le:], line, ls < le
}

func TestTypingView(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		content string
		off     int
		view    string
		line    int32
		ok      bool
	}{
		{"a\nbc\nd", 3, "a\n\nd", 1, true},
		{"a\nbc\nd", 2, "a\n\nd", 1, true},  // at the line's start
		{"a\nbc\nd", 4, "a\n\nd", 1, true},  // at its end
		{"a\nbc\nd", 6, "a\nbc\n", 2, true}, // the last line, without a newline
		{"a\nbc\nd\n", 7, "a\nbc\nd\n", 0, false},
		{"a\n\nd", 2, "a\n\nd", 0, false},     // an empty line: the view is the file
		{"a\n\t\nd", 3, "a\n\nd", 1, true},    // blanks go too
		{"a\r\nb\r\n", 3, "a\r\n\n", 1, true}, // a CR goes with its line
		{"", 0, "", 0, false},
	} {
		view, line, ok := typingView(tc.content, tc.off)
		if view != tc.view || ok != tc.ok || (ok && line != tc.line) {
			t.Errorf("typingView(%q, %d) = %q, %d, %v; want %q, %d, %v", tc.content, tc.off, view, line, ok, tc.view, tc.line, tc.ok)
		}
		if strings.Count(view, "\n") != strings.Count(tc.content, "\n") {
			t.Errorf("typingView(%q, %d): the line count changed", tc.content, tc.off)
		}
	}
}

// Keystrokes on one line share the typing view: after the first, none
// analyses the cursor file again, changes the index or searches again,
// and each prompt is a fresh Builder's. The newline that leaves the line
// makes a new view.
func TestTypingOnALineKeepsTheIndex(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs := pyRepo(8, "view")
	const cur = 3
	off := len(fs[cur].Content)
	fs[cur].Content += "\ndef typed(z):\n    \n"
	off += len("\ndef typed(z):\n    ")
	repo := func() *index.Repository[*record] {
		r := b.store.Held("r")
		if r == nil {
			t.Fatal("no repository index")
		}
		return r
	}
	build := func(typed string) {
		t.Helper()
		req := Request{RepoName: "r", TokenBudget: 4096, MaxNewTokens: 32, Files: asDigests(fs, cur),
			Cursor: Cursor{Path: fs[cur].Path, Offset: off, Encoding: EncodingByteOffset}}
		got, err := b.Build(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.Files = fs
		if want := coldBuild(t, tok, req); got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) {
			t.Fatalf("after typing %q: the prompt differs from a fresh Builder's", typed)
		}
	}
	if _, err := b.Build(context.Background(), Request{RepoName: "r", Files: fs, MaxNewTokens: 32,
		Cursor: Cursor{Path: fs[cur].Path, Offset: off, Encoding: EncodingByteOffset}}); err != nil {
		t.Fatal(err)
	}
	const text = "return helper_4(z, 1)\n    x"
	var version uint64
	var an *syntax.Analysis
	searches := 0
	for i := range len(text) {
		c := fs[cur].Content
		fs[cur].Content = c[:off] + text[i:i+1] + c[off:]
		off++
		build(text[:i+1])
		rp := repo()
		r, rec := rp.Index, rp.Record
		sl := r.File(fs[cur].Path)
		if _, _, ok := typingView(fs[cur].Content, off); !ok {
			if sl.Viewed() || sl.Indexed().Text != fs[cur].Content || r.Viewing() != nil {
				t.Fatalf("after typing %q: the cursor's line is empty, but the index file holds a view", text[:i+1])
			}
		} else if !sl.Viewed() || sl.Text().Text != fs[cur].Content || r.Viewing() != sl {
			t.Fatalf("after typing %q: the index file holds no view of the text", text[:i+1])
		}
		line := strings.Count(text[:i+1], "\n")
		switch {
		case i == 0 || text[i] == '\n':
			version, an, searches = r.View().Version(), sl.Analysis, rec.searches
		case r.View().Version() != version || sl.Analysis != an || rec.searches != searches:
			t.Fatalf("after typing %q (line %d of the text): version %d → %d, analysis changed %v, searches %d → %d",
				text[:i+1], line, version, r.View().Version(), sl.Analysis != an, searches, rec.searches)
		}
		if v, _, _ := typingView(fs[cur].Content, off); sl.Indexed().Text != v {
			t.Fatalf("after typing %q: the index file holds another view", text[:i+1])
		}
	}
}

// Whatever a client does (types, moves the cursor within the file or to
// another one, edits other files, sends everything again), each prompt
// is a fresh Builder's: the index holds the view of the cursor file of
// the request and the text of every other file.
func TestTypingViewFollowsTheCursor(t *testing.T) {
	t.Parallel()
	b := freshBuilder(t)
	fs := pyRepo(6, "walk")
	for i := range 40 { // larger than the local budget: the window moves while typing
		fs[2].Content += fmt.Sprintf("\ndef more_%d(v):\n    return helper_3(v) + use_%d(v)\n", i, i%6)
	}
	r := rand.New(rand.NewPCG(7, 11))
	cur, off := 2, 0
	lineStart := func(c string, n int) int {
		o := 0
		for ; n > 0; n-- {
			j := strings.IndexByte(c[o:], '\n')
			if j < 0 {
				return len(c)
			}
			o += j + 1
		}
		return o
	}
	for step := 0; step < 300; step++ {
		op := ""
		switch k := r.IntN(20); {
		case k < 12:
			op = "type"
			const keys = "abc (x)\n_:=1,"
			ch := keys[r.IntN(len(keys))]
			c := fs[cur].Content
			fs[cur].Content = c[:off] + string(ch) + c[off:]
			off++
		case k < 15:
			op = "move"
			c := fs[cur].Content
			off = min(len(c), lineStart(c, r.IntN(strings.Count(c, "\n")+1))+r.IntN(3))
		case k < 17:
			op = "switch"
			cur = r.IntN(len(fs))
			off = lineStart(fs[cur].Content, r.IntN(strings.Count(fs[cur].Content, "\n")+1))
		case k < 19:
			op = "edit another"
			j := r.IntN(len(fs))
			if j != cur {
				fs[j].Content += fmt.Sprintf("\nVALUE_%d = %d\n", step, step)
			}
		default:
			op = "resend"
		}
		off = min(off, len(fs[cur].Content))
		files := asDigests(fs, cur)
		if step == 0 || op == "resend" || op == "edit another" {
			files = fs // content the server may not hold yet
		}
		req := Request{RepoName: "r", MaxNewTokens: 16, TokenBudget: 1024, Files: files,
			Cursor: Cursor{Path: fs[cur].Path, Offset: off, Encoding: EncodingByteOffset}}
		got, err := b.Build(context.Background(), req)
		if err != nil {
			t.Fatalf("step %d (%s): %v", step, op, err)
		}
		req.Files = fs
		if want := coldBuild(t, byteTok{}, req); got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) {
			t.Fatalf("step %d (%s, cursor %s:%d): the prompt differs from a fresh Builder's:\n%q\n%q",
				step, op, fs[cur].Path, off, got.Text, want.Text)
		}
	}
}

// A line typed in a file larger than the local budget moves the
// prefix/suffix window (its first line, its scope headers) while the view
// stays: the memoized selection must follow, and each prompt is a fresh
// Builder's.
func TestTypingLongLineMovesTheWindow(t *testing.T) {
	t.Parallel()
	b := freshBuilder(t)
	fs := pyRepo(4, "long")
	var sb strings.Builder
	sb.WriteString("from .m1 import helper_1\n\n\nclass Big:\n")
	for i := range 120 {
		fmt.Fprintf(&sb, "    def method_%d(self, v):\n        return helper_1(v) + %d\n\n", i, i)
	}
	sb.WriteString("    def typed(self, v):\n        \n")
	off := sb.Len() - 1
	for i := range 40 {
		fmt.Fprintf(&sb, "    def after_%d(self, v):\n        return self.method_%d(v)\n\n", i, i)
	}
	fs[0].Content = sb.String()
	starts := map[int]bool{}
	for i := 0; i < 400; i++ {
		c := fs[0].Content
		const text = "helper_1(v) + self.method_3(v) * "
		ch := text[i%len(text)]
		fs[0].Content = c[:off] + string(ch) + c[off:]
		off++
		files := asDigests(fs, 0)
		if i == 0 {
			files = fs
		}
		req := Request{RepoName: "r", MaxNewTokens: 16, TokenBudget: 2048, Files: files,
			Cursor: Cursor{Path: fs[0].Path, Offset: off, Encoding: EncodingByteOffset}}
		got, err := b.Build(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.Files = fs
		if want := coldBuild(t, byteTok{}, req); got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) {
			t.Fatalf("keystroke %d: the prompt differs from a fresh Builder's:\n%q\n%q", i, got.Text, want.Text)
		}
		for _, s := range got.Manifest.Sources {
			if s.Kind == SourcePrefix {
				starts[s.StartLine] = true
			}
		}
	}
	if len(starts) < 3 {
		t.Fatalf("the prefix started at %d lines only: the window did not move", len(starts))
	}
}

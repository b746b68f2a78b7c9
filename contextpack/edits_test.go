package contextpack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Keystrokes, deletions and multi-edit changes sent as edits on the last
// text (on the whole list and on a snapshot base) build the prompt and
// snapshot a fresh Builder builds from the content.
func TestEditsMatchContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := freshBuilder(t)
	fs := pyRepo(6, "edits")
	fs[2].Content += "\ns = \"héllo wörld ✓\"\n"
	first, err := b.Build(ctx, Request{RepoName: "r", Files: fs, MaxNewTokens: 16, TokenBudget: 1024,
		Cursor: Cursor{Path: fs[2].Path, Line: 3}})
	if err != nil {
		t.Fatal(err)
	}
	base := first.Snapshot
	r := rand.New(rand.NewPCG(3, 5))
	off := strings.Index(fs[2].Content, "return x")
	for step := range 120 {
		old := fs[2].Content
		var edits []Edit
		switch k := r.IntN(10); {
		case k < 6: // a keystroke
			keys := []string{"a", "b", " ", "(", "\n", "_", "é", "✓"}
			ch := keys[r.IntN(len(keys))]
			edits = []Edit{{Start: off, End: off, Text: ch}}
			off += len(ch)
		case k < 8: // backspace over one character
			if off == 0 {
				continue
			}
			s := off - 1
			for !boundary(old, s) {
				s--
			}
			edits = []Edit{{Start: s, End: off}}
			off = s
		default: // two edits, the second on the first's result: a rename and a paste
			from, to := "helper", "aide"
			if !strings.Contains(old, from) {
				from, to = to, from
			}
			i := strings.Index(old, from)
			edits = []Edit{{Start: i, End: i + len(from), Text: to}, {Start: 0, End: 0, Text: "# pasted\n"}}
			off = 0
		}
		cur := old
		for _, e := range edits {
			cur = cur[:e.Start] + e.Text + cur[e.End:]
		}
		fs[2].Content = cur
		edited := File{Path: fs[2].Path, Digest: Digest(old), Edits: edits}
		req := Request{RepoName: "r", MaxNewTokens: 16, TokenBudget: 1024,
			Cursor: Cursor{Path: fs[2].Path, Offset: off, Encoding: EncodingByteOffset}}
		if step%2 == 0 {
			req.Files = asDigests(fs, -1)
			req.Files[2] = edited
		} else {
			req.Base, req.Files = base, []File{edited}
		}
		sent := append([]File(nil), req.Files...)
		got, err := b.Build(ctx, req)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !reflect.DeepEqual(req.Files, sent) {
			t.Fatalf("step %d: Build changed the caller's files", step)
		}
		want := coldBuild(t, byteTok{}, Request{RepoName: "r", Files: fs, MaxNewTokens: 16, TokenBudget: 1024, Cursor: req.Cursor})
		if got.Text != want.Text || !reflect.DeepEqual(got.Manifest, want.Manifest) || got.Snapshot != want.Snapshot {
			t.Fatalf("step %d (%+v): the prompt differs from the content's:\n%q\n%q", step, edits, got.Text, want.Text)
		}
		base = got.Snapshot
	}
}

func TestEditsErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := freshBuilder(t)
	text := "s = 'é'\n"
	if _, err := b.Build(ctx, Request{Files: []File{{Path: "a.py", Content: text, HasContent: true}}, Cursor: Cursor{Path: "a.py"}}); err != nil {
		t.Fatal(err)
	}
	d := Digest(text)
	e := strings.Index(text, "é")
	many := make([]Edit, MaxEdits+1)
	cases := []struct {
		name  string
		file  File
		field string
	}{
		{"content and edits", File{Path: "a.py", Content: text, HasContent: true, Edits: []Edit{{}}}, "repository.files[0]"},
		{"no digest", File{Path: "a.py", Edits: []Edit{{}}}, "repository.files[0]"},
		{"too many", File{Path: "a.py", Digest: d, Edits: many}, "repository.files[0].edits"},
		{"past the end", File{Path: "a.py", Digest: d, Edits: []Edit{{Start: 0, End: len(text) + 1}}}, "repository.files[0].edits[0]"},
		{"reversed", File{Path: "a.py", Digest: d, Edits: []Edit{{Start: 3, End: 2}}}, "repository.files[0].edits[0]"},
		{"negative", File{Path: "a.py", Digest: d, Edits: []Edit{{Start: -1, End: 2}}}, "repository.files[0].edits[0]"},
		{"splits a character", File{Path: "a.py", Digest: d, Edits: []Edit{{}, {Start: e + 1, End: e + 1, Text: "x"}}}, "repository.files[0].edits[1]"},
		{"bad text", File{Path: "a.py", Digest: d, Edits: []Edit{{Text: "\xff"}}}, "repository.files[0].edits[0].text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Build(ctx, Request{Files: []File{tc.file}, Cursor: Cursor{Path: "a.py"}})
			var ae *ArgumentError
			if !errors.As(err, &ae) || ae.Field != tc.field {
				t.Fatalf("err = %v, want an argument error on %s", err, tc.field)
			}
		})
	}
	// Edits that would copy held texts over and over are refused.
	big := strings.Repeat("x = 1\n", 200<<10/6)
	if _, err := b.Build(ctx, Request{Files: []File{{Path: "big.py", Content: big, HasContent: true}}, Cursor: Cursor{Path: "big.py"}}); err != nil {
		t.Fatal(err)
	}
	var copies []File
	for i := range 6 {
		copies = append(copies, File{Path: fmt.Sprintf("c%d.py", i), Digest: Digest(big), Edits: make([]Edit, MaxEdits)})
	}
	_, err := b.Build(ctx, Request{Files: copies, Cursor: Cursor{Path: "c0.py"}})
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Field != "repository.files[5].edits" || !strings.Contains(ae.Reason, "MiB") {
		t.Fatalf("err = %v, want the edit work refused at the sixth file", err)
	}
	// Edits on a text the server does not hold ask for the content.
	_, err = b.Build(ctx, Request{Files: []File{{Path: "a.py", Digest: d, Edits: []Edit{{Text: "x"}}},
		{Path: "b.py", Digest: Digest("never sent"), Edits: []Edit{{Text: "y"}}}}, Cursor: Cursor{Path: "a.py"}})
	var me *MissingContentError
	if !errors.As(err, &me) || !reflect.DeepEqual(me.Paths, []string{"b.py"}) {
		t.Fatalf("err = %v, want MissingContentError for b.py", err)
	}
}

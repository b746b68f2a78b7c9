package contextpack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A list made from the one before it is the list made from scratch: same
// snapshot ID and languages, whatever changed; and no two different lists
// share an ID.
func TestNextListMatchesFresh(t *testing.T) {
	var files []File
	var digests []string
	for i := range 100 { // four chunks, the last one short
		files = append(files, File{Path: fmt.Sprintf("p/f%02d.py", i)})
		digests = append(digests, fmt.Sprintf("d%02d", i))
	}
	steps := []struct {
		name string
		edit func()
	}{
		{"first", func() {}},
		{"one digest", func() { digests[40] = "d40'" }},
		{"digests in two chunks", func() { digests[0], digests[99] = "d00'", "d99'" }},
		{"a digest back", func() { digests[40] = "d40" }},
		{"nothing again", func() {}},
		{"a language", func() { files[7].Language = "go" }},
		{"the language back", func() { files[7].Language = "" }},
		{"a path", func() { files[64].Path = "p/renamed.py" }},
		{"a file added", func() {
			files = append(files, File{Path: "p/new.go"})
			digests = append(digests, "dnew")
		}},
		{"a file removed", func() { files, digests = files[1:], digests[1:] }},
		{"two swapped", func() {
			files[3], files[4] = files[4], files[3]
			digests[3], digests[4] = digests[4], digests[3]
		}},
		{"a path and a digest moved across a field", func() { files[5].Path += "x"; digests[5] = digests[5][1:] }},
	}
	lists := map[string]string{} // snapshot ID → the list it names
	var prev *fileList
	for _, s := range steps {
		s.edit()
		ds := slices.Clone(digests) // a request's digests are its own
		same := prev.samePaths(files)
		got := nextList(prev, same, files, ds, true)
		want := nextList(nil, false, files, ds, true)
		if got.id != want.id || !slices.Equal(got.ids, want.ids) || !slices.Equal(got.paths, want.paths) ||
			!slices.Equal(got.langs, want.langs) || !slices.Equal(got.digests, want.digests) {
			t.Fatalf("%s: list after the previous one differs from one made from scratch", s.name)
		}
		if strings.HasPrefix(s.name, "nothing") && got != prev {
			t.Fatalf("%s: an unchanged list was made again", s.name)
		}
		var sb strings.Builder
		for i, f := range files {
			fmt.Fprintf(&sb, "%q %q %q\n", f.Path, ds[i], f.Language)
		}
		if l, ok := lists[got.id]; ok && l != sb.String() {
			t.Fatalf("%s: two different lists got snapshot %s", s.name, got.id)
		}
		lists[got.id] = sb.String()
		prev = got
	}
	if len(lists) < len(steps)-3 { // "nothing again", two steps back to earlier lists
		t.Fatalf("%d distinct IDs over %d steps", len(lists), len(steps))
	}

	off := nextList(nil, false, files, digests, false)
	if off.id != "" || off.chunks != nil || !slices.Equal(off.ids, prev.ids) {
		t.Fatal("without snapshots a list has an ID or hashes, or other languages")
	}
}

// A request whose list differs from the repository's last one is checked
// in full; one with the same paths still needs content or a digest for
// each file, and a new language for a path is used.
func TestBuildChecksListAfterMemo(t *testing.T) {
	ctx := context.Background()
	b, err := NewBuilder(DefaultConfig(), byteTok{}, nil) // as coldBuild's
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a := File{Path: "a.py", Content: "import b\n\nx = b.y\n", HasContent: true}
	bf := File{Path: "b.py", Content: "y = 1\n", HasContent: true}
	cur := Cursor{Path: "a.py", Line: 2}
	if _, err := b.Build(ctx, Request{RepoName: "r", Files: []File{a, bf}, Cursor: cur}); err != nil {
		t.Fatal(err)
	}
	bare := File{Path: "b.py"}
	for name, tc := range map[string]struct {
		files  []File
		reason string
	}{
		"neither content nor digest": {[]File{a, bare}, "neither content nor digest"},
		"duplicate path":             {[]File{a, a}, "duplicate path"},
		"line break in a path":       {[]File{a, {Path: "b\n.py", Content: "", HasContent: true}}, "line break"},
		"empty path":                 {[]File{a, {Content: "", HasContent: true}}, "empty"},
	} {
		_, err := b.Build(ctx, Request{RepoName: "r", Files: tc.files, Cursor: cur})
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tc.reason) {
			t.Errorf("%s: err = %v, want an ArgumentError saying %q", name, err, tc.reason)
		}
	}

	// The same paths with a language for b.py: analysed as Go, as a fresh
	// Builder does.
	asGo := File{Path: "b.py", Language: "go", Content: "package b\n\nfunc Y() int { return 1 }\n", HasContent: true}
	req := Request{RepoName: "r", Files: []File{a, asGo}, Cursor: cur}
	got, err := b.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := coldBuild(t, byteTok{}, req)
	if got.Text != want.Text || got.Snapshot != want.Snapshot {
		t.Fatalf("after a language change the prompt or snapshot differs from a fresh Builder's:\n%q\n%q", got.Text, want.Text)
	}
}

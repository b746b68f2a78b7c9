package contextpack

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A request on a base snapshot builds exactly the prompt of the request
// that sends the whole list.
func TestSnapshotBaseMatchesWholeList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := pyRepo(8, "snap")
	b := newTestBuilder(t, 4096)
	defer b.Close()
	req := Request{RepoName: "r", Files: fs, TokenBudget: 2048, MaxNewTokens: 32, Cursor: Cursor{Path: "p/m3.py", Line: 3}}
	first, err := b.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Snapshot, "snap:") || len(first.Snapshot) != 5+64 {
		t.Fatalf("Snapshot %q", first.Snapshot)
	}
	again, err := b.Build(ctx, Request{RepoName: "r", Files: asDigests(fs, -1), TokenBudget: 2048, MaxNewTokens: 32, Cursor: req.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	if again.Snapshot != first.Snapshot {
		t.Fatalf("the same list as digests got snapshot %s, want %s", again.Snapshot, first.Snapshot)
	}

	// An edit of the cursor file, a new file and a removed one, sent as a
	// delta on the first list and as a whole list to a new Builder.
	edited := File{Path: "p/m3.py", Content: fs[3].Content + "\ndef extra(z):\n    return helper_4(z)\n", HasContent: true}
	added := File{Path: "p/new.py", Content: "def brand_new(q):\n    return q\n", HasContent: true}
	delta := Request{RepoName: "r", Base: first.Snapshot, Files: []File{edited, added}, Removed: []string{"p/m7.py"},
		TokenBudget: 2048, MaxNewTokens: 32, Cursor: Cursor{Path: "p/m3.py", Line: 3}}
	got, err := b.Build(ctx, delta)
	if err != nil {
		t.Fatal(err)
	}
	var whole []File
	for _, f := range fs {
		switch f.Path {
		case "p/m3.py":
			whole = append(whole, edited)
		case "p/m7.py":
		default:
			whole = append(whole, f)
		}
	}
	whole = append(whole, added)
	fresh := newTestBuilder(t, 4096)
	defer fresh.Close()
	want, err := fresh.Build(ctx, Request{RepoName: "r", Files: whole, TokenBudget: 2048, MaxNewTokens: 32, Cursor: delta.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text || got.Tokens != want.Tokens || got.Snapshot != want.Snapshot {
		t.Fatalf("delta on a base differs from the whole list:\n%s\n---\n%s", got.Text, want.Text)
	}

	// The delta's own snapshot is a base too: a cursor move sends no file.
	move, err := b.Build(ctx, Request{RepoName: "r", Base: got.Snapshot, TokenBudget: 2048, MaxNewTokens: 32,
		Cursor: Cursor{Path: "p/m3.py", Line: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if move.Snapshot != got.Snapshot {
		t.Fatalf("a request without changes got a new snapshot")
	}
}

func TestSnapshotErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := pyRepo(4, "err")
	b := newTestBuilder(t, 4096)
	defer b.Close()
	cur := Cursor{Path: "p/m1.py"}
	base, err := b.Build(ctx, Request{RepoName: "r", Files: fs, Cursor: cur})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		req   Request
		field string // "" : an *UnknownSnapshotError
	}{
		"unknown base":        {Request{Base: "snap:" + strings.Repeat("0", 64), Cursor: cur}, ""},
		"removed, no base":    {Request{Files: fs, Removed: []string{"p/m2.py"}, Cursor: cur}, "repository.removed"},
		"removed, not held":   {Request{Base: base.Snapshot, Removed: []string{"p/zz.py"}, Cursor: cur}, "repository.removed[0]"},
		"sent and removed":    {Request{Base: base.Snapshot, Files: fs[2:3], Removed: []string{fs[2].Path}, Cursor: cur}, "repository.removed[0]"},
		"duplicate in delta":  {Request{Base: base.Snapshot, Files: []File{fs[2], fs[2]}, Cursor: cur}, "repository.files[1].path"},
		"delta without text":  {Request{Base: base.Snapshot, Files: []File{{Path: "p/m2.py"}}, Cursor: cur}, "repository.files[0]"},
		"cursor file removed": {Request{Base: base.Snapshot, Removed: []string{"p/m1.py"}, Cursor: cur}, "cursor.path"},
	} {
		tc.req.RepoName = "r"
		_, err := b.Build(ctx, tc.req)
		var ae *ArgumentError
		switch {
		case tc.field == "":
			var ue *UnknownSnapshotError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownSnapshot) || ue.ID != tc.req.Base {
				t.Errorf("%s: %v, want an UnknownSnapshotError", name, err)
			}
		case !errors.As(err, &ae) || ae.Field != tc.field:
			t.Errorf("%s: %v, want an ArgumentError on %s", name, err, tc.field)
		}
	}
}

// A list made from a base and a delta is bounded like a list sent whole:
// chaining bases cannot grow it past MaxFiles.
func TestSnapshotChainBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.ContextTokens, cfg.MaxFiles = 4096, 4
	b, err := NewBuilder(cfg, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cur := Cursor{Path: "p/m0.py"}
	base, err := b.Build(ctx, Request{RepoName: "r", Files: pyRepo(4, "a"), Cursor: cur})
	if err != nil {
		t.Fatal(err)
	}
	more := pyRepo(5, "b")[4:]
	_, err = b.Build(ctx, Request{RepoName: "r", Base: base.Snapshot, Files: more, Cursor: cur})
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Field != "repository.files" || !strings.Contains(ae.Reason, "5 files") {
		t.Fatalf("a fifth file on a base of four: %v", err)
	}
	// Removing one first keeps the list at the limit.
	if _, err := b.Build(ctx, Request{RepoName: "r", Base: base.Snapshot, Files: more, Removed: []string{"p/m3.py"}, Cursor: cur}); err != nil {
		t.Fatalf("four files after a removal: %v", err)
	}
}

// Snapshots are bounded (least recently used first out) and can be off.
func TestSnapshotsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.ContextTokens = 4096
	cfg.Snapshots = 2
	b, err := NewBuilder(cfg, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ids []string
	for _, tag := range []string{"a", "b", "c"} {
		p, err := b.Build(ctx, Request{RepoName: "r", Files: pyRepo(3, tag), Cursor: Cursor{Path: "p/m0.py"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Snapshot)
	}
	for i, id := range ids {
		_, err := b.Build(ctx, Request{RepoName: "r", Base: id, Cursor: Cursor{Path: "p/m0.py"}})
		if evicted := errors.Is(err, ErrUnknownSnapshot); evicted != (i == 0) || !evicted && err != nil {
			t.Errorf("snapshot %d: %v", i, err)
		}
	}

	cfg.Snapshots = 0
	off, err := NewBuilder(cfg, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	p, err := off.Build(ctx, Request{RepoName: "r", Files: pyRepo(3, "d"), Cursor: Cursor{Path: "p/m0.py"}})
	if err != nil || p.Snapshot != "" {
		t.Fatalf("snapshots off: %v, Snapshot %q", err, p.Snapshot)
	}
}

// The files of all snapshots are bounded too; a list over the bound is
// not held, so it is never named as a base.
func TestSnapshotFilesBounded(t *testing.T) {
	t.Parallel()
	s := newSnapshots(8)
	s.maxFiles = 5
	list := func(n int, tag string) ([]File, []string) {
		var fs []File
		var ds []string
		for i := 0; i < n; i++ {
			fs = append(fs, File{Path: tag + strings.Repeat("x", i)})
			ds = append(ds, Digest(tag))
		}
		return fs, ds
	}
	fs, ds := list(6, "big")
	if s.put("snap:big", fs, ds) || s.get("snap:big") != nil {
		t.Fatal("a list over the bound was held")
	}
	for _, tag := range []string{"a", "b"} {
		fs, ds := list(3, tag)
		if !s.put("snap:"+tag, fs, ds) {
			t.Fatalf("list %s not held", tag)
		}
	}
	if s.get("snap:a") != nil || s.get("snap:b") == nil || s.files != 3 {
		t.Fatalf("with 6 files of 5 allowed, the older list must go: files %d", s.files)
	}
}

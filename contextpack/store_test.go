package contextpack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func pyRepo(n int, tag string) []File {
	var fs []File
	for i := 0; i < n; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "from .m%d import helper_%d\n\n", (i+1)%n, (i+1)%n)
		fmt.Fprintf(&sb, "def helper_%d(x):\n    \"\"\"%s\"\"\"\n    return x + %d\n\n", i, tag, i)
		fmt.Fprintf(&sb, "def use_%d(y):\n    return helper_%d(y) * 2\n", i, (i+1)%n)
		fs = append(fs, File{Path: fmt.Sprintf("p/m%d.py", i), Content: sb.String(), HasContent: true})
	}
	return fs
}

func asDigests(fs []File, keep int) []File {
	out := make([]File, len(fs))
	for i, f := range fs {
		if i == keep {
			out[i] = f
			continue
		}
		out[i] = File{Path: f.Path, Digest: Digest(f.Content)}
	}
	return out
}

func TestDigestOnlyRequestMatchesContent(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	fs := pyRepo(6, "a")
	req := Request{RepoName: "r", Files: fs, Cursor: Cursor{Path: fs[2].Path, Line: 6, Column: 4}, MaxNewTokens: 16}
	p1, err := b.Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Files = asDigests(fs, -1)
	p2, err := b.Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Text != p2.Text || p1.Tokens != p2.Tokens {
		t.Fatal("digest-only request built a different prompt")
	}
	// Content and a matching digest together are fine too.
	req.Files = append([]File(nil), fs...)
	req.Files[0].Digest = Digest(fs[0].Content)
	if _, err := b.Build(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestMissingDigestsListsEveryPath(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	fs := pyRepo(4, "a")
	req := Request{RepoName: "r", Files: asDigests(fs, 1), Cursor: Cursor{Path: fs[1].Path}}
	_, err := b.Build(context.Background(), req)
	var me *MissingContentError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want MissingContentError", err)
	}
	want := []string{fs[0].Path, fs[2].Path, fs[3].Path}
	if strings.Join(me.Paths, ",") != strings.Join(want, ",") {
		t.Fatalf("paths %v, want %v", me.Paths, want)
	}
	// The cursor file may itself be the one missing.
	b = newTestBuilder(t, 4096)
	req = Request{RepoName: "r", Files: asDigests(fs, -1), Cursor: Cursor{Path: fs[1].Path}}
	if _, err := b.Build(context.Background(), req); !errors.As(err, &me) || len(me.Paths) != 4 {
		t.Fatalf("err = %v, want all four paths", err)
	}
}

func TestBadFilesAreArgumentErrors(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	fs := pyRepo(2, "a")
	cases := map[string][]File{
		"digest mismatch": {{Path: fs[0].Path, Content: fs[0].Content, HasContent: true, Digest: Digest("other")}, fs[1]},
		"neither":         {fs[0], {Path: fs[1].Path}},
		"newline in path": {fs[0], {Path: "a\nb.py", Content: "x", HasContent: true}},
	}
	for name, files := range cases {
		_, err := b.Build(context.Background(), Request{Files: files, Cursor: Cursor{Path: fs[0].Path}})
		var ae *ArgumentError
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ae) {
			t.Errorf("%s: err = %v, want an ArgumentError", name, err)
		}
	}
}

// The cache stays under its cap; what was evicted is reported missing,
// never guessed.
func TestCacheBoundedAndEvictionIsReported(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.CacheBytes = 1 << 20
	cfg.MaxRepositories = 2
	b, err := NewBuilder(cfg, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("# filler text that takes room in the cache\n", 2000) // ~88 KB
	var first []File
	for r := 0; r < 8; r++ {
		var fs []File
		for i := 0; i < 6; i++ {
			fs = append(fs, File{Path: fmt.Sprintf("f%d.py", i), Content: fmt.Sprintf("# repo %d file %d\n%s", r, i, big), HasContent: true})
		}
		if r == 0 {
			first = fs
		}
		if _, err := b.Build(context.Background(), Request{RepoName: fmt.Sprint("repo", r), Files: fs,
			Cursor: Cursor{Path: "f0.py", Line: 1}}); err != nil {
			t.Fatal(err)
		}
		if st := b.Stats(); st.Bytes > st.CapBytes {
			t.Fatalf("after repo %d: %d bytes cached, cap %d", r, st.Bytes, st.CapBytes)
		}
	}
	if st := b.Stats(); st.Repositories > 2 {
		t.Fatalf("%d repository indexes kept, max 2", st.Repositories)
	}
	_, err = b.Build(context.Background(), Request{RepoName: "repo0", Files: asDigests(first, -1), Cursor: Cursor{Path: "f0.py"}})
	var me *MissingContentError
	if !errors.As(err, &me) || len(me.Paths) != len(first) {
		t.Fatalf("err = %v, want all of repo0 reported missing", err)
	}
}

func TestConcurrentBuilds(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 8192)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			fs := pyRepo(5, fmt.Sprint("g", g%3))
			for i := 0; i < 15; i++ {
				fs[i%5].Content += fmt.Sprintf("# edit %d\n", i)
				req := Request{RepoName: fmt.Sprint("r", g%2), Files: fs, MaxNewTokens: 16,
					Cursor: Cursor{Path: fs[i%5].Path, Line: 4}}
				if i%2 == 1 {
					req.Files = asDigests(fs, i%5)
				}
				if _, err := b.Build(context.Background(), req); err != nil {
					var me *MissingContentError
					if errors.As(err, &me) {
						continue // another goroutine's repository state; fine
					}
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A repeated request re-analyses only what changed.
func TestOnlyChangedFilesAreReanalysed(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	fs := pyRepo(10, "a")
	req := Request{RepoName: "r", Files: fs, Cursor: Cursor{Path: fs[0].Path, Line: 4}}
	if _, err := b.Build(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	n0 := b.Stats().Entries
	fs[3].Content += "# changed\n"
	req.Files = asDigests(fs, 3)
	if _, err := b.Build(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := b.Stats().Entries; n != n0+1 {
		t.Fatalf("entries %d → %d, want one more", n0, n)
	}
	r := b.store.Held("r")
	if r == nil || r.Index.View().NumFiles() != 10 || r.Index.File(fs[3].Path).Indexed().Text != fs[3].Content {
		t.Fatal("repository index not updated in place")
	}
}

func TestBuildAfterClose(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	b.Close()
	fs := pyRepo(2, "a")
	if _, err := b.Build(context.Background(), Request{Files: fs, Cursor: Cursor{Path: fs[0].Path}}); err == nil {
		t.Fatal("Build after Close succeeded")
	}
}

// Stats counts what requests found: digests held or not, a base held or
// not, a prompt from the memo or assembled.
func TestStatsCounts(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 4096)
	ctx := context.Background()
	fs := pyRepo(6, "a")
	req := Request{RepoName: "r", Files: fs, Cursor: Cursor{Path: fs[2].Path, Line: 6, Column: 4}, MaxNewTokens: 16}
	p, err := b.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{PromptsBuilt: 1}
	check := func(what string) {
		t.Helper()
		s := b.Stats()
		got := Stats{DigestHits: s.DigestHits, DigestMisses: s.DigestMisses, SnapshotHits: s.SnapshotHits,
			SnapshotMisses: s.SnapshotMisses, PromptMemoHits: s.PromptMemoHits, PromptsBuilt: s.PromptsBuilt}
		if got != want {
			t.Fatalf("%s: %+v, want %+v", what, got, want)
		}
	}
	check("content")
	// The same files as digests (one with content): five hits, the same
	// prompt from the memo.
	req.Files = asDigests(fs, 2)
	if _, err := b.Build(ctx, req); err != nil {
		t.Fatal(err)
	}
	want.DigestHits, want.PromptMemoHits = 5, 1
	check("digests")
	// Two digests not held: two misses, the rest hits.
	req.Files = asDigests(fs, 2)
	req.Files[0].Digest, req.Files[1].Digest = Digest("x"), Digest("y")
	var me *MissingContentError
	if _, err := b.Build(ctx, req); !errors.As(err, &me) {
		t.Fatalf("%v", err)
	}
	want.DigestHits, want.DigestMisses = 8, 2
	check("missing")
	// On the base the first build named: a hit; an unknown base: a miss.
	if p.Snapshot == "" {
		t.Skip("snapshots off")
	}
	if _, err := b.Build(ctx, Request{RepoName: "r", Base: p.Snapshot, Cursor: req.Cursor, MaxNewTokens: 16}); err != nil {
		t.Fatal(err)
	}
	want.SnapshotHits, want.PromptMemoHits = 1, 2
	check("base")
	unknown := "snap:" + strings.Repeat("0", 64)
	if _, err := b.Build(ctx, Request{RepoName: "r", Base: unknown, Cursor: req.Cursor, MaxNewTokens: 16}); !errors.Is(err, ErrUnknownSnapshot) {
		t.Fatalf("%v", err)
	}
	want.SnapshotMisses = 1
	check("unknown base")
}

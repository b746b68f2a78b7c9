package workspace

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/contextpack"
)

func openSet(t *testing.T, roots ...string) *Set {
	t.Helper()
	s, err := OpenSet(roots, testConfig(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestResolve(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "proj")
	other := filepath.Join(base, "other")
	nested := filepath.Join(root, "sub", "inner") // a workspace inside another
	writeFiles(t, root, map[string]string{"src/a.py": "a\n", "sub/inner/c.py": "c\n", "dir with space/é.py": "e\n"})
	writeFiles(t, other, map[string]string{"b.py": "b\n", "src/only_other.py": "o\n"})
	writeFiles(t, base, map[string]string{"secret/key.txt": "k\n"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "out"))) // a link out
	must(os.Symlink("src", filepath.Join(root, "alias")))                       // a link that stays inside
	must(os.Symlink(filepath.Join(base, "secret", "key.txt"), filepath.Join(root, "key.py")))
	must(os.Symlink("/nonexistent/x", filepath.Join(root, "dangling")))
	must(os.Symlink(root, filepath.Join(base, "link-to-proj"))) // the root named through a link
	s := openSet(t, root, other, nested)
	proj, oth, inner := s.Workspaces()[0], s.Workspaces()[1], s.Workspaces()[2]
	fileURI := (&url.URL{Scheme: "file", Path: filepath.Join(root, "dir with space", "é.py")}).String()

	for _, c := range []struct {
		path string
		ws   *Workspace
		rel  string
		err  error
	}{
		{filepath.Join(root, "src", "a.py"), proj, "src/a.py", nil},
		{filepath.Join(root, "src", "unsaved.py"), proj, "src/unsaved.py", nil}, // a new buffer
		{filepath.Join(root, "newdir", "x.py"), proj, "newdir/x.py", nil},
		{"file://" + filepath.Join(root, "src", "a.py"), proj, "src/a.py", nil},
		{"file://localhost" + filepath.Join(root, "src", "a.py"), proj, "src/a.py", nil},
		{fileURI, proj, "dir with space/é.py", nil},
		{"file://elsewhere/src/a.py", nil, "", nil},
		{filepath.Join(base, "link-to-proj", "src", "a.py"), proj, "src/a.py", nil},
		{filepath.Join(root, "alias", "a.py"), proj, "src/a.py", nil},
		{filepath.Join(other, "b.py"), oth, "b.py", nil},
		{filepath.Join(nested, "c.py"), inner, "c.py", nil}, // the longest root wins
		{"src/a.py", proj, "src/a.py", nil},
		{"src/only_other.py", oth, "src/only_other.py", nil},
		{"./src//a.py", proj, "src/a.py", nil},
		{"nowhere/new.py", nil, "", nil}, // relative, several workspaces, none holds it
		{"/usr/lib/python3/os.py", nil, "", nil},
		{filepath.Join(base, "secret", "key.txt"), nil, "", nil}, // outside every workspace
		{"", nil, "", nil},
		{root + "/../secret/key.txt", nil, "", ErrBadPath},
		{root + "/src/../src/a.py", nil, "", ErrBadPath}, // even when it stays inside
		{"../secret/key.txt", nil, "", ErrBadPath},
		{"file://" + root + "/../secret", nil, "", ErrBadPath},
		{"file://" + root + "/%2e%2e/secret", nil, "", ErrBadPath},
		{"file://%zz", nil, "", ErrBadPath},
		{root, nil, "", ErrBadPath},
		{"src/a\x00.py", nil, "", ErrBadPath},
		{".", nil, "", ErrBadPath},
		{filepath.Join(root, "out", "key.txt"), nil, "", ErrLinkOutside},
		{filepath.Join(root, "out", "new.txt"), nil, "", ErrLinkOutside},
		{filepath.Join(root, "key.py"), nil, "", ErrLinkOutside},
		{"out/key.txt", nil, "", ErrLinkOutside},
		{filepath.Join(root, "dangling"), nil, "", ErrLinkOutside},
		{filepath.Join(root, "dangling", "x.py"), nil, "", ErrLinkOutside},
	} {
		w, rel, err := s.Resolve(c.path)
		var pe *PathError
		switch {
		case c.err != nil && (!errors.Is(err, c.err) || !errors.As(err, &pe)):
			t.Errorf("Resolve(%q) error %v, want %v", c.path, err, c.err)
		case c.err == nil && err != nil:
			t.Errorf("Resolve(%q): %v", c.path, err)
		case w != c.ws || rel != c.rel:
			t.Errorf("Resolve(%q) = %v %q, want %v %q", c.path, name(w), rel, name(c.ws), c.rel)
		}
	}

	// One workspace: a relative path nothing holds yet is in it.
	one := openSet(t, other)
	if w, rel, err := one.Resolve("new/file.py"); w != one.Default() || rel != "new/file.py" || err != nil {
		t.Errorf("one workspace: %v %q %v", name(w), rel, err)
	}
	if s.Default() != proj || (&Set{}).Default() != nil {
		t.Error("Default is not the first workspace")
	}
	var none *Set // a typed nil in an interface must not panic
	for _, empty := range []*Set{{}, none} {
		if w, _, err := empty.Resolve(filepath.Join(root, "src", "a.py")); w != nil || err != nil || empty.Default() != nil || empty.Close() != nil {
			t.Error("an empty set resolved a path")
		}
	}
	// Two roots with one base name get two names.
	twin := filepath.Join(base, "twin", "proj")
	writeFiles(t, twin, map[string]string{"t.py": "t\n"})
	two := openSet(t, root, twin)
	if a, b := two.Workspaces()[0].Name(), two.Workspaces()[1].Name(); a != "proj" || b != "proj-2" {
		t.Errorf("names %q %q", a, b)
	}
}

func name(w *Workspace) string {
	if w == nil {
		return "<none>"
	}
	return w.Name()
}

func TestOpenSetClosesOnError(t *testing.T) {
	good := t.TempDir()
	if _, err := OpenSet([]string{good, filepath.Join(good, "missing")}, testConfig(), nil); err == nil {
		t.Fatal("a missing root was accepted")
	}
	// goleak (TestMain) checks that the first workspace's watcher stopped.
}

// recordingBuilder records the requests Warm makes.
type recordingBuilder struct{ reqs []contextpack.Request }

func (b *recordingBuilder) Build(_ context.Context, req contextpack.Request) (*contextpack.Prompt, error) {
	b.reqs = append(b.reqs, req)
	return &contextpack.Prompt{}, nil
}

func TestWarm(t *testing.T) {
	a, empty := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"x.py": "x = 1\n", "y/z.py": "z = 2\n"})
	s := openSet(t, a, empty)
	b := &recordingBuilder{}
	s.Warm(context.Background(), b, nil)
	if len(b.reqs) != 1 {
		t.Fatalf("%d builds, want 1 (the empty workspace needs none)", len(b.reqs))
	}
	r := b.reqs[0]
	if r.RepoName != s.Workspaces()[0].Name() || len(r.Files) != 2 || !r.Files[1].HasContent ||
		r.Files[1].Path != "y/z.py" || r.Files[1].Content != "z = 2\n" || r.Cursor.Path != "x.py" {
		t.Errorf("warm request %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.reqs = nil
	s.Warm(ctx, b, nil)
	if len(b.reqs) > 1 {
		t.Errorf("a cancelled Warm went on: %d builds", len(b.reqs))
	}
}

package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/internal/repofs/repofstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var writeFiles = repofstest.WriteFiles

// testConfig re-indexes quickly.
func testConfig() Config {
	c := DefaultConfig()
	c.Quiet, c.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	return c
}

func open(t *testing.T, root string, cfg Config) *Workspace {
	t.Helper()
	w, err := Open(root, "", cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

func paths(s *Snapshot) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

// eventually waits until cond holds of the current snapshot.
func eventually(t *testing.T, w *Workspace, what string, cond func(s *Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(w.Snapshot()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 10s; files %v", what, paths(w.Snapshot()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func has(rel, content string) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		f, ok := s.File(rel)
		return ok && f.Content == content && f.Digest == contextpack.Digest(content)
	}
}

func hasNot(rel string) func(*Snapshot) bool {
	return func(s *Snapshot) bool { _, ok := s.File(rel); return !ok }
}

func TestOpenReadsWithTheRules(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"a.py": "import b\n", "pkg/b.py": "def f(): pass\n", ".gitignore": "*.log\nout/\n",
		"x.log": "log\n", "out/gen.py": "x\n", "node_modules/m.js": "x\n", "bin.dat": "a\x00b",
	})
	w := open(t, root, testConfig())
	s := w.Snapshot()
	if got, want := paths(s), []string{".gitignore", "a.py", "pkg/b.py"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	if !has("pkg/b.py", "def f(): pass\n")(s) || s.Gen != 1 || s.Bytes != int64(len("import b\ndef f(): pass\n*.log\nout/\n")) {
		t.Errorf("snapshot %+v", s)
	}
	if w.Name() != filepath.Base(root) || w.Stats().Dirs != 2 {
		t.Errorf("name %q, %d dirs watched (want the root and pkg)", w.Name(), w.Stats().Dirs)
	}
}

func TestOpenCaps(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.py": "aaaa\n", "b.py": "bbbb\n", "c/d.py": "x\n"})
	for name, cfg := range map[string]func(*Config){
		"files": func(c *Config) { c.MaxFiles = 2 },
		"bytes": func(c *Config) { c.MaxTotalBytes = 8 },
		"dirs":  func(c *Config) { c.MaxDirs = 1 },
	} {
		c := testConfig()
		cfg(&c)
		if _, err := Open(root, "", c, nil); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", name, err)
		}
	}
	if _, err := Open(filepath.Join(root, "a.py"), "", testConfig(), nil); err == nil {
		t.Error("a file as the root was accepted")
	}
	if _, err := Open(root, "", Config{}, nil); err == nil {
		t.Error("a zero Config was accepted")
	}
}

// TestWatch changes the tree after Open in every way an editor, git or a
// shell does, and checks the snapshot follows.
func TestWatch(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.py": "a = 1\n", "old/x.py": "x = 1\n", "old/deep/y.py": "y = 1\n"})
	w := open(t, root, testConfig())

	// A file saved after start, then changed, then removed.
	writeFiles(t, root, map[string]string{"new.py": "def new(): pass\n"})
	eventually(t, w, "new file", has("new.py", "def new(): pass\n"))
	writeFiles(t, root, map[string]string{"new.py": "def newer(): pass\n"})
	eventually(t, w, "changed file", has("new.py", "def newer(): pass\n"))
	if err := os.Remove(filepath.Join(root, "new.py")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "removed file", hasNot("new.py"))

	// An editor's atomic save: write a temporary file, rename it over.
	tmp := filepath.Join(root, ".a.py.swp")
	if err := os.WriteFile(tmp, []byte("a = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "a.py")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "atomic save", func(s *Snapshot) bool { return has("a.py", "a = 2\n")(s) && hasNot(".a.py.swp")(s) })

	// A new directory tree, and a file saved in it later (it is watched).
	writeFiles(t, root, map[string]string{"fresh/sub/z.py": "z = 1\n"})
	eventually(t, w, "new directory", has("fresh/sub/z.py", "z = 1\n"))
	writeFiles(t, root, map[string]string{"fresh/sub/later.py": "l = 1\n"})
	eventually(t, w, "file in a new directory", has("fresh/sub/later.py", "l = 1\n"))

	// A directory renamed: its files move, and its watches follow.
	if err := os.Rename(filepath.Join(root, "old"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "renamed directory", func(s *Snapshot) bool {
		return hasNot("old/x.py")(s) && hasNot("old/deep/y.py")(s) && has("moved/deep/y.py", "y = 1\n")(s)
	})
	writeFiles(t, root, map[string]string{"moved/deep/w.py": "w = 1\n"})
	eventually(t, w, "file in a renamed directory", has("moved/deep/w.py", "w = 1\n"))
	if s := w.Snapshot(); slices.ContainsFunc(s.Files, func(f File) bool { return strings.HasPrefix(f.Path, "old/") }) {
		t.Errorf("files under the old name: %v", paths(s))
	}

	// A directory removed.
	if err := os.RemoveAll(filepath.Join(root, "fresh")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "removed directory", func(s *Snapshot) bool { return hasNot("fresh/sub/z.py")(s) && hasNot("fresh/sub/later.py")(s) })

	// Skipped and binary files stay out.
	writeFiles(t, root, map[string]string{"node_modules/m/i.js": "x\n", "blob.bin": "a\x00b", "marker.py": "m\n"})
	eventually(t, w, "marker", has("marker.py", "m\n"))
	if s := w.Snapshot(); !hasNot("node_modules/m/i.js")(s) || !hasNot("blob.bin")(s) {
		t.Errorf("left-out files indexed: %v", paths(s))
	}

	// A .gitignore saved: the whole tree is read again under it, and a
	// file it ignores stays out when it changes later.
	full := w.Stats().Full
	writeFiles(t, root, map[string]string{".gitignore": "moved/\n"})
	eventually(t, w, ".gitignore", func(s *Snapshot) bool { return hasNot("moved/deep/y.py")(s) && has(".gitignore", "moved/\n")(s) })
	if w.Stats().Full != full+1 {
		t.Errorf("full re-reads %d, want %d", w.Stats().Full, full+1)
	}
	writeFiles(t, root, map[string]string{"moved/deep/y.py": "y = 2\n", "marker.py": "m2\n"})
	eventually(t, w, "marker after .gitignore", has("marker.py", "m2\n"))
	if !hasNot("moved/deep/y.py")(w.Snapshot()) {
		t.Error("an ignored file came back when it changed")
	}
	if err := os.Remove(filepath.Join(root, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, ".gitignore removed", has("moved/deep/y.py", "y = 2\n"))
}

// TestBurstIsOneReindex saves many files at once (a git checkout, a
// formatter over the tree): one re-index sees them all.
func TestBurstIsOneReindex(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.py": "a\n"})
	cfg := testConfig()
	cfg.Quiet, cfg.MaxDelay = 300*time.Millisecond, 5*time.Second
	w := open(t, root, cfg)
	files := map[string]string{}
	for i := range 40 {
		files[filepath.Join("pkg", string(rune('a'+i%26))+strings.Repeat("x", i/26)+".py")] = "v = 1\n"
	}
	writeFiles(t, root, files)
	for p := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte("v = 2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, w, "burst", func(s *Snapshot) bool { return len(s.Files) == 41 && has("pkg/a.py", "v = 2\n")(s) })
	time.Sleep(2 * cfg.Quiet) // a second re-index would show by now
	if st := w.Stats(); st.Reindexes != 1 || w.Snapshot().Gen != 2 {
		t.Errorf("%d re-indexes, generation %d; want one re-index for the burst", st.Reindexes, w.Snapshot().Gen)
	}
}

// TestGrowthPastCaps leaves out files saved past a cap, and takes them in
// once there is room.
func TestGrowthPastCaps(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.py": "a\n"})
	cfg := testConfig()
	cfg.MaxFiles = 2
	w := open(t, root, cfg)
	writeFiles(t, root, map[string]string{"b.py": "b\n"})
	eventually(t, w, "second file", has("b.py", "b\n"))
	writeFiles(t, root, map[string]string{"c.py": "c\n"})
	eventually(t, w, "left out", func(s *Snapshot) bool { return s.LeftOut == 1 })
	if s := w.Snapshot(); len(s.Files) != 2 {
		t.Errorf("files %v past MaxFiles 2", paths(s))
	}
	if err := os.Remove(filepath.Join(root, "a.py")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"c.py": "c2\n"})
	eventually(t, w, "room again", has("c.py", "c2\n"))
}

func TestCloseStopsWatching(t *testing.T) {
	root := t.TempDir()
	w, err := Open(root, "name", testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	writeFiles(t, root, map[string]string{"late.py": "x\n"})
	time.Sleep(50 * time.Millisecond)
	if !hasNot("late.py")(w.Snapshot()) || w.Name() != "name" {
		t.Error("a closed workspace changed")
	}
}

package infill

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/internal/repofs/repofstest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// writeTree creates files (path → content) under a new directory "repo".
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	repofstest.WriteFiles(t, root, files)
	return root
}

func paths(repo *infillv1.Repository) []string {
	var out []string
	for _, f := range repo.GetFiles() {
		out = append(out, f.GetPath())
	}
	return out
}

func TestLoadRepositorySkips(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"README.md":               "# r\n",
		"src/app.py":              "import util\n",
		"src/util.py":             "def f():\n    return 1\n",
		"src/empty.py":            "",
		".git/config":             "[core]\n",
		"node_modules/x/index.js": "module.exports = 1\n",
		"vendor/lib/lib.go":       "package lib\n",
		"src/__pycache__/a.pyc":   "\x00\x01",
		"data/blob.bin":           "abc\x00def",
		"data/latin1.txt":         "caf\xe9\n",
		"data/big.txt":            strings.Repeat("x", 2000),
	})
	if err := os.Symlink("app.py", filepath.Join(root, "src", "link.py")); err != nil {
		t.Fatal(err)
	}
	// Names the API cannot carry as paths are left out (a file anywhere
	// with such a name used to fail every request).
	for _, p := range []string{"bad\xffname.py", "new\nline.py", "odd\xfedir/x.py"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, report, err := LoadRepository(root, LoadOptions{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetName() != "repo" {
		t.Errorf("name %q", repo.GetName())
	}
	if got, want := paths(repo), []string{"README.md", "src/app.py", "src/empty.py", "src/util.py"}; !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
	if repo.GetFiles()[1].GetContent() != "import util\n" {
		t.Errorf("content %q", repo.GetFiles()[1].GetContent())
	}
	var skipped []string
	for _, s := range report.Skipped {
		skipped = append(skipped, s.Path+": "+s.Reason)
	}
	want := []string{
		".git/: skipped directory",
		"bad\ufffdname.py: path not UTF-8",
		"data/big.txt: over 1000 bytes",
		"data/blob.bin: binary",
		"data/latin1.txt: not UTF-8",
		"new\nline.py: line break in path",
		"node_modules/: skipped directory",
		"odd\ufffddir/: path not UTF-8",
		"src/__pycache__/: skipped directory",
		"src/link.py: symbolic link",
		"vendor/: skipped directory",
	}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
	if report.Files != 4 || report.Bytes != int64(len("# r\nimport util\ndef f():\n    return 1\n")) {
		t.Errorf("report %d files, %d bytes", report.Files, report.Bytes)
	}

	all, _, err := LoadRepository(root, LoadOptions{MaxFileBytes: 1000, SkipDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths(all), "vendor/lib/lib.go") || !slices.Contains(paths(all), ".git/config") {
		t.Errorf("an empty SkipDirs must skip nothing: %v", paths(all))
	}
}

// Include names paths inside the repository, cleanly: "../x" read a file
// outside it, and "./a.py" sent a.py twice under two names.
func TestLoadRepositoryIncludeStaysInside(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
	if err := os.WriteFile(filepath.Join(filepath.Dir(root), "outside.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, inc := range []string{"../outside.txt", "./a.py", "sub/../a.py", "/etc/hostname", "sub/", ""} {
		if _, _, err := LoadRepository(root, LoadOptions{Include: []string{inc}}); !errors.Is(err, ErrCursorFile) {
			t.Errorf("Include %q: %v, want ErrCursorFile", inc, err)
		}
	}
	repo, _, err := LoadRepository(root, LoadOptions{Include: []string{"sub/b.py"}})
	if err != nil || !slices.Equal(paths(repo), []string{"a.py", "sub/b.py"}) {
		t.Errorf("a clean Include: %v %v", paths(repo), err)
	}
}

func TestLoadRepositoryTotalCap(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": strings.Repeat("a", 600), "b.txt": strings.Repeat("b", 600)})
	_, _, err := LoadRepository(root, LoadOptions{MaxTotalBytes: 1000})
	if !errors.Is(err, ErrRepositoryTooLarge) {
		t.Errorf("err %v; want ErrRepositoryTooLarge", err)
	}
	_, _, err = LoadRepository(root, LoadOptions{MaxFiles: 1})
	if !errors.Is(err, ErrRepositoryTooLarge) {
		t.Errorf("err %v; want ErrRepositoryTooLarge for too many files", err)
	}
}

func TestRequestFromDir(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		".git/HEAD":         "ref: refs/heads/main\n",
		"pkg/mod.py":        "def f():\n    pass\n",
		"vendor/dep/dep.py": "X = 1\n",
		"bin/tool":          "\x7fELF\x00",
		"huge.py":           strings.Repeat("#\n", 600),
	})
	opts := LoadOptions{MaxFileBytes: 1000}
	req, report, err := RequestFromDir("", filepath.Join(root, "pkg", "mod.py"), Position{Line: 2, Column: 5},
		infillv1.PositionEncoding_POSITION_ENCODING_UTF32, opts)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetRepository().GetName() != "repo" || !slices.Equal(paths(req.GetRepository()), []string{"pkg/mod.py"}) {
		t.Errorf("repository %q %v (root should be found from .git)", req.GetRepository().GetName(), paths(req.GetRepository()))
	}
	c := req.GetCursor()
	if c.GetPath() != "pkg/mod.py" || c.GetLine() != 1 || c.GetColumn() != 4 ||
		c.GetEncoding() != infillv1.PositionEncoding_POSITION_ENCODING_UTF32 {
		t.Errorf("cursor %v; want pkg/mod.py 1:4 (0-based) UTF-32", c)
	}
	if report.Files != 1 {
		t.Errorf("report %+v", report)
	}

	// The cursor file is sent even inside a skipped directory.
	req, _, err = RequestFromDir(root, filepath.Join(root, "vendor", "dep", "dep.py"), Position{1, 1},
		infillv1.PositionEncoding_POSITION_ENCODING_UTF8, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(req.GetRepository()); !slices.Equal(got, []string{"pkg/mod.py", "vendor/dep/dep.py"}) {
		t.Errorf("files %v", got)
	}

	// ... and over MaxFileBytes, and through a link.
	if err := os.Symlink("mod.py", filepath.Join(root, "pkg", "link.py")); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"huge.py", "pkg/link.py"} {
		req, _, err = RequestFromDir(root, filepath.Join(root, file), Position{1, 1},
			infillv1.PositionEncoding_POSITION_ENCODING_UTF8, opts)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if got := paths(req.GetRepository()); !slices.Contains(got, file) || req.GetCursor().GetPath() != file {
			t.Errorf("%s: files %v, cursor %q", file, got, req.GetCursor().GetPath())
		}
	}

	// A root named through a link is walked, under the link's name, and
	// the cursor file may be named either way.
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(link, "huge.py"), filepath.Join(root, "huge.py")} {
		req, _, err = RequestFromDir(link, file, Position{1, 1}, infillv1.PositionEncoding_POSITION_ENCODING_UTF8, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(req.GetRepository()); req.GetRepository().GetName() != "linked" ||
			!slices.Equal(got, []string{"huge.py", "pkg/mod.py"}) {
			t.Errorf("through a linked root: %q %v", req.GetRepository().GetName(), got)
		}
	}

	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"binary":     filepath.Join(root, "bin", "tool"),
		"outside":    filepath.Join(t.TempDir(), "other.py"),
		"missing":    filepath.Join(root, "nope.py"),
		"directory":  filepath.Join(root, "dir"),
		"line break": filepath.Join(root, "new\nline.py"),
	} {
		if name == "line break" {
			if err := os.WriteFile(file, []byte("x = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := RequestFromDir(root, file, Position{1, 1}, infillv1.PositionEncoding_POSITION_ENCODING_UTF8, opts)
		if !errors.Is(err, ErrCursorFile) {
			t.Errorf("%s: err %v; want ErrCursorFile", name, err)
		}
	}
}

func TestFindRootWithoutGit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	got, err := FindRoot(filepath.Join(dir, "a", "b.py"))
	if err != nil {
		t.Fatal(err)
	}
	// Some ancestor of TempDir may be a git checkout; only check the
	// fallback when none is.
	if _, err := os.Stat(filepath.Join(got, ".git")); err != nil && got != filepath.Join(dir, "a") {
		t.Errorf("FindRoot = %q; want the file's directory", got)
	}
}

func TestParsePosition(t *testing.T) {
	t.Parallel()
	good := map[string]Position{"1:1": {1, 1}, "12:5": {12, 5}, "7": {7, 1}, "3:40": {3, 40}}
	for s, want := range good {
		got, err := ParsePosition(s)
		if err != nil || got != want {
			t.Errorf("ParsePosition(%q) = %v, %v; want %v", s, got, err, want)
		}
		if want.Column != 1 || strings.Contains(s, ":") {
			if got.String() != s {
				t.Errorf("String() = %q; want %q", got.String(), s)
			}
		}
	}
	for _, s := range []string{"", "0:1", "1:0", "-1:2", "a:b", "1:2:3", "1:", ":1", "99999999999:1"} {
		if _, err := ParsePosition(s); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParsePosition(%q) err %v; want ErrBadPosition", s, err)
		}
	}
	c := Position{Line: 3, Column: 7}.Cursor("a.go", infillv1.PositionEncoding_POSITION_ENCODING_UTF16)
	if c.GetLine() != 2 || c.GetColumn() != 6 || c.GetPath() != "a.go" {
		t.Errorf("Cursor = %v", c)
	}
}

func TestStreamRequestCopiesEveryField(t *testing.T) {
	t.Parallel()
	temp := float32(0.2)
	r := &infillv1.CompleteRequest{
		Repository:    &infillv1.Repository{Name: "r", Files: []*infillv1.File{{Path: "a", Digest: "sha256:00"}}},
		Cursor:        &infillv1.Cursor{Path: "a", Line: 1, Column: 2, Offset: 3, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF8},
		Generation:    &infillv1.GenerationOptions{MaxTokens: 5, Temperature: &temp, Stop: []string{"\n\n"}, Candidates: 2},
		TokenBudget:   100,
		Model:         "m",
		ClientId:      "c",
		SessionId:     "s",
		LatencyBudget: durationpb.New(1e9),
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_FULL,
		RequestClass:  infillv1.RequestClass_REQUEST_CLASS_EVALUATION,
	}
	s := StreamRequest(r)
	a, err1 := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	b, err2 := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err1 != nil || err2 != nil || string(a) != string(b) {
		t.Errorf("StreamRequest lost fields:\n%v\n%v", r, s)
	}
	// Every CompleteRequest field is set above, so a field added later
	// without a twin shows up here.
	if n := r.ProtoReflect().Descriptor().Fields().Len(); n != 10 {
		t.Errorf("CompleteRequest has %d fields; update this test", n)
	}
}

// LoadFile agrees with LoadRepository on every file of a tree: the same
// content for a file it sends, the same reason for one it leaves out (the
// reason of the directory that holds it, for a file in a skipped one).
func TestLoadFileAgreesWithLoadRepository(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"README.md":               "# r\n",
		"src/app.py":              "import util\n",
		"src/empty.py":            "",
		".git/config":             "[core]\n",
		"node_modules/x/index.js": "module.exports = 1\n",
		"src/__pycache__/a.pyc":   "\x00\x01",
		"data/blob.bin":           "abc\x00def",
		"data/latin1.txt":         "caf\xe9\n",
		"data/big.txt":            strings.Repeat("x", 2000),
		"real/inner.py":           "z = 3\n",
	})
	if err := os.Symlink("app.py", filepath.Join(root, "src", "link.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "new\nline.py"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{MaxFileBytes: 1000}
	repo, report, err := LoadRepository(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]string{}
	for _, f := range repo.GetFiles() {
		sent[f.GetPath()] = f.GetContent()
	}
	reasons := map[string]string{}
	for _, s := range report.Skipped {
		reasons[s.Path] = s.Reason
	}
	// Every file on disk, and the reason LoadRepository gave for it or for
	// the directory it did not enter.
	for _, rel := range []string{"README.md", "src/app.py", "src/empty.py", ".git/config", "node_modules/x/index.js",
		"src/__pycache__/a.pyc", "data/blob.bin", "data/latin1.txt", "data/big.txt", "real/inner.py",
		"src/link.py", "linkdir/inner.py", "new\nline.py"} {
		content, skipped, err := LoadFile(root, rel, opts)
		if err != nil {
			t.Errorf("%q: %v", rel, err)
			continue
		}
		want, ok := sent[rel]
		if ok {
			if skipped != "" || content != want {
				t.Errorf("%q: content %q, skipped %q; want %q", rel, content, skipped, want)
			}
			continue
		}
		wantReason := reasons[rel]
		for p := rel; wantReason == "" && strings.Contains(p, "/"); {
			p = p[:strings.LastIndex(p, "/")]
			if r, ok := reasons[p+"/"]; ok {
				wantReason = r
			} else if r, ok := reasons[p]; ok {
				wantReason = r
			}
		}
		if wantReason == "" || skipped != wantReason || content != "" {
			t.Errorf("%q: skipped %q, content %q; LoadRepository's reason %q", rel, skipped, content, wantReason)
		}
	}
	if _, _, err := LoadFile(root, "src/gone.py", opts); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := LoadFile(root, "README.md/x", opts); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file as a directory: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"../outside.txt", "./README.md", "/etc/hostname", ""} {
		if _, _, err := LoadFile(root, bad, opts); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: %v, want an error for a path outside the repository", bad, err)
		}
	}
}

// LoadRepository leaves out what .gitignore files exclude (the rules are
// package repofs's, tested there against git itself); Include still reads
// an ignored cursor file.
func TestLoadRepositoryGitignore(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		".gitignore":   "*.log\nbuild/\n",
		"a.py":         "x = 1\n",
		"debug.log":    "log\n",
		"build/gen.py": "y = 2\n",
	})
	repo, report, err := LoadRepository(root, LoadOptions{Include: []string{"build/gen.py"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(repo), []string{".gitignore", "a.py", "build/gen.py"}; !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
	var skipped []string
	for _, s := range report.Skipped {
		skipped = append(skipped, s.Path+": "+s.Reason)
	}
	if want := []string{"build/: ignored by .gitignore", "debug.log: ignored by .gitignore"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v; want %v", skipped, want)
	}
}

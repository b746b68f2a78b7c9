package repofs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/internal/repofs/repofstest"
)

// writeTree writes files under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	repofstest.WriteFiles(t, root, files)
	return root
}

// walk returns the kept paths and "path: reason" for each left out.
func walk(t *testing.T, tree *Tree, dir string) (kept, left []string) {
	t.Helper()
	err := tree.Walk(dir, func(e Entry) error {
		switch {
		case e.Dir && e.Reason == "":
		case e.Reason == "":
			kept = append(kept, e.Path)
		case e.Dir:
			left = append(left, e.Path+"/: "+e.Reason)
		default:
			left = append(left, e.Path+": "+e.Reason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept, left
}

// ignoreTree is a tree whose .gitignore files use the pattern forms git
// documents: names at any depth, anchored paths, directory-only patterns,
// negation, "**" in each position, nested files overriding their parents,
// escaped characters, comments and CRLF lines.
var ignoreTree = map[string]string{
	".gitignore": "# comment\r\n*.log\r\n!keep.log\n/build/\ntmp\ndocs/**/draft.md\n**/gen/*.py\nlogs/**\n" +
		"\\#hash.txt\n*.bak   \n\n",
	"a.py":                  "x\n",
	"a.log":                 "x\n",
	"keep.log":              "x\n",
	"#hash.txt":             "x\n",
	"b.bak":                 "x\n",
	"build/out.py":          "x\n",
	"src/build/kept.py":     "x\n", // /build/ is anchored to the root
	"src/tmp":               "x\n", // "tmp" matches a file too
	"src/tmp2/x.py":         "x\n",
	"src/gen/a.py":          "x\n",
	"src/gen/a.txt":         "x\n",
	"deep/x/gen/b.py":       "x\n",
	"docs/draft.md":         "x\n",
	"docs/a/b/draft.md":     "x\n",
	"docs/final.md":         "x\n",
	"logs/today.txt":        "x\n",
	"pkg/.gitignore":        "*.py\n!main.py\nsub/\n",
	"pkg/main.py":           "x\n",
	"pkg/util.py":           "x\n",
	"pkg/keep.log":          "x\n",
	"pkg/sub/a.txt":         "x\n",
	"pkg/other/sub/b.txt":   "x\n",
	"pkg/inner/.gitignore":  "!util.py\n",
	"pkg/inner/util.py":     "x\n",
	"excluded/by/info.txt":  "x\n",
	"notexcluded/info.txt2": "x\n",
}

// TestGitignoreMatchesGit compares the files a walk keeps with those git
// itself lists as untracked and not ignored, on a tree of the pattern
// forms git documents.
func TestGitignoreMatchesGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true")
		}
		t.Skip("git not installed")
	}
	root := writeTree(t, ignoreTree)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte("excluded/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimRight(git("ls-files", "--others", "--exclude-standard", "-z"), "\x00"), "\x00")
	slices.Sort(want)

	tree, err := NewTree(root, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	kept, left := walk(t, tree, "")
	if !slices.Equal(kept, want) {
		t.Errorf("kept:\n%s\ngit lists:\n%s\nleft out:\n%s", strings.Join(kept, "\n"), strings.Join(want, "\n"), strings.Join(left, "\n"))
	}
	// Sanity: the tree exercises both sides.
	if len(kept) < 8 || len(left) < 8 {
		t.Errorf("kept %d, left out %d: the fixture lost its point", len(kept), len(left))
	}
	none, err := NewTree(root, Rules{NoGitignore: true})
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := walk(t, none, ""); len(all) != len(ignoreTree) {
		t.Errorf("NoGitignore kept %d of %d files", len(all), len(ignoreTree))
	}
}

// TestCheckAgreesWithWalk decides every file of a tree one at a time and
// compares with the walk: kept with the same content, or left out.
func TestCheckAgreesWithWalk(t *testing.T) {
	files := map[string]string{
		"bin.dat":              "a\x00b",
		"latin1.txt":           "caf\xe9",
		"big.txt":              strings.Repeat("x", 200),
		"node_modules/m/i.js":  "x\n",
		"src/__pycache__/a.py": "x\n",
	}
	for p, c := range ignoreTree {
		files[p] = c
	}
	root := writeTree(t, files)
	if err := os.Symlink("src", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.py", filepath.Join(root, "link.py")); err != nil {
		t.Fatal(err)
	}
	rules := Rules{MaxFileBytes: 100}
	tree, err := NewTree(root, rules)
	if err != nil {
		t.Fatal(err)
	}
	walked := map[string]Entry{}
	if err := tree.Walk("", func(e Entry) error {
		if !e.Dir {
			walked[e.Path] = e
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var all []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			all = append(all, filepath.ToSlash(rel))
		}
		return err
	})
	all = append(all, "linkdir/a.py")
	for _, rel := range all {
		fresh, _ := NewTree(root, rules) // no .gitignore read before
		got, err := fresh.Check(rel)
		if err != nil {
			t.Errorf("Check(%q): %v", rel, err)
			continue
		}
		w, ok := walked[rel]
		switch {
		case !ok && got.Reason == "":
			t.Errorf("Check(%q) keeps what the walk never reached", rel)
		case ok && (w.Reason != got.Reason || !bytes.Equal(w.Content, got.Content)):
			t.Errorf("Check(%q) = %q, walk %q", rel, got.Reason, w.Reason)
		}
	}
	if e, err := tree.Check("src"); err != nil || !e.Dir || e.Reason != "" {
		t.Errorf("Check(src) = %+v, %v; want a kept directory", e, err)
	}
	if e, err := tree.Check("build"); err != nil || !e.Dir || e.Reason != ReasonIgnored {
		t.Errorf("Check(build) = %+v, %v; want an ignored directory", e, err)
	}
	if _, err := tree.Check("nope/x.py"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check of a missing path: %v", err)
	}
	if _, err := tree.Check("a.py/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check below a file: %v", err)
	}
	for _, bad := range []string{"", "../x", "/etc/passwd", "a/../b", "./a.py"} {
		if _, err := tree.Check(bad); err == nil {
			t.Errorf("Check(%q) accepted", bad)
		}
	}
}

// TestWalkSubdirectory walks one directory with its ancestors' .gitignore
// files in force.
func TestWalkSubdirectory(t *testing.T) {
	root := writeTree(t, ignoreTree)
	tree, err := NewTree(root, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	kept, left := walk(t, tree, "pkg")
	if want := []string{"pkg/.gitignore", "pkg/inner/.gitignore", "pkg/inner/util.py", "pkg/keep.log", "pkg/main.py"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v (left out %v)", kept, want, left)
	}
}

// The manifests that module resolution reads (package.json, tsconfig and
// jsconfig, pnpm-workspace.yaml, go.mod, Cargo.toml) are sent with the
// sources; dependency trees and ignored build outputs are not.
func TestWalkKeepsManifests(t *testing.T) {
	root := writeTree(t, map[string]string{
		".gitignore":                       "dist/\n",
		"package.json":                     `{"name": "root", "workspaces": ["packages/*"]}`,
		"pnpm-workspace.yaml":              "packages:\n  - packages/*\n",
		"tsconfig.base.json":               "{ // comment\n \"compilerOptions\": {},\n}\n",
		"packages/app/package.json":        `{"name": "@x/app"}`,
		"packages/app/tsconfig.json":       `{"extends": "../../tsconfig.base.json"}`,
		"packages/app/jsconfig.json":       `{}`,
		"packages/app/src/main.ts":         "export {}\n",
		"packages/app/dist/main.js":        "export {}\n",
		"node_modules/@x/app/package.json": `{"name": "@x/app"}`,
		"tools/go.mod":                     "module example.com/tools\n",
		"crates/core/Cargo.toml":           "[package]\nname = \"core\"\n",
	})
	tree, err := NewTree(root, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	kept, left := walk(t, tree, "")
	want := []string{".gitignore", "crates/core/Cargo.toml", "package.json", "packages/app/jsconfig.json",
		"packages/app/package.json", "packages/app/src/main.ts", "packages/app/tsconfig.json",
		"pnpm-workspace.yaml", "tools/go.mod", "tsconfig.base.json"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v (left out %v)", kept, want, left)
	}
}

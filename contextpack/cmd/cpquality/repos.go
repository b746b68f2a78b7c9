package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack"
)

// repoSpec names a repository on this machine: a built-in one (found in
// the Go distribution, the module cache, Debian's Python, the shared
// data) or one named with -dir.
type repoSpec struct {
	name    string
	group   string // language group in the report (built-in repositories)
	root    string
	include []string // top-level directories under root; empty = all
	exts    []string
	skip    []string // path substrings to leave out
	// dir marks a -dir repository: its files are listed by dirFiles.
	dir bool
}

func modCache() string {
	if p := os.Getenv("GOMODCACHE"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(gp, "pkg", "mod")
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

func pythonLib() string {
	m, _ := filepath.Glob("/usr/lib/python3.*")
	sort.Strings(m)
	for i := len(m) - 1; i >= 0; i-- {
		if st, err := os.Stat(filepath.Join(m[i], "email")); err == nil && st.IsDir() {
			return m[i]
		}
	}
	return ""
}

func defaultRepos(shared string) []repoSpec {
	goroot := filepath.Join(runtime.GOROOT(), "src")
	mc := modCache()
	ol := filepath.Join(mc, "github.com", "ollama", "ollama@v0.24.0")
	fb := filepath.Join(mc, "github.com", "google", "flatbuffers@v24.3.25+incompatible")
	goSkip := []string{"/testdata/"}
	return []repoSpec{
		{name: "go/net (GOROOT)", group: "Go", root: goroot, include: []string{"net"}, exts: []string{".go"}, skip: goSkip},
		{name: "go/go (GOROOT)", group: "Go", root: goroot, include: []string{"go"}, exts: []string{".go"}, skip: goSkip},
		{name: "grpc-go v1.85.0", group: "Go", root: filepath.Join(mc, "google.golang.org", "grpc@v1.85.0"),
			exts: []string{".go", "go.mod"}, skip: goSkip},
		{name: "zap v1.28.0", group: "Go", root: filepath.Join(mc, "go.uber.org", "zap@v1.28.0"), exts: []string{".go", "go.mod"}, skip: goSkip},
		{name: "python3 stdlib", group: "Python", root: pythonLib(), exts: []string{".py"},
			include: []string{"email", "asyncio", "json", "http", "urllib", "importlib", "logging", "unittest", "xml",
				"concurrent", "multiprocessing", "sqlite3"}},
		{name: "_pytest (Debian)", group: "Python", root: "/usr/lib/python3/dist-packages", include: []string{"_pytest"}, exts: []string{".py"}},
		{name: "llama.cpp (ollama)", group: "C/C++", root: filepath.Join(ol, "llama", "llama.cpp"),
			exts: []string{".c", ".h", ".cpp", ".hpp"}},
		{name: "ollama app ui", group: "TypeScript", root: filepath.Join(ol, "app", "ui", "app", "src"), exts: []string{".ts", ".tsx"}},
		{name: "flatbuffers ts", group: "TypeScript", root: fb, include: []string{"ts", "tests"}, exts: []string{".ts"}},
		{name: "flatbuffers rust", group: "Rust", root: fb, include: []string{"rust", "tests"}, exts: []string{".rs"}},
		{name: "flatbuffers java", group: "Java", root: fb, include: []string{"java", "tests"}, exts: []string{".java"}},
		{name: "HumanEval infilling", group: "HumanEval", root: filepath.Join(shared, "data", "human-eval-infilling")},
	}
}

// loadFiles reads a repository's files as relative paths, at most
// maxFiles of them (in path order), each under 512 KiB.
func loadFiles(spec repoSpec, maxFiles int) ([]contextpack.File, error) {
	if spec.root == "" {
		return nil, fmt.Errorf("%s: not on this machine", spec.name)
	}
	if _, err := os.Stat(spec.root); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	var paths []string
	if spec.dir {
		var err error
		if paths, err = dirFiles(spec.root); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.name, err)
		}
	} else {
		paths = specFiles(spec)
	}
	var files []contextpack.File
	for _, rel := range paths {
		if len(files) >= maxFiles {
			break
		}
		b, err := os.ReadFile(filepath.Join(spec.root, filepath.FromSlash(rel)))
		if err != nil || len(b) > 512<<10 || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		files = append(files, contextpack.File{Path: rel, Content: string(b), HasContent: true})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no files", spec.name)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// specFiles lists a built-in repository's files: those with its
// extensions under its included directories, sorted.
func specFiles(spec repoSpec) []string {
	roots := []string{spec.root}
	if len(spec.include) > 0 {
		roots = roots[:0]
		for _, inc := range spec.include {
			roots = append(roots, filepath.Join(spec.root, inc))
		}
	}
	var out []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(spec.root, p)
			rel = filepath.ToSlash(rel)
			for _, s := range spec.skip {
				if strings.Contains("/"+rel+"/", s) {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
			}
			if d.IsDir() {
				if strings.HasPrefix(d.Name(), ".") || d.Name() == "__pycache__" || d.Name() == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			for _, e := range spec.exts {
				if strings.HasSuffix(p, e) {
					out = append(out, rel)
					break
				}
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// skipDirs are never entered in a -dir repository: version control,
// dependency trees and tool caches (the directories infill's own
// repository reader skips by default).
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true, "vendor": true,
	"__pycache__": true, ".venv": true, ".tox": true, ".mypy_cache": true, ".pytest_cache": true}

// projectFiles are the non-source files a -dir repository contributes
// besides its documentation: the manifests module resolution reads.
var projectFiles = map[string]bool{"go.mod": true, "package.json": true, "tsconfig.json": true,
	"jsconfig.json": true, "Cargo.toml": true, "pyproject.toml": true, "setup.cfg": true}

// keepDirFile says whether a -dir repository's path is read: source files
// of the languages the tool parses, project manifests, and Markdown or
// reStructuredText documentation.
func keepDirFile(rel string) bool {
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if skipDirs[part] {
			return false
		}
	}
	base := path.Base(rel)
	if projectFiles[base] || strings.HasPrefix(base, "tsconfig.") && strings.HasSuffix(base, ".json") {
		return true
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".rst":
		return true
	}
	return langOf(rel, false) != langNone
}

// dirFiles lists a -dir repository's files: what git tracks when the
// directory is a git work tree's top (so .gitignore'd build output stays
// out), else every file under it, minus skipDirs.
func dirFiles(root string) ([]string, error) {
	var all []string
	if st, err := os.Stat(filepath.Join(root, ".git")); err == nil && st != nil {
		out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
		if err != nil {
			return nil, fmt.Errorf("git ls-files: %w", err)
		}
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				all = append(all, p)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && skipDirs[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				all = append(all, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for _, p := range all {
		if keepDirFile(p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// dirRepos makes the specs of -dir values ("path" or "name=path"); names
// default to the directory's base name and are made unique.
func dirRepos(values []string) ([]repoSpec, error) {
	var out []repoSpec
	seen := map[string]int{}
	for _, v := range values {
		name, dir, ok := strings.Cut(v, "=")
		if !ok {
			name, dir = "", v
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("-dir %s: %w", v, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("-dir %s: not a directory", v)
		}
		if name == "" {
			name = filepath.Base(abs)
		}
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s#%d", name, seen[name])
		}
		out = append(out, repoSpec{name: name, root: abs, dir: true})
	}
	return out, nil
}

// gitCommit is the commit checked out at dir, or "".
func gitCommit(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return ""
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func problemID(taskID string) string {
	parts := strings.Split(taskID, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "HumanEval" {
			return parts[i] + "/" + parts[i+1]
		}
	}
	return taskID
}

func heFile(problem string) string {
	return "humaneval/task_" + strings.ReplaceAll(strings.TrimPrefix(problem, "HumanEval/"), "/", "_") + ".py"
}

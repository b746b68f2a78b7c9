package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/infill-dev/infill/contextpack"
)

// repoSpec names a repository that exists on this machine.
type repoSpec struct {
	name    string
	group   string // language group in the report
	root    string
	include []string // top-level directories under root; empty = all
	exts    []string
	skip    []string // path substrings to leave out
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

// loadFiles reads a repository's files as relative paths.
func loadFiles(spec repoSpec, maxFiles int) ([]contextpack.File, error) {
	if spec.root == "" {
		return nil, fmt.Errorf("%s: not on this machine", spec.name)
	}
	if _, err := os.Stat(spec.root); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	roots := []string{spec.root}
	if len(spec.include) > 0 {
		roots = roots[:0]
		for _, inc := range spec.include {
			roots = append(roots, filepath.Join(spec.root, inc))
		}
	}
	var files []contextpack.File
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || len(files) >= maxFiles {
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
			ok := false
			for _, e := range spec.exts {
				ok = ok || strings.HasSuffix(p, e)
			}
			if !ok {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) > 512<<10 {
				return nil
			}
			files = append(files, contextpack.File{Path: rel, Content: string(b), HasContent: true})
			return nil
		})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no files", spec.name)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
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

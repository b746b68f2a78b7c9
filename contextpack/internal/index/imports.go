package index

import (
	"path"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// ImportHit is a repository file the cursor file depends on.
type ImportHit struct {
	File     *File
	Explicit bool // named by an import statement (not merely the same package)
	Order    int  // first import statement that resolved to it
}

// maxImportFiles bounds the files one cursor file is taken to import.
const maxImportFiles = 96

// resolveImports maps the target's import statements to repository files,
// per language, in statement order, each file once. Files of the same
// package (Go, Java) or the matching header (C, C++) follow as implicit
// imports. Unresolvable imports (the standard library, third-party
// packages absent from the request) are skipped.
func (r *Index) resolveImports(t *File) []ImportHit {
	var hits []ImportHit
	seen := map[*File]bool{t: true}
	addFile := func(sl *File, explicit bool) {
		if sl == nil || seen[sl] || len(hits) >= maxImportFiles {
			return
		}
		seen[sl] = true
		hits = append(hits, ImportHit{File: sl, Explicit: explicit, Order: len(hits)})
	}
	a := t.Analysis
	for _, im := range a.Imports {
		for _, sl := range r.resolveOne(t, im) {
			addFile(sl, true)
		}
	}
	switch t.Lang {
	case syntax.LangGo:
		test := strings.HasSuffix(t.Base, "_test.go")
		for _, sl := range r.byDir[t.Dir] {
			if sl.Lang == syntax.LangGo && (test || !strings.HasSuffix(sl.Base, "_test.go")) {
				addFile(sl, false)
			}
		}
	case syntax.LangJava:
		for _, sl := range r.byDir[t.Dir] {
			if sl.Lang == syntax.LangJava {
				addFile(sl, false)
			}
		}
		// A test sees its package's main sources (Maven and Gradle
		// layouts), not the other way round.
		if main := javaMainDir(t.Dir); main != "" {
			for _, sl := range r.byDir[main] {
				if sl.Lang == syntax.LangJava {
					addFile(sl, false)
				}
			}
		}
	case syntax.LangC, syntax.LangCPP:
		stem := strings.TrimSuffix(t.Base, path.Ext(t.Base))
		for _, ext := range []string{".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp", ".cxx"} {
			addFile(r.files[path.Join(t.Dir, stem+ext)], false)
		}
	}
	// Same-package files arrive in map-independent slice order but that
	// order depends on request history; sort the implicit tail by path.
	for i := range hits {
		if !hits[i].Explicit {
			tail := hits[i:]
			slices.SortFunc(tail, func(x, y ImportHit) int { return strings.Compare(x.File.Path, y.File.Path) })
			for j := range tail {
				tail[j].Order = i + j
			}
			break
		}
	}
	return hits
}

func (r *Index) resolveOne(t *File, im syntax.Import) []*File {
	switch im.Kind {
	case syntax.ImportPython:
		return r.pyModule(t, im.Spec)
	case syntax.ImportPythonFrom:
		out := r.pyModule(t, im.Spec)
		for _, n := range im.Names {
			sep := "."
			if strings.HasSuffix(im.Spec, ".") {
				sep = ""
			}
			out = append(out, r.pyModule(t, im.Spec+sep+n)...)
		}
		return out
	case syntax.ImportGo:
		return r.goPackage(t, im.Spec)
	case syntax.ImportJS:
		f := r.jsModule(t, im.Spec)
		if f == nil {
			return nil
		}
		return append([]*File{f}, r.jsReexports(f, im.Names)...)
	case syntax.ImportJava:
		return r.javaImport(t, im.Spec)
	case syntax.ImportRustUse:
		return r.rustUse(t, im)
	case syntax.ImportRustMod:
		return one(r.rustFile(rustModDir(t), im.Spec))
	case syntax.ImportCQuote, syntax.ImportCSystem:
		if im.Kind == syntax.ImportCQuote {
			if sl := r.files[path.Join(t.Dir, im.Spec)]; sl != nil {
				return []*File{sl}
			}
		} else if systemHeader(im.Spec) {
			return nil // <string.h> is the C library's, not third_party/string.h
		}
		return one(r.suffixMatch(path.Clean(im.Spec), t.Dir))
	}
	return nil
}

func one(sl *File) []*File {
	if sl == nil {
		return nil
	}
	return []*File{sl}
}

// suffixMatch finds the file whose path is rel or ends with "/"+rel,
// preferring the one nearest to dir.
func (r *Index) suffixMatch(rel, dir string) *File { return r.suffixMatchIf(rel, dir, nil) }

// suffixMatchIf is suffixMatch among the files that keep accepts (all
// when it is nil).
func (r *Index) suffixMatchIf(rel, dir string, keep func(*File) bool) *File {
	var best *File
	bestScore := -1
	for _, sl := range r.byBase[path.Base(rel)] {
		if sl.Path != rel && !strings.HasSuffix(sl.Path, "/"+rel) || keep != nil && !keep(sl) {
			continue
		}
		s := commonPrefixDirs(sl.Dir, dir)
		if s > bestScore || s == bestScore && (len(sl.Path) < len(best.Path) ||
			len(sl.Path) == len(best.Path) && sl.Path < best.Path) {
			best, bestScore = sl, s
		}
	}
	return best
}

// dirSuffixMatch lists the directories equal to rel or ending in "/"+rel,
// nearest to dir first.
func (r *Index) dirSuffixMatch(rel, dir string) []string {
	var ds []string
	for d := range r.byDir {
		if d == rel || strings.HasSuffix(d, "/"+rel) {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(x, y string) int {
		cx, cy := commonPrefixDirs(x, dir), commonPrefixDirs(y, dir)
		if cx != cy {
			return cy - cx
		}
		if len(x) != len(y) {
			return len(x) - len(y)
		}
		return strings.Compare(x, y)
	})
	return ds
}

func commonPrefixDirs(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		var ah, bh string
		if ai < 0 {
			ah, a = a, ""
		} else {
			ah, a = a[:ai], a[ai+1:]
		}
		if bi < 0 {
			bh, b = b, ""
		} else {
			bh, b = b[:bi], b[bi+1:]
		}
		if ah != bh {
			break
		}
		n++
	}
	return n
}

func joinDir(dir, rel string) string {
	if dir == "" || dir == "." {
		return path.Clean(rel)
	}
	return path.Join(dir, rel)
}

// pyModule resolves a Python module name (absolute "a.b" or relative
// "..a.b") to its file: a/b.py or a/b/__init__.py.
func (r *Index) pyModule(t *File, mod string) []*File {
	if strings.HasPrefix(mod, ".") {
		level := len(mod) - len(strings.TrimLeft(mod, "."))
		base := t.Dir
		for i := 1; i < level; i++ {
			if base == "" || base == "." {
				return nil
			}
			base = path.Dir(base)
			if base == "." {
				base = ""
			}
		}
		rel := strings.ReplaceAll(mod[level:], ".", "/")
		if rel == "" {
			return one(r.files[joinDir(base, "__init__.py")])
		}
		if sl := r.files[joinDir(base, rel+".py")]; sl != nil {
			return []*File{sl}
		}
		return one(r.files[joinDir(base, rel+"/__init__.py")])
	}
	rel := strings.ReplaceAll(mod, ".", "/")
	top, _, _ := strings.Cut(rel, "/")
	// An absolute import names a module under a directory on sys.path:
	// the repository root, a src/-style directory, the importing file's
	// own directory (scripts, tests), or the parent of a regular
	// top-level package. Not any file with a matching name: "import
	// json" is not tools/json.py.
	onPath := func(sl *File, suffix string) bool {
		root := strings.TrimSuffix(strings.TrimSuffix(sl.Path, suffix), "/")
		switch {
		case root == "" || root == t.Dir || pyRootDirs[path.Base(root)]:
			return true
		case r.files[joinDir(root, top+"/__init__.py")] != nil:
			return r.files[joinDir(root, "__init__.py")] == nil
		}
		return false
	}
	if sl := r.suffixMatchIf(rel+".py", t.Dir, func(sl *File) bool { return onPath(sl, rel+".py") }); sl != nil {
		return []*File{sl}
	}
	return one(r.suffixMatchIf(rel+"/__init__.py", t.Dir, func(sl *File) bool { return onPath(sl, rel+"/__init__.py") }))
}

// pyRootDirs are directory names that hold a repository's importable
// Python code (src/ layout and its variants).
var pyRootDirs = map[string]bool{"src": true, "lib": true, "python": true, "py": true}

// goPackage resolves a Go import path to the non-test files of the package
// directory: through a go.mod module path or a replace directive with a
// local target when the request has one, else
// by the longest directory suffix (which also finds standard library
// packages when the repository is GOROOT/src).
func (r *Index) goPackage(t *File, imp string) []*File {
	dir, ok := "", false
	bestLen := -1
	try := func(modDir, mod string) {
		if imp != mod && !strings.HasPrefix(imp, mod+"/") || len(mod) < bestLen {
			return
		}
		d := joinDir(modDir, strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/"))
		if len(mod) > bestLen || d < dir { // ties by directory: map order must not decide
			dir, ok, bestLen = d, true, len(mod)
		}
	}
	for d, m := range r.goMods {
		try(d, m.path)
		for _, rp := range m.replaces {
			try(rp.dir, rp.module)
		}
	}
	if !ok {
		ds := r.dirSuffixMatch(imp, t.Dir)
		if len(ds) == 0 {
			return nil
		}
		dir = ds[0]
	}
	var out []*File
	for _, sl := range r.byDir[dir] {
		if sl.Lang == syntax.LangGo && !strings.HasSuffix(sl.Base, "_test.go") {
			out = append(out, sl)
		}
	}
	slices.SortFunc(out, func(x, y *File) int { return strings.Compare(x.Path, y.Path) })
	return out
}

var jsExts = []string{".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"}

// jsModule resolves a JavaScript/TypeScript module specifier: relative,
// or bare through the module map (jsmodules.go).
func (r *Index) jsModule(t *File, spec string) *File {
	if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") && spec != "." && spec != ".." {
		return r.jsBare(t, spec)
	}
	return r.jsPath(joinDir(t.Dir, spec))
}

// javaImport resolves a.b.C, a.b.* and static a.b.C.member.
func (r *Index) javaImport(t *File, spec string) []*File {
	rel := strings.ReplaceAll(spec, ".", "/")
	if strings.HasSuffix(rel, "/*") {
		ds := r.dirSuffixMatch(strings.TrimSuffix(rel, "/*"), t.Dir)
		if len(ds) == 0 {
			return nil
		}
		var out []*File
		for _, sl := range r.byDir[ds[0]] {
			if sl.Lang == syntax.LangJava {
				out = append(out, sl)
			}
		}
		slices.SortFunc(out, func(x, y *File) int { return strings.Compare(x.Path, y.Path) })
		return out
	}
	for rel != "" {
		if sl := r.suffixMatch(rel+".java", t.Dir); sl != nil {
			return []*File{sl}
		}
		i := strings.LastIndexByte(rel, '/')
		if i < 0 {
			break
		}
		rel = rel[:i]
	}
	return nil
}

// javaMainDir is the main source directory of the package of a test
// source directory (…/src/test/java/a/b → …/src/main/java/a/b), "" when
// dir is not one.
func javaMainDir(dir string) string {
	for _, set := range []string{"test", "androidTest"} {
		test := "src/" + set + "/java/"
		if i := strings.Index("/"+dir+"/", "/"+test); i >= 0 {
			return strings.TrimSuffix(dir[:i]+"src/main/java/"+dir[min(i+len(test), len(dir)):], "/")
		}
	}
	return ""
}

// rustModDir is the directory holding the submodules of t's module.
func rustModDir(t *File) string {
	switch t.Base {
	case "mod.rs", "lib.rs", "main.rs":
		return t.Dir
	}
	return joinDir(t.Dir, strings.TrimSuffix(t.Base, ".rs"))
}

func (r *Index) rustFile(dir, name string) *File {
	if sl := r.files[joinDir(dir, name+".rs")]; sl != nil {
		return sl
	}
	return r.files[joinDir(dir, name+"/mod.rs")]
}

// rustCrateRoot is the directory of the nearest lib.rs or main.rs above t.
func (r *Index) rustCrateRoot(t *File) string {
	for d := t.Dir; ; {
		if r.files[joinDir(d, "lib.rs")] != nil || r.files[joinDir(d, "main.rs")] != nil {
			return d
		}
		if d == "" || d == "." || d == "/" {
			return t.Dir
		}
		d = path.Dir(d)
		if d == "." {
			d = ""
		}
	}
}

// rustUse resolves crate::, self::, super:: and workspace crate paths to
// module files.
func (r *Index) rustUse(t *File, im syntax.Import) []*File {
	parts := strings.Split(im.Spec, "::")
	var base string
	var rootFile *File // the crate root, when the path starts at one
	switch {
	case len(parts) > 0 && parts[0] == "crate":
		base, parts = r.rustCrateRoot(t), parts[1:]
		rootFile = r.files[joinDir(base, "lib.rs")]
		if rootFile == nil {
			rootFile = r.files[joinDir(base, "main.rs")]
		}
	case len(parts) > 0 && (parts[0] == "self" || parts[0] == "super"):
		base = rustModDir(t)
		for len(parts) > 0 && (parts[0] == "self" || parts[0] == "super") {
			if parts[0] == "super" {
				base = path.Dir(base)
				if base == "." {
					base = ""
				}
			}
			parts = parts[1:]
		}
	default:
		base = rustModDir(t) // a module declared in this one, if any
		if len(parts) > 0 && r.rustFile(base, parts[0]) == nil {
			// Another crate of the workspace: its root module.
			if root := r.files[r.rustCrates()[parts[0]]]; root != nil {
				rootFile, base, parts = root, root.Dir, parts[1:]
			}
		}
	}
	paths := [][]string{parts}
	if len(im.Names) > 0 {
		paths = paths[:0]
		for _, n := range im.Names {
			paths = append(paths, append(slices.Clip(parts), strings.Split(n, "::")...))
		}
	}
	var out []*File
	for _, p := range paths {
		// The longest prefix of the path that is a module file, else
		// the crate root that defines the item.
		found := false
		for k := len(p); k > 0 && !found; k-- {
			if sl := r.rustFile(joinDir(base, strings.Join(p[:k-1], "/")), p[k-1]); sl != nil {
				out, found = append(out, sl), true
			}
		}
		if !found && rootFile != nil && rootFile != t {
			out = append(out, rootFile)
		}
	}
	return out
}

// cSystemHeaders are the C standard and common POSIX headers: an angle
// include of one of them names the system's, whatever files of the same
// name the repository holds.
var cSystemHeaders = map[string]bool{}

func init() {
	for _, h := range strings.Fields(`assert complex ctype errno fenv float inttypes iso646 limits locale
		math setjmp signal stdalign stdarg stdatomic stdbit stdbool stdckdint stddef stdint stdio stdlib
		stdnoreturn string tgmath threads time uchar wchar wctype
		aio dirent dlfcn fcntl fnmatch getopt glob grp iconv langinfo libgen malloc netdb poll pthread pwd
		regex sched search semaphore spawn strings syslog termios unistd utime wordexp alloca endian execinfo`) {
		cSystemHeaders[h+".h"] = true
	}
}

// systemHeader reports whether an angle include names a system header:
// a standard or POSIX one, or one under a system directory (sys/, arpa/,
// netinet/, linux/, ...).
func systemHeader(spec string) bool {
	if cSystemHeaders[spec] {
		return true
	}
	dir, _, ok := strings.Cut(spec, "/")
	if !ok {
		return false
	}
	switch dir {
	case "sys", "arpa", "net", "netinet", "linux", "asm", "bits", "mach", "machine":
		return true
	}
	return false
}

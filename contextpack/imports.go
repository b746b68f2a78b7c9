package contextpack

import (
	"path"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// importHit is a repository file the cursor file depends on.
type importHit struct {
	sl       *slot
	explicit bool     // named by an import statement (not merely the same package)
	order    int      // first import statement that resolved to it
	used     []uint64 // set by rankImports: definitions the cursor file names (syntax.Analysis.UsedDefs)
}

// maxImportFiles bounds the files one cursor file is taken to import.
const maxImportFiles = 96

// resolveImports maps the target's import statements to repository files,
// per language, in statement order, each file once. Files of the same
// package (Go, Java) or the matching header (C, C++) follow as implicit
// imports. Unresolvable imports (the standard library, third-party
// packages absent from the request) are skipped.
func (r *repoIndex) resolveImports(t *slot) []importHit {
	var hits []importHit
	seen := map[*slot]bool{t: true}
	addSlot := func(sl *slot, explicit bool) {
		if sl == nil || seen[sl] || len(hits) >= maxImportFiles {
			return
		}
		seen[sl] = true
		hits = append(hits, importHit{sl: sl, explicit: explicit, order: len(hits)})
	}
	a := t.an
	for _, im := range a.Imports {
		for _, sl := range r.resolveOne(t, im) {
			addSlot(sl, true)
		}
	}
	switch t.lang {
	case syntax.LangGo:
		test := strings.HasSuffix(t.base, "_test.go")
		for _, sl := range r.byDir[t.dir] {
			if sl.lang == syntax.LangGo && (test || !strings.HasSuffix(sl.base, "_test.go")) {
				addSlot(sl, false)
			}
		}
	case syntax.LangJava:
		for _, sl := range r.byDir[t.dir] {
			if sl.lang == syntax.LangJava {
				addSlot(sl, false)
			}
		}
	case syntax.LangC, syntax.LangCPP:
		stem := strings.TrimSuffix(t.base, path.Ext(t.base))
		for _, ext := range []string{".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp", ".cxx"} {
			addSlot(r.files[path.Join(t.dir, stem+ext)], false)
		}
	}
	// Same-package files arrive in map-independent slice order but that
	// order depends on request history; sort the implicit tail by path.
	for i := range hits {
		if !hits[i].explicit {
			tail := hits[i:]
			slices.SortFunc(tail, func(x, y importHit) int { return strings.Compare(x.sl.path, y.sl.path) })
			for j := range tail {
				tail[j].order = i + j
			}
			break
		}
	}
	return hits
}

func (r *repoIndex) resolveOne(t *slot, im syntax.Import) []*slot {
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
		return one(r.jsModule(t, im.Spec))
	case syntax.ImportJava:
		return r.javaImport(t, im.Spec)
	case syntax.ImportRustUse:
		return r.rustUse(t, im)
	case syntax.ImportRustMod:
		return one(r.rustFile(rustModDir(t), im.Spec))
	case syntax.ImportCQuote, syntax.ImportCSystem:
		if im.Kind == syntax.ImportCQuote {
			if sl := r.files[path.Join(t.dir, im.Spec)]; sl != nil {
				return []*slot{sl}
			}
		}
		return one(r.suffixMatch(path.Clean(im.Spec), t.dir))
	}
	return nil
}

func one(sl *slot) []*slot {
	if sl == nil {
		return nil
	}
	return []*slot{sl}
}

// suffixMatch finds the file whose path is rel or ends with "/"+rel,
// preferring the one nearest to dir.
func (r *repoIndex) suffixMatch(rel, dir string) *slot {
	var best *slot
	bestScore := -1
	for _, sl := range r.byBase[path.Base(rel)] {
		if sl.path != rel && !strings.HasSuffix(sl.path, "/"+rel) {
			continue
		}
		s := commonPrefixDirs(sl.dir, dir)
		if s > bestScore || s == bestScore && (len(sl.path) < len(best.path) ||
			len(sl.path) == len(best.path) && sl.path < best.path) {
			best, bestScore = sl, s
		}
	}
	return best
}

// dirSuffixMatch lists the directories equal to rel or ending in "/"+rel,
// nearest to dir first.
func (r *repoIndex) dirSuffixMatch(rel, dir string) []string {
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
func (r *repoIndex) pyModule(t *slot, mod string) []*slot {
	if strings.HasPrefix(mod, ".") {
		level := len(mod) - len(strings.TrimLeft(mod, "."))
		base := t.dir
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
			return []*slot{sl}
		}
		return one(r.files[joinDir(base, rel+"/__init__.py")])
	}
	rel := strings.ReplaceAll(mod, ".", "/")
	if sl := r.suffixMatch(rel+".py", t.dir); sl != nil {
		return []*slot{sl}
	}
	return one(r.suffixMatch(rel+"/__init__.py", t.dir))
}

// goPackage resolves a Go import path to the non-test files of the package
// directory: through a go.mod module path when the request has one, else
// by the longest directory suffix (which also finds standard library
// packages when the repository is GOROOT/src).
func (r *repoIndex) goPackage(t *slot, imp string) []*slot {
	dir, ok := "", false
	bestLen := -1
	for d, m := range r.goMods {
		if (imp == m || strings.HasPrefix(imp, m+"/")) && len(m) > bestLen {
			dir, ok, bestLen = joinDir(d, strings.TrimPrefix(strings.TrimPrefix(imp, m), "/")), true, len(m)
		}
	}
	if !ok {
		ds := r.dirSuffixMatch(imp, t.dir)
		if len(ds) == 0 {
			return nil
		}
		dir = ds[0]
	}
	var out []*slot
	for _, sl := range r.byDir[dir] {
		if sl.lang == syntax.LangGo && !strings.HasSuffix(sl.base, "_test.go") {
			out = append(out, sl)
		}
	}
	slices.SortFunc(out, func(x, y *slot) int { return strings.Compare(x.path, y.path) })
	return out
}

var jsExts = []string{".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"}

// jsModule resolves a relative JavaScript/TypeScript module specifier.
func (r *repoIndex) jsModule(t *slot, spec string) *slot {
	if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") && spec != "." && spec != ".." {
		return nil // a package; not in the repository
	}
	p := joinDir(t.dir, spec)
	if sl := r.files[p]; sl != nil {
		return sl
	}
	stem := p
	if ext := path.Ext(p); ext == ".js" || ext == ".jsx" || ext == ".mjs" || ext == ".cjs" {
		stem = strings.TrimSuffix(p, ext) // TypeScript imports "./x.js" for x.ts
	}
	for _, ext := range jsExts {
		if sl := r.files[stem+ext]; sl != nil {
			return sl
		}
	}
	for _, ext := range jsExts {
		if sl := r.files[p+"/index"+ext]; sl != nil {
			return sl
		}
	}
	return nil
}

// javaImport resolves a.b.C, a.b.* and static a.b.C.member.
func (r *repoIndex) javaImport(t *slot, spec string) []*slot {
	rel := strings.ReplaceAll(spec, ".", "/")
	if strings.HasSuffix(rel, "/*") {
		ds := r.dirSuffixMatch(strings.TrimSuffix(rel, "/*"), t.dir)
		if len(ds) == 0 {
			return nil
		}
		var out []*slot
		for _, sl := range r.byDir[ds[0]] {
			if sl.lang == syntax.LangJava {
				out = append(out, sl)
			}
		}
		slices.SortFunc(out, func(x, y *slot) int { return strings.Compare(x.path, y.path) })
		return out
	}
	for rel != "" {
		if sl := r.suffixMatch(rel+".java", t.dir); sl != nil {
			return []*slot{sl}
		}
		i := strings.LastIndexByte(rel, '/')
		if i < 0 {
			break
		}
		rel = rel[:i]
	}
	return nil
}

// rustModDir is the directory holding the submodules of t's module.
func rustModDir(t *slot) string {
	switch t.base {
	case "mod.rs", "lib.rs", "main.rs":
		return t.dir
	}
	return joinDir(t.dir, strings.TrimSuffix(t.base, ".rs"))
}

func (r *repoIndex) rustFile(dir, name string) *slot {
	if sl := r.files[joinDir(dir, name+".rs")]; sl != nil {
		return sl
	}
	return r.files[joinDir(dir, name+"/mod.rs")]
}

// rustCrateRoot is the directory of the nearest lib.rs or main.rs above t.
func (r *repoIndex) rustCrateRoot(t *slot) string {
	for d := t.dir; ; {
		if r.files[joinDir(d, "lib.rs")] != nil || r.files[joinDir(d, "main.rs")] != nil {
			return d
		}
		if d == "" || d == "." || d == "/" {
			return t.dir
		}
		d = path.Dir(d)
		if d == "." {
			d = ""
		}
	}
}

// rustUse resolves crate::, self:: and super:: paths to module files.
func (r *repoIndex) rustUse(t *slot, im syntax.Import) []*slot {
	parts := strings.Split(im.Spec, "::")
	var base string
	switch {
	case len(parts) > 0 && parts[0] == "crate":
		base, parts = r.rustCrateRoot(t), parts[1:]
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
	}
	paths := [][]string{parts}
	if len(im.Names) > 0 {
		paths = paths[:0]
		for _, n := range im.Names {
			paths = append(paths, append(slices.Clip(parts), strings.Split(n, "::")...))
		}
	}
	var out []*slot
	for _, p := range paths {
		// The longest prefix of the path that is a module file.
		for k := len(p); k > 0; k-- {
			if sl := r.rustFile(joinDir(base, strings.Join(p[:k-1], "/")), p[k-1]); sl != nil {
				out = append(out, sl)
				break
			}
		}
	}
	return out
}

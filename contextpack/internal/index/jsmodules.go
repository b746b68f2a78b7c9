package index

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// The JavaScript/TypeScript module map: what the repository's
// package.json and tsconfig.json/jsconfig.json files say about bare
// specifiers. It is derived from those files when one of them is added,
// changed or removed (at the next resolution), not per request: they
// change rarely.
//
// Every package.json with a name is a package of the repository, which
// covers npm, Yarn and pnpm workspaces without reading their globs (a
// package.json the client sent is a package the repository holds).

// jsModuleMap is the derived map.
type jsModuleMap struct {
	packages []jsPackage           // longest name first
	configs  map[string]*jsCompile // directory of a tsconfig.json/jsconfig.json → its options, extends applied
}

// jsPackage is a package.json with a name.
type jsPackage struct {
	name    string
	dir     string
	entries []string            // entry points relative to dir, preferred first
	exports map[string][]string // subpath ("./x", "./x/*") → targets relative to dir
}

// jsCompile is the module options of a tsconfig or jsconfig.
type jsCompile struct {
	baseURL string // repository path; "" with hasBase false when unset
	hasBase bool
	paths   []jsPathAlias
}

// jsPathAlias is one compilerOptions.paths entry, targets as repository
// paths (each may hold the pattern's "*").
type jsPathAlias struct {
	pattern string
	targets []string
}

// isJSConfig reports whether a base name is one the module map reads.
func isJSConfig(base string) bool {
	return base == "package.json" || base == "jsconfig.json" ||
		strings.HasPrefix(base, "tsconfig") && strings.HasSuffix(base, ".json")
}

// noteConfig drops what is derived from manifests (the JavaScript module
// map, the Rust crate roots) when sl is one of them. Both hold paths,
// not files, so other files coming and going leave them valid.
func (r *Index) noteConfig(sl *File) {
	switch sl.Base {
	case "Cargo.toml":
		r.crateRoots = nil
	default:
		if isJSConfig(sl.Base) {
			r.jsMap = nil
		}
	}
}

// jsModules returns the module map, deriving it when a config changed.
func (r *Index) jsModules() *jsModuleMap {
	if r.jsMap != nil {
		return r.jsMap
	}
	m := &jsModuleMap{configs: map[string]*jsCompile{}}
	for _, sl := range r.byBase["package.json"] {
		if p, ok := parseJSPackage(sl); ok && p.name != "" {
			m.packages = append(m.packages, p)
		}
	}
	slices.SortFunc(m.packages, func(x, y jsPackage) int {
		if len(x.name) != len(y.name) {
			return len(y.name) - len(x.name)
		}
		return strings.Compare(x.dir, y.dir)
	})
	for _, base := range []string{"jsconfig.json", "tsconfig.json"} {
		for _, sl := range r.byBase[base] {
			if c := r.jsCompileOptions(sl.Path, 0); c != nil {
				m.configs[sl.Dir] = c
			}
		}
	}
	// A solution-style tsconfig.json (Vite's: "files": [] and references
	// to tsconfig.app.json, tsconfig.node.json) leaves the aliases to a
	// sibling config: take the first sibling, by name, that has some.
	var siblings []*File
	for base, fs := range r.byBase {
		if base != "tsconfig.json" && isJSConfig(base) && base != "package.json" && base != "jsconfig.json" {
			siblings = append(siblings, fs...)
		}
	}
	slices.SortFunc(siblings, func(x, y *File) int { return strings.Compare(x.Path, y.Path) })
	for _, sl := range siblings {
		if c := m.configs[sl.Dir]; c != nil && (c.hasBase || len(c.paths) > 0) {
			continue
		}
		if c := r.jsCompileOptions(sl.Path, 0); c != nil && (c.hasBase || len(c.paths) > 0) {
			m.configs[sl.Dir] = c
		}
	}
	r.jsMap = m
	return m
}

// parseJSPackage reads a package.json's name ("" when it has none) and
// entry points.
func parseJSPackage(sl *File) (jsPackage, bool) {
	var pj struct {
		Name    string          `json:"name"`
		Exports json.RawMessage `json:"exports"`
		Types   string          `json:"types"`
		Typings string          `json:"typings"`
		Module  string          `json:"module"`
		Main    string          `json:"main"`
		Source  string          `json:"source"`
	}
	if json.Unmarshal(jsonc(sl.Text().Text), &pj) != nil {
		return jsPackage{}, false
	}
	p := jsPackage{name: pj.Name, dir: sl.Dir, exports: map[string][]string{}}
	var exp any
	if len(pj.Exports) > 0 && json.Unmarshal(pj.Exports, &exp) == nil {
		if obj, ok := exp.(map[string]any); ok && len(obj) > 0 && hasDotKey(obj) {
			for k, v := range obj {
				p.exports[k] = exportTargets(v, 0)
			}
		} else {
			p.exports["."] = exportTargets(exp, 0)
		}
	}
	p.entries = append(p.entries, p.exports["."]...)
	for _, e := range []string{pj.Source, pj.Types, pj.Typings, pj.Module, pj.Main} {
		if e != "" {
			p.entries = append(p.entries, e)
		}
	}
	p.entries = append(p.entries, "index", "src/index")
	return p, true
}

func hasDotKey(obj map[string]any) bool {
	for k := range obj {
		if strings.HasPrefix(k, ".") {
			return true
		}
	}
	return false
}

// exportConditions are the package.json export conditions in the order
// a source file is likeliest behind them.
var exportConditions = []string{"source", "types", "typescript", "import", "module", "default", "require", "node", "browser"}

// exportTargets lists the paths an exports value names, preferred first.
func exportTargets(v any, depth int) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, exportTargets(e, depth+1)...)
		}
		return out
	case map[string]any:
		if depth > 4 {
			return nil
		}
		var out []string
		for _, c := range exportConditions {
			if e, ok := x[c]; ok {
				out = append(out, exportTargets(e, depth+1)...)
			}
		}
		return out
	}
	return nil
}

// jsCompileOptions reads the tsconfig/jsconfig at p with its extends
// chain (within the repository), nil when it is not there or not JSON.
func (r *Index) jsCompileOptions(p string, depth int) *jsCompile {
	sl := r.files[p]
	if sl == nil || depth > 8 {
		return nil
	}
	var tc struct {
		Extends         json.RawMessage `json:"extends"`
		CompilerOptions struct {
			BaseURL *string             `json:"baseUrl"`
			Paths   map[string][]string `json:"paths"`
		} `json:"compilerOptions"`
	}
	if json.Unmarshal(jsonc(sl.Text().Text), &tc) != nil {
		return nil
	}
	c := &jsCompile{}
	var exts []string
	if len(tc.Extends) > 0 {
		var one string
		if json.Unmarshal(tc.Extends, &one) == nil {
			exts = []string{one}
		} else {
			_ = json.Unmarshal(tc.Extends, &exts)
		}
	}
	for _, e := range exts { // later ones override earlier ones
		if !strings.HasPrefix(e, ".") {
			continue // a package's config: not in the repository
		}
		ep := joinDir(sl.Dir, e)
		if !strings.HasSuffix(ep, ".json") && r.files[ep] == nil {
			ep += ".json"
		}
		if pc := r.jsCompileOptions(ep, depth+1); pc != nil {
			if pc.hasBase {
				c.baseURL, c.hasBase = pc.baseURL, true
			}
			if pc.paths != nil {
				c.paths = pc.paths
			}
		}
	}
	opts := tc.CompilerOptions
	if opts.BaseURL != nil {
		c.baseURL, c.hasBase = joinDir(sl.Dir, *opts.BaseURL), true
	}
	if opts.Paths != nil {
		// Targets are relative to baseUrl, or to this file's directory.
		base := sl.Dir
		if c.hasBase {
			base = c.baseURL
		}
		c.paths = c.paths[:0:0]
		for pat, ts := range opts.Paths {
			a := jsPathAlias{pattern: pat}
			for _, t := range ts {
				a.targets = append(a.targets, joinDir(base, t))
			}
			c.paths = append(c.paths, a)
		}
		// Longest prefix before the "*" first, as TypeScript matches.
		slices.SortFunc(c.paths, func(x, y jsPathAlias) int {
			px, py := strings.IndexByte(x.pattern, '*'), strings.IndexByte(y.pattern, '*')
			if px < 0 {
				px = len(x.pattern) + 1
			}
			if py < 0 {
				py = len(y.pattern) + 1
			}
			if px != py {
				return py - px
			}
			return strings.Compare(x.pattern, y.pattern)
		})
	}
	return c
}

// jsonc makes JSON of JSON with comments and trailing commas (tsconfig's
// dialect): comments become spaces and a comma before } or ] goes. A
// dozen lines, not worth a dependency.
func jsonc(s string) []byte {
	b := []byte(s)
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, b[i:min(j+1, len(b))]...)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 3
			out = append(out, ' ')
		case c == ']' || c == '}':
			k := len(out) - 1
			for k >= 0 && (out[k] == ' ' || out[k] == '\t' || out[k] == '\n' || out[k] == '\r') {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out[k] = ' '
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// jsConfigFor is the tsconfig/jsconfig nearest above dir, nil when none.
func (m *jsModuleMap) jsConfigFor(dir string) *jsCompile {
	for d := dir; ; {
		if c := m.configs[d]; c != nil {
			return c
		}
		if d == "" || d == "." {
			return nil
		}
		d = path.Dir(d)
		if d == "." {
			d = ""
		}
	}
}

// jsBare resolves a bare specifier as TypeScript would for a repository
// whose workspace packages are linked into node_modules: compilerOptions
// paths, then baseUrl, then the repository's own packages.
func (r *Index) jsBare(t *File, spec string) *File {
	m := r.jsModules()
	if c := m.jsConfigFor(t.Dir); c != nil {
		for _, a := range c.paths {
			star, ok := matchPattern(a.pattern, spec)
			if !ok {
				continue
			}
			for _, tg := range a.targets {
				if sl := r.jsPath(strings.Replace(tg, "*", star, 1)); sl != nil {
					return sl
				}
			}
			break // the best matching pattern only, as TypeScript does
		}
		if c.hasBase {
			if sl := r.jsPath(joinDir(c.baseURL, spec)); sl != nil {
				return sl
			}
		}
	}
	for i := range m.packages {
		p := &m.packages[i]
		if spec == p.name {
			return r.jsPackageFile(p, ".")
		}
		if strings.HasPrefix(spec, p.name+"/") {
			return r.jsPackageFile(p, "./"+spec[len(p.name)+1:])
		}
	}
	return nil
}

// matchPattern matches spec against a paths pattern with at most one "*"
// and returns what the "*" matched.
func matchPattern(pat, spec string) (string, bool) {
	i := strings.IndexByte(pat, '*')
	if i < 0 {
		return "", pat == spec
	}
	pre, suf := pat[:i], pat[i+1:]
	if len(spec) < len(pre)+len(suf) || !strings.HasPrefix(spec, pre) || !strings.HasSuffix(spec, suf) {
		return "", false
	}
	return spec[len(pre) : len(spec)-len(suf)], true
}

// jsPackageFile resolves subpath ("." or "./x") of a repository package.
func (r *Index) jsPackageFile(p *jsPackage, sub string) *File {
	var targets []string
	if sub == "." {
		targets = p.entries
	} else if ts, ok := p.exports[sub]; ok {
		targets = ts
	} else {
		for pat, ts := range p.exports {
			if star, ok := matchPattern(pat, sub); ok && strings.Contains(pat, "*") {
				for _, t := range ts {
					targets = append(targets, strings.Replace(t, "*", star, 1))
				}
			}
		}
		targets = append(targets, sub, "src/"+strings.TrimPrefix(sub, "./"))
	}
	for _, t := range targets {
		if sl := r.jsPath(joinDir(p.dir, t)); sl != nil {
			return sl
		}
		if src := sourceForBuilt(t); src != "" {
			if sl := r.jsPath(joinDir(p.dir, src)); sl != nil {
				return sl
			}
		}
	}
	return nil
}

// builtDirs are the directories packages commonly build into; a
// repository holds the sources instead, usually under src/.
var builtDirs = map[string]bool{"dist": true, "lib": true, "build": true, "out": true, "esm": true, "cjs": true, "es": true, "types": true}

// sourceForBuilt maps an entry point in a build directory
// ("./dist/esm/index.d.ts") to where its source usually is
// ("src/index"), "" when t is not in one.
func sourceForBuilt(t string) string {
	parts := strings.Split(strings.TrimPrefix(path.Clean(t), "./"), "/")
	k := 0
	for k < len(parts)-1 && builtDirs[parts[k]] {
		k++
	}
	if k == 0 {
		return ""
	}
	rest := strings.Join(parts[k:], "/")
	for _, ext := range []string{".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs"} {
		if strings.HasSuffix(rest, ext) {
			rest = strings.TrimSuffix(rest, ext)
			break
		}
	}
	return "src/" + rest
}

// jsPath resolves a repository path as a module: a file (jsFile), a
// directory's package.json entry or index file.
func (r *Index) jsPath(p string) *File {
	if sl := r.jsFile(p); sl != nil {
		return sl
	}
	if pj := r.files[joinDir(p, "package.json")]; pj != nil {
		if pk, ok := parseJSPackage(pj); ok {
			for _, e := range pk.entries[:len(pk.entries)-2] { // not index: tried next
				if sl := r.jsFile(joinDir(p, e)); sl != nil {
					return sl
				}
				if src := sourceForBuilt(e); src != "" {
					if sl := r.jsFile(joinDir(p, src)); sl != nil {
						return sl
					}
				}
			}
		}
	}
	for _, ext := range jsExts {
		if sl := r.files[p+"/index"+ext]; sl != nil {
			return sl
		}
	}
	return nil
}

// jsFile resolves a repository path as a module file: the file, the .ts
// behind a .js specifier, the path with an extension.
func (r *Index) jsFile(p string) *File {
	if sl := r.files[p]; sl != nil && sl.Lang != syntax.LangPlain {
		return sl
	}
	stem := p
	switch ext := path.Ext(p); ext {
	case ".js", ".jsx", ".mjs", ".cjs":
		stem = strings.TrimSuffix(p, ext) // TypeScript imports "./x.js" for x.ts
	}
	for _, ext := range jsExts {
		if sl := r.files[stem+ext]; sl != nil {
			return sl
		}
	}
	return nil
}

// maxReexportFiles bounds the files one import follows re-exports to.
const maxReexportFiles = 16

// jsReexports follows the re-exports (export ... from) of f to the files
// that define names, breadth first, each file once, bounded.
func (r *Index) jsReexports(f *File, names []string) []*File {
	type step struct {
		file  *File
		names []string
		depth int
	}
	seen := map[*File]bool{f: true}
	var out []*File
	queue := []step{{f, names, 0}}
	for len(queue) > 0 && len(out) < maxReexportFiles {
		s := queue[0]
		queue = queue[1:]
		var rest []string // names s.file does not define itself
		for _, n := range s.names {
			if n == "default" && s.depth > 0 {
				continue // the module a re-export named for it defines it
			}
			if !definesTop(s.file, n) {
				rest = append(rest, n)
			}
		}
		if len(rest) == 0 || s.depth >= 4 {
			continue
		}
		for _, im := range s.file.Analysis.Imports {
			if !im.Reexport || im.Kind != syntax.ImportJS {
				continue
			}
			want := rest
			if len(im.Names) > 0 {
				want = nil
				for _, n := range rest {
					if i := slices.Index(im.Names, n); i >= 0 {
						if im.Sources != nil {
							n = im.Sources[i] // its name in the module re-exported
						}
						want = append(want, n)
					}
				}
				if len(want) == 0 {
					continue
				}
			}
			next := r.jsModule(s.file, im.Spec)
			if next == nil || seen[next] {
				continue
			}
			seen[next] = true
			// A default export has no name to look up.
			if slices.ContainsFunc(want, func(n string) bool { return n == "default" || definesTop(next, n) }) {
				out = append(out, next)
			}
			queue = append(queue, step{next, want, s.depth + 1})
		}
	}
	return out
}

// definesTop reports whether f has a top-level definition named n.
func definesTop(f *File, n string) bool {
	for i := range f.Analysis.Defs {
		if d := &f.Analysis.Defs[i]; d.Parent < 0 && d.Name == n {
			return true
		}
	}
	return false
}

package main

import (
	"encoding/json"
	"path"
	"regexp"
	"strconv"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// The tool's own reading of a cursor file's imports, for the diagnosis
// of import resolution: each import is classed relative (./x, from . import,
// crate::/super::, #include "x"), own (a bare name of the repository's own
// code: its Go module, a Python package in it, a workspace package.json name
// or tsconfig paths alias, a Java package it holds, its crate, an include
// path it holds) or external. It is a measurement aid, not a resolver: it
// only asks whether the repository holds what an import names.

type importClass uint8

const (
	importExternal importClass = iota
	importRelative
	importOwn
)

// importSpec is one import as written.
type importSpec struct {
	spec  string
	class importClass
}

// repoImports is what the classification needs to know of a repository.
type repoImports struct {
	goModules  []string        // module paths of go.mod files
	goDirs     map[string]bool // directories holding .go files
	pyModules  map[string]bool // dotted module names (every suffix of a .py path)
	jsPackages []string        // package.json names
	jsAliases  []string        // tsconfig/jsconfig paths keys, without a trailing '*'
	javaPkgs   map[string]bool // slash-separated directory suffixes holding .java files (2+ parts)
	crates     map[string]bool
	suffixes   map[string]bool // every path suffix at a '/' boundary
}

var (
	goModuleRe   = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?`)
	cargoNameRe  = regexp.MustCompile(`(?m)^\s*name\s*=\s*"([^"]+)"`)
	jsonCommentR = regexp.MustCompile(`(?s:/\*.*?\*/)|(?m:^\s*//[^\n]*)`)
	trailCommaRe = regexp.MustCompile(`,(\s*[}\]])`)
)

func newRepoImports(r *repository) *repoImports {
	ri := &repoImports{goDirs: map[string]bool{}, pyModules: map[string]bool{}, javaPkgs: map[string]bool{},
		crates: map[string]bool{}, suffixes: map[string]bool{}}
	for _, f := range r.files {
		p := f.Path
		for s := p; ; {
			ri.suffixes[s] = true
			i := strings.IndexByte(s, '/')
			if i < 0 {
				break
			}
			s = s[i+1:]
		}
		base := path.Base(p)
		switch {
		case base == "go.mod":
			if m := goModuleRe.FindStringSubmatch(f.Content); m != nil {
				ri.goModules = append(ri.goModules, m[1])
			}
		case base == "Cargo.toml":
			if m := cargoNameRe.FindStringSubmatch(f.Content); m != nil {
				ri.crates[strings.ReplaceAll(m[1], "-", "_")] = true
			}
		case base == "package.json":
			var pj struct {
				Name string `json:"name"`
			}
			if json.Unmarshal([]byte(f.Content), &pj) == nil && pj.Name != "" {
				ri.jsPackages = append(ri.jsPackages, pj.Name)
			}
		case strings.HasPrefix(base, "tsconfig") && strings.HasSuffix(base, ".json") || base == "jsconfig.json":
			var tc struct {
				CompilerOptions struct {
					Paths map[string][]string `json:"paths"`
				} `json:"compilerOptions"`
			}
			text := trailCommaRe.ReplaceAllString(jsonCommentR.ReplaceAllString(f.Content, ""), "$1")
			if json.Unmarshal([]byte(text), &tc) == nil {
				for k := range tc.CompilerOptions.Paths {
					if k = strings.TrimSuffix(k, "*"); k != "" {
						ri.jsAliases = append(ri.jsAliases, k)
					}
				}
			}
		}
		switch langOf(p, false) {
		case langGo:
			ri.goDirs[path.Dir(p)] = true
		case langPython:
			mod := strings.TrimSuffix(strings.TrimSuffix(p, ".py"), ".pyi")
			mod = strings.TrimSuffix(mod, "/__init__")
			parts := strings.Split(mod, "/")
			for i := range parts {
				ri.pyModules[strings.Join(parts[i:], ".")] = true
			}
		case langJava:
			parts := strings.Split(path.Dir(p), "/")
			for i := 0; i+2 <= len(parts); i++ {
				ri.javaPkgs[strings.Join(parts[i:], "/")] = true
			}
		}
	}
	return ri
}

func (ri *repoImports) classify(l lang, spec string) importClass {
	switch l {
	case langGo:
		if ri.goDirs[spec] {
			return importOwn // a GOROOT-style tree: the path is the directory
		}
		for _, m := range ri.goModules {
			if spec == m || strings.HasPrefix(spec, m+"/") {
				return importOwn
			}
		}
	case langPython:
		if strings.HasPrefix(spec, ".") {
			return importRelative
		}
		parts := strings.Split(spec, ".")
		for i := len(parts); i >= 1; i-- {
			if ri.pyModules[strings.Join(parts[:i], ".")] {
				return importOwn
			}
		}
	case langJS, langTS, langTSX:
		if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == ".." {
			return importRelative
		}
		for _, p := range ri.jsPackages {
			if spec == p || strings.HasPrefix(spec, p+"/") {
				return importOwn
			}
		}
		for _, a := range ri.jsAliases {
			if spec == strings.TrimSuffix(a, "/") || strings.HasPrefix(spec, a) {
				return importOwn
			}
		}
		if strings.HasPrefix(spec, "~/") || strings.HasPrefix(spec, "@/") || strings.HasPrefix(spec, "#") {
			return importOwn
		}
	case langJava:
		p := strings.TrimSuffix(strings.TrimPrefix(spec, "static "), ".*")
		parts := strings.Split(p, ".")
		for i := len(parts); i >= 2; i-- {
			if ri.javaPkgs[strings.Join(parts[:i], "/")] {
				return importOwn
			}
		}
	case langRust:
		if strings.HasPrefix(spec, "mod ") || strings.HasPrefix(spec, "crate::") || strings.HasPrefix(spec, "super::") ||
			strings.HasPrefix(spec, "self::") {
			return importRelative
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(spec, "::"), "::")
		if ri.crates[first] {
			return importOwn
		}
	case langC, langCPP:
		if strings.HasPrefix(spec, "\"") {
			return importRelative
		}
		if ri.suffixes[strings.Trim(spec, "<>")] {
			return importOwn
		}
	}
	return importExternal
}

// fileImports lists the imports written in content.
func fileImports(content string, l lang) []string {
	tree, _ := parse(content, l)
	if tree == nil {
		return nil
	}
	defer tree.Close()
	src := []byte(content)
	var out []string
	text := func(n *sitter.Node) string {
		if n == nil {
			return ""
		}
		return n.Content(src)
	}
	unquote := func(s string) string {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return strings.Trim(s, "'\"`")
	}
	var visit func(n *sitter.Node)
	visit = func(n *sitter.Node) {
		switch t := n.Type(); {
		case l == langGo && t == "import_spec":
			out = append(out, unquote(text(n.ChildByFieldName("path"))))
			return
		case l == langPython && t == "import_statement":
			for i := 0; i < int(n.NamedChildCount()); i++ {
				ch := n.NamedChild(i)
				if ch.Type() == "aliased_import" {
					ch = ch.ChildByFieldName("name")
				}
				out = append(out, text(ch))
			}
			return
		case l == langPython && t == "import_from_statement":
			out = append(out, text(n.ChildByFieldName("module_name")))
			return
		case (l == langJS || l == langTS || l == langTSX) && (t == "import_statement" || t == "export_statement"):
			if s := n.ChildByFieldName("source"); s != nil {
				out = append(out, unquote(text(s)))
				return
			}
		case (l == langJS || l == langTS || l == langTSX) && t == "call_expression":
			f := n.ChildByFieldName("function")
			if a := n.ChildByFieldName("arguments"); f != nil && a != nil && (text(f) == "require" || f.Type() == "import") &&
				a.NamedChildCount() > 0 && a.NamedChild(0).Type() == "string" {
				out = append(out, unquote(text(a.NamedChild(0))))
			}
		case l == langJava && t == "import_declaration":
			s := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(text(n), "import")), ";")
			out = append(out, strings.Join(strings.Fields(s), " "))
			return
		case l == langRust && t == "use_declaration":
			out = append(out, text(n.ChildByFieldName("argument")))
			return
		case l == langRust && t == "mod_item":
			if n.ChildByFieldName("body") == nil {
				out = append(out, "mod "+text(n.ChildByFieldName("name")))
			}
			return
		case (l == langC || l == langCPP) && t == "preproc_include":
			out = append(out, text(n.ChildByFieldName("path")))
			return
		}
		for i := 0; i < int(n.NamedChildCount()); i++ {
			visit(n.NamedChild(i))
		}
	}
	visit(tree.RootNode())
	return out
}

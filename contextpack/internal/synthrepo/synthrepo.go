// Package synthrepo generates deterministic synthetic repositories for
// contextpack's latency benchmarks: Python, Go and TypeScript files in
// packages that import each other, with classes, functions and call sites
// drawn from a shared vocabulary, so that parsing, import resolution, the
// definitions index and the similarity index all have realistic work.
package synthrepo

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// File is a generated file.
type File struct {
	Path    string
	Content string
}

// Options shapes a repository.
type Options struct {
	Files     int    // number of files (default 2000)
	FileBytes int    // approximate size of each file (default 10,000)
	Seed      uint64 // default 1
}

var words = strings.Fields(`account address agent alias amount anchor archive array asset audit author
balance batch binding block bound bucket buffer cache call cancel capacity cell chain channel check
chunk claim client clock cluster code column commit config conflict connection context count counter
credential cursor data date deadline delta device digest domain draft edge element entry error event
factor field file filter flag format frame gateway graph group handle hash header history host index
input instance item job journal key label layer lease ledger level limit link list loader lock log
manifest map marker match member message metric mode model monitor mutex name node note offset order
owner packet page pair parser partition path payload peer plan policy pool port prefix priority
process profile queue quota range rate reader record region registry replica report request resource
response result retry role route rule schema scope score segment selector sequence session shard
signal size slot snapshot source span state status store stream subject suffix summary table tag task
template tenant term thread ticket timer token topic trace track transaction tree trigger type unit
update usage user value vector version view volume watcher window worker writer zone`)

var verbs = strings.Fields(`add apply build check clear close collect compute convert create decode
delete emit encode ensure fetch find flush format get handle init insert load lookup merge open parse
prepare process read refresh register release remove render reset resolve restore run save scan send
set sort split start stop sync track update validate wait write`)

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

type gen struct {
	r    *rand.Rand
	opts Options
}

func (g *gen) word() string { return words[g.r.IntN(len(words))] }
func (g *gen) verb() string { return verbs[g.r.IntN(len(verbs))] }

// names of module m's exported things are derived from m so that importers
// can call them.
func className(m int) string { return title(words[m%len(words)]) + title(words[(m/7)%len(words)]) }
func funcName(m, k int) string {
	return verbs[(m+k)%len(verbs)] + title(words[(m*3+k)%len(words)])
}

// Generate returns the repository's files, sorted by path.
func Generate(o Options) []File {
	if o.Files <= 0 {
		o.Files = 2000
	}
	if o.FileBytes <= 0 {
		o.FileBytes = 10000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	g := &gen{r: rand.New(rand.NewPCG(o.Seed, 7)), opts: o}
	const perPkg = 40
	files := make([]File, 0, o.Files)
	for i := 0; i < o.Files; i++ {
		pkg, mod := i/perPkg, i%perPkg
		var f File
		switch i % 5 {
		case 0, 1:
			f = g.python(i, pkg, mod)
		case 2, 3:
			f = g.golang(i, pkg, mod)
		default:
			f = g.typescript(i, pkg, mod)
		}
		files = append(files, f)
	}
	return files
}

// deps picks modules of the same language (same i%5 class) to import.
func (g *gen) deps(i int, n int) []int {
	var out []int
	lang := i % 5
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		j := g.r.IntN(g.opts.Files)
		if j == i {
			continue
		}
		switch lang {
		case 0, 1:
			if j%5 > 1 {
				continue
			}
		case 2, 3:
			if j%5 < 2 || j%5 > 3 {
				continue
			}
		default:
			if j%5 != 4 {
				continue
			}
		}
		out = append(out, j)
	}
	if len(out) == 0 {
		out = append(out, i) // a tiny repository: the module imports itself
	}
	return out
}

func pyPath(i int) string { return fmt.Sprintf("pkg%02d/mod%03d.py", i/40, i) }
func goDir(i int) string  { return fmt.Sprintf("gopkg%02d/sub%d", i/40, i%3) }
func tsPath(i int) string { return fmt.Sprintf("web%02d/comp%03d.ts", i/40, i) }

func (g *gen) python(i, pkg, mod int) File {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\"\"\"Module %d: %s handling for the %s subsystem.\"\"\"\n\nimport logging\nimport os\n", i, g.word(), g.word())
	deps := g.deps(i, 4)
	for _, d := range deps {
		fmt.Fprintf(&sb, "from pkg%02d.mod%03d import %s, %s\n", d/40, d, className(d), funcName(d, 0))
	}
	sb.WriteString("\nlog = logging.getLogger(__name__)\n\n")
	for k := 0; sb.Len() < g.opts.FileBytes; k++ {
		if k%3 == 0 {
			fmt.Fprintf(&sb, "\nclass %s%s:\n    \"\"\"Keeps %s for %s.\"\"\"\n\n", className(i), strings.Repeat("X", k/3), g.word(), g.word())
			fmt.Fprintf(&sb, "    def __init__(self, %s, %s=None):\n        self.%s = %s\n        self.%s = %s or {}\n\n",
				g.word(), g.word(), g.word(), g.word(), g.word(), g.word())
			for mth := 0; mth < 3; mth++ {
				g.pyFunc(&sb, "    ", fmt.Sprintf("%s_%s", g.verb(), g.word()), deps, true)
			}
			continue
		}
		g.pyFunc(&sb, "", funcName(i, k), deps, false)
	}
	return File{Path: pyPath(i), Content: sb.String()}
}

func (g *gen) pyFunc(sb *strings.Builder, ind, name string, deps []int, method bool) {
	self := ""
	if method {
		self = "self, "
	}
	a, b := g.word(), g.word()
	fmt.Fprintf(sb, "%sdef %s(%s%s, %s=0):\n", ind, name, self, a, b)
	fmt.Fprintf(sb, "%s    \"\"\"%s the %s of %s.\"\"\"\n", ind, title(g.verb()), g.word(), a)
	fmt.Fprintf(sb, "%s    result = []\n", ind)
	for l := 0; l < 4+g.r.IntN(6); l++ {
		d := deps[g.r.IntN(len(deps))]
		switch g.r.IntN(4) {
		case 0:
			fmt.Fprintf(sb, "%s    %s_%s = %s(%s, %s)\n", ind, g.word(), g.word(), funcName(d, 0), a, b)
		case 1:
			fmt.Fprintf(sb, "%s    for %s in %s.%s_%s():\n%s        result.append(%s.%s)\n", ind, g.word(), a, g.verb(), g.word(), ind, g.word(), g.word())
		case 2:
			fmt.Fprintf(sb, "%s    if %s > %d:\n%s        log.debug(\"%s %%s\", %s)\n", ind, b, g.r.IntN(100), ind, g.word(), a)
		default:
			fmt.Fprintf(sb, "%s    obj = %s(%s)\n%s    obj.%s_%s(%s)\n", ind, className(d), a, ind, g.verb(), g.word(), b)
		}
	}
	fmt.Fprintf(sb, "%s    return result\n\n", ind)
}

func (g *gen) golang(i, pkg, mod int) File {
	var sb strings.Builder
	name := fmt.Sprintf("sub%d", i%3)
	fmt.Fprintf(&sb, "// Package %s handles %s for the %s subsystem.\npackage %s\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n", name, g.word(), g.word(), name)
	deps := g.deps(i, 3)
	seen := map[string]bool{goDir(i): true}
	var imps []int
	for _, d := range deps {
		if !seen[goDir(d)] {
			seen[goDir(d)] = true
			imps = append(imps, d)
			fmt.Fprintf(&sb, "\tp%d \"example.com/synth/%s\"\n", d, goDir(d))
		}
	}
	sb.WriteString(")\n")
	for k := 0; sb.Len() < g.opts.FileBytes; k++ {
		typ := fmt.Sprintf("%s%d", className(i), k)
		if k%3 == 0 {
			fmt.Fprintf(&sb, "\n// %s keeps %s.\ntype %s struct {\n", typ, g.word(), typ)
			for f := 0; f < 4; f++ {
				fmt.Fprintf(&sb, "\t%s%s %s\n", title(g.word()), title(g.word()), []string{"int", "string", "[]byte", "map[string]int"}[f%4])
			}
			sb.WriteString("}\n")
		}
		fn := title(funcName(i, k))
		a, b := g.word(), g.word()
		fmt.Fprintf(&sb, "\n// %s %ss the %s.\nfunc %s(%s string, %s int) (int, error) {\n\ttotal := 0\n", fn, g.verb(), g.word(), fn, a, b)
		for l := 0; l < 4+g.r.IntN(6); l++ {
			switch g.r.IntN(3) {
			case 0:
				if len(imps) > 0 {
					d := imps[g.r.IntN(len(imps))]
					fmt.Fprintf(&sb, "\tif n, err := p%d.%s(%s, %s); err != nil {\n\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)\n\t} else {\n\t\ttotal += n\n\t}\n",
						d, title(funcName(d, 0)), a, b, g.word())
					continue
				}
				fallthrough
			case 1:
				fmt.Fprintf(&sb, "\tfor i := 0; i < %s; i++ {\n\t\ttotal += len(%s) * i\n\t}\n", b, a)
			default:
				fmt.Fprintf(&sb, "\tif %s == \"\" {\n\t\treturn 0, errors.New(\"%s %s\")\n\t}\n", a, g.word(), g.word())
			}
		}
		sb.WriteString("\treturn total, nil\n}\n")
	}
	return File{Path: fmt.Sprintf("%s/file%03d.go", goDir(i), i), Content: sb.String()}
}

func (g *gen) typescript(i, pkg, mod int) File {
	var sb strings.Builder
	deps := g.deps(i, 3)
	for _, d := range deps {
		fmt.Fprintf(&sb, "import { %s, %s } from '../web%02d/comp%03d';\n", className(d), funcName(d, 0), d/40, d)
	}
	for k := 0; sb.Len() < g.opts.FileBytes; k++ {
		if k%3 == 0 {
			fmt.Fprintf(&sb, "\nexport interface %sProps%d {\n  %s: string;\n  %s?: number;\n}\n", className(i), k, g.word(), g.word())
			fmt.Fprintf(&sb, "\nexport class %s%s {\n  private %s: Map<string, number> = new Map();\n\n", className(i), strings.Repeat("X", k/3), g.word())
			for mth := 0; mth < 3; mth++ {
				a := g.word()
				fmt.Fprintf(&sb, "  %s%s(%s: string): number {\n    const n = this.%s.get(%s) ?? 0;\n    return n + %d;\n  }\n\n",
					g.verb(), title(g.word()), a, g.word(), a, g.r.IntN(10))
			}
			sb.WriteString("}\n")
			continue
		}
		fn := funcName(i, k)
		a := g.word()
		fmt.Fprintf(&sb, "\nexport function %s(%s: string, opts: %sProps0): number {\n  let total = 0;\n", fn, a, className(i))
		for l := 0; l < 3+g.r.IntN(5); l++ {
			d := deps[g.r.IntN(len(deps))]
			switch g.r.IntN(2) {
			case 0:
				fmt.Fprintf(&sb, "  total += %s(%s, opts as any);\n", funcName(d, 0), a)
			default:
				fmt.Fprintf(&sb, "  const %s = new %s();\n  total += %s.%s%s(%s);\n", g.word(), className(d), g.word(), g.verb(), title(g.word()), a)
			}
		}
		sb.WriteString("  return total;\n}\n")
	}
	return File{Path: tsPath(i), Content: sb.String()}
}

// GoMod is a go.mod for the generated Go packages (module example.com/synth).
const GoMod = "module example.com/synth\n\ngo 1.22\n"

// EditLine is the benchmarks' one-file edit: it inserts a random letter
// after the first "e" of a random line of content and returns the new
// content and the offset of that line's first non-blank byte (where the
// cursor goes).
func EditLine(r *rand.Rand, content string) (string, int) {
	lines := strings.SplitAfter(content, "\n")
	li := r.IntN(len(lines))
	lines[li] = strings.Replace(lines[li], "e", "e"+string(rune('a'+r.IntN(26))), 1)
	off := 0
	for _, l := range lines[:li] {
		off += len(l)
	}
	off += len(lines[li]) - len(strings.TrimLeft(lines[li], " \t"))
	edited := strings.Join(lines, "")
	return edited, min(off, len(edited))
}

package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/evaluator/dataset"
)

// repository is a loaded repository with its files' syntax (parsed on
// first use).
type repository struct {
	spec       repoSpec
	index      int // position in the run's list: seeds its sampling
	files      []contextpack.File
	byPath     map[string]int
	cppHeaders bool
	syntax     map[int]*fileSyntax
	bytes      int
	commit     string
}

func newRepository(spec repoSpec, index int, files []contextpack.File) *repository {
	r := &repository{spec: spec, index: index, files: files, byPath: map[string]int{}, syntax: map[int]*fileSyntax{}}
	for i, f := range files {
		r.byPath[f.Path] = i
		r.bytes += len(f.Content)
		switch langOf(f.Path, false) {
		case langCPP:
			r.cppHeaders = true
		}
	}
	return r
}

// fileSyntax is file i's syntax as loaded (the unmasked text).
func (r *repository) fileSyntax(i int) *fileSyntax {
	fs, ok := r.syntax[i]
	if !ok {
		fs = analyzeFile(r.files[i].Content, langOf(r.files[i].Path, r.cppHeaders))
		r.syntax[i] = fs
	}
	return fs
}

// sample is one masked middle: file's text full with [start, end) taken
// out is the cursor file, the cursor at start.
type sample struct {
	repo       *repository
	lang       string // the report's language row
	path       string
	kind       string // line, multiline, span, humaneval-single, humaneval-multi
	file       int
	full       string
	start, end int
	syntax     *fileSyntax // of full
}

func (s *sample) middle() string { return s.full[s.start:s.end] }

// requestFiles is the repository with the sample's middle removed.
func (s *sample) requestFiles() []contextpack.File {
	fs := make([]contextpack.File, len(s.repo.files))
	copy(fs, s.repo.files)
	fs[s.file].Content = s.full[:s.start] + s.full[s.end:]
	return fs
}

// countedCode reports whether [start, end) overlaps a code identifier
// that the metric counts.
func countedCode(fs *fileSyntax, start, end int) bool {
	code, _ := fs.middleWords(start, end)
	return len(code) > 0
}

// repoSamples masks random spans of random source files: a single line,
// 2–5 whole lines, or a random span of 20–150 bytes, in turn. Masks keep
// indentation and the newline in the prefix/suffix (as ExecRepoBench's line
// masks do) and always overlap a code identifier the metric counts.
func repoSamples(r *repository, n int, rng *rand.Rand) []sample {
	var eligible []int
	for i, f := range r.files {
		if len(f.Content) >= 200 && len(f.Content) <= 200<<10 && langOf(f.Path, r.cppHeaders) != langNone {
			eligible = append(eligible, i)
		}
	}
	var out []sample
	kinds := []string{"line", "multiline", "span"}
	for tries := 0; len(out) < n && tries < n*50 && len(eligible) > 0; tries++ {
		fi := eligible[rng.IntN(len(eligible))]
		f := r.files[fi]
		kind := kinds[len(out)%3]
		start, end, ok := pickMask(f.Content, kind, rng)
		if !ok {
			continue
		}
		fs := r.fileSyntax(fi)
		if !countedCode(fs, start, end) {
			continue
		}
		out = append(out, sample{repo: r, lang: langSpecs[fs.lang].group, path: f.Path, kind: kind, file: fi,
			full: f.Content, start: start, end: end, syntax: fs})
	}
	return out
}

func lineBounds(s string) [][2]int {
	var ls [][2]int
	st := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			ls = append(ls, [2]int{st, i})
			st = i + 1
		}
	}
	if st < len(s) {
		ls = append(ls, [2]int{st, len(s)})
	}
	return ls
}

func pickMask(s, kind string, rng *rand.Rand) (int, int, bool) {
	ls := lineBounds(s)
	if len(ls) < 3 {
		return 0, 0, false
	}
	i := rng.IntN(len(ls))
	ln := s[ls[i][0]:ls[i][1]]
	indent := len(ln) - len(strings.TrimLeft(ln, " \t"))
	if strings.TrimSpace(ln) == "" {
		return 0, 0, false
	}
	switch kind {
	case "line":
		return ls[i][0] + indent, ls[i][1], true
	case "multiline":
		j := min(len(ls)-1, i+1+rng.IntN(4))
		return ls[i][0] + indent, ls[j][1], true
	default:
		a := ls[i][0] + indent + rng.IntN(max(1, len(ln)-indent))
		e := min(len(s), a+20+rng.IntN(130))
		// Whole characters only.
		for a < len(s) && s[a]&0xC0 == 0x80 {
			a++
		}
		for e < len(s) && s[e]&0xC0 == 0x80 {
			e++
		}
		return a, e, a < e
	}
}

// humanEvalSamples uses the single- and multi-line infilling tasks. The
// repository is the 164 problems, each a file holding its prompt and
// canonical solution; a sample masks one task's middle in its file.
func humanEvalSamples(spec repoSpec, index, n int, rng *rand.Rand) (*repository, []sample, error) {
	tasks, err := dataset.LoadHumanEvalDir(spec.root, dataset.HumanEvalSingleLine, dataset.HumanEvalMultiLine)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	// One full solution per problem: any task's prompt+middle+suffix.
	full := map[string]string{}
	var order []string
	for _, t := range tasks {
		p := problemID(t.ID)
		if _, ok := full[p]; !ok {
			full[p] = t.Prefix + t.Reference + t.Suffix
			order = append(order, p)
		}
	}
	index2 := map[string]int{}
	var files []contextpack.File
	for _, p := range order {
		index2[p] = len(files)
		files = append(files, contextpack.File{Path: heFile(p), Content: full[p], HasContent: true})
	}
	r := newRepository(spec, index, files)
	var out []sample
	for tries := 0; len(out) < n && len(tasks) > 0 && tries < n*50; tries++ {
		t := tasks[rng.IntN(len(tasks))]
		text := t.Prefix + t.Reference + t.Suffix
		fs := analyzeFile(text, langPython)
		if !countedCode(fs, len(t.Prefix), len(t.Prefix)+len(t.Reference)) {
			continue
		}
		p := problemID(t.ID)
		kind := "humaneval-single"
		if t.Benchmark == string(dataset.HumanEvalMultiLine) {
			kind = "humaneval-multi"
		}
		out = append(out, sample{repo: r, lang: "HumanEval", path: heFile(p), kind: kind, file: index2[p],
			full: text, start: len(t.Prefix), end: len(t.Prefix) + len(t.Reference), syntax: fs})
	}
	return r, out, nil
}

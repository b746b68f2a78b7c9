package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/evaluator/dataset"
)

// repoSamples masks random spans of random source files: a single line,
// 2–5 whole lines, or a random span of 20–150 bytes, in turn. Masks keep
// indentation and the newline in the prefix/suffix (as ExecRepoBench's line
// masks do) and always contain an identifier.
func repoSamples(spec repoSpec, files []contextpack.File, n int, rng *rand.Rand) []sample {
	var eligible []int
	for i, f := range files {
		if len(f.Content) >= 200 && len(f.Content) <= 200<<10 && !strings.HasSuffix(f.Path, "go.mod") {
			eligible = append(eligible, i)
		}
	}
	var out []sample
	kinds := []string{"line", "multiline", "span"}
	for tries := 0; len(out) < n && tries < n*50 && len(eligible) > 0; tries++ {
		fi := eligible[rng.IntN(len(eligible))]
		f := files[fi]
		kind := kinds[len(out)%3]
		start, end, ok := pickMask(f.Content, kind, rng)
		if !ok {
			continue
		}
		mid := f.Content[start:end]
		if len(contextpack.Identifiers(mid, f.Path, "")) == 0 {
			continue
		}
		fs := make([]contextpack.File, len(files))
		copy(fs, files)
		fs[fi].Content = f.Content[:start] + f.Content[end:]
		out = append(out, sample{repo: spec.name, group: spec.group, path: f.Path, kind: kind, middle: mid,
			files: fs, offset: start})
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
func humanEvalSamples(spec repoSpec, n int, rng *rand.Rand) ([]sample, int, int, error) {
	tasks, err := dataset.LoadHumanEvalDir(spec.root, dataset.HumanEvalSingleLine, dataset.HumanEvalMultiLine)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", spec.name, err)
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
	index := map[string]int{}
	var files []contextpack.File
	bytes := 0
	for _, p := range order {
		index[p] = len(files)
		files = append(files, contextpack.File{Path: heFile(p), Content: full[p], HasContent: true})
		bytes += len(full[p])
	}
	var out []sample
	for len(out) < n && len(tasks) > 0 {
		t := tasks[rng.IntN(len(tasks))]
		if len(contextpack.Identifiers(t.Reference, "x.py", "")) == 0 {
			continue
		}
		p := problemID(t.ID)
		fs := make([]contextpack.File, len(files))
		copy(fs, files)
		fs[index[p]].Content = t.Prefix + t.Suffix
		kind := "humaneval-single"
		if t.Benchmark == string(dataset.HumanEvalMultiLine) {
			kind = "humaneval-multi"
		}
		out = append(out, sample{repo: spec.name, group: spec.group, path: heFile(p), kind: kind,
			middle: t.Reference, files: fs, offset: len(t.Prefix)})
	}
	return out, len(files), bytes, nil
}

//go:build ignore

// Command interleave times two contextpack implementations in one process,
// build by build: the old one (contextpack/internal/oldcp, put there by
// interleave.sh from an older commit) and the current one, each with its
// own Builder, on the same requests. Machine load then falls on both
// alike, and each pair of builds gives a ratio. It is not built with the
// module (build tag ignore); interleave.sh copies it into a scratch tree.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	newcp "github.com/infill-dev/infill/contextpack"
	oldcp "github.com/infill-dev/infill/contextpack/internal/oldcp"
	oldtok "github.com/infill-dev/infill/contextpack/internal/oldcp/tokenizer"
	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
	newtok "github.com/infill-dev/infill/contextpack/tokenizer"
)

type file struct{ path, content string }

// dirs collects -dir flags.
type dirs []string

func (d *dirs) String() string     { return strings.Join(*d, ",") }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	edits := flag.Int("edits", 600, "warm builds after a one-file edit, per implementation")
	keys := flag.Int("keys", 2000, "warm builds while typing, per implementation")
	budget := flag.Int("budget", 8192, "token budget of each request")
	var repos dirs
	flag.Var(&repos, "dir", "name=path of a local repository to time instead of the synthetic one (repeatable): -edits warm edits in each, no typing")
	flag.Parse()
	ot, err := oldtok.Qwen25()
	check(err)
	nt, err := newtok.Qwen25()
	check(err)
	if len(repos) > 0 {
		var eo, en []time.Duration
		for i, spec := range repos {
			name, root, ok := strings.Cut(spec, "=")
			if !ok {
				name, root = filepath.Base(spec), spec
			}
			files, err := loadDir(root)
			check(err)
			o, n := timeRepo(name, files, ot, nt, *budget, *edits, uint64(i))
			report("edit "+name, o, n)
			eo, en = append(eo, o...), append(en, n...)
		}
		report("edit all", eo, en)
		return
	}
	gen := synthrepo.Generate(synthrepo.Options{})
	files := []file{{"go.mod", synthrepo.GoMod}}
	for _, f := range gen {
		files = append(files, file{f.Path, f.Content})
	}
	ob, err := oldcp.NewBuilder(oldcp.DefaultConfig(), ot, nil)
	check(err)
	nb, err := newcp.NewBuilder(newcp.DefaultConfig(), nt, nil)
	check(err)
	// build runs one request on both builders, in an order that alternates
	// with i, and returns their times.
	// digests[k] is files[k]'s digest; a file changed from files is sent
	// with content (digest[k] false).
	var digests []string
	build := func(i int, fs []file, digest []bool, cur string, off int) (old, new time.Duration) {
		oreq, nreq := requests("synth", *budget, fs, digests, func(k int) bool { return !digest[k] }, cur, off)
		return timePair(i, ob, nb, oreq, nreq)
	}
	all := make([]bool, len(files)) // all with content
	build(0, files, all, files[1].path, 0)
	digests = make([]string, len(files))
	for i, f := range files {
		digests[i] = newcp.Digest(f.content)
	}
	asDigest := make([]bool, len(files))
	for i := range asDigest {
		asDigest[i] = true
	}

	// Warm edit: one random file edited (a word on a random line), sent
	// with content, the cursor there, every other file as a digest (as
	// BenchmarkBuildWarmEdit).
	r := rand.New(rand.NewPCG(1, 2))
	var eo, en []time.Duration
	for i := range *edits {
		j := 1 + r.IntN(len(files)-1)
		fs := slices.Clone(files)
		var off int
		fs[j].content, off = synthrepo.EditLine(r, files[j].content)
		d := slices.Clone(asDigest)
		d[j] = false
		o, n := build(i, fs, d, fs[j].path, off)
		eo, en = append(eo, o), append(en, n)
	}

	// Typing: a statement typed key by key in one file, the others as
	// digests (as BenchmarkBuildTyping).
	j := 1 + rand.New(rand.NewPCG(3, 4)).IntN(len(files)-1)
	fs := slices.Clone(files)
	d := slices.Clone(asDigest)
	d[j] = false
	off := strings.Index(fs[j].content, "\n") + 1
	const text = "resp, err := c.send(req, deadline)\n\t"
	var to, tn []time.Duration
	for i := range *keys {
		c := fs[j].content
		fs[j].content = c[:off] + text[i%len(text):i%len(text)+1] + c[off:]
		off++
		o, n := build(i, fs, d, fs[j].path, off)
		to, tn = append(to, o), append(tn, n)
	}
	report("warm edit", eo, en)
	report("typing", to, tn)
}

// timeRepo times warm builds after a one-file edit in a real repository
// on both implementations, alternating: each build edits a random source
// file (a word on a random line), sends it with content and every other
// file as a digest, the cursor at the edited line's first non-blank byte.
func timeRepo(name string, files []file, ot *oldtok.Tokenizer, nt *newtok.Tokenizer, budget, edits int, seed uint64) (eo, en []time.Duration) {
	ob, err := oldcp.NewBuilder(oldcp.DefaultConfig(), ot, nil)
	check(err)
	defer ob.Close()
	nb, err := newcp.NewBuilder(newcp.DefaultConfig(), nt, nil)
	check(err)
	defer nb.Close()
	var src []int // indexes of source files (cursor candidates)
	for i, f := range files {
		if isSource(f.path) && len(f.content) >= 200 {
			src = append(src, i)
		}
	}
	if len(src) == 0 {
		check(fmt.Errorf("%s: no source files", name))
	}
	digests := make([]string, len(files))
	for i, f := range files {
		digests[i] = newcp.Digest(f.content)
	}
	run := func(i int, fs []file, edited int, off int) (old, new time.Duration) {
		content := func(k int) bool { return k == edited || i < 0 }
		oreq, nreq := requests(name, budget, fs, digests, content, fs[edited].path, off)
		return timePair(i, ob, nb, oreq, nreq)
	}
	// Cold: every file with content, once (not timed).
	run(-1, files, src[0], 0)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range edits {
		j := src[r.IntN(len(src))]
		fs := slices.Clone(files)
		var off int
		fs[j].content, off = synthrepo.EditLine(r, files[j].content)
		o, n := run(i, fs, j, off)
		eo, en = append(eo, o), append(en, n)
	}
	return eo, en
}

// requests are the same request for both implementations: the files for
// which content is true with their content, the others as digests.
func requests(name string, budget int, fs []file, digests []string, content func(int) bool, cur string, off int) (oldcp.Request, newcp.Request) {
	oreq := oldcp.Request{RepoName: name, TokenBudget: budget, MaxNewTokens: 128,
		Cursor: oldcp.Cursor{Path: cur, Offset: off, Encoding: oldcp.EncodingByteOffset}}
	nreq := newcp.Request{RepoName: name, TokenBudget: budget, MaxNewTokens: 128,
		Cursor: newcp.Cursor{Path: cur, Offset: off, Encoding: newcp.EncodingByteOffset}}
	for k, f := range fs {
		if content(k) {
			oreq.Files = append(oreq.Files, oldcp.File{Path: f.path, Content: f.content, HasContent: true})
			nreq.Files = append(nreq.Files, newcp.File{Path: f.path, Content: f.content, HasContent: true})
		} else {
			oreq.Files = append(oreq.Files, oldcp.File{Path: f.path, Digest: digests[k]})
			nreq.Files = append(nreq.Files, newcp.File{Path: f.path, Digest: digests[k]})
		}
	}
	return oreq, nreq
}

// timePair builds the two requests, old first when i is even, new first
// when odd, and returns their times.
func timePair(i int, ob *oldcp.Builder, nb *newcp.Builder, oreq oldcp.Request, nreq newcp.Request) (old, new time.Duration) {
	runOld := func() {
		t := time.Now()
		_, err := ob.Build(context.Background(), oreq)
		old = time.Since(t)
		check(err)
	}
	runNew := func() {
		t := time.Now()
		_, err := nb.Build(context.Background(), nreq)
		new = time.Since(t)
		check(err)
	}
	if i%2 == 0 {
		runOld()
		runNew()
	} else {
		runNew()
		runOld()
	}
	return old, new
}

// loadDir reads a repository as cpquality -dir does: the files git
// tracks, those of the languages contextpack parses plus project
// manifests and Markdown, each under 512 KiB and UTF-8, the first 4,000
// in path order.
func loadDir(root string) ([]file, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("%s: git ls-files: %w", root, err)
	}
	paths := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	slices.Sort(paths)
	var files []file
	for _, p := range paths {
		if len(files) >= 4000 {
			break
		}
		if !keep(p) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || len(b) > 512<<10 || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		files = append(files, file{p, string(b)})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no files", root)
	}
	return files, nil
}

var skipDirs = map[string]bool{"node_modules": true, "vendor": true, "__pycache__": true, ".venv": true}

var sourceExts = map[string]bool{".go": true, ".py": true, ".js": true, ".jsx": true, ".mjs": true, ".cjs": true,
	".ts": true, ".tsx": true, ".mts": true, ".cts": true, ".java": true, ".rs": true, ".c": true, ".h": true,
	".cc": true, ".cpp": true, ".cxx": true, ".hpp": true, ".hh": true}

func isSource(p string) bool { return sourceExts[strings.ToLower(path.Ext(p))] }

func keep(p string) bool {
	for _, part := range strings.Split(path.Dir(p), "/") {
		if skipDirs[part] {
			return false
		}
	}
	base := path.Base(p)
	switch {
	case base == "go.mod", base == "package.json", base == "Cargo.toml", base == "pyproject.toml", base == "setup.cfg",
		strings.HasPrefix(base, "tsconfig") && strings.HasSuffix(base, ".json"), base == "jsconfig.json":
		return true
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".rst":
		return true
	}
	return isSource(p)
}

// report prints the medians and p90s of both, and the median of the
// per-build ratios new/old with its 95% confidence interval (order
// statistics of the binomial).
func report(name string, old, new []time.Duration) {
	ratios := make([]float64, len(old))
	for i := range old {
		ratios[i] = float64(new[i]) / float64(old[i])
	}
	slices.Sort(ratios)
	n := len(ratios)
	lo, hi := ciMedian(n)
	fmt.Printf("%-9s n=%d  old median %.3f ms p90 %.3f ms | new median %.3f ms p90 %.3f ms | new/old median ratio %.4f (95%% CI %.4f–%.4f)\n",
		name, n, ms(q(old, 0.5)), ms(q(old, 0.9)), ms(q(new, 0.5)), ms(q(new, 0.9)), ratios[n/2], ratios[lo], ratios[hi])
}

// ciMedian returns the ranks bounding a 95% confidence interval of the
// median of n samples (normal approximation of the binomial).
func ciMedian(n int) (int, int) {
	d := int(math.Ceil(1.96 * 0.5 * math.Sqrt(float64(n))))
	return max(0, n/2-d), min(n-1, n/2+d)
}

func q(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

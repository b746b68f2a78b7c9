package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack"
)

// copyTree copies testdata/dirrepo to a temporary directory and adds what
// a repository on disk also holds and the tool must leave out.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "dirrepo")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeTestFile(dst, rel, string(b))
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{
		"node_modules/left-pad/index.js": "module.exports = function leftPad(s) { return s; };\n",
		"vendor/example.org/x/x.go":      "package x\n\nfunc Vendored() {}\n",
		"web/src/.cache/blob.bin":        "\x00\x01binary",
	} {
		if err := writeTestFile(dst, rel, content); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func writeTestFile(root, rel, content string) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

var dirRepoFiles = []string{"README.md", "cart/cart.go", "go.mod", "price/price.go", "price/price_test.go",
	"tools/__init__.py", "tools/report.py", "tools/totals.py", "web/package.json", "web/src/format.ts",
	"web/src/lines.ts", "web/src/receipt.ts"}

func TestDirFiles(t *testing.T) {
	root := copyTree(t)
	got, err := dirFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, dirRepoFiles) {
		t.Errorf("walk: got %v\nwant %v", got, dirRepoFiles)
	}

	// In a git work tree, what git tracks: an ignored file stays out.
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is missing")
		}
		t.Skip("no git")
	}
	if err := writeTestFile(root, ".gitignore", "generated/\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeTestFile(root, "generated/api.go", "package generated\n"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	got, err = dirFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, dirRepoFiles) {
		t.Errorf("git: got %v\nwant %v", got, dirRepoFiles)
	}
}

func TestDirReposNames(t *testing.T) {
	root := copyTree(t)
	specs, err := dirRepos([]string{root, "shop=" + root, root})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(root)
	if specs[0].name != base || specs[1].name != "shop" || specs[2].name != base+"#2" {
		t.Errorf("names %q %q %q", specs[0].name, specs[1].name, specs[2].name)
	}
	if _, err := dirRepos([]string{filepath.Join(root, "missing")}); err == nil {
		t.Error("a missing directory is not an error")
	}
	if _, err := dirRepos([]string{filepath.Join(root, "go.mod")}); err == nil {
		t.Error("a file is not an error")
	}
}

// TestDirSamples: samples come from source files only, each masks a
// counted code identifier, and a seed draws the same samples again.
func TestDirSamples(t *testing.T) {
	specs, err := dirRepos([]string{copyTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	files, err := loadFiles(specs[0], 4000)
	if err != nil {
		t.Fatal(err)
	}
	draw := func() []sample {
		r := newRepository(specs[0], 0, files)
		return repoSamples(r, 30, rand.New(rand.NewPCG(1, 0)))
	}
	ss := draw()
	if len(ss) != 30 {
		t.Fatalf("%d samples, want 30", len(ss))
	}
	langs := map[string]int{}
	for _, s := range ss {
		langs[s.lang]++
		if langOf(s.path, false) == langNone {
			t.Errorf("sample from %s, not a source file", s.path)
		}
		if code, _ := s.syntax.middleWords(s.start, s.end); len(code) == 0 {
			t.Errorf("%s: middle %q has no counted code identifier", s.path, s.middle())
		}
		rf := s.requestFiles()
		if got := rf[s.file].Content; got != s.full[:s.start]+s.full[s.end:] {
			t.Errorf("%s: request file is not the masked text", s.path)
		}
		if files[s.file].Content != s.full {
			t.Errorf("%s: masking changed the repository's copy", s.path)
		}
	}
	for _, l := range []string{"Go", "Python", "TypeScript"} {
		if langs[l] == 0 {
			t.Errorf("no %s sample in %v", l, langs)
		}
	}
	again := draw()
	for i := range ss {
		if ss[i].path != again[i].path || ss[i].start != again[i].start || ss[i].end != again[i].end {
			t.Fatalf("sample %d differs between draws with one seed", i)
		}
	}
}

// TestScoreCodeAgainstProse scores a hand-made prompt: a needed name shown
// only in a comment of the context is found as a word, not as code.
func TestScoreCodeAgainstProse(t *testing.T) {
	files := []contextpack.File{
		{Path: "price.go", Content: "package p\n\n// helperName is not here yet.\nfunc ComputeTotal() int { return 0 }\n", HasContent: true},
		{Path: "cart.go", Content: "package p\n\nfunc Use() int {\n\treturn ComputeTotal() + helperName()\n}\n", HasContent: true},
	}
	r := newRepository(repoSpec{name: "t"}, 0, files)
	full := files[1].Content
	start := strings.Index(full, "ComputeTotal()")
	end := strings.Index(full, "\n}")
	s := &sample{repo: r, lang: "Go", path: "cart.go", file: 1, full: full, start: start, end: end,
		syntax: r.fileSyntax(1)}
	sc := newScorer(s)
	text := contextpack.RepoName + "t\n" + contextpack.FileSep + "price.go\n" + files[0].Content +
		contextpack.FileSep + "cart.go\n" + contextpack.FIMPrefix + full[:start] + contextpack.FIMSuffix + full[end:] +
		contextpack.FIMMiddle
	c, needed, found := sc.score(&contextpack.Prompt{Text: text})
	if c.CodeMid != 2 || c.CodeNeed != 2 || c.CodeFound != 1 || c.CodeFoundWord != 2 || c.CodeShown != 1 ||
		c.CodeNeedFile != 2 || c.CodeFoundFile != 1 {
		t.Errorf("scores %+v", c)
	}
	if joinSorted(needed) != "ComputeTotal helperName" || joinSorted(found) != "ComputeTotal" {
		t.Errorf("needed %v found %v", needed, found)
	}
	if c.CtxBytes != len(files[0].Content) || c.Unmatched != 0 {
		t.Errorf("context bytes %d, unmatched %d", c.CtxBytes, c.Unmatched)
	}
}

// TestRunDir measures the test repository end to end and checks that a
// seed gives the same results twice.
func TestRunDir(t *testing.T) {
	specs, err := dirRepos([]string{"shop=" + copyTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	o := options{samples: 12, budgets: []int{1024, 4096}, gen: 64, seed: 1, boot: 200, maxFiles: 4000,
		strategies: []contextpack.Strategy{contextpack.StrategyFused, contextpack.StrategyExecRepoBench,
			contextpack.StrategyJaccard}}
	manifests := filepath.Join(t.TempDir(), "prompts.jsonl.gz")
	measure := func() *results {
		mw, err := newManifestWriter(manifests)
		if err != nil {
			t.Fatal(err)
		}
		res, err := run(context.Background(), o, specs, mw, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		for i := range res.records {
			for _, cs := range res.records[i].cells {
				for j := range cs {
					cs[j].Nanos = 0
				}
			}
		}
		return res
	}
	res := measure()
	if len(res.records) != 12 || len(res.repos) != 1 || res.repos[0].Samples != 12 {
		t.Fatalf("%d records, repos %+v", len(res.records), res.repos)
	}
	for _, r := range res.records {
		for si := range r.cells {
			for _, c := range r.cells[si] {
				if c.CodeFound > c.CodeNeed || c.CodeNeed > c.CodeMid || c.CodeFound > c.CodeFoundWord ||
					c.ProseFound > c.ProseNeed || c.Tokens > 4096 || c.Unmatched != 0 ||
					c.CodeNeedFile > c.CodeNeed || c.CodeFoundFile > c.CodeFound || c.CodeNeedFile != r.cells[0][0].CodeNeedFile {
					t.Errorf("inconsistent cell %+v", c)
				}
			}
		}
	}
	md := report(res)
	for _, want := range []string{"## Code-identifier recall, all repositories", "### Budget 4096", "| **All** |",
		"| repo shop |", "| Go |", "fused − execrepobench", "### Import resolution", "### Where fused is not shown ahead", "Per-sample mean"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	checkManifests(t, manifests, res)
	again := measure()
	if !reflect.DeepEqual(aggregate(res), aggregate(again)) {
		t.Error("two runs with one seed differ")
	}
}

// checkManifests reads the JSON lines back: one per prompt, each
// agreeing with the run's scores.
func checkManifests(t *testing.T, name string, res *results) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(gz)
	n := 0
	for ; ; n++ {
		var ml manifestLine
		if err := dec.Decode(&ml); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		si, bi := n/len(res.opts.budgets)%len(res.opts.strategies), n%len(res.opts.budgets)
		rec := res.records[n/(len(res.opts.budgets)*len(res.opts.strategies))]
		c := rec.cells[si][bi]
		if ml.Strategy != res.opts.strategies[si].String() || ml.Budget != res.opts.budgets[bi] ||
			len(ml.CodeNeeded) != c.CodeNeed || len(ml.CodeFound) != c.CodeFound || ml.Cell.CodeMid != c.CodeMid ||
			ml.Middle == "" || len(ml.Sources) == 0 {
			t.Fatalf("line %d does not match its prompt's scores: %+v", n, ml)
		}
	}
	if want := len(res.records) * len(res.opts.strategies) * len(res.opts.budgets); n != want {
		t.Errorf("%d lines, want %d", n, want)
	}
}

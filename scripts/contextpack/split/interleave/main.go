//go:build ignore

// Command interleave times two contextpack implementations in one process,
// build by build: the old one (contextpack/internal/oldcp, put there by
// interleave.sh from an older commit) and the current one, each with its
// own Builder, on the same requests. Machine load then falls on both
// alike, and each pair of builds gives a ratio. It is not built with the
// module (build tag ignore); interleave.sh copies it into a scratch tree.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	newcp "github.com/infill-dev/infill/contextpack"
	oldcp "github.com/infill-dev/infill/contextpack/internal/oldcp"
	oldtok "github.com/infill-dev/infill/contextpack/internal/oldcp/tokenizer"
	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
	newtok "github.com/infill-dev/infill/contextpack/tokenizer"
)

type file struct{ path, content string }

func main() {
	edits := flag.Int("edits", 600, "warm builds after a one-file edit, per implementation")
	keys := flag.Int("keys", 2000, "warm builds while typing, per implementation")
	flag.Parse()
	gen := synthrepo.Generate(synthrepo.Options{})
	files := []file{{"go.mod", synthrepo.GoMod}}
	for _, f := range gen {
		files = append(files, file{f.Path, f.Content})
	}
	ot, err := oldtok.Qwen25()
	check(err)
	nt, err := newtok.Qwen25()
	check(err)
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
		oreq := oldcp.Request{RepoName: "synth", TokenBudget: 8192, MaxNewTokens: 128,
			Cursor: oldcp.Cursor{Path: cur, Offset: off, Encoding: oldcp.EncodingByteOffset}}
		nreq := newcp.Request{RepoName: "synth", TokenBudget: 8192, MaxNewTokens: 128,
			Cursor: newcp.Cursor{Path: cur, Offset: off, Encoding: newcp.EncodingByteOffset}}
		for k, f := range fs {
			if digest[k] {
				d := digests[k]
				oreq.Files = append(oreq.Files, oldcp.File{Path: f.path, Digest: d})
				nreq.Files = append(nreq.Files, newcp.File{Path: f.path, Digest: d})
			} else {
				oreq.Files = append(oreq.Files, oldcp.File{Path: f.path, Content: f.content, HasContent: true})
				nreq.Files = append(nreq.Files, newcp.File{Path: f.path, Content: f.content, HasContent: true})
			}
		}
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
		lines := strings.SplitAfter(files[j].content, "\n")
		li := r.IntN(len(lines))
		lines[li] = strings.Replace(lines[li], "e", "e"+string(rune('a'+r.IntN(26))), 1)
		off := 0
		for _, l := range lines[:li] {
			off += len(l)
		}
		off += len(lines[li]) - len(strings.TrimLeft(lines[li], " \t"))
		fs := slices.Clone(files)
		fs[j].content = strings.Join(lines, "")
		d := slices.Clone(asDigest)
		d[j] = false
		o, n := build(i, fs, d, fs[j].path, min(off, len(fs[j].content)))
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

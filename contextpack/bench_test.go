package contextpack

import (
	"context"
	"flag"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
)

// Latency targets (issue 3) on the generated 2,000-file, ~20 MB repository:
// warm p50 < 10 ms and p99 < 25 ms after a one-file edit. Run
//
//	go test ./contextpack -run '^$' -bench BuildWarm -benchtime 500x
//
// or contextpack/cmd/cpbench for the full report with percentiles.

// synthFilesFlag shrinks the generated repository (default 2,000 files):
// bench/gobench runs every benchmark once on 100 files, a smoke run.
var synthFilesFlag = flag.Int("synth-files", 0, "files in the benchmarks' generated repository (0: synthrepo's default, 2,000)")

func synthFiles(tb testing.TB) []File {
	tb.Helper()
	gen := synthrepo.Generate(synthrepo.Options{Files: *synthFilesFlag})
	files := make([]File, 0, len(gen)+1)
	files = append(files, File{Path: "go.mod", Content: synthrepo.GoMod, HasContent: true})
	for _, f := range gen {
		files = append(files, File{Path: f.Path, Content: f.Content, HasContent: true})
	}
	return files
}

func benchBuilder(tb testing.TB) *Builder {
	tb.Helper()
	b, err := NewBuilder(DefaultConfig(), qwen(tb), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// editedRequest edits one random file (a word replaced on a random line)
// and puts the cursor there; every other file goes as a digest.
func editedRequest(files []File, digests []string, r *rand.Rand) (Request, int) {
	j := 1 + r.IntN(len(files)-1)
	f := files[j]
	lines := strings.SplitAfter(f.Content, "\n")
	li := r.IntN(len(lines))
	lines[li] = strings.Replace(lines[li], "e", "e"+string(rune('a'+r.IntN(26))), 1)
	content := strings.Join(lines, "")
	off := 0
	for _, l := range lines[:li] {
		off += len(l)
	}
	off += len(lines[li]) - len(strings.TrimLeft(lines[li], " \t"))
	req := Request{RepoName: "synth", TokenBudget: 8192, MaxNewTokens: 128,
		Files:  make([]File, len(files)),
		Cursor: Cursor{Path: f.Path, Offset: min(off, len(content)), Encoding: EncodingByteOffset}}
	for i, g := range files {
		req.Files[i] = File{Path: g.Path, Digest: digests[i]}
	}
	req.Files[j] = File{Path: f.Path, Content: content, HasContent: true}
	return req, j
}

// warmSynthBuilder returns the generated repository and a Builder that
// has built it whole once (closed when the benchmark ends).
func warmSynthBuilder(b *testing.B) ([]File, *Builder) {
	files := synthFiles(b)
	bd := benchBuilder(b)
	b.Cleanup(bd.Close)
	if _, err := bd.Build(context.Background(), fullRequest(files)); err != nil {
		b.Fatal(err)
	}
	return files, bd
}

func fullRequest(files []File) Request {
	return Request{RepoName: "synth", Files: files, TokenBudget: 8192, MaxNewTokens: 128,
		Cursor: Cursor{Path: files[1].Path, Line: 3}}
}

// BenchmarkBuildCold: a new Builder receives the whole repository with
// content (hashing, parsing, indexing, assembly).
func BenchmarkBuildCold(b *testing.B) {
	files := synthFiles(b)
	req := fullRequest(files)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bd := benchBuilder(b)
		if _, err := bd.Build(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bd.Close()
		b.StartTimer()
	}
}

// BenchmarkBuildShrink: the generated repository, then a request under the
// same name with a few of its files (all but the cursor file as digests),
// as when a client narrows its repository: the index drops the rest.
func BenchmarkBuildShrink(b *testing.B) {
	files, bd := warmSynthBuilder(b)
	full := Request{RepoName: "synth", TokenBudget: 8192, MaxNewTokens: 128, Cursor: fullRequest(files).Cursor}
	for _, f := range files {
		full.Files = append(full.Files, File{Path: f.Path, Digest: Digest(f.Content)})
	}
	small := full
	small.Files = slices.Clone(full.Files[:3])
	small.Files[1] = files[1]
	b.ReportMetric(float64(len(files)), "files")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := bd.Build(context.Background(), full); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := bd.Build(context.Background(), small); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildWarmEdit: after a cold build, each iteration edits one
// random file, sends it with content and every other file as a digest,
// with the cursor at the edit.
func BenchmarkBuildWarmEdit(b *testing.B) {
	files, bd := warmSynthBuilder(b)
	digests := make([]string, len(files))
	for i, f := range files {
		digests[i] = Digest(f.Content)
	}
	r := rand.New(rand.NewPCG(1, 2))
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		req, _ := editedRequest(files, digests, r)
		b.StartTimer()
		t := time.Now()
		if _, err := bd.Build(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	testcorpus.ReportPercentiles(b, ds)
}

// BenchmarkBuildTyping: a statement typed key by key in one file of the
// generated repository, every other file sent as a digest, as an editor
// does; about one key in 40 is a newline (a new typing view), the others
// reuse the view's analysis, index and selection.
func BenchmarkBuildTyping(b *testing.B) {
	files, bd := warmSynthBuilder(b)
	req, j := editedRequest(files, make([]string, len(files)), rand.New(rand.NewPCG(3, 4)))
	for i, f := range files {
		if i != j {
			req.Files[i] = File{Path: f.Path, Digest: Digest(f.Content)}
		}
	}
	testcorpus.TypeKeys(b, req.Files[j].Content, req.Cursor.Offset, "resp, err := c.send(req, deadline)\n\t",
		func(content string, off int) error {
			req.Files[j] = File{Path: req.Files[j].Path, Content: content, HasContent: true}
			req.Cursor.Offset = off
			_, err := bd.Build(context.Background(), req)
			return err
		})
}

package httpapi_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/httpapi"
	"github.com/infill-dev/infill/server/pipeline"
)

// updating reports -update (the flag main_test.go defines for package
// httpapi's golden files, which rewrites these too).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// fakePipe stands in for the completion pipeline where a test needs exact,
// repeatable output (golden responses, error mapping): it records what the
// surface asked for and answers with scripted text. The real pipeline and
// backend are in the end-to-end tests.
type fakePipe struct {
	mu     sync.Mutex
	got    []*pipeline.Request
	deltas []string // text of each candidate, delta by delta
	finish inference.FinishReason
	err    error // returned after the deltas
	// gotEdits are the edit predictions asked (zed_test.go).
	gotEdits []*pipeline.EditRequest
}

func (f *fakePipe) Complete(ctx context.Context, req *pipeline.Request, st pipeline.Stream) (*pipeline.Result, error) {
	f.mu.Lock()
	f.got = append(f.got, req)
	f.mu.Unlock()
	const prompt = 120
	if st.OnStart != nil {
		if err := st.OnStart(pipeline.Start{Model: "qwen-test", Manifest: contextpack.Manifest{PromptTokens: prompt}}); err != nil {
			return nil, err
		}
	}
	n := max(req.Generation.Candidates, 1)
	res := &pipeline.Result{Model: "qwen-test", PromptTokens: prompt, PlannedPromptTokens: prompt,
		Assembly: 2 * time.Millisecond, PromptEval: 40 * time.Millisecond,
		TimeToFirstToken: 50 * time.Millisecond, Total: 250 * time.Millisecond}
	for i := range n {
		c := inference.Candidate{Index: i, Finish: f.finish}
		if c.Finish == inference.FinishUnknown {
			c.Finish = inference.FinishStop
		}
		if req.Generation.WarmOnly {
			res.Candidates = append(res.Candidates, inference.Candidate{Index: i, Finish: inference.FinishLength})
			continue
		}
		for _, d := range f.deltas {
			if st.OnDelta != nil {
				if err := st.OnDelta(i, d); err != nil {
					return nil, err
				}
			}
			c.Text += d
			c.Tokens++
		}
		res.Candidates = append(res.Candidates, c)
		res.CompletionTokens += c.Tokens
	}
	if f.err != nil {
		return nil, f.err
	}
	return res, ctx.Err()
}

func (f *fakePipe) requests() []*pipeline.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pipeline.Request(nil), f.got...)
}

// startFake serves the HTTP surfaces over pipe.
func startFake(t *testing.T, pipe httpapi.Completer, opts ...httpapi.Option) string {
	t.Helper()
	cfg := httpapi.DefaultConfig()
	cfg.MaxBodyBytes = 64 << 10
	cfg.DefaultModel = "qwen2.5-coder:1.5b-base"
	cfg.Version = "test"
	h, err := httpapi.New(cfg, pipe, nil, nil, zaptest.NewLogger(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string, body []byte) response {
	t.Helper()
	resp, b := httpapi.Send(t, context.Background(), method, url, string(body))
	return response{resp.StatusCode, resp.Header, b}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares the txtar archive of files with path, or rewrites
// it under -update.
func checkGolden(t *testing.T, path string, files ...txtar.File) {
	t.Helper()
	got := txtar.Format(&txtar.Archive{Files: files})
	if updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got ---\n%s\n--- want ---\n%s", filepath.Base(path), got, want)
	}
}

// describe renders what a surface asked of the pipeline, for golden files:
// the cursor file with the cursor marked, the other files, the options.
func describe(req *pipeline.Request) []byte {
	var b strings.Builder
	c := req.Context
	fmt.Fprintf(&b, "model: %q surface: %s class: %s repo: %q\n", req.Model, req.Surface, req.Class, c.RepoName)
	g := req.Generation
	fmt.Fprintf(&b, "generation: max_tokens=%d candidates=%d warm_only=%v min_indent=%d line_budget=%v temperature=%s top_k=%s top_p=%s seed=%s stop=%q\n",
		g.MaxTokens, g.Candidates, g.WarmOnly, g.MinIndent, g.LineBudget, ptr(g.Temperature), ptr(g.TopK), ptr(g.TopP), ptr(g.Seed), g.Stop)
	if req.LatencyBudget != nil {
		fmt.Fprintf(&b, "latency budget: %v\n", *req.LatencyBudget)
	}
	files := append([]contextpack.File(nil), c.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path == c.Cursor.Path && files[j].Path != c.Cursor.Path })
	for _, f := range files {
		text := f.Content
		if f.Path == c.Cursor.Path {
			text = text[:c.Cursor.Offset] + "<CURSOR>" + text[c.Cursor.Offset:]
			fmt.Fprintf(&b, "=== cursor file %s (language %q)\n%s\n", f.Path, f.Language, text)
			continue
		}
		fmt.Fprintf(&b, "=== file %s\n%s\n", f.Path, text)
	}
	return []byte(b.String())
}

func ptr[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

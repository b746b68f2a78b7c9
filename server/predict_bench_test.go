package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
)

// lastRequest is the real backend with the last request it was given
// kept, so that the direct path can send the very prompt infill sent.
type lastRequest struct {
	server.Backend
	mu   sync.Mutex
	last inference.Request
}

func (l *lastRequest) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	l.mu.Lock()
	l.last = req
	l.mu.Unlock()
	return l.Backend.Generate(ctx, req, d)
}

func (l *lastRequest) get() inference.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// directGenerate sends req to Ollama's /api/generate as infill's client
// does (raw, streamed, the same options and num_ctx) and reads the stream
// to its end; it returns the tokens generated.
func directGenerate(ctx context.Context, url string, numCtx int, keepAlive time.Duration, req inference.Request) (int, error) {
	stream, no := true, false
	body, _ := json.Marshal(&api.GenerateRequest{Model: req.Model, Prompt: req.Prompt, Raw: true, Stream: &stream,
		Truncate: &no, Shift: &no, KeepAlive: &api.Duration{Duration: keepAlive},
		Options: map[string]any{"num_ctx": numCtx, "num_predict": req.MaxTokens, "temperature": float32(0), "seed": int64(0),
			"stop": inference.QwenStops}})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m api.GenerateResponse
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return 0, err
		}
		if m.Done {
			return m.EvalCount, nil
		}
	}
	return 0, fmt.Errorf("stream ended without done: %v", sc.Err())
}

// BenchmarkPredictEditOverhead is what the edit-prediction path adds to
// the backend's latency, measured as the completion path's overhead is
// (bench/ghz's pair: infill against the same prompt sent straight to
// Ollama, side by side): the real server in front of the real Ollama (tiny
// model), a PredictEdit and the very prompt it sent straight to
// /api/generate, then a Complete at the same cursor and its prompt
// straight to Ollama. Each pair runs with the backend's prompt cache warm
// for its prompt (an unmeasured direct request first: Ollama keeps one
// cache per slot, and the edit and completion prompts differ), its two
// requests in alternating order; the repository (50 files) goes whole
// every time, as a client's first request does. Reported: each kind's p50
// and the p50 of the paired differences (infill minus its direct twin of
// the same round), for edits and completions; generation lengths are
// checked equal (greedy decoding, the same tokens). -benchtime Nx runs N
// rounds:
//
//	go test ./server -run '^$' -bench PredictEditOverhead -benchtime 30x
func BenchmarkPredictEditOverhead(b *testing.B) {
	rec := &lastRequest{}
	srv := servertest.StartWith(b, servertest.Options{Deps: func(d *server.Deps) {
		rec.Backend, d.Backend = d.Backend, rec
	}})
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec())))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := infillv1.NewCompletionServiceClient(conn)
	full, _ := benchRepository(50)
	full.Generation.MaxTokens = 16
	edit := &infillv1.PredictEditRequest{Repository: full.Repository, Cursor: full.Cursor, Generation: full.Generation,
		Format:      infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_ZETA,
		RecentEdits: []*infillv1.RecentEdit{{Path: full.Cursor.Path, Diff: "@@ -18,3 +18,3 @@\n-    if total > 5:\n+    if total > 10:\n"}}}
	ctx := context.Background()
	keepAlive := server.DefaultConfig().Inference.KeepAlive
	direct := func(req inference.Request) (int, error) {
		return directGenerate(ctx, srv.Backend.URL, rec.ContextTokens(req.Model), keepAlive, req)
	}
	infillEdit := func() (int, error) {
		r, err := client.PredictEdit(ctx, edit)
		return int(r.GetUsage().GetCompletionTokens()), err
	}
	infillComplete := func() (int, error) {
		r, err := client.Complete(ctx, proto.Clone(full).(*infillv1.CompleteRequest))
		return int(r.GetUsage().GetCompletionTokens()), err
	}
	// The prompts infill sends (the same every round: the request does not
	// change).
	if _, err := infillEdit(); err != nil {
		b.Fatal(err)
	}
	editReq := rec.get()
	if _, err := infillComplete(); err != nil {
		b.Fatal(err)
	}
	fimReq := rec.get()

	type pair struct {
		name           string
		infill, direct func() (int, error)
		req            inference.Request
		times          [2][]float64 // infill, direct
		tokens         [2]int
	}
	pairs := []*pair{
		{name: "edit", infill: infillEdit, req: editReq},
		{name: "complete", infill: infillComplete, req: fimReq},
	}
	for _, p := range pairs {
		p.direct = func() (int, error) { return direct(p.req) }
	}
	round := func(r int, keep bool) {
		for _, p := range pairs {
			if _, err := p.direct(); err != nil { // the cache warm for this prompt
				b.Fatal(err)
			}
			for k := range 2 {
				side := (k + r) % 2
				run := p.infill
				if side == 1 {
					run = p.direct
				}
				start := time.Now()
				n, err := run()
				d := time.Since(start)
				if err != nil {
					b.Fatalf("%s: %v", p.name, err)
				}
				if keep {
					p.times[side] = append(p.times[side], float64(d.Microseconds())/1000)
					p.tokens[side] = n
				}
			}
		}
	}
	round(0, false)
	b.ResetTimer()
	for r := 0; r < b.N; r++ {
		round(r, true)
	}
	b.StopTimer()
	p50 := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, p := range pairs {
		if p.tokens[0] != p.tokens[1] {
			b.Errorf("%s: infill generated %d tokens, the direct request %d", p.name, p.tokens[0], p.tokens[1])
		}
		diff := make([]float64, len(p.times[0]))
		for i := range diff {
			diff[i] = p.times[0][i] - p.times[1][i]
		}
		b.ReportMetric(p50(p.times[0]), p.name+"-p50-ms")
		b.ReportMetric(p50(p.times[1]), p.name+"-direct-p50-ms")
		b.ReportMetric(p50(diff), p.name+"-overhead-p50-ms")
		b.ReportMetric(float64(p.req.PromptTokens), p.name+"-prompt-tokens")
	}
	b.ReportMetric(0, "ns/op") // a round is six requests: the figures above are the measure
}

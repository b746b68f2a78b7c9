package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/ollama/ollama/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// The three kinds of request a round makes.
const (
	kindComplete = "complete" // infill Complete (unary)
	kindStream   = "stream"   // infill StreamComplete
	kindDirect   = "direct"   // the same prompt straight to Ollama /api/generate
)

var kinds = []string{kindComplete, kindStream, kindDirect}

// sample is one measured request.
type sample struct {
	Round     int     `json:"round"`
	Kind      string  `json:"kind"`
	LatencyMs float64 `json:"latency_ms"`
	// TTFTMs is the time to the first text (StreamComplete and direct).
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	// Tokens generated, as reported by the server / backend.
	Tokens int `json:"tokens"`
	// ServerAssemblyMs and ServerTotalMs are infill's own timings.
	ServerAssemblyMs float64 `json:"server_assembly_ms,omitempty"`
	ServerTotalMs    float64 `json:"server_total_ms,omitempty"`
	// BackendTotalMs is Ollama's total_duration for a direct request.
	BackendTotalMs float64 `json:"backend_total_ms,omitempty"`
	Err            string  `json:"error,omitempty"`
	text           string
}

// kindStats summarises one kind of request.
type kindStats struct {
	Count             int     `json:"count"`
	Errors            int     `json:"errors"`
	P50Ms             float64 `json:"p50_ms"`
	P90Ms             float64 `json:"p90_ms"`
	P99Ms             float64 `json:"p99_ms"`
	MeanMs            float64 `json:"mean_ms"`
	MinMs             float64 `json:"min_ms"`
	MaxMs             float64 `json:"max_ms"`
	TTFTP50Ms         float64 `json:"ttft_p50_ms,omitempty"`
	ServerAssemblyP50 float64 `json:"server_assembly_p50_ms,omitempty"`
	TokensP50         float64 `json:"tokens_p50"`
}

// overhead compares an infill kind with the direct requests.
type overhead struct {
	// MedianDeltaMs is p50(infill) - p50(direct).
	MedianDeltaMs float64 `json:"median_delta_ms"`
	// Ratio is p50(infill) / p50(direct) - 1.
	Ratio float64 `json:"ratio"`
	// PairedMedianMs and PairedP90Ms are over the per-round differences
	// infill - direct (both requests of a round ran back to back, so slow
	// phases of the shared machine hit both).
	PairedMedianMs float64 `json:"paired_median_ms"`
	PairedP90Ms    float64 `json:"paired_p90_ms"`
	Pairs          int     `json:"pairs"`
	// CILowMs/CIHighMs bound PairedMedianMs and RatioLow/RatioHigh bound
	// Ratio: 95% bootstrap intervals over rounds (2,000 resamples, fixed
	// seed), which say whether the machine's noise allows a verdict.
	CILowMs   float64 `json:"paired_median_ci95_low_ms"`
	CIHighMs  float64 `json:"paired_median_ci95_high_ms"`
	RatioLow  float64 `json:"ratio_ci95_low"`
	RatioHigh float64 `json:"ratio_ci95_high"`
}

// verification is the proof that infill and the direct path sent the
// backend the same request (fake backend only).
type verification struct {
	Checked       bool   `json:"checked"`
	SameRequest   bool   `json:"same_request"`
	PromptMatches bool   `json:"prompt_matches_contextpack"`
	Detail        string `json:"detail,omitempty"`
}

// pairResult is the output of one pair run.
type pairResult struct {
	Label        string `json:"label"`
	Payload      string `json:"payload"`
	N            int    `json:"n"`
	Variant      string `json:"variant"`
	Backend      string `json:"backend"`
	Rounds       int    `json:"rounds"`
	Warmup       int    `json:"warmup"`
	NumCtx       int    `json:"num_ctx"`
	MaxTokens    int    `json:"max_tokens"`
	PromptTokens int    `json:"prompt_tokens"`
	PromptBytes  int    `json:"prompt_bytes"`
	// RequestBytes is the request infill receives; with -typing, the
	// median of the typed requests as sent.
	RequestBytes int `json:"request_bytes"`
	SameText     int `json:"same_text_rounds"`
	// TypingEdits marks typed requests that carry the cursor file as an
	// edit (File.edits) rather than its content.
	TypingEdits bool         `json:"typing_edits,omitempty"`
	Verify      verification `json:"verify"`
	// ZeroLatency marks a backend that answers at once (the 0 ms fake):
	// there the 5% target is meaningless and only the absolute one applies.
	ZeroLatency bool `json:"zero_latency_backend,omitempty"`
	// DirectClient is what sent the direct requests.
	DirectClient string `json:"direct_client"`
	// ServerCPUMsPerCall is infill-server's CPU time (user+system, all
	// threads, from /proc) over the measured rounds divided by its calls
	// (Complete and StreamComplete): infill's own work, whatever the load.
	ServerCPUMsPerCall float64              `json:"server_cpu_ms_per_call,omitempty"`
	Kinds              map[string]kindStats `json:"kinds"`
	Overhead           map[string]overhead  `json:"overhead"`
	Started            time.Time            `json:"started"`
	WallS              float64              `json:"wall_s"`
	Samples            []sample             `json:"samples"`
}

type pairOpts struct {
	infillAddr, ollamaURL, model, payload, label, backend, out, fakeURL string
	numCtx, rounds, warmup, serverPID                                   int
	digest, snapshot, zero, apiClient, typing, typingEdits              bool
	keepAlive, timeout                                                  time.Duration
}

func pairCmd(args []string) error {
	var o pairOpts
	fl := flag.NewFlagSet("pair", flag.ContinueOnError)
	fl.StringVar(&o.infillAddr, "infill", "", "infill-server gRPC address (host:port)")
	fl.StringVar(&o.ollamaURL, "ollama", "", "Ollama URL the server uses (http://host:port)")
	fl.StringVar(&o.model, "model", "infill-tiny", "model (the server's --model)")
	fl.IntVar(&o.numCtx, "num-ctx", 8192, "the server's --num-ctx")
	fl.DurationVar(&o.keepAlive, "keep-alive", 30*time.Minute, "the server's --keep-alive")
	fl.StringVar(&o.payload, "payload", "", "full payload file from `benchtool payload` (nN-full.json)")
	fl.BoolVar(&o.digest, "digest", false, "send infill the digest variant (after one full request seeds the server)")
	fl.BoolVar(&o.snapshot, "snapshot", false, "send infill only the cursor file on the repository snapshot of a first full request (Repository.base)")
	fl.IntVar(&o.rounds, "rounds", 30, "measured rounds (each: Complete, StreamComplete, direct, in rotating order)")
	fl.IntVar(&o.warmup, "warmup", 3, "unmeasured rounds first")
	fl.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline of one request")
	fl.StringVar(&o.label, "label", "", "label in the report")
	fl.StringVar(&o.backend, "backend", "ollama", "backend kind for the report (ollama or fake...)")
	fl.StringVar(&o.fakeURL, "verify-fake", "", "fakeollama URL: check that both paths send it the same request")
	fl.StringVar(&o.out, "out", "", "result JSON file (required)")
	fl.IntVar(&o.serverPID, "server-pid", 0, "infill-server's pid, to measure its CPU time per call")
	fl.BoolVar(&o.apiClient, "direct-api-client", false, "send the direct requests with github.com/ollama/ollama/api.Client (as infill does) instead of a plain HTTP client")
	fl.BoolVar(&o.zero, "zero-latency", false, "the backend answers at once (only the absolute target applies)")
	fl.BoolVar(&o.typing, "typing", false, "type one character at the cursor before every infill request, as an editor does (no two requests are the same)")
	fl.BoolVar(&o.typingEdits, "typing-edits", true, "with -typing, send the cursor file as an edit to the text infill last received (File.edits), as the Go client does; false sends its content")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if o.infillAddr == "" || o.ollamaURL == "" || o.payload == "" || o.out == "" {
		return errors.New("-infill, -ollama, -payload and -out are required")
	}
	if o.rounds < 1 || o.warmup < 0 || o.rounds > 100000 {
		return errors.New("-rounds must be in 1..100000 and -warmup >= 0")
	}
	res, err := runPair(o)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.out, append(b, '\n')); err != nil {
		return err
	}
	c, s, d := res.Kinds[kindComplete], res.Kinds[kindStream], res.Kinds[kindDirect]
	fmt.Printf("%-28s p50 complete %.1f ms, stream %.1f ms, direct %.1f ms; overhead p50 %+.2f ms (%+.1f%%), paired %+.2f ms; errors %d/%d/%d\n",
		res.Label, c.P50Ms, s.P50Ms, d.P50Ms, res.Overhead[kindComplete].MedianDeltaMs, 100*res.Overhead[kindComplete].Ratio,
		res.Overhead[kindComplete].PairedMedianMs, c.Errors, s.Errors, d.Errors)
	return nil
}

// pairRunner holds the clients and the two versions of the request.
type pairRunner struct {
	o          pairOpts
	grpc       infillv1.CompletionServiceClient
	ollama     *api.Client
	http       *http.Client
	base       string
	full, send *infillv1.CompleteRequest
	direct     *api.GenerateRequest
	prompt     string
	typer      *typer // with -typing
	typedBytes []float64
}

func runPair(o pairOpts) (*pairResult, error) {
	full, err := readPayload(o.payload)
	if err != nil {
		return nil, err
	}
	pb, err := newPromptBuilder(o.numCtx)
	if err != nil {
		return nil, err
	}
	defer pb.Close()
	prompt, maxTokens, err := buildPrompt(pb, full, o.numCtx)
	if err != nil {
		return nil, fmt.Errorf("building the prompt as infill does: %w", err)
	}
	conn, err := grpc.NewClient(o.infillAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20),
			grpc.ForceCodecV2(infillv1.Codec())))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	u, err := url.Parse(o.ollamaURL)
	if err != nil {
		return nil, err
	}
	r := &pairRunner{o: o, grpc: infillv1.NewCompletionServiceClient(conn), full: full, send: full,
		ollama: api.NewClient(u, newHTTPClient()), http: newHTTPClient(), base: strings.TrimRight(u.String(), "/"), direct: directRequest(full, prompt.Text, maxTokens, o), prompt: prompt.Text}
	// Seed the server with the content (the digest and snapshot variants
	// need it) and learn the repository snapshot it names.
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	seed, err := r.grpc.Complete(ctx, full)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("first request: %w", err)
	}
	variant := "full"
	switch {
	case o.snapshot:
		if seed.GetRepositorySnapshot() == "" {
			return nil, errors.New("-snapshot: the server named no repository snapshot")
		}
		r.send, variant = snapshotVariant(full, seed.GetRepositorySnapshot()), "snapshot"
	case o.digest:
		r.send, variant = digestVariant(full), "digest"
	}
	if o.typing {
		if r.typer, err = newTyper(r.send, pb, o); err != nil {
			return nil, err
		}
		variant += "-typing"
	}
	res := &pairResult{Label: o.label, Payload: o.payload, N: len(full.GetRepository().GetFiles()), Variant: variant,
		Backend: o.backend, Rounds: o.rounds, Warmup: o.warmup, NumCtx: o.numCtx, MaxTokens: maxTokens,
		PromptTokens: prompt.Tokens, PromptBytes: len(prompt.Text), RequestBytes: proto.Size(r.send),
		Started: time.Now().UTC()}
	if res.Label == "" {
		res.Label = fmt.Sprintf("%s n%d-%s", o.backend, res.N, variant)
	}

	// Warm every cache on the path: contextpack's store and index, the
	// backend's prompt cache, both connections.
	for w := 0; w < o.warmup; w++ {
		reqs, err := r.nextRound()
		if err != nil {
			return nil, err
		}
		for _, k := range kinds {
			if s := r.call(k, reqs, 0); s.Err != "" {
				return nil, fmt.Errorf("warm-up %s: %s", k, s.Err)
			}
		}
	}
	if o.fakeURL != "" {
		reqs, err := r.nextRound()
		if err != nil {
			return nil, err
		}
		res.Verify = r.verifyFake(reqs)
		if !res.Verify.SameRequest || !res.Verify.PromptMatches {
			return nil, fmt.Errorf("infill and the direct path do not send the same request: %s", res.Verify.Detail)
		}
	}

	cpu0, cpuErr := processCPU(o.serverPID)
	start := time.Now()
	for round := 0; round < o.rounds; round++ {
		reqs, err := r.nextRound()
		if err != nil {
			return nil, err
		}
		byKind := map[string]sample{}
		for i := range kinds {
			k := kinds[(i+round)%len(kinds)] // rotate: no kind always runs first
			s := r.call(k, reqs, round)
			byKind[k] = s
			res.Samples = append(res.Samples, s)
		}
		if c, d := byKind[kindComplete], byKind[kindDirect]; c.Err == "" && d.Err == "" && c.text == d.text {
			res.SameText++
		}
	}
	res.WallS = round3(time.Since(start).Seconds())
	if cpu1, err := processCPU(o.serverPID); o.serverPID > 0 && cpuErr == nil && err == nil {
		res.ServerCPUMsPerCall = round3(ms(cpu1-cpu0) / float64(2*o.rounds))
	}
	res.ZeroLatency = o.zero
	res.DirectClient = "plain net/http + NDJSON"
	if o.apiClient {
		res.DirectClient = "ollama api.Client"
	}
	res.Kinds, res.Overhead = summarisePairs(res.Samples)
	if len(r.typedBytes) > 0 { // the requests typed, as sent
		slices.Sort(r.typedBytes)
		res.RequestBytes = int(percentile(r.typedBytes, 50))
		res.TypingEdits = o.typingEdits
	}
	return res, nil
}

// roundRequests are the requests of one round: what each kind sends
// infill (the direct kind's entry is the request its prompt was built
// for), the direct request and its prompt.
type roundRequests struct {
	infill map[string]*infillv1.CompleteRequest
	direct *api.GenerateRequest
	prompt string
}

// nextRound returns the next round's requests: the payload's each time, or
// with -typing, a new keystroke before each infill request (Complete and
// the direct request share one, so their texts can be compared).
func (r *pairRunner) nextRound() (roundRequests, error) {
	if r.typer == nil {
		return roundRequests{infill: map[string]*infillv1.CompleteRequest{kindComplete: r.send, kindStream: r.send, kindDirect: r.send},
			direct: r.direct, prompt: r.prompt}, nil
	}
	c, direct, prompt, err := r.typer.next()
	if err != nil {
		return roundRequests{}, err
	}
	st, _, _, err := r.typer.next()
	if err != nil {
		return roundRequests{}, err
	}
	return roundRequests{infill: map[string]*infillv1.CompleteRequest{kindComplete: c, kindStream: st, kindDirect: c},
		direct: direct, prompt: prompt}, nil
}

// newPromptBuilder is a contextpack Builder configured as infill-server's:
// server.DefaultConfig's contextpack configuration with num_ctx as the
// context and the Qwen2.5 tokenizer.
func newPromptBuilder(numCtx int) (*contextpack.Builder, error) {
	cfg := server.DefaultConfig()
	cfg.Inference.ContextTokens = numCtx
	cfg.Context.ContextTokens = numCtx
	tok, err := tokenizer.Qwen25()
	if err != nil {
		return nil, err
	}
	return contextpack.NewBuilder(cfg.Context, tok, nil)
}

// buildPrompt builds the prompt exactly as infill-server does for req with
// b (from newPromptBuilder) and the server's budget rules.
func buildPrompt(b *contextpack.Builder, req *infillv1.CompleteRequest, numCtx int) (*contextpack.Prompt, int, error) {
	cfg := server.DefaultConfig()
	maxTokens := int(req.GetGeneration().GetMaxTokens())
	if maxTokens <= 0 {
		maxTokens = cfg.Inference.DefaultMaxTokens
	}
	budget := numCtx
	if tb := int(req.GetTokenBudget()); tb > 0 && tb < budget {
		budget = tb
	}
	cur := req.GetCursor()
	if cur.GetEncoding() != infillv1.PositionEncoding_POSITION_ENCODING_UTF16 &&
		cur.GetEncoding() != infillv1.PositionEncoding_POSITION_ENCODING_UNSPECIFIED {
		return nil, 0, errors.New("payloads use UTF-16 cursors only")
	}
	creq := contextpack.Request{RepoName: req.GetRepository().GetName(), TokenBudget: budget, MaxNewTokens: maxTokens,
		Base: req.GetRepository().GetBase(), Removed: req.GetRepository().GetRemoved(),
		Cursor: contextpack.Cursor{Path: cur.GetPath(), Line: int(cur.GetLine()), Column: int(cur.GetColumn()),
			Encoding: contextpack.EncodingUTF16}}
	creq.Files = server.ContextFiles(req.GetRepository().GetFiles())
	p, err := b.Build(context.Background(), creq)
	return p, maxTokens, err
}

// directRequest is the /api/generate request inference.Ollama sends for
// candidate 0 of req (same fields, same options).
func directRequest(req *infillv1.CompleteRequest, prompt string, maxTokens int, o pairOpts) *api.GenerateRequest {
	gen := req.GetGeneration()
	opts := map[string]any{
		"num_ctx":     o.numCtx,
		"num_predict": maxTokens,
		"temperature": float32(0),
		"seed":        gen.GetSeed(),
		"stop":        inference.QwenStops,
	}
	if gen != nil && gen.Temperature != nil {
		opts["temperature"] = gen.GetTemperature()
	}
	if gen != nil && gen.TopP != nil {
		opts["top_p"] = gen.GetTopP()
	}
	stream, no := true, false
	model := req.GetModel()
	if model == "" {
		model = o.model
	}
	return &api.GenerateRequest{Model: model, Prompt: prompt, Raw: true, Stream: &stream, Truncate: &no, Shift: &no,
		KeepAlive: &api.Duration{Duration: o.keepAlive}, Options: opts}
}

// newHTTPClient matches the transport inference.NewOllama uses.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 64,
		IdleConnTimeout: 90 * time.Second}}
}

// call runs one call of kind with the round's requests; with -typing,
// the infill request goes as infill receives it (typer.wire), and its size
// is recorded.
func (r *pairRunner) call(kind string, reqs roundRequests, round int) sample {
	req := reqs.infill[kind]
	if r.typer == nil || kind == kindDirect {
		return r.do(kind, req, reqs.direct, round)
	}
	req, commit := r.typer.wire(req)
	r.typedBytes = append(r.typedBytes, float64(proto.Size(req)))
	s := r.do(kind, req, reqs.direct, round)
	if s.Err == "" {
		commit()
	}
	return s
}

func (r *pairRunner) do(kind string, req *infillv1.CompleteRequest, direct *api.GenerateRequest, round int) sample {
	ctx, cancel := context.WithTimeout(context.Background(), r.o.timeout)
	defer cancel()
	s := sample{Round: round, Kind: kind}
	start := time.Now()
	var err error
	switch kind {
	case kindComplete:
		var resp *infillv1.CompleteResponse
		resp, err = r.grpc.Complete(ctx, req)
		if err == nil {
			s.Tokens = int(resp.GetUsage().GetCompletionTokens())
			s.ServerAssemblyMs = ms(resp.GetTimings().GetContextAssembly().AsDuration())
			s.ServerTotalMs = ms(resp.GetTimings().GetTotal().AsDuration())
			if c := resp.GetCandidates(); len(c) > 0 {
				s.text = c[0].GetText()
			}
		}
	case kindStream:
		sreq := infill.StreamRequest(req) // every field, including ones added later
		var st grpc.ServerStreamingClient[infillv1.StreamCompleteResponse]
		st, err = r.grpc.StreamComplete(ctx, sreq)
		for err == nil {
			var m *infillv1.StreamCompleteResponse
			m, err = st.Recv()
			if err != nil {
				break
			}
			if d := m.GetDelta(); d != nil && s.TTFTMs == 0 && d.GetText() != "" {
				s.TTFTMs = ms(time.Since(start))
			}
			if done := m.GetDone(); done != nil {
				s.Tokens = int(done.GetUsage().GetCompletionTokens())
				s.ServerAssemblyMs = ms(done.GetTimings().GetContextAssembly().AsDuration())
				s.ServerTotalMs = ms(done.GetTimings().GetTotal().AsDuration())
				if c := done.GetCandidates(); len(c) > 0 {
					s.text = c[0].GetText()
				}
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	case kindDirect:
		var text strings.Builder
		var done bool
		generate := r.leanGenerate
		if r.o.apiClient {
			generate = r.ollama.Generate
		}
		err = generate(ctx, direct, func(g api.GenerateResponse) error {
			if g.Response != "" {
				if s.TTFTMs == 0 {
					s.TTFTMs = ms(time.Since(start))
				}
				text.WriteString(g.Response)
			}
			if g.Done {
				done = true
				s.Tokens = g.EvalCount
				s.BackendTotalMs = ms(g.TotalDuration)
			}
			return nil
		})
		if err == nil && !done {
			err = errors.New("stream ended without done")
		}
		s.text = text.String()
	}
	s.LatencyMs = ms(time.Since(start))
	if err != nil {
		s.Err = err.Error()
	}
	return s
}

// leanGenerate is a plain streaming client for /api/generate: the same
// request body as api.Client (json.Marshal of the same struct), NDJSON read
// line by line with a small reused buffer. api.Client allocates an 8 MiB
// scan buffer per call (ollama v0.24.0 api/client.go), which a client
// talking to Ollama directly need not pay, so it is not the baseline.
func (r *pairRunner) leanGenerate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/x-ndjson")
	resp, err := r.http.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var g struct {
				api.GenerateResponse
				Error string `json:"error"`
			}
			if jerr := json.Unmarshal(line, &g); jerr != nil {
				return jerr
			}
			if g.Error != "" {
				return errors.New(g.Error)
			}
			if ferr := fn(g.GenerateResponse); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// verifyFake sends one request each way and compares what fakeollama saw.
func (r *pairRunner) verifyFake(reqs roundRequests) verification {
	v := verification{Checked: true}
	get := func() (map[string]any, error) { return fakeLast(r.o.fakeURL) }
	if s := r.call(kindComplete, reqs, 0); s.Err != "" {
		v.Detail = s.Err
		return v
	}
	viaInfill, err := get()
	if err != nil {
		v.Detail = err.Error()
		return v
	}
	if s := r.call(kindDirect, reqs, 0); s.Err != "" {
		v.Detail = s.Err
		return v
	}
	direct, err := get()
	if err != nil {
		v.Detail = err.Error()
		return v
	}
	sum := sha256.Sum256([]byte(reqs.prompt))
	v.PromptMatches = viaInfill["prompt_sha256"] == hex.EncodeToString(sum[:])
	v.SameRequest = reflect.DeepEqual(viaInfill, direct)
	if !v.SameRequest || !v.PromptMatches {
		a, _ := json.Marshal(viaInfill)
		b, _ := json.Marshal(direct)
		v.Detail = fmt.Sprintf("via infill %s; direct %s", a, b)
	}
	return v
}

func summarisePairs(samples []sample) (map[string]kindStats, map[string]overhead) {
	return summariseAgainst(samples, kinds, kindDirect)
}

// summariseAgainst summarises the samples of each of ks and the overhead of
// each over base, round by round.
func summariseAgainst(samples []sample, ks []string, base string) (map[string]kindStats, map[string]overhead) {
	stats := map[string]kindStats{}
	lat := map[string][]float64{}
	byRound := map[string]map[int]float64{}
	for _, k := range ks {
		byRound[k] = map[int]float64{}
		var l, ttft, asm, tok []float64
		st := kindStats{}
		for _, s := range samples {
			if s.Kind != k {
				continue
			}
			st.Count++
			if s.Err != "" {
				st.Errors++
				continue
			}
			l = append(l, s.LatencyMs)
			byRound[k][s.Round] = s.LatencyMs
			if s.TTFTMs > 0 {
				ttft = append(ttft, s.TTFTMs)
			}
			if s.ServerAssemblyMs > 0 {
				asm = append(asm, s.ServerAssemblyMs)
			}
			tok = append(tok, float64(s.Tokens))
		}
		d := describe(l)
		st.P50Ms, st.P90Ms, st.P99Ms, st.MeanMs, st.MinMs, st.MaxMs = d.p50, d.p90, d.p99, d.mean, d.min, d.max
		st.TTFTP50Ms = describe(ttft).p50
		st.ServerAssemblyP50 = describe(asm).p50
		st.TokensP50 = describe(tok).p50
		stats[k] = st
		lat[k] = l
	}
	over := map[string]overhead{}
	for _, k := range ks {
		if k == base {
			continue
		}
		var diffs []float64
		for round, v := range byRound[k] {
			if dv, ok := byRound[base][round]; ok {
				diffs = append(diffs, v-dv)
			}
		}
		o := overhead{Pairs: len(diffs)}
		if dd := describe(diffs); len(diffs) > 0 {
			o.PairedMedianMs, o.PairedP90Ms = dd.p50, dd.p90
		}
		if p, q := stats[k].P50Ms, stats[base].P50Ms; q > 0 {
			o.MedianDeltaMs = round3(p - q)
			o.Ratio = round4(p/q - 1)
		}
		o.CILowMs, o.CIHighMs, o.RatioLow, o.RatioHigh = bootstrap(byRound[k], byRound[base])
		over[k] = o
	}
	return stats, over
}

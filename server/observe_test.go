package server_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/metrics/scrape"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// heldBackend answers "xxx" (three deltas) once released (release nil: at
// once), with finish as the finish reason; started receives a value as
// each generation begins. The one-token probes of abandoned requests are
// answered at once.
type heldBackend struct {
	release chan struct{}
	started chan struct{}
	finish  atomic.Int32 // inference.FinishReason
	err     atomic.Pointer[error]
}

func newHeld(release bool) *heldBackend {
	b := &heldBackend{started: make(chan struct{}, 8)}
	if release {
		b.release = make(chan struct{})
	}
	b.finish.Store(int32(inference.FinishStop))
	return b
}

func (b *heldBackend) Ping(context.Context) error            { return nil }
func (b *heldBackend) Model(string) string                   { return "m" }
func (b *heldBackend) ContextTokens(string) int              { return 4096 }
func (b *heldBackend) MaxTokens(n int) int                   { return max(n, 16) }
func (b *heldBackend) CheckOptions(*inference.Request) error { return nil }
func (b *heldBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	if req.MaxTokens == 1 { // the probe of an abandoned request: the backend is free
		return &inference.Result{Model: "m", Candidates: []inference.Candidate{{Finish: inference.FinishLength}}}, nil
	}
	if b.started != nil {
		select {
		case b.started <- struct{}{}:
		default:
		}
	}
	if b.release != nil {
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := b.err.Load(); err != nil {
		return nil, *err
	}
	for range 3 {
		if err := d(0, "x"); err != nil {
			return nil, err
		}
	}
	return &inference.Result{Model: "m", PromptEvalTokens: req.PromptTokens,
		Candidates: []inference.Candidate{{Text: "xxx", Finish: inference.FinishReason(b.finish.Load()), Tokens: 3}}}, nil
}

// observed is a server with every listener (gRPC, HTTP, metrics), the real
// context builder and a test backend.
type observed struct {
	srv        *server.Server
	conn       *grpc.ClientConn
	client     infillv1.CompletionServiceClient
	httpURL    string
	metricsURL string
}

func startObserved(t *testing.T, be server.Backend, log *zap.Logger, mutate func(*server.Config)) *observed {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.ShutdownGrace = 500 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	builder, err := contextpack.NewBuilder(cfg.Context, tok, log.Named("contextpack"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(builder.Close) // after the server's shutdown (registered later)
	srv, err := server.New(cfg, server.Deps{Builder: builder, Backend: be}, log)
	if err != nil {
		t.Fatal(err)
	}
	var lis [3]net.Listener
	for i := range lis {
		if lis[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{}, 3)
	go func() { _ = srv.Serve(lis[0]); done <- struct{}{} }()
	go func() { _ = srv.ServeHTTP(lis[1]); done <- struct{}{} }()
	go func() { _ = srv.ServeMetrics(lis[2]); done <- struct{}{} }()
	conn, err := grpc.NewClient(lis[0].Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Shutdown(context.Background())
		for range 3 {
			<-done
		}
	})
	return &observed{srv: srv, conn: conn, client: infillv1.NewCompletionServiceClient(conn),
		httpURL: "http://" + lis[1].Addr().String(), metricsURL: "http://" + lis[2].Addr().String()}
}

func (o *observed) scrape(t *testing.T) scrape.Families {
	t.Helper()
	f, err := scrape.Get(context.Background(), o.metricsURL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitMetric polls until family name (with labels) reaches want.
func (o *observed) waitMetric(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := o.scrape(t).Value(name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const completeMethod = "/infill.v1.CompletionService/Complete"

// sessionRequest is request(8) in session id of client "editor", with the
// cursor after typed (appended to the line of the cursor).
func sessionRequest(id, typed string) *infillv1.CompleteRequest {
	r := request(8)
	src := strings.Replace(pySource, "    return \n", "    return "+typed+"\n", 1)
	r.Repository.Files[0].Content = proto.String(src)
	r.Cursor.Column += uint32(len(typed))
	r.ClientId, r.SessionId = "editor", id
	return r
}

// TestMetrics drives every kind of outcome through the real server (real
// context builder, a scripted backend) and reads them back from /metrics.
func TestMetrics(t *testing.T) {
	t.Parallel()
	be := newHeld(false)
	o := startObserved(t, be, zap.NewNop(), nil)
	ctx := context.Background()

	// Two completions and a stream: OK; the same request twice hits the
	// prompt memo; the second sends its file as a digest.
	if _, err := o.client.Complete(ctx, request(8)); err != nil {
		t.Fatal(err)
	}
	byDigest := request(8)
	byDigest.Repository.Files[0] = &infillv1.File{Path: "geo/circle.py", Digest: contextpack.Digest(pySource)}
	if _, err := o.client.Complete(ctx, byDigest); err != nil {
		t.Fatal(err)
	}
	if err := drain(o.client.StreamComplete(ctx, streamRequest(request(8)))); err != nil {
		t.Fatal(err)
	}
	// A digest the server does not hold, and a request the pipeline
	// refuses.
	unknown := request(8)
	unknown.Repository.Files[0] = &infillv1.File{Path: "geo/circle.py", Digest: contextpack.Digest("nope")}
	if _, err := o.client.Complete(ctx, unknown); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("unknown digest: %v", err)
	}
	bad := request(8)
	bad.Cursor.Path = ""
	if _, err := o.client.Complete(ctx, bad); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no cursor path: %v", err)
	}
	// A method the server does not have: no label of its name.
	if err := o.conn.Invoke(ctx, "/no.Such/Method", request(1), new(infillv1.CompleteResponse)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
	// Typed-through: the user types the first "x" of "xxx".
	if _, err := o.client.Complete(ctx, sessionRequest("s1", "")); err != nil {
		t.Fatal(err)
	}
	if r, err := o.client.Complete(ctx, sessionRequest("s1", "x")); err != nil || !r.Reused {
		t.Fatalf("typed through: reused %v, %v", r.GetReused(), err)
	}
	// One llama.cpp completion over HTTP.
	body := `{"input_prefix": "def f():\n    return ", "input_suffix": "\n", "n_predict": 4}`
	resp, err := http.Post(o.httpURL+"/infill", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("llama.cpp /infill: %s, X-Request-Id %q", resp.Status, resp.Header.Get("X-Request-Id"))
	}

	// The counts are taken when a call ends, after its response is on
	// its way: wait for the last gRPC one.
	o.waitMetric(t, 4, "infill_requests_total", "surface", "grpc", "method", completeMethod, "code", "OK")
	f := o.scrape(t)
	for _, c := range []struct {
		want   float64
		name   string
		labels []string
	}{
		{1, "infill_requests_total", []string{"surface", "grpc", "method", "/infill.v1.CompletionService/StreamComplete", "code", "OK"}},
		{1, "infill_requests_total", []string{"surface", "grpc", "method", completeMethod, "code", "FailedPrecondition"}},
		{1, "infill_requests_total", []string{"surface", "grpc", "method", completeMethod, "code", "InvalidArgument"}},
		{1, "infill_requests_total", []string{"surface", "llama.cpp", "method", "/infill", "code", "200"}},
		// Seven completions reached the pipeline over gRPC; five were
		// served, four by the backend (three tokens each) and one
		// typed-through; the llama.cpp one waited for a slot too.
		{7, "infill_completion_duration_seconds", []string{"surface", "grpc"}},
		{5, "infill_completion_time_to_first_token_seconds", []string{"surface", "grpc"}},
		{5, "infill_completion_context_assembly_seconds", []string{"surface", "grpc"}},
		{5, "infill_completion_queue_wait_seconds", []string{"class", "interactive"}},
		{12, "infill_generated_tokens_total", []string{"surface", "grpc"}},
		{1, "infill_completion_duration_seconds", []string{"surface", "llama.cpp"}},
		{1, "infill_cache_hits_total", []string{"cache", "typed_through"}},
		{1, "infill_cache_hits_total", []string{"cache", "content_store"}},
		{1, "infill_cache_misses_total", []string{"cache", "content_store"}},
		{4, "grpc_server_handled_total", []string{"grpc_method", "Complete", "grpc_code", "OK"}},
		{1, "infill_backend_up", nil},
		{0, "infill_completions_in_flight", nil},
		{0, "infill_backend_slots_busy", nil},
	} {
		if got := f.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(f.By("infill_requests_total", "method")); n != 3 { // Complete, StreamComplete, /infill
		t.Errorf("methods in infill_requests_total: %v", f.By("infill_requests_total", "method"))
	}
	if f.Value("infill_cache_hits_total", "cache", "prompt_memo") < 1 {
		t.Error("the same request twice did not hit the prompt memo")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "grpc_server_handling_seconds"} {
		if !f.Has(name) {
			t.Errorf("no %s", name)
		}
	}
}

// TestMetricsCancellations: a client cancel, a superseded call, a deadline
// and a latency budget, each counted by cause; while calls wait, the
// in-flight, slot and queue gauges show them.
func TestMetricsCancellations(t *testing.T) {
	t.Parallel()
	be := newHeld(true)
	o := startObserved(t, be, zap.NewNop(), nil)

	// Client cancel, while a second call waits in the queue (one slot).
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { _, err := o.client.Complete(ctx, request(8)); errc <- err }()
	<-be.started
	qctx, qcancel := context.WithCancel(context.Background())
	go func() { _, err := o.client.Complete(qctx, request(8)); errc <- err }()
	o.waitMetric(t, 1, "infill_admission_queued", "class", "interactive")
	f := o.scrape(t)
	if in, busy := f.Value("infill_completions_in_flight", "class", "interactive"), f.Value("infill_backend_slots_busy"); in != 2 || busy != 1 {
		t.Errorf("in flight %v, slots busy %v; want 2 and 1", in, busy)
	}
	qcancel()
	cancel()
	for range 2 {
		if err := <-errc; status.Code(err) != codes.Canceled {
			t.Fatalf("cancelled call: %v", err)
		}
	}
	o.waitMetric(t, 2, "infill_cancellations_total", "cause", "client")

	// Superseded: a newer request of the session.
	errc2 := make(chan error, 1)
	go func() { _, err := o.client.Complete(context.Background(), sessionRequest("s", "")); errc2 <- err }()
	<-be.started
	go func() {
		time.Sleep(50 * time.Millisecond)
		be.release <- struct{}{} // lets the newer call (or a probe) finish
	}()
	if _, err := o.client.Complete(context.Background(), sessionRequest("s", "y")); err != nil {
		t.Fatalf("newer call: %v", err)
	}
	if err := <-errc2; status.Code(err) != codes.Canceled {
		t.Fatalf("superseded call: %v", err)
	}
	o.waitMetric(t, 1, "infill_cancellations_total", "cause", "superseded")

	// Deadline.
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	if _, err := o.client.Complete(dctx, request(8)); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("deadline: %v", err)
	}
	o.waitMetric(t, 1, "infill_cancellations_total", "cause", "deadline")

	// Latency budget: the backend reports the cut.
	close(be.release)
	be.finish.Store(int32(inference.FinishBudget))
	// Abandoned requests' probes may hold the slot a while.
	o.waitMetric(t, 0, "infill_backend_slots_busy")
	req := request(8)
	req.LatencyBudget = durationpb.New(time.Second)
	if r, err := o.client.Complete(context.Background(), req); err != nil || r.Candidates[0].FinishReason != infillv1.FinishReason_FINISH_REASON_BUDGET {
		t.Fatalf("budget: %v %v", r, err)
	}
	o.waitMetric(t, 1, "infill_cancellations_total", "cause", "budget")
	o.waitMetric(t, 0, "infill_completions_in_flight")
}

// TestRequestIDEverywhere: the request id of a call is in its response
// header (gRPC metadata x-request-id, HTTP X-Request-Id), in its response,
// and in every line logged while it ran, at every level, from every package
// on its path (server, pipeline, contextpack).
func TestRequestIDEverywhere(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	be := newHeld(false)
	o := startObserved(t, be, zap.New(core), nil)
	ctx := context.Background()
	// The server's own lines (its listeners, the backend's health) come
	// first, from goroutines of their own.
	for _, m := range []string{"serving", "serving HTTP", "serving metrics", "backend up: SERVING"} {
		for deadline := time.Now().Add(5 * time.Second); logs.FilterMessage(m).Len() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q line", m)
			}
		}
	}

	// checkLines waits for the call's closing line (rpc or http), then
	// checks every line logged since from: all carry id.
	checkLines := func(t *testing.T, from int, id, closing string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(logs.FilterMessage(closing).FilterField(zap.String("request_id", id)).All()) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no %q line with request_id %s", closing, id)
			}
			time.Sleep(10 * time.Millisecond)
		}
		seen := map[string]bool{}
		for _, e := range logs.All()[from:] {
			if got := e.ContextMap()["request_id"]; got != id {
				t.Errorf("line %q (%v) has request_id %v, want %s", e.Message, e.Level, got, id)
			}
			seen[e.Message] = true
		}
		for _, m := range want {
			if !seen[m] {
				t.Errorf("no %q line for the call (lines: %v)", m, seen)
			}
		}
	}

	t.Run("unary", func(t *testing.T) {
		from := logs.Len()
		var header metadata.MD
		resp, err := o.client.Complete(ctx, request(8), grpc.Header(&header))
		if err != nil {
			t.Fatal(err)
		}
		id := resp.RequestId
		if got := header.Get("x-request-id"); len(got) != 1 || got[0] != id || id == "" {
			t.Fatalf("x-request-id %v, response request_id %q", got, id)
		}
		checkLines(t, from, id, "rpc", "rpc", "prompt", "contextpack: prompt built")
	})
	t.Run("unary error", func(t *testing.T) {
		mystery := errors.New("mystery") // unclassified: logged at Error
		be.err.Store(&mystery)
		defer be.err.Store(nil)
		from := logs.Len()
		var header metadata.MD
		_, err := o.client.Complete(ctx, request(8), grpc.Header(&header))
		if status.Code(err) != codes.Internal {
			t.Fatalf("err %v", err)
		}
		got := header.Get("x-request-id")
		if len(got) != 1 {
			t.Fatalf("x-request-id %v on an error", got)
		}
		checkLines(t, from, got[0], "rpc", "rpc", "unclassified error")
	})
	t.Run("stream", func(t *testing.T) {
		from := logs.Len()
		st, err := o.client.StreamComplete(ctx, streamRequest(request(8)))
		if err != nil {
			t.Fatal(err)
		}
		header, err := st.Header()
		if err != nil {
			t.Fatal(err)
		}
		var start string
		for {
			m, err := st.Recv()
			if err != nil {
				break
			}
			if s := m.GetStart(); s != nil {
				start = s.RequestId
			}
		}
		if got := header.Get("x-request-id"); len(got) != 1 || got[0] != start {
			t.Fatalf("x-request-id %v, start's request_id %q", got, start)
		}
		checkLines(t, from, start, "rpc", "rpc", "prompt")
	})
	t.Run("http", func(t *testing.T) {
		from := logs.Len()
		body := `{"input_prefix": "def f():\n    return ", "input_suffix": "\n", "n_predict": 4}`
		resp, err := http.Post(o.httpURL+"/infill", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		id := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("%s, X-Request-Id %q", resp.Status, id)
		}
		checkLines(t, from, id, "http", "http", "prompt", "contextpack: prompt built")
	})
}

// TestPprofOnlyWhenAsked: /debug/pprof/ is served on the metrics listener
// only with Config.Pprof.
func TestPprofOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		o := startObserved(t, newHeld(false), zap.NewNop(), func(c *server.Config) {
			c.Pprof = on
			c.MetricsListenAddr = "127.0.0.1:0" // Pprof needs it; the test listens itself
		})
		resp, err := http.Get(o.metricsURL + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("pprof %v: %s, want %d", on, resp.Status, want)
		}
	}
	cfg := server.DefaultConfig()
	cfg.Pprof = true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "MetricsListenAddr") {
		t.Errorf("Pprof without a metrics listener: %v", err)
	}
}

// TestMetricsPublic: metrics beyond loopback need MetricsPublic (or
// Insecure); the profiler there needs Insecure.
func TestMetricsPublic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		public, pprof, insecure bool
		ok                      bool
	}{
		{ok: false},
		{public: true, ok: true},
		{public: true, pprof: true, ok: false},
		{public: true, pprof: true, insecure: true, ok: true},
		{insecure: true, ok: true},
	} {
		cfg := server.DefaultConfig()
		cfg.ListenAddr, cfg.HTTPListenAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.MetricsListenAddr = "0.0.0.0:9090"
		cfg.MetricsPublic, cfg.Pprof, cfg.Insecure = c.public, c.pprof, c.insecure
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

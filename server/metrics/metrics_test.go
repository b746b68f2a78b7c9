package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/server/metrics"
	"github.com/infill-dev/infill/server/metrics/scrape"
	"github.com/infill-dev/infill/server/pipeline"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The test client's idle keep-alive connections.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

type fakePipe struct{ s pipeline.Stats }

func (f fakePipe) Stats() pipeline.Stats { return f.s }

type fakeContext struct{ s contextpack.Stats }

func (f fakeContext) Stats() contextpack.Stats { return f.s }

func get(t *testing.T, m *metrics.Metrics, pprof bool) scrape.Families {
	t.Helper()
	srv := httptest.NewServer(m.Handler(pprof))
	defer srv.Close()
	f, err := scrape.Get(context.Background(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRecordsAndReads(t *testing.T) {
	m := metrics.New()
	m.Watch(fakePipe{pipeline.Stats{InFlight: [2]int{3, 1}, Busy: 1, Queued: [2]int{2, 0}, Backends: []pipeline.BackendStats{
		{Name: "gpu0", Up: true, Busy: 1, Queued: [2]int{2, 0}, OK: 5, NotSent: 1, SpilledFull: 3},
		{Name: "gpu1", Up: false, Failed: 2}}}},
		fakeContext{contextpack.Stats{Bytes: 1000, DigestHits: 7, DigestMisses: 2, SnapshotHits: 3,
			PromptMemoHits: 4, PromptsBuilt: 5}})
	m.Completed(pipeline.Outcome{Surface: "grpc", Assembled: true, Assembly: time.Millisecond, Queued: true,
		QueueWait: 2 * time.Millisecond, TimeToFirstToken: 50 * time.Millisecond, Total: 80 * time.Millisecond,
		CompletionTokens: 12})
	m.Completed(pipeline.Outcome{Surface: "grpc", Err: context.Canceled, Cause: pipeline.CauseSuperseded, Total: time.Millisecond})
	m.Completed(pipeline.Outcome{Surface: "ollama", Reused: true, Assembled: true, TimeToFirstToken: time.Millisecond, Total: time.Millisecond})
	m.Completed(pipeline.Outcome{Surface: "openai", Class: pipeline.Evaluation, Err: errors.New("overloaded"), Shed: true, Queued: true})
	m.HTTPRequest("llama.cpp", "/infill", 200)
	m.HTTPRequest("llama.cpp", "/infill", 503)
	m.GRPCRequest("/infill.v1.CompletionService/Complete", codes.DeadlineExceeded)
	m.Verdict("passed")
	m.Verdict("timeout")
	m.Verdict("passed")

	f := get(t, m, false)
	for _, c := range []struct {
		want   float64
		name   string
		labels []string
	}{
		{1, "infill_requests_total", []string{"surface", "llama.cpp", "method", "/infill", "code", "200"}},
		{1, "infill_requests_total", []string{"surface", "llama.cpp", "code", "503"}},
		{1, "infill_requests_total", []string{"surface", "grpc", "code", "DeadlineExceeded"}},
		{2, "infill_completion_duration_seconds", []string{"surface", "grpc"}},
		{1, "infill_completion_time_to_first_token_seconds", []string{"surface", "grpc"}},
		{1, "infill_completion_context_assembly_seconds", []string{"surface", "grpc"}},
		{1, "infill_completion_queue_wait_seconds", []string{"class", "interactive"}},
		{1, "infill_completion_queue_wait_seconds", []string{"class", "evaluation"}},
		{12, "infill_generated_tokens_total", nil},
		{1, "infill_cancellations_total", []string{"cause", "superseded"}},
		{0, "infill_cancellations_total", []string{"cause", "client"}},
		{1, "infill_admission_shed_total", []string{"class", "evaluation"}},
		{3, "infill_completions_in_flight", []string{"class", "interactive"}},
		{1, "infill_completions_in_flight", []string{"class", "evaluation"}},
		{2, "infill_admission_queued", []string{"class", "interactive"}},
		{1, "infill_backend_slots_busy", nil},
		{7, "infill_cache_hits_total", []string{"cache", "content_store"}},
		{2, "infill_cache_misses_total", []string{"cache", "content_store"}},
		{3, "infill_cache_hits_total", []string{"cache", "snapshot"}},
		{4, "infill_cache_hits_total", []string{"cache", "prompt_memo"}},
		{5, "infill_cache_misses_total", []string{"cache", "prompt_memo"}},
		{1, "infill_cache_hits_total", []string{"cache", "typed_through"}},
		{1000, "infill_content_store_bytes", nil},
		{1, "infill_backend_up", []string{"backend", "gpu0"}},
		{0, "infill_backend_up", []string{"backend", "gpu1"}},
		{1, "infill_backend_in_flight", []string{"backend", "gpu0"}},
		{2, "infill_backend_queued", []string{"backend", "gpu0", "class", "interactive"}},
		{5, "infill_backend_requests_total", []string{"backend", "gpu0", "outcome", "ok"}},
		{1, "infill_backend_requests_total", []string{"backend", "gpu0", "outcome", "not_sent"}},
		{2, "infill_backend_requests_total", []string{"backend", "gpu1", "outcome", "failed"}},
		{3, "infill_backend_spilled_total", []string{"backend", "gpu0", "reason", "full"}},
		{2, "infill_sandbox_verdicts_total", []string{"verdict", "passed"}},
		{1, "infill_sandbox_verdicts_total", []string{"verdict", "timeout"}},
	} {
		if got := f.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "promhttp_metric_handler_requests_total"} {
		if !f.Has(name) {
			t.Errorf("no %s", name)
		}
	}
}

// Two servers in one process (tests do it) have separate registries: no
// global registerer.
func TestRegistriesApart(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.HTTPRequest("ollama", "/api/generate", 200)
	if got := get(t, b, false).Value("infill_requests_total"); got != 0 {
		t.Fatalf("b sees a's request: %v", got)
	}
	if got := get(t, a, false).Value("infill_requests_total"); got != 1 {
		t.Fatalf("a: %v", got)
	}
}

func TestPprof(t *testing.T) {
	m := metrics.New()
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(m.Handler(on))
		resp, err := http.Get(srv.URL + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if on != (resp.StatusCode == http.StatusOK && strings.Contains(string(body), "goroutine profile")) {
			t.Errorf("pprof %v: %s", on, resp.Status)
		}
	}
}

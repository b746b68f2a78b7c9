package server_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/pipeline"
	"github.com/infill-dev/infill/server/servertest"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Several backends: two real Ollama processes on loopback, one reached
// through its native API (kind ollama) and one through its OpenAI
// /v1/completions (kind openai), behind one infill with affinity routing.

var twoBackends = []string{"native", "v1"}

// startTwo runs the two Ollamas (the /v1 one gets num_ctx 4096 from its
// model, since /v1 cannot send it) and infill in front of them, with both
// models loaded and both backends SERVING.
func startTwo(t *testing.T) (srv *servertest.Server, h *harness, native, v1 *ollamatest.Backend) {
	t.Helper()
	native = ollamatest.Start(t)
	v1 = ollamatest.StartWithOptions(t, ollamatest.Options{Parameters: map[string]any{"num_thread": 1, "num_ctx": 4096}})
	for _, b := range []*ollamatest.Backend{native, v1} {
		if err := b.Warm(map[string]any{"num_ctx": 4096}); err != nil {
			t.Fatal(err)
		}
	}
	// On the 2-core machine shared with other work a first token has taken
	// longer than the watchdog's 15 s under load; stalls are not what this
	// tests.
	slow := func(c *server.Config) { c.Inference.Watchdog.FirstTokenBase = time.Minute }
	srv = servertest.StartBackends(t, servertest.Options{Config: slow},
		servertest.BackendSpec{Config: server.BackendConfig{Name: "native", Kind: server.KindOllama}, Ollama: native},
		servertest.BackendSpec{Config: server.BackendConfig{Name: "v1", Kind: server.KindOpenAI}, Ollama: v1})
	h = dial(t, srv)
	for _, name := range twoBackends {
		h.waitService(t, server.BackendHealthService(name), healthpb.HealthCheckResponse_SERVING)
	}
	return srv, h, native, v1
}

// waitService waits until the health service says want.
func (h *harness) waitService(t *testing.T, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last healthpb.HealthCheckResponse_ServingStatus
	for time.Now().Before(deadline) {
		r, err := h.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		if err == nil && r.Status == want {
			return
		}
		if err == nil {
			last = r.Status
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("health of %s stayed %v, want %v", service, last, want)
}

// fileRequest is a keystroke's request of session in file path of
// repository geo.
func fileRequest(path, session string, maxTokens uint32) *infillv1.CompleteRequest {
	return &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{{Path: path, Content: proto.String(pySource)}}},
		Cursor:     &infillv1.Cursor{Path: path, Line: 9, Column: 11},
		Generation: &infillv1.GenerationOptions{MaxTokens: maxTokens},
		ClientId:   "editor", SessionId: session,
	}
}

// served reads how many generations each backend completed.
func served(t *testing.T, srv *servertest.Server) map[string]float64 {
	t.Helper()
	return srv.Scrape(t).By("infill_backend_requests_total", "backend", "outcome", "ok")
}

// filesFirstOn returns n files of repository geo whose sessions go to
// backend first.
func filesFirstOn(first string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		p := fmt.Sprintf("geo/m%d.py", i)
		if pipeline.AffinityOrder(twoBackends, "geo", p)[0] == first {
			out = append(out, p)
		}
	}
	return out
}

// TestTwoBackends runs the proofs below on one pair of backends (starting
// them is most of the cost).
func TestTwoBackends(t *testing.T) {
	// Serial: the failover's sessions must get answers from the surviving
	// backend before the test's time runs out, which other tests' work on
	// the same cores can prevent (admission sheds a request whose expected
	// wait exceeds what it can start in).
	srv, h, native, _ := startTwo(t)
	t.Run("affinity", func(t *testing.T) { testAffinity(t, srv, h) })
	t.Run("failover", func(t *testing.T) { testFailover(t, srv, h, native) })
}

// testAffinity: every keystroke of a file's session reaches the one
// backend rendezvous hashing picks for it, through either kind; files
// spread over both.
func testAffinity(t *testing.T, srv *servertest.Server, h *harness) {
	ctx := context.Background()
	used := map[string]bool{}
	for _, path := range append(filesFirstOn("native", 2), filesFirstOn("v1", 2)...) {
		want := pipeline.AffinityOrder(twoBackends, "geo", path)[0]
		before := served(t, srv)
		for range 3 {
			resp, err := h.client.Complete(ctx, fileRequest(path, path, 16))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			c := resp.Candidates[0]
			if resp.Usage.PromptTokens == 0 || c.CompletionTokens > 16 || c.FinishReason == infillv1.FinishReason_FINISH_REASON_UNSPECIFIED {
				t.Fatalf("%s (%s): %+v", path, want, resp)
			}
		}
		after := served(t, srv)
		for _, b := range twoBackends {
			wantN := 0.0
			if b == want {
				wantN = 3
			}
			if d := after[b] - before[b]; d != wantN {
				t.Errorf("%s: backend %s served %v of its 3 keystrokes, want %v (first choice %s)", path, b, d, wantN, want)
			}
		}
		used[want] = true
	}
	if len(used) != 2 {
		t.Fatalf("the files reached %v only", used)
	}
}

// testFailover: sessions type against both backends; one is
// killed (SIGKILL, server and runners). At most the request each of its
// sessions had in flight fails, with UNAVAILABLE; every later request of
// those sessions is served by the other backend, and the other backend's
// own sessions see no failure at all. The overall health stays SERVING,
// the killed backend's service goes NOT_SERVING, and when it is restarted
// it becomes SERVING again and gets its sessions back.
func testFailover(t *testing.T, srv *servertest.Server, h *harness, native *ollamatest.Backend) {
	begin := time.Now()
	nativeFiles, v1Files := filesFirstOn("native", 2), filesFirstOn("v1", 2)
	type result struct {
		after bool // ended after the kill (in flight then, or sent later)
		err   error
	}
	var (
		mu       sync.Mutex
		killed   bool
		results  = map[string][]result{}
		okAfter  = map[string]int{}
		okBefore = map[string]int{}
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, path := range append(append([]string{}, nativeFiles...), v1Files...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				sentAfter := killed
				mu.Unlock()
				_, err := h.client.Complete(ctx, fileRequest(path, path, 24))
				mu.Lock()
				results[path] = append(results[path], result{after: killed, err: err})
				if err == nil && sentAfter {
					okAfter[path]++
				} else if err == nil {
					okBefore[path]++
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: not within the test's time (results %v)", what, results)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	everyone := func(m map[string]int, n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range append(append([]string{}, nativeFiles...), v1Files...) {
				if m[p] < n {
					return false
				}
			}
			return true
		}
	}
	waitUntil("two answers for every session", everyone(okBefore, 2))
	t.Logf("every session answered twice after %v; killing native", time.Since(begin).Round(time.Millisecond))
	mu.Lock()
	killed = true
	mu.Unlock()
	nativeServed := served(t, srv)["native"]
	signalBackend(t, native, syscall.SIGKILL)
	waitUntil("two answers for every session after the kill", everyone(okAfter, 2))
	t.Logf("every session answered twice since the kill after %v", time.Since(begin).Round(time.Millisecond))
	h.waitService(t, server.BackendHealthService("native"), healthpb.HealthCheckResponse_NOT_SERVING)
	h.waitService(t, "infill.v1.CompletionService", healthpb.HealthCheckResponse_SERVING)
	close(stop)
	wg.Wait()

	for path, rs := range results {
		failed := 0
		for _, r := range rs {
			if r.err == nil {
				continue
			}
			failed++
			t.Logf("%s: %v", path, r.err)
			if !r.after || status.Code(r.err) != codes.Unavailable {
				t.Errorf("%s: %v (ended after the kill: %v), want only UNAVAILABLE after the kill", path, r.err, r.after)
			}
		}
		limit := 0
		if pipeline.AffinityOrder(twoBackends, "geo", path)[0] == "native" {
			limit = 1 // the request it had in flight
		}
		if failed > limit {
			t.Errorf("%s: %d failed requests, want at most %d", path, failed, limit)
		}
		t.Logf("%s: %d requests, %d failed", path, len(rs), failed)
	}
	f := srv.Scrape(t)
	if n := f.Value("infill_backend_requests_total", "backend", "native", "outcome", "ok"); n != nativeServed && n != nativeServed+1 {
		t.Errorf("native completed %v generations after the kill (%v before)", n-nativeServed, nativeServed)
	}
	spilled := f.By("infill_backend_spilled_total", "reason", "backend", "native")
	if spilled["down"]+spilled["unreachable"] < 3 {
		t.Errorf("native's sessions spilled %v, want its sessions' requests after the kill", spilled)
	}

	// Back: it rejoins and gets its own sessions again.
	native.Restart()
	h.waitService(t, server.BackendHealthService("native"), healthpb.HealthCheckResponse_SERVING)
	t.Logf("native restarted and SERVING after %v", time.Since(begin).Round(time.Millisecond))
	before := served(t, srv)
	for _, path := range nativeFiles {
		if _, err := h.client.Complete(context.Background(), fileRequest(path, path, 8)); err != nil {
			t.Fatalf("%s after the restart: %v", path, err)
		}
	}
	after := served(t, srv)
	if d := after["native"] - before["native"]; d != float64(len(nativeFiles)) {
		t.Errorf("native served %v of its %d sessions' requests after it rejoined", d, len(nativeFiles))
	}
	t.Logf("done after %v", time.Since(begin).Round(time.Millisecond))
}

package server_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/metrics/scrape"
	"github.com/infill-dev/infill/server/servertest"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Fault tests: the real backend killed or hung under a call, through the
// real server; what the caller sees, what health and the metrics say, and
// that infill serves again once the backend does, without a restart.

// startFault runs the real server on the real backend, with the model
// loaded, and dials it.
func startFault(t *testing.T, mutate func(*server.Config)) (*servertest.Server, *harness) {
	t.Helper()
	srv := servertest.StartWith(t, servertest.Options{Config: mutate})
	h := dial(t, srv)
	if err := h.backend.Warm(map[string]any{"num_ctx": 4096}); err != nil { // servertest's num_ctx
		t.Fatal(err)
	}
	if _, err := h.client.Complete(context.Background(), request(8)); err != nil {
		t.Fatal(err)
	}
	return srv, h
}

// signalBackend sends sig to the backend's whole process group: the
// server and its model runners.
func signalBackend(t *testing.T, b *ollamatest.Backend, sig syscall.Signal) {
	t.Helper()
	pid := b.PID()
	if pid == 0 {
		t.Fatal("the backend is not running")
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		t.Fatalf("%v to the backend's group: %v", sig, err)
	}
}

type scrapeFamilies = scrape.Families

// waitScrape polls the server's metrics until cond holds, and returns when
// it did.
func waitScrape(t *testing.T, srv *servertest.Server, d time.Duration, what string, cond func(f scrapeFamilies) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if cond(srv.Scrape(t)) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: %s not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBackendKilledMidStream: the backend is killed (SIGKILL, server and
// runners) while a stream is generating. The stream ends UNAVAILABLE with
// a message saying what happened, health goes NOT_SERVING (backend_up 0),
// and calls in the outage fail the same way at once; when the backend is
// back, health, the metric and calls come back without restarting infill.
func TestBackendKilledMidStream(t *testing.T) {
	t.Parallel()
	srv, h := startFault(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A long generation: the kill lands in the middle of it.
	st := firstDelta(t, h, ctx, request(1000))
	signalBackend(t, h.backend, syscall.SIGKILL)
	err := streamEnd(st)
	s := status.Convert(err)
	if s.Code() != codes.Unavailable || len(s.Message()) < 20 {
		t.Fatalf("stream after the kill: %v, want UNAVAILABLE with a message", err)
	}
	t.Logf("mid-stream: %v: %s", s.Code(), s.Message())

	h.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	waitScrape(t, srv, 10*time.Second, "backend_up 0", func(f scrapeFamilies) bool { return f.Value("infill_backend_up") == 0 })
	httpHealth := func() int {
		resp, err := http.Get("http://" + srv.HTTPAddr + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := httpHealth(); code != http.StatusServiceUnavailable {
		t.Errorf("llama.cpp /health while the backend is down: %d, want 503", code)
	}
	_, err = h.client.Complete(ctx, request(8))
	if s := status.Convert(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "backend unavailable") {
		t.Fatalf("a call while the backend is down: %v", err)
	}

	h.backend.Restart()
	h.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	waitScrape(t, srv, 10*time.Second, "backend_up 1", func(f scrapeFamilies) bool { return f.Value("infill_backend_up") == 1 })
	if code := httpHealth(); code != http.StatusOK {
		t.Errorf("llama.cpp /health once the backend is back: %d, want 200", code)
	}
	if _, err := h.client.Complete(ctx, request(8)); err != nil {
		t.Fatalf("after the backend came back: %v", err)
	}
	f := srv.Scrape(t)
	if n := f.Value("infill_requests_total", "surface", "grpc", "code", "Unavailable"); n != 2 {
		t.Errorf("%v UNAVAILABLE calls counted, want 2", n)
	}
	if n := f.Value("infill_completions_in_flight"); n != 0 {
		t.Errorf("%v completions still in flight", n)
	}
}

// TestBackendHung: the whole backend is stopped (SIGSTOP): it accepts
// connections and answers nothing. A call with a deadline ends
// DEADLINE_EXCEEDED at its deadline on the server too, not later (the
// server's handler returns: in-flight 0, the call counted); a call that
// cannot start before its deadline is refused at once; the hung
// request's admission slot is held (by the probe that waits for the
// backend to finish what it was doing) only until the backend continues
// (SIGCONT), after which a call is served. Health says NOT_SERVING while
// the backend is stopped.
func TestBackendHung(t *testing.T) {
	t.Parallel()
	srv, h := startFault(t, func(c *server.Config) {
		c.Admission.MaxHold = time.Minute // the slot must come back by the backend, not by the bound
	})
	ctx := context.Background()
	signalBackend(t, h.backend, syscall.SIGSTOP)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			signalBackend(t, h.backend, syscall.SIGCONT)
		}
	}
	defer resume()

	const deadline = 2 * time.Second
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	begin := time.Now()
	_, err := h.client.Complete(dctx, request(8))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call to the hung backend: %v, want DEADLINE_EXCEEDED", err)
	}
	// The client's own deadline ends its wait; the server's end is what
	// counts: the handler has returned and the call is counted.
	ended := waitScrape(t, srv, 10*time.Second, "the hung call's end", func(f scrapeFamilies) bool {
		return f.Value("infill_completions_in_flight") == 0 &&
			f.Value("infill_requests_total", "method", completeMethod, "code", "OK") < f.Value("infill_requests_total", "method", completeMethod)
	})
	late := ended.Sub(begin) - deadline
	t.Logf("server-side end %v after the deadline (including the scrape)", late.Round(time.Millisecond))
	if late > time.Second {
		t.Errorf("the server ended the call %v after its deadline", late)
	}
	f := srv.Scrape(t)
	if n := f.Value("infill_cancellations_total", "cause", "deadline"); n != 1 {
		t.Errorf("deadline cancellations %v, want 1", n)
	}
	// Its slot is held while the backend cannot say it is free.
	if n := f.Value("infill_backend_slots_busy"); n != 1 {
		t.Errorf("slots busy %v while the backend is hung, want 1 (the probe)", n)
	}
	// A call that cannot start before its deadline is refused before it
	// (at its deadline the client would see DEADLINE_EXCEEDED).
	qctx, qcancel := context.WithTimeout(ctx, time.Second)
	defer qcancel()
	if _, err := h.client.Complete(qctx, request(8)); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a call behind the hung slot: %v, want RESOURCE_EXHAUSTED", err)
	}
	h.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)

	resume()
	waitScrape(t, srv, 30*time.Second, "the slot released", func(f scrapeFamilies) bool {
		return f.Value("infill_backend_slots_busy") == 0
	})
	h.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if _, err := h.client.Complete(sctx, request(8)); err != nil {
		t.Fatalf("after the backend continued: %v", err)
	}
}

package server_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
)

// observedLogger logs to the test and keeps the lines for the test to read.
func observedLogger(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core)), logs
}

// waitLogLine waits until the server has logged a line whose message is
// msg, with a backend field.
func waitLogLine(t *testing.T, logs *observer.ObservedLogs, msg string) observer.LoggedEntry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if l := logs.FilterMessage(msg).All(); len(l) > 0 {
			return l[len(l)-1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	var seen []string
	for _, e := range logs.All() {
		seen = append(seen, e.Message)
	}
	t.Fatalf("no log line %q; the server logged %q", msg, seen)
	return observer.LoggedEntry{}
}

// TestHealthTellsTheTruth: the real server in front of the real Ollama
// whose model list lacks the server's default model starts NOT_SERVING (gRPC
// health, and /health and /v1/health answer 503 in their dialect's error
// style with the reason: the model and how to get it), logs why, and a
// completion is NOT_FOUND. Once the model is created on the backend health
// turns SERVING with a log line; when the backend stops it is NOT_SERVING,
// logged as unreachable; restarted, SERVING again.
func TestHealthTellsTheTruth(t *testing.T) {
	t.Parallel()
	const model = "qwen2.5-coder:1.5b-base"
	log, logs := observedLogger(t)
	srv := servertest.StartWith(t, servertest.Options{
		Config:     func(c *server.Config) { c.Inference.DefaultModel = model },
		Log:        log,
		NotServing: true,
	})
	h := dial(t, srv)

	missing := waitLogLine(t, logs, "backend lacks the model at start: NOT_SERVING")
	if f := missing.ContextMap(); f["backend"] != server.DefaultBackendName || f["model"] != model ||
		!strings.Contains(f["reason"].(string), "ollama pull "+model) {
		t.Errorf("log line fields %v: want the backend, the model and how to get it", f)
	}
	h.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	for _, c := range []struct{ surface, path string }{{"llama.cpp", "/health"}, {"tabby", "/v1/health"}} {
		resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", c.path, "-", "")
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s: %d %s, want 503", c.path, resp.StatusCode, body)
			continue
		}
		msg := checkErrorStyle(t, c.surface, http.StatusServiceUnavailable, body)
		for _, want := range []string{"NOT_SERVING", `"` + model + `"`, "ollama pull " + model} {
			if !strings.Contains(msg, want) {
				t.Errorf("GET %s: message %q does not say %q", c.path, msg, want)
			}
		}
		if strings.Contains(msg, srv.Backend.Host) {
			t.Errorf("GET %s: message %q names the backend's address", c.path, msg)
		}
	}
	if _, err := h.client.Complete(context.Background(), request(4)); status.Code(err) != codes.NotFound {
		t.Errorf("Complete with the model missing: %v, want NOT_FOUND", err)
	}
	// The backend answered that generation ("not found"): no proof that
	// it serves.
	time.Sleep(5 * 100 * time.Millisecond) // 5 health checks
	if r, err := h.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after a NOT_FOUND generation: %v, %v; want NOT_SERVING", r, err)
	}

	if err := srv.Backend.Client().Copy(context.Background(), &api.CopyRequest{Source: srv.Backend.Model, Destination: model}); err != nil {
		t.Fatal(err)
	}
	h.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	waitLogLine(t, logs, "backend recovered: SERVING")
	for _, path := range []string{"/health", "/v1/health"} {
		if resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", path, "-", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the model created: %d %s", path, resp.StatusCode, body)
		}
	}
	if _, err := h.client.Complete(context.Background(), request(4)); err != nil {
		t.Errorf("Complete with the model created: %v", err)
	}

	srv.Backend.Stop()
	h.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	waitLogLine(t, logs, "backend unreachable: NOT_SERVING")
	resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", "/health", "-", "")
	if msg := checkErrorStyle(t, "llama.cpp", http.StatusServiceUnavailable, body); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(msg, "backend default is unreachable") {
		t.Errorf("GET /health with the backend stopped: %d %s", resp.StatusCode, body)
	}
	srv.Backend.Restart()
	h.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	if n := len(logs.FilterMessage("backend recovered: SERVING").All()); n != 2 {
		t.Errorf("%d recovery lines, want 2 (model created, backend restarted)", n)
	}
}

// TestHealthUnreachableAtStart: a backend that does not answer when the
// server starts is logged at once (before, the log said nothing while
// /health pointed at it). The configuration's log line shows the model the
// HTTP surfaces serve: the server's default, not httpapi's own.
func TestHealthUnreachableAtStart(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now
	log, logs := observedLogger(t)
	srv := servertest.StartWith(t, servertest.Options{
		Config:     func(c *server.Config) { c.Inference.URL = "http://" + dead },
		Log:        log,
		NotServing: true,
	})
	cfg, _ := waitLogLine(t, logs, "config").ContextMap()["config"].(server.Config)
	if cfg.HTTP.DefaultModel != srv.Model || cfg.Inference.DefaultModel != srv.Model {
		t.Errorf("config log line: HTTP default model %q, default model %q; want both %q",
			cfg.HTTP.DefaultModel, cfg.Inference.DefaultModel, srv.Model)
	}
	line := waitLogLine(t, logs, "backend unreachable at start: NOT_SERVING")
	if r, _ := line.ContextMap()["reason"].(string); !strings.Contains(r, "connection refused") {
		t.Errorf("reason %q does not say why", r)
	}
	resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", "/v1/health", "-", "")
	if msg := checkErrorStyle(t, "tabby", http.StatusServiceUnavailable, body); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(msg, "unreachable") {
		t.Errorf("GET /v1/health: %d %s", resp.StatusCode, body)
	}
	// Liveness is infill's own: no restart for a backend outage.
	if resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", "/livez", "-", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /livez with the backend unreachable: %d %s", resp.StatusCode, body)
	}
}

// Package e2e starts the real infill server in front of the real Ollama
// backend (inference/ollamatest: the pinned Ollama build serving the tiny
// random-weight qwen2 model) for the end-to-end tests of the client library
// and the command-line tool. Tests skip when the backend has not been
// prepared (scripts/backend.sh prepare), and fail instead when CI=true.
package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/server"
)

// Server is a running infill server.
type Server struct {
	// Addr is its loopback host:port.
	Addr string
	// Model is the backend model it uses by default.
	Model string
}

// Start runs the real server on a free loopback port, with a private Ollama
// serving the tiny model, until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	b := ollamatest.Start(t)
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.HealthInterval = 100 * time.Millisecond
	cfg.Inference.URL = b.URL
	cfg.Inference.DefaultModel = b.Model
	cfg.Inference.ContextTokens = 4096
	cfg.Context.ContextTokens = 4096
	log := zaptest.NewLogger(t)
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	builder, err := contextpack.NewBuilder(cfg.Context, tok, log)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := inference.NewOllama(cfg.Inference, log)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, server.Deps{Builder: builder, Backend: backend}, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitServing(t, lis.Addr().String())
	return &Server{Addr: lis.Addr().String(), Model: b.Model}
}

// waitServing waits until health reports the completion service SERVING
// (the server says NOT_SERVING until the backend answers).
func waitServing(t testing.TB, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the infill server did not become SERVING within 30s")
}

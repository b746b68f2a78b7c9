package main

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSIGTERMShutsDownCleanly runs the real main loop, waits until it
// answers health checks (NOT_SERVING: its backend is down), sends SIGTERM to
// the process and expects run to return without error within the grace
// period (a workspace watched all along).
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	addr := freeAddr(t)
	ws := t.TempDir() // a workspace, watched until shutdown
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--listen", addr, "--http-listen", freeAddr(t), "--ollama-url", "http://" + freeAddr(t),
			"--shutdown-grace", "2s", "--log-level", "warn", "--workspace", ws})
	}()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil {
			if r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Fatalf("health %v with the backend down", r.Status)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not stop within 15s of SIGTERM")
	}
}

func TestBadConfigIsAnError(t *testing.T) {
	for _, args := range [][]string{
		{"--num-ctx", "10"},
		{"--num-ctx", "80"}, // no room for a prompt after the default 128 max tokens
		{"--num-ctx", "200", "--max-tokens", "190"},
		{"--ollama-url", "ftp://x"},
		{"--execrepobench-jsonl", "a.jsonl"},
		{"--log-level", "loud"},
		{"--workspace", "/nonexistent/infill-workspace"},
	} {
		if err := run(append(args, "--listen", freeAddr(t), "--http-listen", freeAddr(t))); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/metrics/scrape"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// signal.Notify's receiver runs for the life of the process.
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreTopFunction("os/signal.loop"),
		// Idle keep-alive connections of http.DefaultClient.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

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
	done := startRun(t, "--listen", addr, "--http-listen", freeAddr(t), "--workspace", ws)
	waitHealth(t, addr, done)
	stopRun(t, done)
}

// startRun runs the real main loop with args (and a backend that is not
// there) until stopRun.
func startRun(t *testing.T, args ...string) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- run(append([]string{"--ollama-url", "http://" + freeAddr(t), "--shutdown-grace", "2s", "--log-level", "warn"}, args...))
	}()
	return done
}

// stopRun sends SIGTERM and expects run to return without error.
func stopRun(t *testing.T, done chan error) {
	t.Helper()
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

// waitHealth waits until the server at addr answers health checks.
func waitHealth(t *testing.T, addr string, done chan error) {
	t.Helper()
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
		{"--pprof"},                       // needs --metrics-listen
		{"--metrics-listen", "0.0.0.0:0"}, // beyond loopback, unauthenticated
		{"--metrics-listen", "0.0.0.0:0", "--metrics-public", "--pprof"}, // the profiler is never public
		{"--backend", "kind=vllm,url=http://127.0.0.1:1"},
		{"--backend", "url=ftp://x"},
		{"--backend", "url=http://127.0.0.1:1,slots=many"},
		{"--backend", "url=http://127.0.0.1:1,name=a", "--backend", "url=http://127.0.0.1:2,name=a"},
		{"--backend", "url=http://127.0.0.1:1,models=other"}, // nobody serves --model
		{"--backend", "url=http://127.0.0.1:1,token_file=/nonexistent/token"},
		{"--ollama-url", "http://127.0.0.1:1", "--backend", "url=http://127.0.0.1:2"},
		{"--backends", "/nonexistent/backends.yaml"},
		{"--routing", "random"},
		{"--load-bound", "0.5"},
		{"--sandbox-memory", "lots"},
		{"--sandbox-memory", "1MiB"}, // below the sandbox's floor
		{"--sandbox-memory", "8GiB", "--sandbox-address-space", "4GiB"},
		{"--sandbox-processes", "1"},
		{"--eval-python", "repos=/usr/bin/python3"},
		{"--eval-python", "/srv/repos"},
	} {
		if err := run(append(args, "--listen", freeAddr(t), "--http-listen", freeAddr(t))); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestBackendsFlags: the real main loop with two backends from a
// --backends file and one from --backend (none of them there): each has
// its own health service, NOT_SERVING, and the server's own services too.
func TestBackendsFlags(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "backends.yaml")
	writeFile(t, file, "backends:\n  - name: gpu0\n    url: http://"+freeAddr(t)+"\n    slots: 2\n"+
		"  - name: vllm\n    kind: openai\n    url: http://"+freeAddr(t)+"\n    num_ctx: 4096\n")
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--listen", addr, "--http-listen", freeAddr(t), "--shutdown-grace", "2s", "--log-level", "warn",
			"--backends", file, "--backend", "kind=openai,url=http://" + freeAddr(t) + ",name=llamacpp", "--routing", "round-robin"})
	}()
	waitHealth(t, addr, done)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	for _, name := range []string{"gpu0", "vllm", "llamacpp"} {
		r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "infill.backend/" + name})
		if err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("backend %s: %v, %v", name, r, err)
		}
	}
	if _, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "infill.backend/default"}); status.Code(err) != codes.NotFound {
		t.Errorf("the default backend's service with --backend given: %v", err)
	}
	stopRun(t, done)
}

// TestSIGHUPRevokesTokens: the real main loop with --auth-tokens; a token
// removed from the file is refused (gRPC and HTTP) once SIGHUP reloads
// it, and a broken file then leaves the tokens in force.
func TestSIGHUPRevokesTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	alice, bob := auth.NewToken(), auth.NewToken()
	aliceLine := auth.Line(alice, "alice", []auth.Scope{auth.ScopeComplete, auth.ScopeEvaluate}, time.Time{})
	bobLine := auth.Line(bob, "bob", []auth.Scope{auth.ScopeComplete, auth.ScopeEvaluate}, time.Time{})
	writeFile(t, file, aliceLine+"\n"+bobLine+"\n")
	addr, haddr := freeAddr(t), freeAddr(t)
	done := startRun(t, "--listen", addr, "--http-listen", haddr, "--auth-tokens", file)
	waitHealth(t, addr, done)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eval := infillv1.NewEvaluationServiceClient(conn)
	grpcCode := func(tok string) codes.Code {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
		_, err := eval.ListBenchmarks(ctx, &infillv1.ListBenchmarksRequest{})
		return status.Code(err)
	}
	httpStatus := func(tok string) int {
		req, _ := http.NewRequest("GET", "http://"+haddr+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if grpcCode(alice) != codes.OK || httpStatus(alice) != http.StatusOK || grpcCode(bob) != codes.OK {
		t.Fatalf("valid tokens refused: gRPC %v, HTTP %d", grpcCode(alice), httpStatus(alice))
	}
	hup := func() {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}

	writeFile(t, file, bobLine+"\n")
	hup()
	deadline := time.Now().Add(10 * time.Second)
	for grpcCode(alice) != codes.Unauthenticated {
		if time.Now().After(deadline) {
			t.Fatal("the removed token still works 10s after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := httpStatus(alice); s != http.StatusUnauthorized {
		t.Errorf("revoked token over HTTP: %d, want 401", s)
	}
	if grpcCode(bob) != codes.OK {
		t.Error("the token left in the file was refused")
	}

	// A broken file: bob stays, alice (back in the broken file) does not.
	writeFile(t, file, aliceLine+"\nsha256:00 carol complete\n")
	hup()
	time.Sleep(500 * time.Millisecond)
	if grpcCode(bob) != codes.OK || grpcCode(alice) != codes.Unauthenticated {
		t.Errorf("after a broken file: bob %v, alice %v (want the tokens in force kept)", grpcCode(bob), grpcCode(alice))
	}
	http.DefaultClient.CloseIdleConnections()
	stopRun(t, done)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestNonLoopbackNeedsAuth: a listener beyond loopback without tokens or
// client certificates is refused before anything listens, unless
// --insecure.
func TestNonLoopbackNeedsAuth(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0", "--http-listen", freeAddr(t)},
		{"--listen", freeAddr(t), "--http-listen", "0.0.0.0:0"},
		{"--listen", ":0", "--http-listen", ""},
	} {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("%v: %v, want a refusal naming --insecure", args, err)
		}
	}
	// With --insecure it serves: evaluation is then off (auto).
	port := freeAddr(t)[len("127.0.0.1:"):]
	addr := "0.0.0.0:" + port
	done := startRun(t, "--listen", addr, "--http-listen", "", "--insecure")
	waitHealth(t, "127.0.0.1:"+port, done)
	conn, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = infillv1.NewEvaluationServiceClient(conn).ListBenchmarks(context.Background(), &infillv1.ListBenchmarksRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("evaluation on a non-loopback listener without tokens: %v, want UNIMPLEMENTED", err)
	}
	stopRun(t, done)
}

func TestTokenCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runToken([]string{"--expires", "2030-01-01", "ci-bot", "complete", "evaluate"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "infill_") {
		t.Fatalf("output %q", out.String())
	}
	toks, err := auth.Parse([]byte(lines[1]), auth.Config{})
	if err != nil || toks[0].Name != "ci-bot" || !toks[0].Has(auth.ScopeEvaluate) || toks[0].Expires.Year() != 2030 {
		t.Fatalf("line %q: %v, %+v", lines[1], err, toks)
	}
	if strings.Contains(lines[1], lines[0]) || lines[1] != auth.Line(lines[0], "ci-bot", []auth.Scope{"complete", "evaluate"}, toks[0].Expires) {
		t.Errorf("line %q is not the hash line of token %q", lines[1], lines[0])
	}

	file := filepath.Join(t.TempDir(), "tokens")
	for _, name := range []string{"a", "b"} {
		out.Reset()
		if err := runToken([]string{"--append", file, name, "complete"}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "infill_") || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("--append printed %q, want the token alone", out.String())
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if toks, err := auth.Parse(data, auth.Config{}); err != nil || len(toks) != 2 {
		t.Errorf("appended file: %v, %d tokens", err, len(toks))
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, args := range [][]string{{}, {"name"}, {"name", "admin"}, {"bad/name", "complete"}, {"--expires", "soon", "n", "complete"}} {
		if err := runToken(args, &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestMetricsListen runs the real main loop with --metrics-listen and
// --pprof: /metrics answers with the server's metrics (the backend is
// down: backend_up 0) and /debug/pprof/ with the profiler; SIGTERM stops
// every listener.
func TestMetricsListen(t *testing.T) {
	maddr := freeAddr(t)
	done := startRun(t, "--listen", freeAddr(t), "--http-listen", freeAddr(t), "--metrics-listen", maddr, "--pprof")
	var f scrape.Families
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		f, err = scrape.Get(ctx, "http://"+maddr+"/metrics")
		cancel()
		// The gRPC series appear once Serve has registered the methods,
		// which may come after the metrics listener answers.
		if err == nil && f.Has("infill_backend_up") && f.Has("grpc_server_started_total") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if up := f.Value("infill_backend_up"); up != 0 || !f.Has("go_goroutines") || !f.Has("grpc_server_started_total") {
		t.Errorf("backend_up %v; go_goroutines %v; grpc_server_started_total %v", up, f.Has("go_goroutines"), f.Has("grpc_server_started_total"))
	}
	resp, err := http.Get("http://" + maddr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("pprof: %s", resp.Status)
	}
	stopRun(t, done)
}

// TestAddrFile: --addr-file holds the addresses actually listened on, the
// ports of :0 addresses resolved, each answering its protocol; without
// --http-listen there is no http line.
func TestAddrFile(t *testing.T) {
	for _, httpListen := range []string{"127.0.0.1:0", ""} {
		file := filepath.Join(t.TempDir(), "addrs")
		done := startRun(t, "--listen", "127.0.0.1:0", "--http-listen", httpListen, "--addr-file", file)
		var addrs map[string]string
		deadline := time.Now().Add(20 * time.Second)
		for {
			if data, err := os.ReadFile(file); err == nil {
				addrs = map[string]string{}
				for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					k, v, _ := strings.Cut(line, "=")
					addrs[k] = v
				}
				break
			}
			select {
			case err := <-done:
				t.Fatalf("run returned: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("no address file")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, port, _ := net.SplitHostPort(addrs["grpc"]); port == "" || port == "0" {
			t.Fatalf("grpc address %q in %v", addrs["grpc"], addrs)
		}
		waitHealth(t, addrs["grpc"], done)
		if httpListen == "" {
			if len(addrs) != 1 {
				t.Errorf("addresses %v without --http-listen, want grpc only", addrs)
			}
		} else {
			resp, err := http.Get("http://" + addrs["http"] + "/livez")
			if err != nil {
				t.Fatalf("the http address %q: %v", addrs["http"], err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /livez at %s: %s", addrs["http"], resp.Status)
			}
		}
		stopRun(t, done)
	}
}

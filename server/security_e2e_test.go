package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/evaluator/dataset"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/servertest"
)

// tokenFile is a token file under test: each name's token, and its line's
// rest (scopes and options).
type tokenFile struct {
	path string
	tok  map[string]string
}

func newTokenFile(t *testing.T, lines map[string]string) *tokenFile {
	t.Helper()
	f := &tokenFile{path: filepath.Join(t.TempDir(), "tokens"), tok: map[string]string{}}
	f.write(t, lines)
	return f
}

func (f *tokenFile) write(t *testing.T, lines map[string]string) {
	t.Helper()
	var b strings.Builder
	for name, rest := range lines {
		if _, ok := f.tok[name]; !ok {
			f.tok[name] = auth.NewToken()
		}
		fmt.Fprintf(&b, "%s %s\n", auth.Line(f.tok[name], name, nil, time.Time{}), rest)
	}
	if err := os.WriteFile(f.path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// bearer adds a token to a gRPC call's context ("-": none at all).
func bearer(token string) context.Context {
	if token == "-" {
		return context.Background()
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// The HTTP calls of every surface, each with a body that completes.
var httpCalls = []struct {
	surface, method, path, body string
}{
	{"llama.cpp", "POST", "/infill", `{"input_prefix":"def f(x):\n    return ","input_suffix":"\n","n_predict":4}`},
	{"llama.cpp", "GET", "/props", ``},
	{"ollama", "POST", "/api/generate", `{"model":"","prompt":"def f(x):\n    return ","suffix":"\n","stream":false,"options":{"num_predict":4}}`},
	{"ollama", "GET", "/api/tags", ``},
	{"openai", "POST", "/v1/completions", `{"model":"","prompt":"def f(x):\n    return ","suffix":"\n","max_tokens":4}`},
	{"openai", "GET", "/v1/models", ``},
	{"tabby", "POST", "/v1/completions", `{"language":"python","segments":{"prefix":"def f(x):\n    return ","suffix":"\n"}}`},
	// tabby-agent connects with its token here: a 401 shows "unauthorized".
	{"tabby", "GET", "/v1/health", ``},
}

// httpCall sends a request with an Authorization header ("-": none).
func httpCall(t *testing.T, client *http.Client, scheme, addr, method, path, authz, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, scheme+"://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authz != "-" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// checkErrorStyle checks that body is an error in the surface's own
// style with status code, and returns its message.
func checkErrorStyle(t *testing.T, surface string, code int, body []byte) string {
	t.Helper()
	switch surface {
	case "ollama":
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
			t.Errorf("%s: body %s is not Ollama's {\"error\": string}", surface, body)
		}
		return e.Error
	case "llama.cpp":
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s: body %s is not llama.cpp's error with code %d", surface, body, code)
		}
		return e.Error.Message
	default: // OpenAI and Tabby
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s: body %s is not OpenAI's error", surface, body)
		}
		return e.Error.Message
	}
}

// TestAuthentication: the real server with a token file, on gRPC and on
// every HTTP surface: missing, empty (llama.vim's "Bearer "), wrong and
// expired tokens are UNAUTHENTICATED / 401 in the surface's style; a
// completions-only token is PERMISSION_DENIED on the EvaluationService;
// gRPC health and /health stay open (Kubernetes probes), Tabby's
// /v1/health needs a token (tabby-agent then shows "unauthorized") and its
// server settings do not; a token removed from the file and reloaded (what
// SIGHUP does; cmd/infill-server's test sends the signal) is refused, and
// a broken file keeps the tokens in force.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	tf := newTokenFile(t, map[string]string{
		"editor":  "complete",
		"harness": "complete evaluate",
		"expired": "complete evaluate expires=2020-01-01",
	})
	srv := servertest.StartWith(t, servertest.Options{Config: func(c *server.Config) {
		c.Auth.TokenFile = tf.path
		c.Evaluation = server.EvalOn
	}})
	h := dial(t, srv)
	refused := map[string]string{
		"missing":            "-",
		"empty (llama.vim)":  "",
		"wrong":              auth.NewToken(),
		"expired":            tf.tok["expired"],
		"another's hash":     strings.Fields(auth.Line(tf.tok["editor"], "x", nil, time.Time{}))[0],
		"editor's, extended": tf.tok["editor"] + "x",
	}

	t.Run("gRPC", func(t *testing.T) {
		for name, tok := range refused {
			_, err := h.client.Complete(bearer(tok), request(4))
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s token: Complete: %v, want UNAUTHENTICATED", name, err)
			}
			st, err := h.client.StreamComplete(bearer(tok), streamRequest(request(4)))
			if err == nil {
				_, err = st.Recv()
			}
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s token: StreamComplete: %v, want UNAUTHENTICATED", name, err)
			}
			if _, err := h.eval.ListBenchmarks(bearer(tok), &infillv1.ListBenchmarksRequest{}); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s token: ListBenchmarks: %v, want UNAUTHENTICATED", name, err)
			}
		}
		if _, err := h.client.Complete(bearer(tf.tok["expired"]), request(4)); !strings.Contains(status.Convert(err).Message(), "expired") {
			t.Errorf("expired token: %v does not say it expired", err)
		}
		resp, err := h.client.Complete(bearer(tf.tok["editor"]), request(4))
		if err != nil || len(resp.GetCandidates()) != 1 {
			t.Fatalf("editor token: %v, %v", resp, err)
		}
		// A completions-only token may not evaluate.
		if _, err := h.eval.ListBenchmarks(bearer(tf.tok["editor"]), &infillv1.ListBenchmarksRequest{}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("editor token on ListBenchmarks: %v, want PERMISSION_DENIED", err)
		}
		es, err := h.eval.Evaluate(bearer(tf.tok["editor"]))
		if err == nil {
			_, err = es.Recv()
		}
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "evaluate") {
			t.Errorf("editor token on Evaluate: %v, want PERMISSION_DENIED naming the scope", err)
		}
		if _, err := h.eval.ListBenchmarks(bearer(tf.tok["harness"]), &infillv1.ListBenchmarksRequest{}); err != nil {
			t.Errorf("harness token on ListBenchmarks: %v", err)
		}
		// Health needs no token; reflection needs one.
		if r, err := h.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health without a token: %v, %v", r, err)
		}
		for tok, want := range map[string]codes.Code{"-": codes.Unauthenticated, tf.tok["editor"]: codes.OK} {
			rs, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(bearer(tok))
			if err == nil {
				err = rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
			}
			if err == nil || err == io.EOF { // EOF: the server ended the call; Recv has its status
				_, err = rs.Recv()
				rs.CloseSend()
			}
			if status.Code(err) != want {
				t.Errorf("reflection with token %q: %v, want %v", tok, err, want)
			}
		}
	})

	t.Run("HTTP", func(t *testing.T) {
		for _, c := range httpCalls {
			for name, tok := range refused {
				authz := "Bearer " + tok
				if tok == "-" {
					authz = "-"
				}
				resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, c.method, c.path, authz, c.body)
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s %s, %s token: %d %s, want 401 with WWW-Authenticate", c.surface, c.method, c.path, name, resp.StatusCode, body)
					continue
				}
				checkErrorStyle(t, c.surface, http.StatusUnauthorized, body)
			}
			resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, c.method, c.path, "Bearer "+tf.tok["editor"], c.body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s %s with the editor token: %d %s", c.surface, c.method, c.path, resp.StatusCode, body)
			}
		}
		// Another scheme is no bearer token.
		resp, _ := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", "/v1/models", "Basic "+tf.tok["editor"], "")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Basic scheme: %d, want 401", resp.StatusCode)
		}
		// Open whatever the request carries: the probes' /health, and
		// Tabby's server settings (which turn the agent's telemetry off).
		for _, path := range []string{"/health", "/v1beta/server_setting"} {
			for _, authz := range []string{"-", "Bearer " + auth.NewToken()} {
				if resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, "GET", path, authz, ""); resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s with authorization %.10q: %d %s", path, authz, resp.StatusCode, body)
				}
			}
		}
	})

	t.Run("revoked by reload", func(t *testing.T) {
		tf.write(t, map[string]string{"harness": "complete evaluate"})
		if err := srv.Infill.ReloadTokens(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.client.Complete(bearer(tf.tok["editor"]), request(4)); status.Code(err) != codes.Unauthenticated {
			t.Errorf("revoked token on gRPC: %v, want UNAUTHENTICATED", err)
		}
		for _, c := range httpCalls {
			resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, c.method, c.path, "Bearer "+tf.tok["editor"], c.body)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("revoked token on %s %s: %d %s", c.method, c.path, resp.StatusCode, body)
			}
		}
		// A broken file is refused and the tokens in force stay.
		if err := os.WriteFile(tf.path, []byte("sha256:nothex harness complete\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := srv.Infill.ReloadTokens(); err == nil {
			t.Error("a broken token file reloaded without error")
		}
		if _, err := h.client.Complete(bearer(tf.tok["harness"]), request(4)); err != nil {
			t.Errorf("harness token after a broken reload: %v", err)
		}
	})
}

// TestRateLimits: the real server with per-token limits: a token over its
// rate is RESOURCE_EXHAUSTED with RetryInfo on gRPC and 429 with
// Retry-After on every HTTP surface; a token at its calls-in-flight limit
// (an HTTP request held open) is refused on gRPC until that request ends.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	tf := newTokenFile(t, map[string]string{
		"slow":   "complete rate=0.001 burst=1", // one request per 1000 s
		"single": "complete streams=1",
	})
	srv := servertest.StartWith(t, servertest.Options{Config: func(c *server.Config) { c.Auth.TokenFile = tf.path }})
	h := dial(t, srv)

	if _, err := h.client.Complete(bearer(tf.tok["slow"]), request(4)); err != nil {
		t.Fatalf("first request: %v", err)
	}
	_, err := h.client.Complete(bearer(tf.tok["slow"]), request(4))
	var ri *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			ri = r
		}
	}
	// The first request's time (a slow machine: seconds) has refilled a
	// little of the bucket.
	if status.Code(err) != codes.ResourceExhausted || ri == nil || ri.GetRetryDelay().AsDuration() < 900*time.Second {
		t.Fatalf("second request at once: %v (retry info %v), want RESOURCE_EXHAUSTED retrying after about 1000s", err, ri)
	}
	for _, c := range httpCalls {
		resp, body := httpCall(t, http.DefaultClient, "http", srv.HTTPAddr, c.method, c.path, "Bearer "+tf.tok["slow"], c.body)
		if c.path == "/v1/health" {
			// A health check takes nothing from the token's limits: the
			// agent stays connected (its completions get the 429s).
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v1/health over the rate: %d %s, want 200", resp.StatusCode, body)
			}
			continue
		}
		after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || after < 900 {
			t.Errorf("%s %s over the rate: %d, Retry-After %q, %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			continue
		}
		checkErrorStyle(t, c.surface, http.StatusTooManyRequests, body)
	}

	// Hold an HTTP request of "single" open: its headers sent, its body not.
	hold := func() net.Conn {
		conn, err := net.Dial("tcp", srv.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /infill HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", tf.tok["single"])
		return conn
	}
	conn := hold()
	defer func() { conn.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.client.Complete(bearer(tf.tok["single"]), request(4))
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		if err == nil {
			// On a loaded machine the gRPC call may have been admitted
			// before the held request reached its handler, which was then
			// refused (429, an answer on conn): hold a new one.
			conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if n, _ := conn.Read(make([]byte, 1)); n > 0 {
				conn.Close()
				conn = hold()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second call with one in flight: %v, want RESOURCE_EXHAUSTED", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn.Close() // the held request ends; its place is free again
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err := h.client.Complete(bearer(tf.tok["single"]), request(4))
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("after the held request ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLS: the real server with TLS, mutual TLS and a token, evaluation
// off: the Go client with the client certificate and token completes
// (gRPC and HTTP); a client certificate from another CA, none, or
// plaintext are refused at the handshake.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := servertest.NewCerts(t)
	tf := newTokenFile(t, map[string]string{"all": "complete evaluate"})
	srv := servertest.StartWith(t, servertest.Options{
		Config: func(c *server.Config) {
			c.Auth.TokenFile = tf.path
			c.TLS = server.TLSConfig{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, ClientCAFile: certs.CAFile}
			c.Evaluation = server.EvalOff
		},
		ClientTLS: certs.ClientTLS(),
	})

	c, err := infill.Dial(srv.Addr, infill.Config{TLS: certs.ClientTLS(), Token: tf.tok["all"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Complete(context.Background(), request(4))
	if err != nil || len(resp.GetCandidates()) != 1 {
		t.Fatalf("Go client over mutual TLS with a token: %v, %v", resp, err)
	}
	// The transport is not the token: without it the call is refused.
	nt, err := infill.Dial(srv.Addr, infill.Config{TLS: certs.ClientTLS()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	if _, err := nt.Complete(context.Background(), request(4)); status.Code(err) != codes.Unauthenticated {
		t.Errorf("mutual TLS without a token: %v, want UNAUTHENTICATED", err)
	}
	// Evaluation is off whatever the token allows.
	if _, err := c.Evaluation().ListBenchmarks(context.Background(), &infillv1.ListBenchmarksRequest{}); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "--evaluation=off") {
		t.Errorf("ListBenchmarks with --evaluation=off: %v, want UNIMPLEMENTED saying why", err)
	}

	for name, creds := range map[string]credentials.TransportCredentials{
		"client certificate from another CA": credentials.NewTLS(certs.RogueTLS()),
		"no client certificate":              credentials.NewTLS(certs.NoCertTLS()),
		"plaintext":                          insecure.NewCredentials(),
	} {
		conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bearer(tf.tok["all"]), 10*time.Second)
		_, err = infillv1.NewCompletionServiceClient(conn).Complete(ctx, request(4))
		cancel()
		conn.Close()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("gRPC, %s: %v, want UNAVAILABLE (no connection)", name, err)
		}
	}

	// HTTP: the same listener rules.
	good := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS()}}
	defer good.CloseIdleConnections()
	r, body := httpCall(t, good, "https", srv.HTTPAddr, "POST", "/infill", "Bearer "+tf.tok["all"], httpCalls[0].body)
	if r.StatusCode != http.StatusOK || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		t.Errorf("HTTPS with the client certificate: %d %s", r.StatusCode, body)
	}
	for name, tc := range map[string]*tls.Config{"client certificate from another CA": certs.RogueTLS(), "no client certificate": certs.NoCertTLS()} {
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		req, _ := http.NewRequest("GET", "https://"+srv.HTTPAddr+"/health", nil)
		resp, err := cl.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("HTTPS, %s: %d, want a refused handshake", name, resp.StatusCode)
		}
		cl.CloseIdleConnections()
	}
	// Plain HTTP to the TLS listener gets no answer from a surface.
	conn, err := net.Dial("tcp", srv.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if strings.Contains(line, " 200 ") {
		t.Errorf("plaintext HTTP to the TLS listener answered %q", line)
	}
}

// TestListenRefusedWithoutAuth: a listener beyond loopback needs
// authentication or --insecure.
func TestListenRefusedWithoutAuth(t *testing.T) {
	t.Parallel()
	base := func() server.Config {
		c := server.DefaultConfig()
		c.ListenAddr, c.HTTPListenAddr = "127.0.0.1:0", "127.0.0.1:0"
		return c
	}
	tokens := newTokenFile(t, map[string]string{"a": "complete"}).path
	for name, tc := range map[string]struct {
		mutate func(*server.Config)
		ok     bool
	}{
		"loopback":                    {func(*server.Config) {}, true},
		"gRPC on every interface":     {func(c *server.Config) { c.ListenAddr = "0.0.0.0:50051" }, false},
		"gRPC on an empty host":       {func(c *server.Config) { c.ListenAddr = ":50051" }, false},
		"HTTP on IPv6 any":            {func(c *server.Config) { c.HTTPListenAddr = "[::]:8012" }, false},
		"HTTP on a name":              {func(c *server.Config) { c.HTTPListenAddr = "gpu-box.internal:8012" }, false},
		"--insecure":                  {func(c *server.Config) { c.ListenAddr, c.Insecure = "0.0.0.0:50051", true }, true},
		"tokens":                      {func(c *server.Config) { c.ListenAddr, c.Auth.TokenFile = "0.0.0.0:50051", tokens }, true},
		"localhost and ::1 are local": {func(c *server.Config) { c.ListenAddr, c.HTTPListenAddr = "localhost:1", "[::1]:2" }, true},
	} {
		c := base()
		tc.mutate(&c)
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("%s: %v does not say how to allow it", name, err)
		}
	}
	if err := server.CheckListen("--metrics-listen", "0.0.0.0:9090", false, false); err == nil || !strings.HasPrefix(err.Error(), "--metrics-listen 0.0.0.0:9090 ") {
		t.Errorf("CheckListen for another listener: %v", err)
	}
}

// TestErrorsHideServerPaths: errors from the server's own files reach the
// client without the server's directories (the log keeps them).
func TestErrorsHideServerPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // holds no HumanEval files
	srv := servertest.StartWith(t, servertest.Options{Deps: func(d *server.Deps) {
		d.Benchmarks = dataset.Catalog{HumanEvalDir: dir}
	}})
	h := dial(t, srv)
	st, err := h.eval.RunBenchmark(context.Background(), &infillv1.RunBenchmarkRequest{Benchmark: string(dataset.HumanEvalSingleLine)})
	if err == nil {
		_, err = st.Recv()
	}
	if err == nil || strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), dataset.HumanEvalSingleLine.FileName()) {
		t.Errorf("RunBenchmark of a missing file: %v, want an error naming the file but not %s", err, dir)
	}
	t.Logf("client sees: %v", err)
}

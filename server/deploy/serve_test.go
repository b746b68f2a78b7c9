package deploy

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
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/servertest"
	corev1 "k8s.io/api/core/v1"
)

// pendingFlags are flags the chart passes that infill-server may not have
// yet, with the work that adds them. TestChartArgsServe drops one only when
// the server says it does not know it, and says so in the test log; once
// the flag exists it is checked like the others.
var pendingFlags = map[string]string{
	"metrics-listen": "Prometheus metrics (the observability work)",
	"backend":        "the openai backend kind (issue 24, backends)",
}

// TestChartArgsServe starts the real infill-server with the arguments the
// chart renders (files, ports and backend URL pointed at this machine: a
// private Ollama with the tiny model, test certificates, the rendered token
// file) and asks it what the kubelet's probes ask: grpc.health.v1 for
// infill.v1.CompletionService on the gRPC port (readiness), GET /livez on
// the HTTP port (liveness) and GET /health (readiness with TLS), over TLS where the
// chart turns it on. Where the metrics listener is there, /metrics must
// carry the metric the autoscaler asks for.
func TestChartArgsServe(t *testing.T) {
	t.Parallel()
	ol := ollamatest.Start(t)
	bin := filepath.Join(t.TempDir(), "infill-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/infill-dev/infill/server/cmd/infill-server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building infill-server: %v\n%s", err, out)
	}
	certs := servertest.NewCerts(t)

	for _, tc := range []struct {
		name        string
		vals        map[string]any
		tls, mutual bool
	}{
		{"defaults", map[string]any{}, false, false},
		{"tls-tokens.yaml", exampleValues(t, "tls-tokens.yaml"), true, false},
		{"mutual TLS", map[string]any{
			"auth": map[string]any{"tokens": map[string]any{"enabled": false}},
			"tls":  map[string]any{"enabled": true, "secretName": "infill-tls", "clientCA": map[string]any{"secretName": "infill-client-ca"}},
		}, true, true},
		{"vllm.yaml", exampleValues(t, "vllm.yaml"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			for k, v := range tc.vals {
				vals[k] = v
			}
			vals["model"] = ol.Model // the tiny model; vLLM's would be the Hugging Face id
			r := renderRelease(t, vals)
			_, c := r.server(t)
			args := localArgs(t, r, c.Args, ol.URL, certs)
			var clientTLS *tls.Config
			if tc.tls {
				clientTLS = certs.ClientTLS()
			}
			srv := startServer(t, bin, args)
			if _, dropped := srv.dropped["backend"]; dropped {
				t.Logf("--backend dropped: the server talks to its default backend, not checked for SERVING")
			} else {
				waitServing(t, srv.addrs["serving"], clientTLS)
				// Readiness with TLS: /health follows the backend.
				checkHealthHTTP(t, srv.addrs["serving HTTP"], "/health", clientTLS, tc.mutual)
			}
			checkHealthHTTP(t, srv.addrs["serving HTTP"], "/livez", clientTLS, tc.mutual)
			if a := srv.addrs["serving metrics"]; a != "" {
				checkMetrics(t, a)
			}
		})
	}
}

// localArgs points the chart's arguments at this machine: listeners on
// port 0 of every interface (as in the pod), the backend URL at the
// private Ollama, and the Secrets' files at local copies.
func localArgs(t *testing.T, r *release, args []string, backendURL string, certs *servertest.Certs) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, a := range args {
		name, val, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "listen", "http-listen", "metrics-listen":
			val = "0.0.0.0:0"
		case "ollama-url":
			val = backendURL
		case "backend":
			val = regexp.MustCompile(`url=[^,]*`).ReplaceAllString(val, "url="+backendURL)
		case "auth-tokens":
			file := filepath.Join(dir, "tokens")
			data := auth.Line(auth.NewToken(), "probe", []auth.Scope{auth.ScopeComplete}, time.Time{}) + "\n"
			for _, o := range r.objs {
				if s, ok := o.obj.(*corev1.Secret); ok && strings.HasSuffix(s.Name, "-tokens") {
					data = s.StringData[filepath.Base(val)]
				}
			}
			if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			val = file
		case "tls-cert":
			val = certs.ServerCert
		case "tls-key":
			val = certs.ServerKey
		case "tls-client-ca":
			val = certs.CAFile
		}
		if val == "" && !strings.Contains(a, "=") {
			out = append(out, a)
			continue
		}
		out = append(out, "--"+name+"="+val)
	}
	return out
}

// server is a running infill-server.
type server struct {
	addrs   map[string]string // log message ("serving", "serving HTTP", ...) → address
	dropped map[string]bool   // pending flags the server did not know
}

// startServer starts bin with args and waits for its listeners. A pending
// flag the server does not know is dropped and the server started again.
func startServer(t *testing.T, bin string, args []string) *server {
	t.Helper()
	s := &server{dropped: map[string]bool{}}
	for {
		addrs, unknown := launch(t, bin, args)
		if addrs != nil {
			s.addrs = addrs
			return s
		}
		why, pending := pendingFlags[unknown]
		if !pending {
			t.Fatalf("infill-server refuses the chart's flag --%s", unknown)
		}
		t.Logf("infill-server has no --%s yet (%s): started without it", unknown, why)
		s.dropped[unknown] = true
		args = slicesDeleteFlag(args, unknown)
	}
}

func slicesDeleteFlag(args []string, name string) []string {
	var out []string
	for _, a := range args {
		if a != "--"+name && !strings.HasPrefix(a, "--"+name+"=") {
			out = append(out, a)
		}
	}
	return out
}

var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -+([\w-]+)`)

// launch runs bin until it logs its gRPC and HTTP listeners (then it stops
// at the test's end, by SIGTERM, and must exit 0), or until it exits: then
// unknown is the flag it did not know (any other exit fails the test).
func launch(t *testing.T, bin string, args []string) (addrs map[string]string, unknown string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs strings.Builder
	found := map[string]string{}
	ready := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "serving") && rec.Addr != "" {
				found[rec.Msg] = rec.Addr
				if found["serving"] != "" && found["serving HTTP"] != "" {
					once.Do(func() { close(ready) })
				}
			}
			mu.Unlock()
		}
	}()
	exited := make(chan error, 1)
	go func() { <-scanned; exited <- cmd.Wait() }()
	output := func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }

	select {
	case <-ready:
	case err := <-exited:
		if m := undefinedFlag.FindStringSubmatch(output()); m != nil {
			return nil, m[1]
		}
		t.Fatalf("infill-server exited at start: %v\n%s", err, output())
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("infill-server logged no listeners in 90 s\n%s", output())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("infill-server after SIGTERM: %v\n%s", err, output())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("infill-server still running 30 s after SIGTERM\n%s", output())
		}
	})
	mu.Lock()
	defer mu.Unlock()
	addrs = map[string]string{}
	for k, v := range found {
		addrs[k] = v
	}
	return addrs, ""
}

// loopback turns a listener's address ("[::]:41234") into one to dial.
func loopback(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listener address %q: %v", addr, err)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// waitServing asks grpc.health.v1 what the readiness probe asks until it
// answers SERVING.
func waitServing(t *testing.T, addr string, clientTLS *tls.Config) {
	t.Helper()
	creds := insecure.NewCredentials()
	if clientTLS != nil {
		creds = credentials.NewTLS(clientTLS)
	}
	conn, err := grpc.NewClient(loopback(t, addr), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		last = fmt.Sprint(resp.GetStatus(), err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("grpc.health.v1 for infill.v1.CompletionService never SERVING: %s", last)
}

// checkHealthHTTP is an HTTP probe: GET path on the HTTP port (over TLS
// with clientTLS) must answer 200: /livez (liveness) and /health
// (readiness with TLS). With mutual TLS it also checks that a client
// without a certificate, as the kubelet is, cannot connect: why the chart's
// probes are TCP there.
func checkHealthHTTP(t *testing.T, addr, path string, clientTLS *tls.Config, mutual bool) {
	t.Helper()
	scheme := "http"
	client := &http.Client{Timeout: 10 * time.Second}
	if clientTLS != nil {
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: clientTLS}
	}
	url := scheme + "://" + loopback(t, addr) + path
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("GET %s: %s %s", path, resp.Status, b)
	}
	if mutual {
		kubelet := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // as the kubelet's HTTPS probe
		if resp, err := kubelet.Get(url); err == nil {
			resp.Body.Close()
			t.Errorf("GET %s without a client certificate: %s, want the handshake refused", path, resp.Status)
		}
	}
}

// checkMetrics reads /metrics on the metrics port and looks for the metric
// the autoscaler asks for.
func checkMetrics(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + loopback(t, addr) + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "infill_completions_in_flight") {
		t.Errorf("/metrics has no infill_completions_in_flight, the autoscaler's metric")
	}
}

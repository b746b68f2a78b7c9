// Package servertest starts the real infill server in front of the real
// Ollama backend (inference/ollamatest: the pinned Ollama build serving the
// tiny random-weight qwen2 model), or several of them of either kind
// (StartBackends), for end-to-end tests of the server, the client library
// and the command-line tool; StartEval adds the real
// bubblewrap sandbox and the HumanEval infilling sets from ../shared. Tests
// skip when the backend has not been prepared (scripts/backend.sh prepare),
// bubblewrap is missing or ../shared is absent, and fail instead when
// CI=true.
package servertest

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/metrics/scrape"
)

// Server is a running infill server.
type Server struct {
	// Addr is its gRPC loopback host:port.
	Addr string
	// HTTPAddr is its HTTP surfaces' loopback host:port.
	HTTPAddr string
	// MetricsAddr is its Prometheus metrics' loopback host:port (Scrape
	// reads them).
	MetricsAddr string
	// Model is the backend model it uses by default.
	Model string
	// Backend is the Ollama it talks to (Stop/Restart it to test outages).
	Backend *ollamatest.Backend
	// Infill is the server itself (ReloadTokens).
	Infill *server.Server
}

// Options adjust StartWith.
type Options struct {
	// Config changes the server configuration before it starts.
	Config func(*server.Config)
	// Deps changes the domain services before the server is built.
	Deps func(*server.Deps)
	// ClientTLS is how to reach a server configured with TLS (Config's
	// TLS), for the wait until it serves; nil dials plaintext.
	ClientTLS *tls.Config
	// Log is the server's logger (to read its lines); nil: the test's.
	Log *zap.Logger
	// NotServing returns once the server listens, without waiting for it
	// to report SERVING: for a server meant to start NOT_SERVING.
	NotServing bool
}

// Start runs the real server on a free loopback port, with a private Ollama
// serving the tiny model, until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts)
}

// EvalServer is a running server with its EvaluationService enabled.
type EvalServer struct {
	*Server
	// HumanEvalDir holds the HumanEval infilling sets the server runs by
	// name (RunBenchmark).
	HumanEvalDir string
	// RepoRoot is the directory repository tasks may use.
	RepoRoot string
	// ResultsDir holds RunBenchmark's run_id journals.
	ResultsDir string
}

// StartEval runs the real server with the bubblewrap sandbox, two
// evaluation workers, a results directory for run_id journals, the
// HumanEval sets from ../shared as named benchmarks, and repoRoot (a new
// temporary directory when empty) as the allowed repository root.
func StartEval(t testing.TB, repoRoot string) *EvalServer {
	t.Helper()
	dir := HumanEvalDir(t)
	sb, err := sandbox.New(sandbox.Config{Timeout: 20 * time.Second}, zaptest.NewLogger(t))
	Require(t, err, "bubblewrap sandbox")
	t.Cleanup(func() { sb.Close() })
	if repoRoot == "" {
		repoRoot = t.TempDir()
	}
	results := t.TempDir()
	srv := start(t, Options{Config: func(c *server.Config) {
		c.Eval.Workers = 2
		c.Eval.ResultsDir = results
		c.Eval.RepoRoots = []string{repoRoot}
	}, Deps: func(d *server.Deps) {
		d.Executor = sb
		d.Benchmarks = dataset.Catalog{HumanEvalDir: dir}
	}})
	return &EvalServer{Server: srv, HumanEvalDir: dir, RepoRoot: repoRoot, ResultsDir: results}
}

// HumanEvalDir returns ../shared/data/human-eval-infilling (from the
// repository root), skipping the test when it is absent (failing it under
// CI=true).
func HumanEvalDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data", "human-eval-infilling")
	_, err := os.Stat(filepath.Join(dir, dataset.HumanEvalSingleLine.FileName()))
	Require(t, err, "HumanEval infilling data (../shared)")
	return dir
}

// Require skips the test when err (a missing dependency) is not nil, or
// fails it under CI=true.
func Require(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// StartLocal runs the real server and contextpack Builder (Qwen2.5
// tokenizer) on a free loopback port in front of backend, a stand-in for
// cases the real Ollama cannot produce (recording prompts, answering at
// once), until the test ends. The Server's Backend is nil.
func StartLocal(t testing.TB, backend server.Backend) *Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.HealthInterval = 100 * time.Millisecond
	log := zaptest.NewLogger(t)
	a := serve(t, cfg, server.Deps{Builder: newBuilder(t, cfg.Context, log), Backend: backend}, log, Options{})
	a.Model = backend.Model("")
	return a
}

// BackendSpec is one backend of StartBackends: a real Ollama reached as
// Config says (its kind and name; URL empty: the Ollama's).
type BackendSpec struct {
	Config server.BackendConfig
	Ollama *ollamatest.Backend
}

// StartBackends runs the real server in front of several real Ollama
// backends (each with num_ctx 4096, the first one's model the default),
// with the clients server.OpenBackends makes, until the test ends. The
// Server's Backend is the first.
func StartBackends(t testing.TB, opts Options, specs ...BackendSpec) *Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.HealthInterval = 100 * time.Millisecond
	cfg.Inference.DefaultModel = specs[0].Ollama.Model
	cfg.Inference.ContextTokens = 4096
	cfg.Context.ContextTokens = 4096
	for _, s := range specs {
		b := s.Config
		if b.URL == "" {
			b.URL = s.Ollama.URL
		}
		cfg.Backends = append(cfg.Backends, b)
	}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	log := opts.logger(t)
	clients, err := server.OpenBackends(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	d := server.Deps{Builder: newBuilder(t, cfg.Context, log), Backends: clients}
	if opts.Deps != nil {
		opts.Deps(&d)
	}
	a := serve(t, cfg, d, log, opts)
	a.Model, a.Backend = specs[0].Ollama.Model, specs[0].Ollama
	return a
}

// logger is the server's logger: Log, or the test's.
func (o Options) logger(t testing.TB) *zap.Logger {
	if o.Log != nil {
		return o.Log
	}
	return zaptest.NewLogger(t)
}

func start(t testing.TB, opts Options) *Server {
	t.Helper()
	b := ollamatest.Start(t)
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.HealthInterval = 100 * time.Millisecond
	cfg.Inference.URL = b.URL
	cfg.Inference.DefaultModel = b.Model
	cfg.Inference.ContextTokens = 4096
	cfg.Context.ContextTokens = 4096
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	log := opts.logger(t)
	builder := newBuilder(t, cfg.Context, log)
	backend, err := inference.NewOllama(cfg.Inference, log)
	if err != nil {
		t.Fatal(err)
	}
	d := server.Deps{Builder: builder, Backend: backend}
	if opts.Deps != nil {
		opts.Deps(&d)
	}
	a := serve(t, cfg, d, log, opts)
	a.Model, a.Backend = b.Model, b
	return a
}

// newBuilder is the server's contextpack Builder, closed when the test
// ends (after the server's shutdown, which is registered later).
func newBuilder(t testing.TB, cfg contextpack.Config, log *zap.Logger) *contextpack.Builder {
	t.Helper()
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	builder, err := contextpack.NewBuilder(cfg, tok, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(builder.Close)
	return builder
}

// serve runs the server, gRPC, HTTP and metrics, until the test ends and
// returns their addresses once it reports SERVING (at once with
// opts.NotServing).
func serve(t testing.TB, cfg server.Config, d server.Deps, log *zap.Logger, opts Options) *Server {
	t.Helper()
	srv, err := server.New(cfg, d, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		t.Fatal(err)
	}
	hlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 3)
	go func() { served <- srv.Serve(lis) }()
	go func() { served <- srv.ServeHTTP(hlis) }()
	go func() { served <- srv.ServeMetrics(mlis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		for range 3 {
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	if !opts.NotServing {
		waitServing(t, lis.Addr().String(), opts.ClientTLS)
	}
	return &Server{Addr: lis.Addr().String(), HTTPAddr: hlis.Addr().String(), MetricsAddr: mlis.Addr().String(), Infill: srv}
}

// Scrape reads the server's metrics, failing the test when it cannot.
func (s *Server) Scrape(t testing.TB) scrape.Families {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := scrape.Get(ctx, "http://"+s.MetricsAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitServing waits until health reports the completion service SERVING
// (the server says NOT_SERVING until the backend answers).
func waitServing(t testing.TB, addr string, clientTLS *tls.Config) {
	t.Helper()
	creds := insecure.NewCredentials()
	if clientTLS != nil {
		creds = credentials.NewTLS(clientTLS)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
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

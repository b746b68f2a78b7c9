package server

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/httpapi"
	"github.com/infill-dev/infill/server/pipeline"
)

// Config configures the server. Flags and environment are read only in
// cmd/infill-server.
type Config struct {
	// ListenAddr is the gRPC listen address.
	ListenAddr string
	// HTTPListenAddr is the HTTP surfaces' listen address; "" serves none.
	HTTPListenAddr string
	// HTTP configures the HTTP surfaces; its body limit is MaxRecvMsgBytes
	// and its model figures come from the backend.
	HTTP httpapi.Config
	// MetricsListenAddr is where the Prometheus metrics are served
	// (/metrics); "" serves none (the default: they name models, methods
	// and load, so exposing them is a choice). They check no credentials:
	// beyond loopback only with MetricsPublic or Insecure.
	MetricsListenAddr string
	// MetricsPublic serves the metrics beyond loopback without credentials
	// (a Prometheus in the cluster scrapes the pod's address): they carry
	// counts, durations, model and method names, never code. The profiler
	// stays loopback-only unless Insecure (heap profiles hold request data).
	MetricsPublic bool
	// Pprof adds the Go profiler (/debug/pprof/) to the metrics listener.
	Pprof bool
	// MaxRecvMsgBytes caps one request (a repository's files travel in it).
	MaxRecvMsgBytes int
	MaxSendMsgBytes int
	// MaxFiles caps files per request.
	MaxFiles int
	// ShutdownGrace is how long GracefulStop may wait before Stop.
	ShutdownGrace time.Duration
	// HealthInterval is how often the backend's health is checked.
	HealthInterval time.Duration
	// HealthProbeTimeout bounds one check (a version ping or a one-token
	// generation), well below the interval so that a check answers the
	// question for its own tick (a longer one delays the next).
	HealthProbeTimeout time.Duration
	// HealthRecent: a backend that answered a generation within this long
	// is healthy without a check, so health never adds load to, or flaps
	// under, a busy backend.
	HealthRecent time.Duration
	// HealthFailures is how many checks in a row must fail before health
	// says NOT_SERVING; a stall the inference watchdog saw needs only one.
	HealthFailures int
	// Admission bounds the generations sent to the backend at once and
	// the requests waiting for it (each backend's, unless its
	// BackendConfig says otherwise).
	Admission pipeline.AdmissionConfig
	// Inference configures every backend's client; its URL is the one
	// Ollama of a configuration without Backends.
	Inference inference.Config
	// Backends are the backends completions are routed to (--backend,
	// --backends); empty: one Ollama at Inference.URL, named "default".
	Backends []BackendConfig
	// Routing orders the backends a request may go to: affinity
	// (rendezvous hashing on repository and cursor file, for KV cache
	// reuse) or round-robin.
	Routing pipeline.Routing
	// LoadBound passes over a backend whose slots are all taken and whose
	// load is LoadBound times its share (pipeline.Config.LoadBound); 0:
	// only when its admission refuses at once.
	LoadBound float64
	Context   contextpack.Config
	Eval      EvalConfig
	// Edit configures edit prediction (PredictEdit): the default prompt
	// format and generation budget.
	Edit pipeline.EditConfig
	// Auth configures bearer tokens and their limits.
	Auth auth.Config
	// TLS configures TLS (and mutual TLS) on both listeners.
	TLS TLSConfig
	// Insecure allows a listener beyond loopback without authentication.
	Insecure bool
	// Evaluation switches the EvaluationService.
	Evaluation EvalMode
}

// EvalConfig configures the EvaluationService.
type EvalConfig struct {
	// Workers bounds the samples graded at once by the whole server: one
	// pool of sandbox runs shared by every evaluation call.
	Workers int
	// MaxSamples caps samples per task a client may ask the server to
	// generate.
	MaxSamples int
	// ResultsDir holds RunBenchmark journals (run_id.jsonl); empty disables
	// run_id.
	ResultsDir string
	// RepoRoots are the directories repository tasks may use; empty
	// forbids repository tasks from clients.
	RepoRoots []string
	// Pythons give the repositories under a directory their interpreter
	// (--eval-python DIR=PYTHON); a task may also name one of these.
	Pythons []evaluator.PythonRule
	// Toolchains are the toolchains of the test runners besides the
	// sandbox's Python (--sandbox-node, --sandbox-go-*).
	Toolchains evaluator.Toolchains
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		ListenAddr:      "127.0.0.1:50051",
		HTTPListenAddr:  "127.0.0.1:8012",
		HTTP:            httpapi.DefaultConfig(),
		MaxRecvMsgBytes: 64 << 20,
		MaxSendMsgBytes: 16 << 20,
		MaxFiles:        20000,
		ShutdownGrace:   10 * time.Second,
		HealthInterval:  2 * time.Second,
		// A one-token generation of the tiny model answers in 0.1-0.3 s
		// on 2 busy cores; a real model on a GPU faster.
		HealthProbeTimeout: time.Second,
		HealthRecent:       5 * time.Second,
		HealthFailures:     2,
		Admission:          pipeline.DefaultAdmissionConfig(),
		LoadBound:          pipeline.DefaultConfig().LoadBound,
		Edit:               pipeline.DefaultEditConfig(),
		Inference:          inference.DefaultConfig(),
		Context:            contextpack.DefaultConfig(),
		Eval:               EvalConfig{Workers: runtime.NumCPU(), MaxSamples: 200},
		Evaluation:         EvalAuto,
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.ListenAddr == "" {
		errs = append(errs, errors.New("server: ListenAddr is empty"))
	}
	if c.Pprof && c.MetricsListenAddr == "" {
		errs = append(errs, errors.New("server: Pprof is served on the metrics listener: it needs MetricsListenAddr"))
	}
	if c.MaxRecvMsgBytes < 1<<20 || c.MaxSendMsgBytes < 1<<20 {
		errs = append(errs, errors.New("server: message limits must be at least 1 MiB"))
	}
	if c.MaxFiles < 1 {
		errs = append(errs, fmt.Errorf("server: MaxFiles %d < 1", c.MaxFiles))
	}
	if c.ShutdownGrace <= 0 || c.HealthInterval <= 0 || c.HealthProbeTimeout <= 0 || c.HealthRecent <= 0 {
		errs = append(errs, errors.New("server: ShutdownGrace, HealthInterval, HealthProbeTimeout and HealthRecent must be > 0"))
	}
	if c.HealthFailures < 1 {
		errs = append(errs, fmt.Errorf("server: HealthFailures %d < 1", c.HealthFailures))
	}
	if c.Eval.Workers < 1 || c.Eval.MaxSamples < 1 {
		errs = append(errs, errors.New("server: Eval.Workers and Eval.MaxSamples must be >= 1"))
	}
	// The repository roots and interpreter rules go to every evaluation's
	// runner (newRunner): the evaluator checks them.
	if err := (evaluator.Config{AllowedRepoRoots: c.Eval.RepoRoots, Pythons: c.Eval.Pythons, Toolchains: c.Eval.Toolchains}).WithDefaults().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("server: Eval: %w", err))
	}
	errs = append(errs, c.Admission.Validate(), c.Inference.Validate(), c.Context.Validate(), c.Auth.Validate(), c.TLS.validate(),
		c.Edit.Validate())
	switch c.Evaluation {
	case EvalAuto, EvalOn, EvalOff:
	default:
		errs = append(errs, fmt.Errorf("server: evaluation mode %q: want auto, on or off", c.Evaluation))
	}
	errs = append(errs, CheckListen("--listen", c.ListenAddr, c.Authenticated(), c.Insecure),
		CheckListen("--http-listen", c.HTTPListenAddr, c.Authenticated(), c.Insecure))
	// The metrics listener checks no credentials, whatever the others do.
	if a := c.MetricsListenAddr; a != "" && !IsLoopback(a) && !c.Insecure {
		switch {
		case !c.MetricsPublic:
			errs = append(errs, fmt.Errorf("--metrics-listen %s is not a loopback address, and the metrics (and profiler) "+
				"endpoints check no credentials: listen on 127.0.0.1 (scrape from elsewhere through an SSH tunnel or an "+
				"authenticating proxy), pass --metrics-public to serve the metrics (counts, no code) to anyone who can reach "+
				"the port, or --insecure to serve them anyway", a))
		case c.Pprof:
			errs = append(errs, fmt.Errorf("--pprof on --metrics-listen %s beyond loopback: the profiler shows request data "+
				"(heap, goroutine stacks); --metrics-public covers the metrics only: pass --insecure to serve the profiler anyway", a))
		}
	}
	// A request that asks for the default number of tokens must leave room
	// for a prompt, or every such request would fail.
	need := c.Inference.DefaultMaxTokens + c.Context.MinPromptTokens
	if c.Inference.ContextTokens < need {
		errs = append(errs, fmt.Errorf("server: a context of %d tokens leaves no prompt after %d default max tokens (need at least %d)",
			c.Inference.ContextTokens, c.Inference.DefaultMaxTokens, need))
	}
	errs = append(errs, c.validateBackends(need))
	if c.Routing != pipeline.RouteAffinity && c.Routing != pipeline.RouteRoundRobin {
		errs = append(errs, fmt.Errorf("server: unknown routing %d", c.Routing))
	}
	if !(c.LoadBound == 0 || c.LoadBound >= 1) {
		errs = append(errs, fmt.Errorf("server: load bound %v: want 0 (off) or at least 1", c.LoadBound))
	}
	for m, n := range c.Inference.ModelContextTokens {
		if n < need {
			errs = append(errs, fmt.Errorf("server: model %q's context of %d tokens leaves no prompt after %d default max tokens (need at least %d)",
				m, n, c.Inference.DefaultMaxTokens, need))
		}
	}
	return errors.Join(errs...)
}

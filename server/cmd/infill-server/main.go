// Command infill-server serves repository-aware code completions over gRPC
// from a Qwen2.5-Coder model on an Ollama backend (--ollama-url), or on
// several Ollama and OpenAI-compatible backends (--backend, --backends)
// with cache-affinity routing (--routing, --load-bound).
//
// Every flag has an environment variable (INFILL_<FLAG>, upper case, dashes
// as underscores); a flag given on the command line wins. The Ollama URL
// also honours OLLAMA_HOST. SIGHUP reloads the --auth-tokens file.
//
// `infill-server token [--append FILE] [--expires WHEN] NAME SCOPE...`
// makes a new random token and prints it with its line for the token file
// (see package server/auth for the format).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/pipeline"
	"github.com/infill-dev/infill/server/workspace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func main() {
	run := run
	if len(os.Args) > 1 && os.Args[1] == "token" {
		run = func(args []string) error { return runToken(args[1:], os.Stdout, os.Stderr) }
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "infill-server:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := server.DefaultConfig()
	if h := os.Getenv("OLLAMA_HOST"); h != "" {
		cfg.Inference.URL = ollamaURL(h)
	}
	fs := flag.NewFlagSet("infill-server", flag.ContinueOnError)
	fs.StringVar(&cfg.ListenAddr, "listen", cfg.ListenAddr, "gRPC listen address")
	fs.StringVar(&cfg.HTTPListenAddr, "http-listen", cfg.HTTPListenAddr, "HTTP listen address for editor plugins (llama.cpp /infill, Ollama /api/generate, OpenAI and Tabby /v1/completions); empty: none")
	fs.StringVar(&cfg.MetricsListenAddr, "metrics-listen", cfg.MetricsListenAddr, "address serving Prometheus metrics at /metrics (e.g. 127.0.0.1:9090); empty: none")
	fs.BoolVar(&cfg.MetricsPublic, "metrics-public", cfg.MetricsPublic, "serve --metrics-listen's metrics (counts, durations, no code) beyond loopback without credentials, e.g. to a Prometheus in the cluster; the profiler still needs --insecure")
	fs.BoolVar(&cfg.Pprof, "pprof", cfg.Pprof, "serve the Go profiler at /debug/pprof/ on --metrics-listen")
	fs.StringVar(&cfg.Inference.URL, "ollama-url", cfg.Inference.URL, "Ollama server URL (default from OLLAMA_HOST): the one backend when there is no --backend")
	var backends []server.BackendConfig
	fs.Func("backend", "a backend (repeatable): comma-separated kind=ollama|openai, url=, name=, models= (repeatable; NAME or NAME=SERVED), num_ctx=, slots=, queue=, token_file=", func(v string) error {
		b, err := server.ParseBackend(v)
		if err == nil {
			backends = append(backends, b)
		}
		return err
	})
	backendsFile := fs.String("backends", "", "file (JSON if named .json, else YAML) listing backends: {\"backends\": [{name, kind, url, models, num_ctx, slots, queue, token_file}]}")
	fs.Float64Var(&cfg.LoadBound, "load-bound", cfg.LoadBound, "with several backends, a backend whose slots are all taken and whose load (generations and waiting requests) reaches this many times its share passes the request on to the next; 0: only when its queue is full")
	fs.Func("routing", "how requests are spread over the backends: affinity (a repository's file stays on one backend, which holds its prompt in its cache) or round-robin (default affinity)", func(v string) error {
		r, err := pipeline.ParseRouting(v)
		cfg.Routing = r
		return err
	})
	fs.StringVar(&cfg.Inference.DefaultModel, "model", cfg.Inference.DefaultModel, "default model (a Qwen2.5-Coder base model)")
	fs.IntVar(&cfg.Inference.ContextTokens, "num-ctx", cfg.Inference.ContextTokens, "num_ctx sent with every request (fixed: changing it reloads the model)")
	fs.IntVar(&cfg.Inference.DefaultMaxTokens, "max-tokens", cfg.Inference.DefaultMaxTokens, "tokens to generate when a request asks for 0")
	fs.IntVar(&cfg.Inference.MaxCandidates, "max-candidates", cfg.Inference.MaxCandidates, "most candidates per request")
	fs.DurationVar(&cfg.Inference.KeepAlive, "keep-alive", cfg.Inference.KeepAlive, "how long Ollama keeps the model loaded")
	fs.IntVar(&cfg.Admission.Slots, "backend-slots", cfg.Admission.Slots, "generations sent to the backend at once: its parallelism (OLLAMA_NUM_PARALLEL); 0: no admission, every request goes straight to the backend")
	fs.IntVar(&cfg.Admission.QueueLength, "queue-length", cfg.Admission.QueueLength, "requests waiting for a backend slot, per class (interactive, evaluation); more are refused RESOURCE_EXHAUSTED")
	fs.DurationVar(&cfg.Admission.BurstWait, "burst-wait", cfg.Admission.BurstWait, "a keystroke that supersedes its session's request still in flight, while the backend has no free slot, waits this long before it queues (the next keystroke drops it without a backend call); 0: never")
	fs.DurationVar(&cfg.Admission.MaxHold, "abandoned-hold", cfg.Admission.MaxHold, "longest a request abandoned before its first token keeps its backend slot while a probe waits for the backend to finish its prompt")
	fs.IntVar(&cfg.Admission.EvalShare, "eval-share", cfg.Admission.EvalShare, "evaluation traffic gets one backend start in every N while editors wait too")
	fs.Int64Var(&cfg.Context.CacheBytes, "cache-bytes", cfg.Context.CacheBytes, "memory cap of the content store, file analyses and repository indexes together (least recently used out); about 4 times the source it holds")
	fs.IntVar(&cfg.MaxRecvMsgBytes, "max-recv-bytes", cfg.MaxRecvMsgBytes, "largest request accepted")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "time calls in flight get on SIGTERM")
	fs.DurationVar(&cfg.HealthInterval, "health-interval", cfg.HealthInterval, "how often the backend's health is checked")
	fs.DurationVar(&cfg.HealthProbeTimeout, "health-probe-timeout", cfg.HealthProbeTimeout, "bound of one health check (a version ping or a one-token generation)")
	fs.DurationVar(&cfg.HealthRecent, "health-recent", cfg.HealthRecent, "a backend that answered a generation within this long is healthy without a check")
	fs.IntVar(&cfg.HealthFailures, "health-failures", cfg.HealthFailures, "failed health checks in a row before NOT_SERVING")
	fs.DurationVar(&cfg.Inference.Watchdog.FirstTokenBase, "stall-first-token", cfg.Inference.Watchdog.FirstTokenBase, "a generation with no first token within this (plus the prompt allowance) ends UNAVAILABLE")
	fs.Float64Var(&cfg.Inference.Watchdog.PromptTokensPerSecond, "stall-prompt-rate", cfg.Inference.Watchdog.PromptTokensPerSecond, "slowest prompt evaluation allowed, tokens/s: each prompt token adds 1/rate s to the first-token bound")
	fs.DurationVar(&cfg.Inference.Watchdog.LoadAllowance, "stall-load-allowance", cfg.Inference.Watchdog.LoadAllowance, "added to the first-token bound when the model may need loading (not answered within --keep-alive)")
	fs.DurationVar(&cfg.Inference.Watchdog.TokenGap, "stall-token-gap", cfg.Inference.Watchdog.TokenGap, "a generation with no new token for this long ends UNAVAILABLE")
	fs.DurationVar(&cfg.Inference.Watchdog.ResponseHeaderTimeout, "backend-header-timeout", cfg.Inference.Watchdog.ResponseHeaderTimeout, "bound of the backend's answer to calls other than generations")
	fs.IntVar(&cfg.Eval.Workers, "eval-workers", cfg.Eval.Workers, "samples graded at once by the whole server (one pool shared by every evaluation call)")
	fs.StringVar(&cfg.Eval.ResultsDir, "results-dir", cfg.Eval.ResultsDir, "directory for RunBenchmark journals (enables run_id resume)")
	fs.Func("eval-repo-root", "directory repository evaluation tasks may use (repeatable, or comma-separated)", func(v string) error {
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				cfg.Eval.RepoRoots = append(cfg.Eval.RepoRoots, r)
			}
		}
		return nil
	})
	fs.Func("edit-format", "prompt format of edit predictions (PredictEdit, Zed's Zeta requests) whose request names none and whose model's name says none (a name with zeta is Zeta's, with instinct Instinct's): zeta or instinct (default zeta)", func(v string) error {
		f, err := pipeline.ParseEditFormat(v)
		cfg.Edit.Format = f
		return err
	})
	fs.IntVar(&cfg.Edit.MaxTokens, "edit-max-tokens", cfg.Edit.MaxTokens, "tokens an edit prediction generates when its request asks for 0: the editable region rewritten")
	var workspaces []string
	fs.Func("workspace", "directory the HTTP surfaces read as the repository of requests whose file lies in it, kept current as files change (repeatable, or comma-separated)", func(v string) error {
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				workspaces = append(workspaces, r)
			}
		}
		return nil
	})
	humanEvalDir := fs.String("humaneval-dir", "", "directory of the HumanEval infilling .jsonl.gz files (enables those benchmarks)")
	erbJSONL := fs.String("execrepobench-jsonl", "", "ExecRepoBench JSON lines file (with --execrepobench-repos)")
	erbRepos := fs.String("execrepobench-repos", "", "ExecRepoBench repositories directory")
	var sbCfg sandbox.Config
	fs.DurationVar(&sbCfg.Timeout, "sandbox-timeout", sandbox.DefaultTimeout, "limit of one repository sample's own run time, unless its task sets one (program tasks: 3s, as human-eval-infilling; start-up is not charged); also its CPU time")
	sizeFlag := func(name string, dst *int64, usage string) {
		fs.Func(name, usage, func(v string) error {
			n, err := sandbox.ParseBytes(v)
			*dst = n
			return err
		})
	}
	sizeFlag("sandbox-memory", &sbCfg.MemoryBytes, "memory each process of a sample may write to (RLIMIT_DATA: heap, thread stacks; reservations do not count), e.g. 8GiB (default "+sandbox.FormatBytes(sandbox.DefaultMemoryBytes)+")")
	sizeFlag("sandbox-address-space", &sbCfg.AddressSpaceBytes, "address space per process of a sample (RLIMIT_AS), a backstop for shared memory (default 4 × --sandbox-memory)")
	sizeFlag("sandbox-file-size", &sbCfg.FileSizeBytes, "largest file a sample may write (default "+sandbox.FormatBytes(sandbox.DefaultFileSizeBytes)+")")
	fs.IntVar(&sbCfg.Processes, "sandbox-processes", sandbox.DefaultProcesses, "processes and threads a sample may have at once")
	fs.StringVar(&cfg.Eval.Toolchains.Node, "sandbox-node", evaluator.DefaultNodePath, "node that runs JavaScript/TypeScript repositories' tests (outside /usr: bound read-only with its installation)")
	fs.StringVar(&cfg.Eval.Toolchains.GoRoot, "sandbox-go-root", "", "GOROOT of the Go toolchain Go repositories' tests run with, bound read-only (default: go env GOROOT of the go on PATH, asked at the first Go sample)")
	fs.StringVar(&cfg.Eval.Toolchains.GoModCache, "sandbox-go-modcache", "", "module cache Go repositories build against, bound read-only; it must hold their modules (eval mask fetches them) and be readable by the sandbox's user (default: go env GOMODCACHE)")
	fs.DurationVar(&cfg.Eval.Toolchains.GoBuildTimeout, "sandbox-go-build-timeout", evaluator.DefaultGoBuildTimeout, "limit of a Go sample's build (compiling, go vet's checks) before its tests start; a fresh build cache compiles the standard library's test packages once")
	fs.Func("eval-python", "`DIR=PYTHON`: repositories under DIR run their tests with the interpreter PYTHON (a virtual environment's bin/python selects it); repeatable. Without one, a repository's own .venv/ or venv/, else python3", func(v string) error {
		dir, py, ok := strings.Cut(v, "=")
		if !ok || !filepath.IsAbs(dir) || !filepath.IsAbs(py) {
			return fmt.Errorf("want DIR=PYTHON, both absolute paths")
		}
		cfg.Eval.Pythons = append(cfg.Eval.Pythons, evaluator.PythonRule{Dir: filepath.Clean(dir), Python: filepath.Clean(py)})
		return nil
	})
	fs.StringVar(&cfg.Auth.TokenFile, "auth-tokens", "", "file of bearer tokens (hashes, scopes, limits; `infill-server token` makes one); reloaded on SIGHUP. Empty: no tokens")
	fs.Float64Var(&cfg.Auth.Rate, "token-rate", 0, "requests per second each token may make unless its line says otherwise (0: unlimited)")
	fs.IntVar(&cfg.Auth.Burst, "token-burst", 0, "requests a token may make at once before --token-rate applies (0: the rate rounded up)")
	fs.IntVar(&cfg.Auth.Streams, "token-streams", 0, "calls each token may have in flight unless its line says otherwise (0: unlimited)")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "PEM certificate (chain) for TLS on the gRPC and HTTP listeners (with --tls-key)")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&cfg.TLS.ClientCAFile, "tls-client-ca", "", "PEM CA certificates: clients must present a certificate they signed (mutual TLS)")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow listening beyond loopback without authentication (--auth-tokens or --tls-client-ca)")
	fs.Func("evaluation", "evaluation service: on, off, or auto (off when --listen is not loopback and no --auth-tokens; default auto)", func(v string) error {
		switch server.EvalMode(v) {
		case server.EvalAuto, server.EvalOn, server.EvalOff:
			cfg.Evaluation = server.EvalMode(v)
			return nil
		}
		return fmt.Errorf("want on, off or auto")
	})
	addrFile := fs.String("addr-file", "", "once listening, write the addresses listened on to this file, one KIND=HOST:PORT a line (grpc, http, metrics), for scripts: the ports of :0 addresses included")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (prompts are logged only at debug)")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of console text")
	if err := applyEnv(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *backendsFile != "" {
		fromFile, err := server.LoadBackends(*backendsFile)
		if err != nil {
			return fmt.Errorf("--backends: %w", err)
		}
		backends = append(backends, fromFile...)
	}
	if len(backends) > 0 {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "ollama-url" })
		if explicit {
			return errors.New("--ollama-url with --backend or --backends: give that Ollama as a --backend kind=ollama,url=...")
		}
		cfg.Backends = backends
	}
	cfg.Context.ContextTokens = cfg.Inference.ContextTokens
	for _, b := range cfg.EffectiveBackends() {
		cfg.Context.ContextTokens = max(cfg.Context.ContextTokens, b.ContextTokens)
	}
	cfg.Context.MaxFiles = cfg.MaxFiles
	for _, n := range cfg.Inference.ModelContextTokens {
		cfg.Context.ContextTokens = max(cfg.Context.ContextTokens, n)
	}

	log, err := newLogger(*logLevel, *logJSON)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := cfg.Validate(); err != nil {
		return err
	}

	tok, err := tokenizer.Qwen25()
	if err != nil {
		return fmt.Errorf("loading tokenizer: %w", err)
	}
	builder, err := contextpack.NewBuilder(cfg.Context, tok, log.Named("contextpack"))
	if err != nil {
		return err
	}
	defer builder.Close()
	clients, err := server.OpenBackends(cfg, log)
	if err != nil {
		return err
	}
	deps := server.Deps{Builder: builder, Backends: clients}
	sbCfg.WarmWorkers = cfg.Eval.Workers
	if sb, err := sandbox.New(sbCfg, log.Named("sandbox")); errors.Is(err, sandbox.ErrInvalidConfig) {
		return fmt.Errorf("--sandbox-*: %w", err)
	} else if err != nil {
		log.Warn("evaluation disabled: no sandbox", zap.Error(err))
	} else {
		defer sb.Close()
		deps.Executor = sb
	}
	if len(workspaces) > 0 {
		set, err := workspace.OpenSet(workspaces, workspace.DefaultConfig(), log.Named("workspace"))
		if err != nil {
			return fmt.Errorf("--workspace: %w", err)
		}
		defer func() { _ = set.Close() }()
		deps.Workspaces = set
		// Analyse the workspaces while the server starts, so that the
		// first keystroke does not pay for it; stopped before the
		// builder closes.
		warmCtx, cancelWarm := context.WithCancel(context.Background())
		warmed := make(chan struct{})
		go func() { defer close(warmed); set.Warm(warmCtx, builder, log.Named("workspace")) }()
		defer func() { cancelWarm(); <-warmed }()
	}
	catalog := dataset.Catalog{HumanEvalDir: *humanEvalDir}
	if *erbJSONL != "" || *erbRepos != "" {
		if *erbJSONL == "" || *erbRepos == "" {
			return errors.New("--execrepobench-jsonl and --execrepobench-repos go together")
		}
		catalog.ExecRepoBench = &dataset.ExecRepoBenchSource{JSONL: *erbJSONL, ReposDir: *erbRepos}
	}
	if names := catalog.Names(); len(names) > 0 {
		deps.Benchmarks = catalog
		log.Info("benchmarks", zap.Strings("names", names))
	}
	srv, err := server.New(cfg, deps, log)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return err
	}
	var hlis, mlis net.Listener
	if cfg.HTTPListenAddr != "" {
		if hlis, err = net.Listen("tcp", cfg.HTTPListenAddr); err != nil {
			_ = lis.Close()
			return fmt.Errorf("--http-listen: %w", err)
		}
	}
	if cfg.MetricsListenAddr != "" {
		if mlis, err = net.Listen("tcp", cfg.MetricsListenAddr); err != nil {
			_ = lis.Close()
			if hlis != nil {
				_ = hlis.Close()
			}
			return fmt.Errorf("--metrics-listen: %w", err)
		}
	}
	if *addrFile != "" {
		if err := writeAddrFile(*addrFile, lis, hlis, mlis); err != nil {
			for _, l := range []net.Listener{lis, hlis, mlis} {
				if l != nil {
					_ = l.Close()
				}
			}
			return fmt.Errorf("--addr-file: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stopReload := reloadOnHUP(srv, cfg.Auth.TokenFile, log)
	defer stopReload()
	errc := make(chan error, 3)
	go func() { errc <- srv.Serve(lis) }()
	if hlis != nil {
		go func() { errc <- srv.ServeHTTP(hlis) }()
	}
	if mlis != nil {
		go func() { errc <- srv.ServeMetrics(mlis) }()
	}
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	select {
	case err := <-errc:
		shutdown()
		return err
	case <-ctx.Done():
		log.Info("signal received, shutting down")
		shutdown()
		return nil
	}
}

// writeAddrFile writes the addresses the listeners are bound to (nil: not
// listening), one KIND=HOST:PORT a line, to path: written beside and
// renamed, so a reader sees all of it or nothing.
func writeAddrFile(path string, grpcLis, httpLis, metricsLis net.Listener) error {
	var b strings.Builder
	for _, l := range []struct {
		kind string
		lis  net.Listener
	}{{"grpc", grpcLis}, {"http", httpLis}, {"metrics", metricsLis}} {
		if l.lis != nil {
			fmt.Fprintf(&b, "%s=%s\n", l.kind, l.lis.Addr())
		}
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// applyEnv sets each flag from INFILL_<NAME> when that variable is set.
func applyEnv(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		key := "INFILL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", key, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// ollamaURL turns an OLLAMA_HOST value ("127.0.0.1:11434", "http://h:p")
// into a URL.
func ollamaURL(h string) string {
	if strings.Contains(h, "://") {
		return h
	}
	return "http://" + h
}

func newLogger(level string, json bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	c := zap.NewProductionConfig()
	if !json {
		c = zap.NewDevelopmentConfig()
		c.DisableStacktrace = true
	}
	c.Level = zap.NewAtomicLevelAt(lvl)
	return c.Build()
}

// reloadOnHUP reloads the token file on every SIGHUP until the returned
// function is called. A broken file leaves the tokens in force (the
// server logs why).
func reloadOnHUP(srv *server.Server, tokenFile string, log *zap.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-hup:
				if tokenFile == "" {
					log.Info("SIGHUP: no --auth-tokens to reload")
					continue
				}
				log.Info("SIGHUP: reloading the token file", zap.String("file", tokenFile))
				_ = srv.ReloadTokens()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-exited
	}
}

// runToken makes a new random token: without --append it prints the token
// and then its token file line; with --append FILE it appends the line to
// FILE (created 0600) and prints only the token.
func runToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("infill-server token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: infill-server token [--append FILE] [--expires WHEN] NAME SCOPE...\n"+
			"Makes a random token for NAME with the scopes given (complete, evaluate) and prints it with its line for\n"+
			"--auth-tokens (which holds only its hash). Add rate=, burst= or streams= to the line for per-token limits.")
		fs.PrintDefaults()
	}
	appendTo := fs.String("append", "", "append the line to this token file and print only the token")
	expires := fs.String("expires", "", "expiry: an RFC 3339 time or a date (UTC)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return errors.New("token: a NAME and at least one SCOPE are required")
	}
	name := fs.Arg(0)
	if !auth.ValidName(name) {
		return fmt.Errorf("token: name %q: want 1 to 64 of A-Z a-z 0-9 . _ @ + -", name)
	}
	var scopes []auth.Scope
	for _, a := range fs.Args()[1:] {
		s, err := auth.ParseScope(a)
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		scopes = append(scopes, s)
	}
	var exp time.Time
	if *expires != "" {
		var err error
		if exp, err = auth.ParseExpiry(*expires); err != nil {
			return fmt.Errorf("token: --expires: %w", err)
		}
	}
	token := auth.NewToken()
	line := auth.Line(token, name, scopes, exp)
	if *appendTo == "" {
		_, err := fmt.Fprintf(stdout, "%s\n%s\n", token, line)
		fmt.Fprintln(stderr, "first line: the token, for the client (nothing keeps it); second: its line for --auth-tokens")
		return err
	}
	f, err := os.OpenFile(*appendTo, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, token)
	return err
}

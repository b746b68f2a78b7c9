package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/internal/logctx"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/httpapi"
	"github.com/infill-dev/infill/server/metrics"
	"github.com/infill-dev/infill/server/pipeline"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Deps are the domain services the server calls.
type Deps struct {
	Builder PromptBuilder
	// Backend is the client of a configuration with one backend;
	// Backends are the clients of Config.Backends by name (OpenBackends
	// makes them).
	Backend  Backend
	Backends map[string]Backend
	// Executor runs evaluation samples in the sandbox; nil makes the
	// EvaluationService answer FAILED_PRECONDITION.
	Executor evaluator.Executor
	// Benchmarks are the named benchmarks RunBenchmark can run; may be nil.
	Benchmarks Benchmarks
	// Workspaces are repositories read from the server's disk for the HTTP
	// surfaces (--workspace); may be nil.
	Workspaces httpapi.Workspaces
}

// Server is a configured gRPC server.
type Server struct {
	cfg    Config
	log    *zap.Logger
	grpc   *grpc.Server
	http   *http.Server
	health *health.Server
	deps   Deps
	pipe   *pipeline.Pipeline
	guard  *auth.Guard
	tls    *tls.Config
	// healthServices are the services whose health follows the backends:
	// SERVING while any backend serves.
	healthServices []string
	// backends are the pipeline's backends, each with its health
	// service.
	backends []watchedBackend
	healthMu sync.Mutex
	serving  map[string]bool   // by backend name
	reasons  map[string]string // why it does not serve, in words, by backend name
	metrics  *metrics.Metrics
	// metricsHTTP serves the metrics (and pprof) on ServeMetrics.
	metricsHTTP *http.Server
	// methods are the gRPC methods registered when Serve began, for
	// bounded metric labels (a client may name any method).
	methods atomic.Pointer[map[string]bool]
	// backendUp is what the HTTP surfaces' health checks answer: a
	// backend that serves the default model serves.
	backendUp atomic.Bool

	stopOnce sync.Once
	stop     chan struct{}
	watchWG  sync.WaitGroup
}

// New builds the gRPC server with its interceptors, health, reflection and
// the completion service. Call Serve, then Shutdown.
func New(cfg Config, deps Deps, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Builder == nil || (deps.Backend == nil && len(deps.Backends) == 0) {
		return nil, fmt.Errorf("server: Builder and Backend are required")
	}
	targets, err := cfg.targets(deps)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	guard, err := auth.New(cfg.Auth, log.Named("auth"))
	if err != nil {
		return nil, err
	}
	tc, err := cfg.TLS.load()
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	pcfg := pipeline.DefaultConfig()
	pcfg.MaxFiles, pcfg.MaxIDBytes, pcfg.Admission = cfg.MaxFiles, maxIDBytes, cfg.Admission
	pcfg.Routing, pcfg.LoadBound = cfg.Routing, cfg.LoadBound
	pcfg.Edit = cfg.Edit
	pipe, err := pipeline.NewRouted(pcfg, deps.Builder, targets, log, pipeline.WithObserver(m))
	if err != nil {
		return nil, err
	}
	cs, _ := deps.Builder.(metrics.ContextStats)
	m.Watch(pipe, cs)
	s := &Server{cfg: cfg, log: log, deps: deps, pipe: pipe, guard: guard, tls: tc, metrics: m, health: health.NewServer(),
		stop: make(chan struct{}), serving: map[string]bool{}, reasons: map[string]string{}}
	s.backends = watchedBackends(cfg, targets)
	// Metrics outermost (a refused or panicking call is counted), the
	// request id's header before anything can refuse the call.
	unary := []grpc.UnaryServerInterceptor{m.UnaryServerInterceptor(), unaryRequestID, unaryRecover(log)}
	stream := []grpc.StreamServerInterceptor{m.StreamServerInterceptor(), streamRequestID, streamRecover(log)}
	if guard.Enabled() {
		unary, stream = append(unary, s.authUnary), append(stream, s.authStream)
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgBytes),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgBytes),
		grpc.ForceServerCodecV2(infillv1.Codec()),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Minute, Timeout: 20 * time.Second}),
		grpc.StatsHandler(rpcLog{s}),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}
	if tc != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	s.grpc = grpc.NewServer(opts...)
	hcfg := cfg.HTTP
	hcfg.MaxBodyBytes = int64(cfg.MaxRecvMsgBytes)
	hcfg.DefaultModel = pipe.Backend().Model("")
	hcfg.ContextTokens = pipe.Backend().ContextTokens("")
	// The configuration as the server runs it: the HTTP surfaces' model
	// and context are the backend's, whatever HTTP said.
	cfg.HTTP, s.cfg.HTTP = hcfg, hcfg
	log.Info("config", zap.Any("config", cfg))
	var hguard httpapi.Guard
	if guard.Enabled() {
		hguard = guard
	}
	hh, err := httpapi.New(hcfg, pipe, deps.Workspaces, hguard, log.Named("http"), httpapi.WithObserver(m),
		httpapi.WithHealth(s.backendHealth))
	if err != nil {
		pipe.Close()
		return nil, err
	}
	s.http = &http.Server{
		Handler:           hh,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
		TLSConfig:         tc,
	}
	s.metricsHTTP = &http.Server{
		Handler:           m.Handler(cfg.Pprof),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(log.Named("metrics")),
	}
	infillv1.RegisterCompletionServiceServer(s.grpc, &completionService{s: s})
	s.healthServices = []string{"", infillv1.CompletionService_ServiceDesc.ServiceName}
	if why := cfg.evaluationOff(); why != "" {
		infillv1.RegisterEvaluationServiceServer(s.grpc, evaluationDisabled{why: why})
		log.Info("evaluation off", zap.String("why", why))
	} else {
		infillv1.RegisterEvaluationServiceServer(s.grpc, &evaluationService{s: s})
		s.healthServices = append(s.healthServices, infillv1.EvaluationService_ServiceDesc.ServiceName)
	}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	log.Info("security", zap.Bool("tokens", guard.Enabled()), zap.Int("token_count", len(guard.Tokens())),
		zap.Bool("tls", tc != nil), zap.Bool("mutual_tls", cfg.TLS.ClientCAFile != ""), zap.Bool("insecure", cfg.Insecure))
	for _, name := range s.healthServices {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	for _, b := range s.backends {
		s.health.SetServingStatus(b.service, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	log.Info("backends", zap.Strings("names", pipe.Targets()), zap.Stringer("routing", cfg.Routing), zap.Float64("load_bound", cfg.LoadBound))
	return s, nil
}

// GRPC returns the underlying server, to register more services before
// Serve.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Metrics returns the server's metrics (ServeMetrics serves them).
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Serve watches backend health and serves on lis until Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	methods := map[string]bool{}
	for svc, info := range s.grpc.GetServiceInfo() {
		for _, m := range info.Methods {
			methods["/"+svc+"/"+m.Name] = true
		}
	}
	s.methods.Store(&methods)
	s.metrics.InitializeGRPC(s.grpc)
	for _, b := range s.backends {
		s.watchWG.Add(1)
		go s.watchHealth(b)
	}
	s.log.Info("serving", zap.String("addr", lis.Addr().String()))
	return s.grpc.Serve(lis)
}

// ServeHTTP serves the HTTP surfaces (llama.cpp, Ollama, OpenAI and Tabby
// dialects) on lis until Shutdown, over the same pipeline as gRPC.
func (s *Server) ServeHTTP(lis net.Listener) error {
	s.log.Info("serving HTTP", zap.String("addr", lis.Addr().String()), zap.Bool("tls", s.tls != nil))
	serve := s.http.Serve
	if s.tls != nil {
		serve = func(l net.Listener) error { return s.http.ServeTLS(l, "", "") }
	}
	if err := serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeMetrics serves the Prometheus metrics at /metrics (and, with
// Config.Pprof, the Go profiler at /debug/pprof/) on lis until Shutdown.
func (s *Server) ServeMetrics(lis net.Listener) error {
	s.log.Info("serving metrics", zap.String("addr", lis.Addr().String()), zap.Bool("pprof", s.cfg.Pprof))
	if err := s.metricsHTTP.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown marks the server NOT_SERVING, lets calls in flight (gRPC and
// HTTP) finish for up to ShutdownGrace (or ctx), then stops hard.
func (s *Server) Shutdown(ctx context.Context) {
	s.stopOnce.Do(func() { close(s.stop) })
	s.watchWG.Wait()
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); s.grpc.GracefulStop() }()
		// An HTTP Shutdown waits for handlers to return; closing the
		// connections when the grace ends (below) cancels them.
		_ = s.http.Shutdown(context.Background())
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(s.cfg.ShutdownGrace)
	defer t.Stop()
	// Metrics last: a scrape can still see the calls end.
	defer func() { _ = s.metricsHTTP.Close() }()
	defer s.pipe.Close() // after the calls: their abandoned requests' probes
	select {
	case <-done:
		s.log.Info("stopped gracefully")
	case <-t.C:
		s.log.Warn("grace period over, cancelling calls in flight", zap.Duration("grace", s.cfg.ShutdownGrace))
		s.hardStop(ctx, done)
	case <-ctx.Done():
		s.hardStop(ctx, done)
	}
}

// hardStop closes every connection, which cancels the handlers' contexts,
// and waits for them to return unless ctx ends first.
func (s *Server) hardStop(ctx context.Context, done <-chan struct{}) {
	s.grpc.Stop()
	_ = s.http.Close()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Error("handlers still running after stop", zap.Error(ctx.Err()))
	}
}

// maxIDBytes bounds client_id and session_id, which every call logs.
const maxIDBytes = 256

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func requestID(ctx context.Context) string { return pipeline.RequestID(ctx) }

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok {
		return p.Addr.String()
	}
	return ""
}

// rpcLog is a grpc stats.Handler that logs one line per call when it has
// ended: method, code, duration, messages and bytes each way, peer and
// the caller's client and session ids; never payloads. Logging at the end
// keeps the encoding and the write off the call's latency (the response is
// already on its way), and the byte counts come from the transport rather
// than from re-measuring messages. TagRPC gives every call its request id.
type rpcLog struct{ s *Server }

// rpcInfo accumulates one call's figures; messages may be counted from the
// receiving and the sending goroutine of a bidirectional stream at once.
type rpcInfo struct {
	id, method                 string
	in, out, bytesIn, bytesOut atomic.Int64
	token                      atomic.Value // string: the name of the caller's token
	first                      atomic.Value // []zap.Field: caller ids of the first request message
}

type rpcInfoKey struct{}

func (h rpcLog) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	ri := &rpcInfo{id: newRequestID(), method: info.FullMethodName}
	ctx = context.WithValue(ctx, rpcInfoKey{}, ri)
	return pipeline.WithRequestID(ctx, ri.id)
}

func (h rpcLog) HandleRPC(ctx context.Context, st stats.RPCStats) {
	ri, _ := ctx.Value(rpcInfoKey{}).(*rpcInfo)
	if ri == nil {
		return
	}
	switch st := st.(type) {
	case *stats.InPayload:
		if ri.in.Add(1) == 1 {
			ri.first.Store(callerFields(st.Payload))
		}
		ri.bytesIn.Add(int64(st.WireLength))
	case *stats.OutPayload:
		ri.out.Add(1)
		ri.bytesOut.Add(int64(st.WireLength))
	case *stats.End:
		fields := []zap.Field{
			zap.String("method", ri.method), zap.String("request_id", ri.id),
			zap.Stringer("code", status.Code(st.Error)), zap.Duration("duration", st.EndTime.Sub(st.BeginTime)),
			zap.Int64("msgs_in", ri.in.Load()), zap.Int64("msgs_out", ri.out.Load()),
			zap.Int64("bytes_in", ri.bytesIn.Load()), zap.Int64("bytes_out", ri.bytesOut.Load()),
			zap.String("peer", peerAddr(ctx)),
		}
		if f, ok := ri.first.Load().([]zap.Field); ok {
			fields = append(fields, f...)
		}
		if name, ok := ri.token.Load().(string); ok {
			fields = append(fields, zap.String("token", name))
		}
		h.s.logCall(st.Error, fields)
		method := ri.method
		if m := h.s.methods.Load(); m == nil || !(*m)[method] {
			method = "unknown" // a client may name any method
		}
		h.s.metrics.GRPCRequest(method, status.Code(st.Error))
	}
}

func (rpcLog) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (rpcLog) HandleConn(context.Context, stats.ConnStats)                       {}

func (s *Server) logCall(err error, fields []zap.Field) {
	switch status.Code(err) {
	case codes.OK, codes.Canceled, codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.DeadlineExceeded:
		s.log.Info("rpc", fields...)
	default:
		s.log.Warn("rpc", append(fields, zap.Error(err))...)
	}
}

// callerFields are the client and session ids a request carries (never
// its code).
func callerFields(req any) []zap.Field {
	r, ok := req.(interface {
		GetClientId() string
		GetSessionId() string
	})
	if !ok {
		return nil
	}
	return []zap.Field{zap.String("client_id", r.GetClientId()), zap.String("session_id", r.GetSessionId())}
}

// requestIDHeader is the response header that carries a call's request
// id (the same as the HTTP surfaces' X-Request-Id), for a client to quote.
const requestIDHeader = "x-request-id"

// unaryRequestID and streamRequestID send the request id in the response
// header metadata (sent with the first response message, or with the
// status of a call that fails first).
func unaryRequestID(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(requestIDHeader, requestID(ctx)))
	return h(ctx, req)
}

func streamRequestID(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	_ = ss.SetHeader(metadata.Pairs(requestIDHeader, requestID(ss.Context())))
	return h(srv, ss)
}

func unaryRecover(log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				logctx.From(ctx, log).Error("panic in handler", zap.String("method", info.FullMethod), zap.Any("panic", r),
					zap.ByteString("stack", debug.Stack()))
				resp, err = nil, status.Error(codes.Internal, "internal error (request "+requestID(ctx)+")")
			}
		}()
		return h(ctx, req)
	}
}

func streamRecover(log *zap.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				logctx.From(ss.Context(), log).Error("panic in handler", zap.String("method", info.FullMethod), zap.Any("panic", r),
					zap.ByteString("stack", debug.Stack()))
				err = status.Error(codes.Internal, "internal error (request "+requestID(ss.Context())+")")
			}
		}()
		return h(srv, ss)
	}
}

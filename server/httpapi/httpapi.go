// Package httpapi owns infill's HTTP surfaces: the request and response
// dialects of the completion servers editors' plugins already talk to
// (llama.cpp server's /infill, Ollama's /api/generate, OpenAI-style and
// Tabby's /v1/completions), served from the same process as the gRPC API.
//
// Each dialect is a thin adapter: it decodes its JSON into a
// pipeline.Request (through fimRequest, which every dialect shares: prefix,
// suffix, the file's path, extra snippets, and workspace files when the
// server reads a repository from its own disk), calls the one completion
// pipeline, maps errors with the one table in errors.go and encodes its own
// response shape. The handler adds what every surface gets: a request id
// (X-Request-Id), the bearer token check (a Guard, when the server has
// tokens: 401/403/429 in the surface's error style; /health and Tabby's
// server settings stay open, Tabby's /v1/health checks the token alone), a body size limit (413), methods (405), one log line per request
// (never code) and panic recovery.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/pipeline"
	"go.uber.org/zap"
)

// Completer runs completions (pipeline.Pipeline).
type Completer interface {
	Complete(ctx context.Context, req *pipeline.Request, st pipeline.Stream) (*pipeline.Result, error)
}

// Observer is told about every request once it has ended (server/metrics):
// its surface (dialect), the route pattern it matched ("other" for none)
// and its status.
type Observer interface {
	HTTPRequest(surface, route string, status int)
}

type nopObserver struct{}

func (nopObserver) HTTPRequest(string, string, int) {}

// Config configures the HTTP surfaces.
type Config struct {
	// MaxBodyBytes caps a request body (413 beyond it).
	MaxBodyBytes int64
	// DefaultModel is the model reported by the discovery endpoints
	// (/v1/models, /props, /api/tags) and used when a request names none.
	DefaultModel string
	// ContextTokens is the model's context size, reported where a plugin
	// reads it (n_ctx).
	ContextTokens int
	// Version is reported by the version endpoints.
	Version string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 64 << 20, DefaultModel: "qwen2.5-coder:1.5b-base", ContextTokens: 8192, Version: "dev"}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 1<<10 {
		return fmt.Errorf("httpapi: MaxBodyBytes %d < 1 KiB", c.MaxBodyBytes)
	}
	if c.DefaultModel == "" || c.ContextTokens < 1 {
		return errors.New("httpapi: DefaultModel and ContextTokens are required")
	}
	return nil
}

// Guard admits a request by its bearer token before any surface reads it
// (auth.Guard). Its errors are auth's, which report their kinds
// (internal/errkind) to pipeline.Classify.
type Guard interface {
	Admit(token string, scope auth.Scope) (*auth.Call, error)
	// Authenticate checks the token without taking from its limits.
	Authenticate(token string, scope auth.Scope) (*auth.Token, error)
}

// Handler serves every HTTP surface.
type Handler struct {
	cfg   Config
	pipe  Completer
	ws    Workspaces
	guard Guard
	obs   Observer
	// backendHealth is nil while the backend serves (WithHealth).
	backendHealth func() error
	log           *zap.Logger
	mux           *http.ServeMux
	// dialects are the surfaces of the mux's patterns, for errors written
	// before a surface's handler runs.
	dialects map[string]dialect
}

// Option adjusts New.
type Option func(*Handler)

// WithHealth has the health checks (/health, /v1/health) answer 503 while
// backend returns an error (why the backend does not serve, said in the
// answer), as llama.cpp's server does while its model loads; without it
// they answer 200.
func WithHealth(backend func() error) Option { return func(h *Handler) { h.backendHealth = backend } }

// WithObserver has the handler tell obs about every request.
func WithObserver(obs Observer) Option { return func(h *Handler) { h.obs = obs } }

// New returns the handler for all surfaces; ws may be nil (no workspace
// mode), guard may be nil (no tokens: every request is admitted), log may
// be nil.
func New(cfg Config, pipe Completer, ws Workspaces, guard Guard, log *zap.Logger, opts ...Option) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pipe == nil {
		return nil, errors.New("httpapi: a Completer is required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	h := &Handler{cfg: cfg, pipe: pipe, ws: ws, guard: guard, obs: nopObserver{}, log: log, mux: http.NewServeMux(),
		dialects: map[string]dialect{}}
	for _, o := range opts {
		o(h)
	}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	h.routes()
	return h, nil
}

// routes registers every surface. Each dialect's file adds its own in a
// register function called here.
func (h *Handler) routes() {
	h.registerV1()
	h.registerLlamaCpp()
	h.registerOllama()
	// Liveness: infill's HTTP server answers, whatever the backend does
	// (/health follows the backend: a backend outage or a model being
	// pulled must not have Kubernetes restart infill).
	h.route("/livez", dialectNone, map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}})
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, dialectOf(r), errNotFound(r.URL.Path))
	})
}

// route registers path for the methods given; any other method is 405 in
// the dialect's error style.
func (h *Handler) route(path string, d dialect, methods map[string]http.HandlerFunc) {
	h.handle(path, d, func(w http.ResponseWriter, r *http.Request) {
		if f, ok := methods[r.Method]; ok {
			f(w, r)
			return
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		allowed := slices.Sorted(maps.Keys(methods))
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, r, d, &httpError{status: http.StatusMethodNotAllowed,
			msg: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, path, strings.Join(allowed, ", "))})
	})
}

// handle registers pattern as a surface of dialect d.
func (h *Handler) handle(pattern string, d dialect, f http.HandlerFunc) {
	h.dialects[pattern] = d
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		setDialect(r, d)
		f(w, r)
	})
}

// openPaths answer without a token, whatever the request carries: what
// Kubernetes probes (/livez, and llama.cpp's /health; gRPC health is open
// too), and Tabby's /v1beta/server_setting, whose answer turns the
// agent's usage reports off and so must reach an agent whatever its token.
var openPaths = map[string]bool{"/livez": true, "/health": true, "/v1beta/server_setting": true}

// tokenCheckPaths need a valid token with the complete scope but take
// nothing from its limits: Tabby's /v1/health, which tabby-agent calls
// with its token to connect, so that a missing or wrong token shows the
// user "unauthorized" (a 401) at once rather than a connected agent whose
// every completion fails.
var tokenCheckPaths = map[string]bool{"/v1/health": true}

// admit checks the request's bearer token before any surface reads the
// request: every path but the open ones needs a token with the complete
// scope (CORS preflights, which carry no credentials and do nothing,
// pass). A refusal is written in the surface's error style: 401 with
// WWW-Authenticate, 403, or 429 with Retry-After. done ends the call for
// the token's limits.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) (done func(), ok bool) {
	if h.guard == nil || openPaths[r.URL.Path] || r.Method == http.MethodOptions {
		return func() {}, true
	}
	token := auth.ParseBearer(r.Header.Get("Authorization"))
	var name string
	var err error
	done = func() {}
	if tokenCheckPaths[r.URL.Path] {
		var t *auth.Token
		if t, err = h.guard.Authenticate(token, auth.ScopeComplete); t != nil {
			name = t.Name
		}
	} else {
		var call *auth.Call
		if call, err = h.guard.Admit(token, auth.ScopeComplete); call != nil {
			name, done = call.Name, call.Done
		}
	}
	if err != nil {
		_, pattern := h.mux.Handler(r)
		d := h.dialects[pattern]
		setDialect(r, d)
		if errors.Is(err, auth.ErrUnauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="infill"`)
		}
		writeError(w, r, d, err)
		return nil, false
	}
	infoOf(r).token = name
	return done, true
}

// backendDown is the health checks' answer: a 503 (unavailable) error
// while the backend does not serve, nil while it does.
func (h *Handler) backendDown() error {
	if h.backendHealth == nil {
		return nil
	}
	if err := h.backendHealth(); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, msg: "backend unavailable: " + err.Error()}
	}
	return nil
}

// ServeHTTP gives the request its id and size limit, checks its token,
// recovers a panic, and logs one line and tells the Observer when the
// request has ended.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := newRequestID()
	info := &requestInfo{}
	ctx := pipeline.WithRequestID(context.WithValue(r.Context(), requestInfoKey{}, info), id)
	r = r.WithContext(ctx)
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	rw := &responseWriter{ResponseWriter: w}
	rw.Header().Set("X-Request-Id", id)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("panic in HTTP handler", zap.String("request_id", id), zap.String("path", r.URL.Path), zap.Any("panic", p))
			if !rw.wrote {
				writeError(rw, r, info.dialect, &httpError{status: http.StatusInternalServerError, msg: "internal error (request " + id + ")"})
			}
		}
		// The mux's pattern, also for a request refused before the mux
		// ran (its token).
		route := r.Pattern
		if route == "" {
			_, route = h.mux.Handler(r)
		}
		if route == "" {
			route = "other"
		}
		h.obs.HTTPRequest(info.dialect.String(), route, rw.statusCode())
		fields := []zap.Field{
			zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("surface", info.dialect.String()),
			zap.String("request_id", id), zap.Int("status", rw.statusCode()), zap.Duration("duration", time.Since(start)),
			zap.Int64("bytes_out", rw.n), zap.String("peer", r.RemoteAddr), zap.String("user_agent", r.UserAgent()),
		}
		if info.token != "" {
			fields = append(fields, zap.String("token", info.token))
		}
		if info.err != nil {
			fields = append(fields, zap.Error(info.err))
		}
		if info.err != nil && rw.statusCode() >= 500 {
			h.log.Warn("http", fields...)
			return
		}
		h.log.Info("http", fields...)
	}()
	done, ok := h.admit(rw, r)
	if !ok {
		return
	}
	defer done()
	h.mux.ServeHTTP(rw, r)
}

// responseWriter records the status and size for the log line and keeps
// http.Flusher for streams.
type responseWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	n      int64
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *responseWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// requestInfo carries what the log line needs from inside the handlers.
type requestInfo struct {
	dialect dialect
	// err is logged whole: an internal error, or one whose detail the
	// client was not shown.
	err   error
	token string // the caller's token's name
}

type requestInfoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if i, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{}
}

func setDialect(r *http.Request, d dialect) { infoOf(r).dialect = d }
func dialectOf(r *http.Request) dialect     { return infoOf(r).dialect }

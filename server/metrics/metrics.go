// Package metrics owns infill's Prometheus metrics: one registry per server
// (never the default registerer), the collectors that read the state of the
// pipeline, the admission gate and the context builder when they are
// scraped, go-grpc-middleware's gRPC server metrics, the Go runtime and
// process metrics, and the HTTP handler that serves them (with pprof when
// asked).
//
// The domain packages import no metrics library: the pipeline reports each
// completion to a pipeline.Observer (Metrics.Completed), the HTTP surfaces
// each request to an httpapi.Observer, contextpack keeps plain counters
// (contextpack.Stats) that a collector reads at scrape time, and the server
// reports gRPC calls, backend health and sandbox verdicts.
//
// The metrics, all prefixed infill_ (docs/configuration.md, "Metrics and logs", lists them with
// their meaning):
//
//	requests_total{surface,method,code}        every call on every surface
//	completion_queue_wait_seconds{class}       wait for a backend slot
//	completion_context_assembly_seconds{surface}
//	completion_time_to_first_token_seconds{surface}
//	completion_duration_seconds{surface}       the whole completion
//	generated_tokens_total{surface}
//	completions_in_flight{class}, admission_queued{class}, backend_slots_busy
//	admission_shed_total{class}                refused by admission
//	cancellations_total{cause}                 client, superseded, budget, deadline
//	cache_hits_total{cache}, cache_misses_total{cache}
//	backend_up{backend}                        1 while its health says SERVING
//	backend_in_flight{backend}, backend_queued{backend,class}
//	backend_requests_total{backend,outcome}    generations sent: ok, failed, cancelled, not_sent
//	backend_spilled_total{backend,reason}      its sessions sent on: down, full, unreachable, load
//	sandbox_verdicts_total{verdict}
package metrics

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/server/pipeline"
)

const namespace = "infill"

// Pipeline is the part of the pipeline read at scrape time
// (pipeline.Pipeline).
type Pipeline interface {
	Stats() pipeline.Stats
}

// ContextStats is the part of the context builder read at scrape time
// (contextpack.Builder).
type ContextStats interface {
	Stats() contextpack.Stats
}

// Metrics records and serves infill's metrics. Safe for concurrent use.
type Metrics struct {
	reg  *prometheus.Registry
	grpc *grpcprom.ServerMetrics

	requests      *prometheus.CounterVec
	queueWait     *prometheus.HistogramVec
	assembly      *prometheus.HistogramVec
	ttft          *prometheus.HistogramVec
	total         *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	shed          *prometheus.CounterVec
	cancellations *prometheus.CounterVec
	verdicts      *prometheus.CounterVec

	state *stateCollector
}

// New returns metrics on a registry of their own, with the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), state: newStateCollector()}
	// 2.5 ms to 41 s: a keystroke's completion on a GPU to a long
	// generation on a busy CPU.
	latencyBuckets := prometheus.ExponentialBuckets(0.0025, 2, 15)
	m.grpc = grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
		grpcprom.WithHistogramBuckets(latencyBuckets)))
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help,
			Buckets: buckets}, labels)
	}
	m.requests = counter("requests_total",
		"Calls on every surface by method (gRPC method or HTTP route) and code (gRPC code name or HTTP status), counted when they end.",
		"surface", "method", "code")
	m.queueWait = histogram("completion_queue_wait_seconds",
		"Time a completion waited for a backend slot (until granted, refused or given up).", latencyBuckets, "class")
	m.assembly = histogram("completion_context_assembly_seconds",
		"Time from the start of a completion to its prompt (validation and context assembly).",
		prometheus.ExponentialBuckets(0.0005, 2, 15), "surface")
	m.ttft = histogram("completion_time_to_first_token_seconds",
		"Time from the start of a completion to its first text.", latencyBuckets, "surface")
	m.total = histogram("completion_duration_seconds",
		"Time of a whole completion, whatever its end.", latencyBuckets, "surface")
	m.tokens = counter("generated_tokens_total", "Tokens the backend generated for completions (all candidates).", "surface")
	m.shed = counter("admission_shed_total",
		"Completions refused by admission (queue full, or no start possible before the deadline or budget).", "class")
	m.cancellations = counter("cancellations_total",
		"Completions cut short, by cause: client (cancelled), superseded (a newer request of the session), budget (latency budget: partial result), deadline.",
		"cause")
	m.verdicts = counter("sandbox_verdicts_total", "Evaluation samples graded, by verdict.", "verdict")
	for _, c := range []string{"client", "superseded", "budget", "deadline"} {
		m.cancellations.WithLabelValues(c)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.grpc, m.requests, m.queueWait, m.assembly, m.ttft, m.total, m.tokens, m.shed,
		m.cancellations, m.verdicts, m.state,
	)
	return m
}

// Registry is the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Watch reads p and cs (either may be nil) at every scrape.
func (m *Metrics) Watch(p Pipeline, cs ContextStats) {
	m.state.pipe.Store(&p)
	m.state.ctx.Store(&cs)
}

// InitializeGRPC pre-registers the gRPC metrics of every method of s at
// zero (call after registering the services).
func (m *Metrics) InitializeGRPC(s *grpc.Server) { m.grpc.InitializeMetrics(s) }

// UnaryServerInterceptor and StreamServerInterceptor record the gRPC
// server metrics (grpc_server_*).
func (m *Metrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return m.grpc.UnaryServerInterceptor()
}

// StreamServerInterceptor: see UnaryServerInterceptor.
func (m *Metrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return m.grpc.StreamServerInterceptor()
}

// Completed records a completion (pipeline.Observer).
func (m *Metrics) Completed(o pipeline.Outcome) {
	surface, class := o.Surface, o.Class.String()
	if surface == "" {
		surface = "unknown"
	}
	if o.Assembled {
		m.assembly.WithLabelValues(surface).Observe(o.Assembly.Seconds())
	}
	if o.Queued {
		m.queueWait.WithLabelValues(class).Observe(o.QueueWait.Seconds())
	}
	if o.TimeToFirstToken > 0 {
		m.ttft.WithLabelValues(surface).Observe(o.TimeToFirstToken.Seconds())
	}
	m.total.WithLabelValues(surface).Observe(o.Total.Seconds())
	if o.CompletionTokens > 0 {
		m.tokens.WithLabelValues(surface).Add(float64(o.CompletionTokens))
	}
	if o.Shed {
		m.shed.WithLabelValues(class).Inc()
	}
	if o.Cause != pipeline.CauseNone {
		m.cancellations.WithLabelValues(o.Cause.String()).Inc()
	}
	if o.Reused {
		m.state.typedThrough.Add(1)
	}
}

// HTTPRequest records an HTTP request that has ended (httpapi.Observer):
// route is the pattern it matched, so the label stays bounded.
func (m *Metrics) HTTPRequest(surface, route string, status int) {
	m.requests.WithLabelValues(surface, route, strconv.Itoa(status)).Inc()
}

// GRPCRequest records a gRPC call that has ended; method must be one the
// server registered (or a fixed placeholder), so the label stays bounded.
func (m *Metrics) GRPCRequest(method string, code codes.Code) {
	m.requests.WithLabelValues("grpc", method, code.String()).Inc()
}

// Verdict records a graded evaluation sample.
func (m *Metrics) Verdict(v string) { m.verdicts.WithLabelValues(v).Inc() }

// Handler serves the metrics at /metrics and, with withPprof, the Go
// profiler at /debug/pprof/.
func (m *Metrics) Handler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.InstrumentMetricHandler(m.reg,
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, Timeout: 10 * time.Second})))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// stateCollector reads what is held now (pipeline, admission gate) and the
// context builder's counters when the metrics are scraped.
type stateCollector struct {
	pipe         atomic.Pointer[Pipeline]
	ctx          atomic.Pointer[ContextStats]
	typedThrough atomic.Uint64

	inFlight, queued, busy, hits, misses, storeBytes *prometheus.Desc
	// per backend
	up, backendBusy, backendQueued, backendRequests, spilled *prometheus.Desc
}

func newStateCollector() *stateCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
	}
	return &stateCollector{
		inFlight: desc("completions_in_flight", "Completions under way, by class.", "class"),
		queued:   desc("admission_queued", "Completions waiting for a backend slot, by class.", "class"),
		busy: desc("backend_slots_busy",
			"Backend slots taken: generations, and probes holding the slot of a request abandoned before its first token."),
		hits: desc("cache_hits_total",
			"Cache hits: content_store (a file sent as a digest whose content was held), snapshot (a base held), prompt_memo (a prompt reused), typed_through (a completion answered from the session's last one, without the backend).",
			"cache"),
		misses: desc("cache_misses_total",
			"Cache misses: content_store (a digest not held: the client resends the file), snapshot (a base not held), prompt_memo (a prompt assembled).",
			"cache"),
		storeBytes: desc("content_store_bytes", "Bytes the content store and repository indexes hold."),
		up:         desc("backend_up", "1 while the backend serves (its gRPC health service infill.backend/NAME SERVING), else 0.", "backend"),
		backendBusy: desc("backend_in_flight",
			"The backend's slots taken: generations, and probes holding the slot of a request abandoned before its first token.", "backend"),
		backendQueued: desc("backend_queued", "Completions waiting for one of the backend's slots, by class.", "backend", "class"),
		backendRequests: desc("backend_requests_total",
			"Generations sent to the backend, by outcome: ok, failed (the backend's error), cancelled (by the caller), not_sent (it could not be reached: the request went on to the next backend).",
			"backend", "outcome"),
		spilled: desc("backend_spilled_total",
			"Requests the backend was the first choice for (affinity) that went on to the next backend, by reason: down (its health), full (its admission refused at once), unreachable (a connection failed), load (over its share of the load).",
			"backend", "reason"),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.inFlight, c.queued, c.busy, c.hits, c.misses, c.storeBytes,
		c.up, c.backendBusy, c.backendQueued, c.backendRequests, c.spilled} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if p := c.pipe.Load(); p != nil && *p != nil {
		s := (*p).Stats()
		for _, cl := range []pipeline.Class{pipeline.Interactive, pipeline.Evaluation} {
			ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(s.InFlight[cl]), cl.String())
			ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued[cl]), cl.String())
		}
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(s.Busy))
		for _, b := range s.Backends {
			up := 0.0
			if b.Up {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, b.Name)
			ch <- prometheus.MustNewConstMetric(c.backendBusy, prometheus.GaugeValue, float64(b.Busy), b.Name)
			for _, cl := range []pipeline.Class{pipeline.Interactive, pipeline.Evaluation} {
				ch <- prometheus.MustNewConstMetric(c.backendQueued, prometheus.GaugeValue, float64(b.Queued[cl]), b.Name, cl.String())
			}
			for _, o := range []struct {
				outcome string
				n       uint64
			}{{"ok", b.OK}, {"failed", b.Failed}, {"cancelled", b.Cancelled}, {"not_sent", b.NotSent}} {
				ch <- prometheus.MustNewConstMetric(c.backendRequests, prometheus.CounterValue, float64(o.n), b.Name, o.outcome)
			}
			for _, r := range []struct {
				reason string
				n      uint64
			}{{"down", b.SpilledDown}, {"full", b.SpilledFull}, {"unreachable", b.SpilledUnreachable}, {"load", b.SpilledLoad}} {
				ch <- prometheus.MustNewConstMetric(c.spilled, prometheus.CounterValue, float64(r.n), b.Name, r.reason)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(c.typedThrough.Load()), "typed_through")
	if cs := c.ctx.Load(); cs != nil && *cs != nil {
		s := (*cs).Stats()
		for _, v := range []struct {
			cache        string
			hits, misses uint64
		}{
			{"content_store", s.DigestHits, s.DigestMisses},
			{"snapshot", s.SnapshotHits, s.SnapshotMisses},
			{"prompt_memo", s.PromptMemoHits, s.PromptsBuilt},
		} {
			ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(v.hits), v.cache)
			ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(v.misses), v.cache)
		}
		ch <- prometheus.MustNewConstMetric(c.storeBytes, prometheus.GaugeValue, float64(s.Bytes))
	}
}

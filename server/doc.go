// Package server owns the gRPC surface of infill: one constructor builds the
// grpc.Server with a per-call log line (a stats handler that writes it once
// the call has ended), panic-recovery interceptors, the bearer token
// interceptors (server/auth decides; health stays open), TLS and mutual TLS
// on both listeners, message limits, health (a watcher per backend: its own
// service infill.backend/NAME, and the server's services SERVING while any
// backend serves; it tells the pipeline each backend's state for routing),
// reflection and graceful shutdown, and registers thin handlers
// that validate a request, call the domain packages (contextpack,
// inference, evaluator), map their errors to status codes in one place
// (status.go) and convert the result. backends.go holds the backends'
// configuration (--backend, --backends: kind, URL, models, context, slots,
// token) and makes their clients (OpenBackends). security.go also holds the listen
// check every listener of infill-server passes (CheckListen) and the
// evaluation switch.
//
// It also wires observability: every call's request id (a response header,
// x-request-id, and the request_id field of every line logged for it, via
// internal/logctx), and the Prometheus metrics of server/metrics, served on
// their own listener (ServeMetrics) with pprof when configured.
package server

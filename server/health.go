package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// Pinger is the part of the backend the health watcher needs.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ModelChecker is a backend that can say whether it holds a model
// (inference.Ollama from /api/tags, inference.OpenAI from /v1/models):
// where the backend has it, the health checks ask it instead of Ping, so
// that a backend that answers without the model it is meant to serve is
// NOT_SERVING.
type ModelChecker interface {
	// CheckModel returns nil, an error that is inference.ErrModelNotFound,
	// or one that is inference.ErrUnavailable.
	CheckModel(ctx context.Context, model string) error
}

// HealthProber is a backend that can show whether it still generates
// (inference.Ollama, inference.OpenAI); watchHealth uses it where the
// backend has it and Ping alone otherwise.
type HealthProber interface {
	// Probe runs a one-token generation.
	Probe(ctx context.Context) error
	// Activity is what generations have seen of the backend.
	Activity() inference.Activity
}

// Reloader is a backend whose model's runner health can restart
// (inference.Ollama): what restores an Ollama runner wedged by cancelled
// streams (issue 20).
type Reloader interface {
	// Reload restarts a model's runner (unload, then load).
	Reload(ctx context.Context, model string) error
}

// backendHealth is nil while a backend that serves the default model
// serves, else why not: each such backend's state in words (unreachable,
// lacking the model and how to get it, stalled), without addresses or
// error detail, for unauthenticated health checks (the log has the
// detail).
func (s *Server) backendHealth() error {
	if s.backendUp.Load() {
		return nil
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	var why []string
	for _, b := range s.backends {
		if r := s.reasons[b.name]; b.servesDefault && r != "" {
			why = append(why, r)
		}
	}
	if len(why) == 0 {
		why = []string{"the first health check has not finished"}
	}
	return fmt.Errorf("NOT_SERVING: no backend serves the default model %q: %s", s.cfg.Inference.DefaultModel,
		strings.Join(why, "; "))
}

// BackendHealthService is the gRPC health service name of the backend
// named name: SERVING while it serves.
func BackendHealthService(name string) string { return "infill.backend/" + name }

// watchedBackend is a backend whose health a watcher follows.
type watchedBackend struct {
	name, service string
	backend       Backend
	// model is the model its checks ask for: the default model when it
	// serves that (servesDefault), else the first of its models.
	model         string
	servesDefault bool
}

// watchedBackends are the pipeline's targets as the health watchers see
// them.
func watchedBackends(cfg Config, targets []pipeline.Target) []watchedBackend {
	var out []watchedBackend
	for _, t := range targets {
		b := watchedBackend{name: t.Name, service: BackendHealthService(t.Name), backend: t.Backend.(Backend),
			model: cfg.Inference.DefaultModel, servesDefault: true}
		if len(t.Models) > 0 && !slices.Contains(t.Models, cfg.Inference.DefaultModel) {
			b.model, b.servesDefault = t.Models[0], false
		}
		out = append(out, b)
	}
	return out
}

// Backend states, as the health log lines name them.
const (
	stateServing      = "serving"
	stateUnreachable  = "unreachable"
	stateModelMissing = "lacks the model"
	stateStalled      = "stalled"
	stateFailing      = "failing its checks"
)

// stateOf names a check's outcome: ok, or the kind of its cause.
func stateOf(ok bool, cause error) string {
	var se *inference.StallError
	switch {
	case ok:
		return stateServing
	case errors.Is(cause, inference.ErrModelNotFound):
		return stateModelMissing
	case errors.As(cause, &se):
		return stateStalled
	case errors.Is(cause, inference.ErrNotSent):
		return stateUnreachable
	}
	return stateFailing
}

// publicReason is backend b's state in words for unauthenticated health
// answers: a missing model's error (its name and how to get it; no
// address), else the state alone.
func publicReason(b watchedBackend, state string, cause error) string {
	if state == stateModelMissing {
		var me *inference.ModelError
		if errors.As(cause, &me) {
			return fmt.Sprintf("backend %s: %v", b.name, me)
		}
		return fmt.Sprintf("backend %s lacks model %q", b.name, b.model)
	}
	return fmt.Sprintf("backend %s is %s (the server's log says more)", b.name, state)
}

// watchHealth checks backend b every HealthInterval and flips its health
// service (and the pipeline's view of it) when its state changes, with a
// log line naming the new state and its cause (also the first state, at
// start); the server's own services are SERVING while a backend that
// serves the default model is.
func (s *Server) watchHealth(b watchedBackend) {
	defer s.watchWG.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends a probe still under way (watchWG waits for it)
	log := s.log.With(zap.String("backend", b.name))
	h := healthState{cfg: s.cfg, backend: b.backend, ctx: ctx, wg: &s.watchWG, log: log, model: b.model}
	h.prober, _ = b.backend.(HealthProber)
	h.reloader, _ = b.backend.(Reloader)
	h.models, _ = b.backend.(ModelChecker)
	serving, state := false, ""
	check := func() {
		began := time.Now()
		ok, why, cause := h.check(serving)
		defer h.reloadDue() // after health says NOT_SERVING, not before
		s.pipe.SetHealth(b.name, ok, began)
		next := stateOf(ok, cause)
		if next == state {
			return
		}
		first := state == ""
		state = next
		switch {
		case ok && first:
			log.Info("backend up: SERVING", zap.String("check", why))
		case ok:
			log.Info("backend recovered: SERVING", zap.String("check", why))
		default:
			msg := "backend " + next
			if first {
				msg += " at start"
			}
			log.Warn(msg+": NOT_SERVING", zap.String("model", b.model), zap.String("reason", why))
		}
		reason := ""
		if !ok {
			reason = publicReason(b, next, cause)
		}
		serving = ok
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if ok {
			st = healthpb.HealthCheckResponse_SERVING
		}
		s.health.SetServingStatus(b.service, st)
		s.setServing(b.name, ok, reason)
	}
	check()
	t := time.NewTicker(s.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			check() // a check longer than the interval drops ticks, never stacks them
		}
	}
}

// setServing records backend name's state (and, when it does not serve,
// why in words) and sets the server's own services SERVING while a
// backend that serves the default model serves.
func (s *Server) setServing(name string, ok bool, reason string) {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	before := s.backendUp.Load()
	s.serving[name], s.reasons[name] = ok, reason
	after := false
	for _, b := range s.backends {
		after = after || (b.servesDefault && s.serving[b.name])
	}
	s.backendUp.Store(after)
	if before == after {
		return
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if after {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range s.healthServices {
		s.health.SetServingStatus(name, st)
	}
}

// healthState decides, tick by tick, whether the backend serves. A backend
// that answers /api/version can still generate nothing (Ollama v0.24.0
// wedges under cancelled streams, issue 20), so where the backend shows its
// activity the check is:
//
//   - the inference watchdog saw a stall: a one-token generation must
//     answer, else NOT_SERVING at once; when that generation stalls too
//     (nothing within its own watchdog bound), the stalled model's runner is
//     restarted (unloaded and loaded again, at most every 30 s). A wedged
//     Ollama v0.24.0 runner comes back this way without restarting Ollama
//     (bench/storm);
//   - generations were answered within HealthRecent: serving, no check (a
//     busy backend gets no extra work and health does not flap under load),
//     unless the last check found the model missing (its answers were "not
//     found");
//   - a generation ended unanswered since the last answer (clients that
//     gave up on a silent backend): a one-token generation;
//   - generations under way and none ended unanswered: serving, no check
//     (the watchdog bounds them; a ping would time out on a swamped backend);
//   - otherwise (idle, or not serving yet): a ping, which costs the backend
//     next to nothing and keeps no model loaded: where the backend can list
//     its models (ModelChecker), whether it holds the model it is meant to
//     serve, else its version.
//
// Checks that fail HealthFailures times in a row make it NOT_SERVING; a
// model the backend lacks, once; the first success makes it SERVING.
//
// HealthProbeTimeout bounds a check's verdict, not a generation probe's
// work: a probe that has not answered in time counts as a failure and goes
// on (bounded by the inference watchdog), and the next check waits for the
// same probe. A probe cancelled at the timeout would cancel the model load
// it triggered after a backend restart, and a backend that needs longer
// than the timeout to load would never be seen to recover.
type healthState struct {
	cfg      Config
	backend  Pinger
	prober   HealthProber
	reloader Reloader // nil: the backend has no runner to restart
	// models, when the backend can list them, answers the pings: does it
	// hold model?
	models ModelChecker
	model  string
	// lacksModel: the last check found the model missing. Answers to
	// generations then prove nothing (the backend answers "not found"
	// quickly): only the model list brings it back.
	lacksModel bool
	failures   int

	ctx     context.Context // ends a probe under way
	wg      *sync.WaitGroup // counts it
	pending chan error      // the probe under way, if any
	stopIt  func()          // cancels it
	// lastReload is when the stalled model's runner was last restarted;
	// due is the stall to restart it for after this check.
	lastReload time.Time
	due        error
	log        *zap.Logger
}

// errNoAnswer is a generation probe still without an answer.
var errNoAnswer = errors.New("no answer yet")

// probe starts a one-token generation unless one is under way and waits
// for it for at most the probe timeout.
func (h *healthState) probe() error {
	if h.pending == nil {
		ch := make(chan error, 1)
		ctx, cancel := context.WithCancel(h.ctx)
		h.pending, h.stopIt = ch, cancel
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer cancel()
			ch <- h.prober.Probe(ctx)
		}()
	}
	t := time.NewTimer(h.cfg.HealthProbeTimeout)
	defer t.Stop()
	select {
	case err := <-h.pending:
		h.pending, h.stopIt = nil, nil
		return err
	case <-t.C:
		return fmt.Errorf("%w after %v", errNoAnswer, h.cfg.HealthProbeTimeout)
	}
}

// check reports whether the backend serves now, and why (for the log);
// cause is the failure that made it NOT_SERVING. serving is what health
// says so far (failures below the threshold keep SERVING, never make it).
func (h *healthState) check(serving bool) (ok bool, why string, cause error) {
	if h.prober == nil {
		return h.count(serving, h.ping(), h.pingName())
	}
	a := h.prober.Activity()
	switch {
	case a.Stalled != nil:
		if err := h.probe(); err != nil {
			h.failures = h.cfg.HealthFailures
			why := fmt.Sprintf("%v; a one-token generation: %v", a.Stalled, err)
			// Restart the runner only once the probe itself has stalled (a
			// second generation got nothing within its bound while nothing
			// progressed), not for a backend that is merely slow to answer
			// within the check's timeout.
			var se *inference.StallError
			if h.reloader != nil && errors.As(err, &se) && time.Since(h.lastReload) >= reloadEvery {
				h.lastReload = time.Now()
				h.due = a.Stalled
				why += "; restarting the model's runner"
			}
			return false, why, a.Stalled
		}
		h.failures = 0
		return true, "one-token generation after a stall", nil
	case !a.Unreachable.IsZero():
		// A generation could not connect since the backend last answered
		// one: nothing may listen there. A failed ping confirms it at once
		// (no second failure needed); other backends take the requests.
		if err := h.ping(); err != nil {
			h.failures = h.cfg.HealthFailures
			return false, fmt.Sprintf("a generation could not connect, and a %s: %v", h.pingName(), err), err
		}
		h.failures = 0
		return true, h.pingName() + " after a generation could not connect", nil
	case time.Since(a.LastProgress) < h.cfg.HealthRecent && !h.lacksModel:
		h.failures = 0
		return true, "generations answered", nil
	case !a.Unanswered.IsZero() || h.pending != nil:
		return h.count(serving, h.probe(), "one-token generation (a generation went unanswered)")
	case a.InFlight > 0 && serving:
		// The watchdog bounds them. A ping here would time out when the
		// backend is swamped (the flapping this replaced).
		return true, "generations under way", nil
	default:
		return h.count(serving, h.ping(), h.pingName())
	}
}

// reloadEvery spaces restarts of a runner that stays stalled.
const reloadEvery = 30 * time.Second

// reloadDue restarts the stalled model's runner if a check asked for it:
// it drops the probe waiting on the old runner and waits for the restart
// (the generations still on the old runner end within their watchdog bound;
// new ones are refused meanwhile), at most twice the first-token bound plus
// a minute for the load. The next check's probe tells whether it worked.
func (h *healthState) reloadDue() {
	stall := h.due
	if stall == nil {
		return
	}
	h.due = nil
	model := ""
	var se *inference.StallError
	if errors.As(stall, &se) {
		model = se.Model
	}
	if h.stopIt != nil {
		h.stopIt()
		<-h.pending
		h.pending, h.stopIt = nil, nil
	}
	ctx, cancel := context.WithTimeout(h.ctx, 2*h.cfg.Inference.Watchdog.FirstTokenBase+time.Minute)
	defer cancel()
	begin := time.Now()
	if err := h.reloader.Reload(ctx, model); err != nil {
		h.log.Error("backend stalled: restarting the model's runner failed", zap.String("model", model), zap.Error(err))
		return
	}
	h.log.Warn("backend stalled: restarted the model's runner (unloaded and loaded it)", zap.String("model", model),
		zap.Duration("took", time.Since(begin)))
}

// ping asks the backend whether it answers: for the model it is meant to
// serve where it can list its models, else for its version.
func (h *healthState) ping() error {
	ctx, cancel := context.WithTimeout(h.ctx, h.cfg.HealthProbeTimeout)
	defer cancel()
	if h.models != nil {
		return h.models.CheckModel(ctx, h.model)
	}
	return h.backend.Ping(ctx)
}

// pingName is what ping asks, for the log.
func (h *healthState) pingName() string {
	if h.models != nil {
		return "model list"
	}
	return "ping"
}

// count records one check's outcome: failures below HealthFailures keep
// SERVING; a model the backend lacks is NOT_SERVING at once (asking again
// will not bring it).
func (h *healthState) count(serving bool, err error, what string) (bool, string, error) {
	h.lacksModel = errors.Is(err, inference.ErrModelNotFound)
	if err == nil {
		h.failures = 0
		return true, what, nil
	}
	if h.lacksModel {
		h.failures = h.cfg.HealthFailures
		return false, fmt.Sprintf("%s: %v", what, err), err
	}
	h.failures++
	why := fmt.Sprintf("%s failed (%d in a row): %v", what, h.failures, err)
	return serving && h.failures < h.cfg.HealthFailures, why, err
}

package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference"
	"go.uber.org/zap"
)

// prober is a backend's health surface with set answers; the real backend
// is exercised by TestHealthUnderLoadAndWedge.
type prober struct {
	act             inference.Activity
	pingErr, genErr error
	pings, probes   int
	// answer, when set, holds Probe until it is closed.
	answer   chan struct{}
	unloaded []string
}

func (p *prober) Reload(_ context.Context, model string) error {
	p.unloaded = append(p.unloaded, model)
	return nil
}

func (p *prober) Ping(context.Context) error { p.pings++; return p.pingErr }

// Probe runs on a goroutine of its own; the checks read probes only after
// it returned (the check waited for it, or the test waited for h.wg).
func (p *prober) Probe(ctx context.Context) error {
	p.probes++
	if p.answer != nil {
		select {
		case <-p.answer:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return p.genErr
}

func (p *prober) Activity() inference.Activity { return p.act }

// modelLister is a prober whose backend can list its models.
type modelLister struct {
	*prober
	modelErr error
	checks   []string // the models asked for
}

func (m *modelLister) CheckModel(_ context.Context, model string) error {
	m.checks = append(m.checks, model)
	return m.modelErr
}

func newHealth(p *prober) *healthState {
	return &healthState{cfg: DefaultConfig(), backend: p, prober: p, reloader: p, ctx: context.Background(), wg: new(sync.WaitGroup), log: zap.NewNop()}
}

func TestHealthCheck(t *testing.T) {
	t.Parallel()
	down := errors.New("down")
	stall := &inference.StallError{Waited: 15 * time.Second}
	now := time.Now()
	long := now.Add(-time.Minute)

	for _, tc := range []struct {
		name          string
		act           inference.Activity
		pingErr       error
		genErr        error
		serving       bool
		want          bool
		pings, probes int
	}{
		{"idle pings", inference.Activity{LastProgress: long}, nil, nil, false, true, 1, 0},
		{"idle down at start stays down", inference.Activity{}, down, nil, false, false, 1, 0},
		{"one failed ping keeps serving", inference.Activity{LastProgress: long}, down, nil, true, true, 1, 0},
		{"recent answers need no check", inference.Activity{LastProgress: now, InFlight: 3}, down, down, true, true, 0, 0},
		{"recent answers bring it up", inference.Activity{LastProgress: now}, down, down, false, true, 0, 0},
		{"unanswered runs a generation", inference.Activity{LastProgress: long, Unanswered: now}, nil, nil, true, true, 0, 1},
		{"unanswered, version answers, generation does not", inference.Activity{LastProgress: long, Unanswered: now}, nil, down, true, true, 0, 1},
		{"in flight and not overdue: no check", inference.Activity{LastProgress: long, InFlight: 1}, down, down, true, true, 0, 0},
		{"in flight but not serving yet: ping", inference.Activity{LastProgress: long, InFlight: 1}, down, nil, false, false, 1, 0},
		{"stall goes down at once", inference.Activity{LastProgress: long, Stalled: stall}, nil, down, true, false, 0, 1},
		{"stall over once a generation answers", inference.Activity{LastProgress: long, Stalled: stall}, nil, nil, false, true, 0, 1},
		{"could not connect: a failed ping goes down at once", inference.Activity{LastProgress: now, Unreachable: now}, down, nil, true, false, 1, 0},
		{"could not connect, ping answers", inference.Activity{LastProgress: now, Unreachable: now}, nil, nil, false, true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &prober{act: tc.act, pingErr: tc.pingErr, genErr: tc.genErr}
			h := newHealth(p)
			got, why, _ := h.check(tc.serving)
			if got != tc.want || why == "" {
				t.Errorf("check(%v) = %v (%s), want %v", tc.serving, got, why, tc.want)
			}
			if p.pings != tc.pings || p.probes != tc.probes {
				t.Errorf("%d pings, %d generations; want %d, %d", p.pings, p.probes, tc.pings, tc.probes)
			}
		})
	}
}

// HealthFailures checks in a row make it NOT_SERVING; a success resets the
// count.
func TestHealthFailureThreshold(t *testing.T) {
	t.Parallel()
	p := &prober{act: inference.Activity{LastProgress: time.Now().Add(-time.Minute), Unanswered: time.Now()}, genErr: errors.New("silent")}
	h := newHealth(p)
	h.cfg.HealthFailures = 3
	serving := true
	var seq []bool
	for range 3 {
		serving, _, _ = h.check(serving)
		seq = append(seq, serving)
	}
	if seq[0] != true || seq[1] != true || seq[2] != false {
		t.Fatalf("serving after each failure: %v, want true true false", seq)
	}
	p.genErr = nil
	if serving, why, _ := h.check(serving); !serving || h.failures != 0 {
		t.Fatalf("after a success: %v (%s), failures %d", serving, why, h.failures)
	}
}

// A generation probe that has not answered within the timeout fails that
// check but goes on (it may be loading the model after a restart); the next
// check waits for the same probe.
func TestHealthProbeOutlivesTimeout(t *testing.T) {
	t.Parallel()
	p := &prober{act: inference.Activity{Unanswered: time.Now()}, answer: make(chan struct{})}
	h := newHealth(p)
	h.cfg.HealthProbeTimeout = 20 * time.Millisecond
	h.cfg.HealthFailures = 1
	ok, why, _ := h.check(true)
	if ok || !strings.Contains(why, "no answer yet") {
		t.Fatalf("check = %v (%s), want a failure without an answer", ok, why)
	}
	close(p.answer) // the probe answers between two checks
	h.wg.Wait()
	if ok, why, _ := h.check(false); !ok || p.probes != 1 {
		t.Fatalf("check = %v (%s) after %d probes, want the first probe's success", ok, why, p.probes)
	}
}

// A stall that the probe's own stall confirms restarts the stalled model's
// runner after the check (health says NOT_SERVING first), at most every 30
// s; a probe that merely has not answered yet restarts nothing.
func TestHealthReloadsAStalledModel(t *testing.T) {
	t.Parallel()
	last := time.Now().Add(-time.Minute)
	p := &prober{act: inference.Activity{LastProgress: last, Stalled: &inference.StallError{Model: "m"}}, answer: make(chan struct{})}
	h := newHealth(p)
	h.cfg.HealthProbeTimeout = 10 * time.Millisecond
	ok, why, _ := h.check(true)
	h.reloadDue()
	if ok || len(p.unloaded) != 0 || !strings.Contains(why, "no answer yet") {
		t.Fatalf("check = %v (%s), reloaded %v; want NOT_SERVING and no restart yet", ok, why, p.unloaded)
	}
	p.genErr = &inference.StallError{Model: "m"} // the probe stalls too
	close(p.answer)
	h.wg.Wait()
	ok, why, _ = h.check(false)
	if ok || !strings.Contains(why, "restarting the model's runner") {
		t.Fatalf("check = %v (%s)", ok, why)
	}
	h.reloadDue()
	if len(p.unloaded) != 1 || p.unloaded[0] != "m" || h.pending != nil {
		t.Fatalf("reloaded %v, probe pending %v", p.unloaded, h.pending != nil)
	}
	h.check(false) // soon after: no second restart
	h.reloadDue()
	if len(p.unloaded) != 1 {
		t.Fatalf("reloaded %v, want one", p.unloaded)
	}
	h.lastReload = h.lastReload.Add(-reloadEvery)
	h.check(false)
	h.reloadDue()
	if len(p.unloaded) != 2 {
		t.Fatalf("reloaded %v, want another after %v", p.unloaded, reloadEvery)
	}
	h.wg.Wait()
}

// A backend with no runner to restart (the openai kind) goes NOT_SERVING
// on a stall as any other and restarts nothing.
func TestHealthStallWithoutReloader(t *testing.T) {
	t.Parallel()
	p := &prober{act: inference.Activity{LastProgress: time.Now().Add(-time.Minute), Stalled: &inference.StallError{Model: "m"}},
		genErr: &inference.StallError{Model: "m"}}
	h := newHealth(p)
	h.reloader = nil
	ok, why, _ := h.check(true)
	h.reloadDue()
	if ok || strings.Contains(why, "restarting") || len(p.unloaded) != 0 {
		t.Fatalf("check = %v (%s), reloaded %v", ok, why, p.unloaded)
	}
}

// A backend without Activity and Probe (a test's stand-in) is pinged.
func TestHealthPingOnly(t *testing.T) {
	t.Parallel()
	p := &prober{pingErr: errors.New("down")}
	h := &healthState{cfg: DefaultConfig(), backend: p, ctx: context.Background(), log: zap.NewNop()}
	if ok, _, _ := h.check(false); ok || p.pings != 1 || p.probes != 0 {
		t.Fatalf("ok %v, %d pings, %d probes", ok, p.pings, p.probes)
	}
}

func TestHealthConfigValidate(t *testing.T) {
	t.Parallel()
	for _, bad := range []func(*Config){
		func(c *Config) { c.HealthProbeTimeout = 0 },
		func(c *Config) { c.HealthRecent = -time.Second },
		func(c *Config) { c.HealthFailures = 0 },
		func(c *Config) { c.Inference.Watchdog.TokenGap = 0 },
	} {
		c := DefaultConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// A backend that answers without the model it is meant to serve is
// NOT_SERVING at once (serving or not, whatever the failure threshold),
// its cause a missing model; while it lacks the model, recent answers to
// generations (quick "not found"s) do not bring it back, the model list
// does.
func TestHealthModelMissing(t *testing.T) {
	t.Parallel()
	missing := &inference.ModelError{Model: "m", Hint: "pull it with `ollama pull m`"}
	m := &modelLister{prober: &prober{act: inference.Activity{LastProgress: time.Now().Add(-time.Minute)}}, modelErr: missing}
	h := newHealth(m.prober)
	h.models, h.model = m, "m"
	for _, serving := range []bool{true, false} {
		ok, why, cause := h.check(serving)
		if ok || !errors.Is(cause, inference.ErrModelNotFound) || !strings.Contains(why, "ollama pull m") {
			t.Fatalf("check(%v) with the model missing = %v (%s), cause %v", serving, ok, why, cause)
		}
	}
	if m.pings != 0 || len(m.checks) != 2 || m.checks[0] != "m" {
		t.Fatalf("%d version pings, model checks %v; want the model list asked for m only", m.pings, m.checks)
	}
	m.act.LastProgress = time.Now() // the "not found" answers of generations
	if ok, _, _ := h.check(false); ok || len(m.checks) != 3 {
		t.Fatalf("recent answers brought back a backend without the model (%d model checks)", len(m.checks))
	}
	m.modelErr = nil
	if ok, why, cause := h.check(false); !ok || cause != nil || why != "model list" {
		t.Fatalf("with the model created: %v (%s), %v", ok, why, cause)
	}
	if ok, why, _ := h.check(true); !ok || why != "generations answered" || len(m.checks) != 4 {
		t.Fatalf("once it has the model, recent answers need no check: %v (%s), %d checks", ok, why, len(m.checks))
	}

	// The state names and the words unauthenticated health checks get.
	b := watchedBackend{name: "gpu1", model: "m"}
	unreachable := fmt.Errorf("%w: dial tcp 10.0.0.5:11434: connect: connection refused", inference.ErrNotSent)
	for _, tc := range []struct {
		ok           bool
		cause        error
		state, words string
	}{
		{true, nil, stateServing, ""},
		{false, missing, stateModelMissing, "backend gpu1: " + missing.Error()},
		{false, &inference.StallError{Waited: time.Second}, stateStalled, "backend gpu1 is stalled"},
		{false, unreachable, stateUnreachable, "backend gpu1 is unreachable"},
		{false, errors.New("500"), stateFailing, "backend gpu1 is failing its checks"},
	} {
		if got := stateOf(tc.ok, tc.cause); got != tc.state {
			t.Errorf("stateOf(%v, %v) = %q, want %q", tc.ok, tc.cause, got, tc.state)
		}
		if tc.ok {
			continue
		}
		if got := publicReason(b, tc.state, tc.cause); !strings.HasPrefix(got, tc.words) || strings.Contains(got, "10.0.0.5") {
			t.Errorf("publicReason(%v) = %q, want it to start %q and name no address", tc.cause, got, tc.words)
		}
	}
}

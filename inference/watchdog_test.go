package inference

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A backend that accepts a request and never answers cannot be made on
// demand from the real Ollama without stopping it (see
// TestWatchdogPausedOllama for that); these fakes hold the request open.

func newWatchedOllama(t *testing.T, s *scripted, wd WatchdogConfig) *Ollama {
	t.Helper()
	o := newTestOllama(t, s)
	o.cfg.Watchdog = wd
	return o
}

// fastWatchdog has bounds short enough for a unit test.
func fastWatchdog() WatchdogConfig {
	return WatchdogConfig{FirstTokenBase: 150 * time.Millisecond, PromptTokensPerSecond: 1000,
		TokenGap: 150 * time.Millisecond, ResponseHeaderTimeout: time.Second}
}

// hold answers nothing until the client goes away, after sending the
// given tokens.
func hold(toks ...string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		for _, tk := range toks {
			chunk(w, map[string]any{"response": tk, "done": false})
		}
		<-r.Context().Done()
	}
}

func TestWatchdogConfig(t *testing.T) {
	t.Parallel()
	c := DefaultWatchdogConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.FirstToken(4000), c.FirstTokenBase+80*time.Second; got != want {
		t.Errorf("FirstToken(4000) = %v, want %v", got, want)
	}
	for _, bad := range []func(*WatchdogConfig){
		func(c *WatchdogConfig) { c.FirstTokenBase = 0 },
		func(c *WatchdogConfig) { c.TokenGap = -time.Second },
		func(c *WatchdogConfig) { c.ResponseHeaderTimeout = 0 },
		func(c *WatchdogConfig) { c.PromptTokensPerSecond = 0 },
		func(c *WatchdogConfig) { c.PromptTokensPerSecond = math.NaN() },
	} {
		c := DefaultWatchdogConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
		cfg := DefaultConfig()
		cfg.Watchdog = c
		if _, err := NewOllama(cfg, nil); err == nil {
			t.Errorf("NewOllama accepted watchdog %+v", c)
		}
	}
}

func TestWatchdogNoFirstToken(t *testing.T) {
	t.Parallel()
	o := newWatchedOllama(t, &scripted{serve: hold()}, fastWatchdog())
	start := time.Now()
	_, err := o.Generate(context.Background(), Request{Prompt: "p", PromptTokens: 100}, nil)
	took := time.Since(start)
	var se *StallError
	if !errors.As(err, &se) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want a StallError (ErrUnavailable)", err)
	}
	// The bound grows with the prompt: 150 ms + 100 tokens at 1000/s.
	if se.Tokens != 0 || took < 250*time.Millisecond {
		t.Fatalf("stall %+v after %v", se, took)
	}
	if !strings.Contains(err.Error(), "backend stalled: no first token for") {
		t.Errorf("message %q", err)
	}
	a := o.Activity()
	if a.Stalled == nil || a.InFlight != 0 {
		t.Fatalf("activity %+v, want the backend marked stalled", a)
	}
}

func TestWatchdogTokenGap(t *testing.T) {
	t.Parallel()
	o := newWatchedOllama(t, &scripted{serve: hold("a", "b")}, fastWatchdog())
	var got string
	_, err := o.Generate(context.Background(), Request{Prompt: "p"}, func(_ int, s string) error { got += s; return nil })
	var se *StallError
	if !errors.As(err, &se) || se.Tokens != 2 || got != "ab" {
		t.Fatalf("err = %v, text %q; want a stall after two tokens", err, got)
	}
	if !strings.Contains(err.Error(), "backend stalled: no token for") || !strings.HasSuffix(err.Error(), "after 2") {
		t.Errorf("message %q", err)
	}
	if o.Activity().Stalled == nil {
		t.Fatal("backend not marked stalled")
	}
	// Any answer from the backend clears the verdict.
	o2 := newWatchedOllama(t, &scripted{serve: tokens("x")}, fastWatchdog())
	o2.track.stalled.Store(&StallError{})
	if _, err := o2.Generate(context.Background(), Request{Prompt: "p"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := o2.Activity(); a.Stalled != nil || a.LastProgress.IsZero() || !a.Unanswered.IsZero() {
		t.Fatalf("activity after a success %+v", a)
	}
}

// A slow client (onDelta blocking longer than the gap) is not a stalled
// backend.
func TestWatchdogIgnoresSlowClient(t *testing.T) {
	t.Parallel()
	o := newWatchedOllama(t, &scripted{serve: tokens("a", "b", "c")}, fastWatchdog())
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, func(int, string) error {
		time.Sleep(400 * time.Millisecond)
		return nil
	})
	if err != nil || res.Candidates[0].Text != "abc" {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if a := o.Activity(); a.Stalled != nil {
		t.Fatalf("activity %+v", a)
	}
}

// A request waiting for its first token behind live work is not a stall:
// while the backend answers another generation, or an older one is still
// within its (longer) bound, the waiting one gets another bound. Once the
// backend answers nothing and nothing older is within its bound, it ends
// and the backend is marked stalled.
func TestWatchdogWaitsBehindLiveWork(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if body["prompt"] == "live" { // a token every 50 ms for 600 ms
			for range 12 {
				chunk(w, map[string]any{"response": "t", "done": false})
				time.Sleep(50 * time.Millisecond)
			}
			chunk(w, map[string]any{"response": "", "done": true, "done_reason": "length"})
			return
		}
		hold()(w, r, body)
	}}
	o := newWatchedOllama(t, s, fastWatchdog())
	live := make(chan error, 1)
	go func() {
		_, err := o.Generate(context.Background(), Request{Prompt: "live"}, nil)
		live <- err
	}()
	start := time.Now()
	_, err := o.Generate(context.Background(), Request{Prompt: "queued"}, nil)
	took := time.Since(start)
	if err := <-live; err != nil {
		t.Fatalf("the live generation: %v", err)
	}
	var se *StallError
	if !errors.As(err, &se) || took < 600*time.Millisecond {
		t.Fatalf("queued generation ended after %v with %v; want a stall after the live one finished", took, err)
	}
	if o.Activity().Stalled == nil {
		t.Fatal("backend not marked stalled once nothing answered")
	}

	// Behind an older generation still within its bound.
	o = newWatchedOllama(t, &scripted{serve: hold()}, fastWatchdog())
	o.cfg.ContextTokens = 8192
	older, cancelOlder := context.WithCancel(context.Background())
	defer cancelOlder()
	olderDone := make(chan error, 1)
	go func() {
		// 5,000 prompt tokens at 1000/s: a bound of 5.15 s.
		_, err := o.Generate(older, Request{Prompt: "p", PromptTokens: 5000, MaxTokens: 1}, nil)
		olderDone <- err
	}()
	for o.Activity().InFlight == 0 {
		select {
		case err := <-olderDone:
			t.Fatalf("the older generation ended: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := o.Generate(ctx, Request{Prompt: "p"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("behind an older generation within its bound: %v, want it still waiting at the caller's deadline", err)
	}
	if a := o.Activity(); a.Stalled != nil {
		t.Fatalf("activity %+v: marked stalled while busy", a)
	}
	cancelOlder()
	<-olderDone
}

// Under steady load on a silent backend there is always a newer
// generation within its bound; it does not hide the stall of an older one.
func TestWatchdogNewerLoadDoesNotHideStall(t *testing.T) {
	t.Parallel()
	o := newWatchedOllama(t, &scripted{serve: hold()}, fastWatchdog())
	o.cfg.ContextTokens = 8192
	errc := make(chan error, 1)
	go func() {
		_, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
		errc <- err
	}()
	for o.Activity().InFlight == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	newer, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = o.Generate(newer, Request{Prompt: "p", PromptTokens: 5000, MaxTokens: 1}, nil)
	}()
	var se *StallError
	if err := <-errc; !errors.As(err, &se) {
		t.Fatalf("older generation: %v, want a stall", err)
	}
	if o.Activity().Stalled == nil {
		t.Fatal("backend not marked stalled")
	}
	cancel()
	<-done
}

// A client that gives up before the backend said anything leaves a trace
// a health check can act on; any answer clears it.
func TestActivityUnanswered(t *testing.T) {
	t.Parallel()
	o := newWatchedOllama(t, &scripted{serve: hold()}, DefaultWatchdogConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := o.Generate(ctx, Request{Prompt: "p"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	a := o.Activity()
	if a.Unanswered.IsZero() || a.Stalled != nil || a.InFlight != 0 {
		t.Fatalf("activity %+v, want an unanswered generation", a)
	}
	o.track.progress(time.Now())
	if a := o.Activity(); !a.Unanswered.IsZero() {
		t.Fatalf("activity %+v after progress", a)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: tokens("x")}
	o := newWatchedOllama(t, s, fastWatchdog())
	if err := o.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := s.reqs[0]
	if opts := r["options"].(map[string]any); r["prompt"] != probePrompt || opts["num_predict"] != 1.0 || opts["num_ctx"] != 1024.0 {
		t.Fatalf("probe request %v", r)
	}
	o = newWatchedOllama(t, &scripted{serve: hold()}, fastWatchdog())
	if err := o.Probe(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("probe of a silent backend: %v", err)
	}
}

// Reload asks for keep_alive 0, refuses generations until the backend no
// longer lists the model, loads it again with the configured num_ctx and
// keep-alive, and returns then.
func TestReload(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	polls := 0
	var loads []map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("/api/generate", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		loads = append(loads, body)
		mu.Unlock()
		chunk(w, map[string]any{"model": "m", "done": true})
	})
	mux.HandleFunc("/api/ps", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		n := polls
		mu.Unlock()
		models := []map[string]any{}
		if n < 3 {
			models = append(models, map[string]any{"name": "m:latest", "model": "m:latest"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"models": models})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.URL, cfg.DefaultModel, cfg.ContextTokens = srv.URL, "m", 1024
	o, err := NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Reload(context.Background(), "") }()
	for o.track.unloading.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil); !errors.Is(err, ErrRestarting) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("generate while unloading: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(loads) != 2 || polls != 3 {
		t.Fatalf("requests %v, %d polls; want an unload, a load and 3 polls", loads, polls)
	}
	if ka := loads[0]["keep_alive"]; loads[0]["model"] != "m" || (ka != 0.0 && ka != "0s") || loads[0]["prompt"] != "" {
		t.Errorf("unload request %v", loads[0])
	}
	if opts, _ := loads[1]["options"].(map[string]any); loads[1]["keep_alive"] != "30m0s" || opts["num_ctx"] != 1024.0 {
		t.Errorf("load request %v", loads[1])
	}
	polls = -1000 // from now on listed for ever
	mu.Unlock()
	if o.track.unloading.Load() != 0 {
		t.Fatal("still refusing generations")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := o.Reload(ctx, "m"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reload of a model that stays loaded: %v", err)
	}
}

// A request for a model the backend has not answered for within the
// keep-alive may wait for a load: it gets LoadAllowance on top.
func TestWatchdogLoadAllowance(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if body["prompt"] == "ok" {
			tokens("x")(w, r, body)
			return
		}
		hold()(w, r, body)
	}}
	wd := fastWatchdog()
	wd.FirstTokenBase, wd.LoadAllowance = 100*time.Millisecond, 400*time.Millisecond
	o := newWatchedOllama(t, s, wd)
	stall := func() time.Duration {
		start := time.Now()
		_, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
		var se *StallError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want a stall", err)
		}
		return time.Since(start)
	}
	if d := stall(); d < 500*time.Millisecond {
		t.Fatalf("cold request ended after %v, want the load allowance on top", d)
	}
	if _, err := o.Generate(context.Background(), Request{Prompt: "ok"}, nil); err != nil {
		t.Fatal(err)
	}
	if d := stall(); d >= 500*time.Millisecond {
		t.Fatalf("warm request ended after %v, want no load allowance", d)
	}
	if c := DefaultWatchdogConfig(); c.LoadAllowance <= 0 {
		t.Fatal("no default load allowance")
	}
	bad := DefaultWatchdogConfig()
	bad.LoadAllowance = -time.Second
	if bad.Validate() == nil {
		t.Fatal("negative LoadAllowance accepted")
	}
}

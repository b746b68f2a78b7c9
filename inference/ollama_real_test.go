package inference_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
)

// TestWatchdogPausedOllama stops the real Ollama's model runner (SIGSTOP),
// which is what a wedged backend looks like from outside: /api/version
// answers, generations get nothing. The watchdog ends the generation with
// UNAVAILABLE and marks the backend stalled; Probe fails while it is
// stopped and clears the mark once it runs again.
func TestWatchdogPausedOllama(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	cfg := inference.DefaultConfig()
	cfg.URL, cfg.DefaultModel, cfg.ContextTokens = b.URL, b.Model, 2048
	cfg.Watchdog.FirstTokenBase = 2 * time.Second
	o, err := inference.NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Load the model (a runner to stop) outside the short bound: a load
	// takes seconds on a busy machine.
	if err := b.Warm(map[string]any{"num_ctx": cfg.ContextTokens}); err != nil {
		t.Fatal(err)
	}
	// The first generation can outlast the short bound on a busy machine.
	for i := 0; ; i++ {
		err := o.Probe(ctx)
		if err == nil {
			break
		}
		if i == 5 {
			t.Fatal(err)
		}
	}
	if a := o.Activity(); a.LastProgress.IsZero() || a.Stalled != nil || !a.Unanswered.IsZero() {
		t.Fatalf("activity after a probe %+v", a)
	}
	n, err := b.Pause(false)
	if err != nil || n == 0 {
		t.Fatalf("pause: %d processes, %v", n, err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = b.Resume()
		}
	}()

	start := time.Now()
	_, err = o.Generate(ctx, inference.Request{Prompt: "<|fim_prefix|>x = <|fim_suffix|>\n<|fim_middle|>", PromptTokens: 10, MaxTokens: 8}, nil)
	took := time.Since(start)
	var se *inference.StallError
	if !errors.As(err, &se) || !errors.Is(err, inference.ErrUnavailable) {
		t.Fatalf("err = %v after %v, want a stall", err, took)
	}
	if !strings.HasPrefix(err.Error(), "backend stalled: no first token for 2") || took > 10*time.Second {
		t.Errorf("err %q after %v", err, took)
	}
	if o.Activity().Stalled == nil {
		t.Fatal("backend not marked stalled")
	}
	if err := o.Ping(ctx); err != nil {
		t.Fatalf("ping while the runner is stopped: %v (the server itself should still answer)", err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	err = o.Probe(pctx)
	cancel()
	if err == nil {
		t.Fatal("probe answered while the runner is stopped")
	}

	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := o.Probe(pctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe after resume: %v", err)
		}
	}
	if a := o.Activity(); a.Stalled != nil || !a.Unanswered.IsZero() {
		t.Fatalf("activity after recovery %+v", a)
	}
	t.Logf("stall reported after %v; a probe answered %v after the runner resumed", took.Round(time.Millisecond), time.Since(deadline.Add(-60*time.Second)).Round(time.Millisecond))
}

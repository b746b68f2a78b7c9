package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	benchtest.Cleanup()
	os.Exit(code)
}

// TestSmoke runs a storm of 6 streams, 2 at a time, straight to a private
// real Ollama and through infill, and checks its JSON lines: one run per
// target, every stream sent and accounted for (cancelled at its first
// token, finished, abandoned or failed), and a diagnosis whenever the
// backend wedged.
func TestSmoke(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(benchtest.Build(t, "./bench/storm"), "storm")
	out := benchtest.Run(t, benchtest.Env(t, benchtest.Backend(t)...), 5*time.Minute, bin,
		"-target", "direct,infill", "-streams", "6", "-concurrency", "2", "-max-tokens", "4",
		"-quiet", "10s", "-drain", "5s", "-recover-wait", "5s", "-heal-wait", "30s")
	var runs []Run
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // progress on stderr
		}
		var r Run
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a run's line %q: %v", line, err)
		}
		runs = append(runs, r)
	}
	if len(runs) != 2 || runs[0].Target != "direct" || runs[1].Target != "infill" {
		t.Fatalf("runs %+v: want direct then infill\n%s", runs, out)
	}
	for _, r := range runs {
		failed := 0
		for _, n := range r.Failed {
			failed += n
		}
		if r.Streams != 6 || r.Sent == 0 || r.Cancelled+r.Abandoned+r.Finished+failed != r.Sent || r.OllamaVersion == "" {
			t.Errorf("%s: %+v: want 6 streams, each sent one accounted for, Ollama's version", r.Target, r)
		}
		if r.Wedged && r.Diagnosis == nil {
			t.Errorf("%s: wedged without a diagnosis", r.Target)
		}
	}
}

// TestSmokePromptEval runs -prompt-eval and checks a line per prompt size,
// each with its tokens evaluated and a rate.
func TestSmokePromptEval(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(benchtest.Build(t, "./bench/storm"), "storm")
	out := benchtest.Run(t, benchtest.Env(t, benchtest.Backend(t)...), 5*time.Minute, bin, "-prompt-eval")
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m PromptEval
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m.PromptTokens == 0 || m.TokensPerS <= 0 || m.OllamaVersion == "" {
			t.Errorf("prompt-eval line %+v: want tokens evaluated at a rate", m)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d prompt-eval lines, want 5:\n%s", n, out)
	}
}

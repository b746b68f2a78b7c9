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

// TestSmoke runs both policies with 2 sessions typing 3 keystrokes each
// (the first a warm-up) over two private real Ollama backends and checks
// what it writes: a JSON file per run with every keystroke recorded and
// the generations spread by backend, and the Markdown table of the runs.
func TestSmoke(t *testing.T) {
	out := t.TempDir()
	bin := benchtest.Build(t, "./bench/affinity")
	defer benchtest.Cleanup()
	log := benchtest.Run(t, benchtest.Env(t, benchtest.Backend(t)...), 5*time.Minute, filepath.Join(bin, "affinity"),
		"-sessions", "2", "-keystrokes", "3", "-warmup", "1", "-budget", "1024", "-num-ctx", "2048",
		"-parallel", "2", "-max-tokens", "4", "-think", "0s", "-policies", "round-robin,affinity", "-out", out)
	files, err := filepath.Glob(filepath.Join(out, "*.json"))
	if err != nil || len(files) != 2 {
		t.Fatalf("run files %v (%v): want one per policy\n%s", files, err, log)
	}
	policies := map[string]bool{}
	for _, f := range files {
		var r struct {
			Policy      string             `json:"policy"`
			Commit      string             `json:"commit"`
			Generations map[string]float64 `json:"generations_per_backend"`
			Keystrokes  []json.RawMessage  `json:"keystrokes"`
		}
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		policies[r.Policy] = true
		total := 0.0
		for _, n := range r.Generations {
			total += n
		}
		if r.Commit == "" || len(r.Keystrokes) != 2*3 || total == 0 {
			t.Errorf("%s: commit %q, %d keystrokes, generations %v; want a commit, 6 keystrokes, generations counted",
				filepath.Base(f), r.Commit, len(r.Keystrokes), r.Generations)
		}
	}
	if !policies["round-robin"] || !policies["affinity"] {
		t.Errorf("policies run %v, want round-robin and affinity", policies)
	}
	if !strings.Contains(log, "| round-robin") || !strings.Contains(log, "| affinity") {
		t.Errorf("the Markdown table lacks a row per policy:\n%s", log)
	}
}

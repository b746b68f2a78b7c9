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

// TestSmoke runs run.sh with 3 rounds a phase (the paced and the instant
// fake) and checks its report: every round measured on both paths, the
// backend sent the same prompt by both, no empty answer, and REPORT.md's
// table.
func TestSmoke(t *testing.T) {
	out := t.TempDir()
	log := benchtest.Run(t, benchtest.Env(t), 5*time.Minute, "bench/lspbench/run.sh", "--quick",
		"-rounds", "3", "-warmup", "1", "-out", out, "-report", filepath.Join(out, "REPORT.md"))
	var s struct {
		Files  int `json:"files"`
		Rounds int `json:"rounds"`
		Phases []struct {
			Name       string    `json:"name"`
			LSP        []float64 `json:"lsp_ms"`
			Direct     []float64 `json:"direct_ms"`
			Mismatches int       `json:"prompt_mismatches"`
			Empty      int       `json:"empty_answers"`
		} `json:"phases"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatalf("summary.json: %v\n%s", err, log)
	}
	if s.Files == 0 || s.Rounds != 3 || len(s.Phases) != 2 {
		t.Fatalf("summary: %d files, %d rounds, %d phases; want files, 3 rounds, paced and instant", s.Files, s.Rounds, len(s.Phases))
	}
	for _, p := range s.Phases {
		if len(p.LSP) != 3 || len(p.Direct) != 3 || p.Mismatches != 0 || p.Empty != 0 {
			t.Errorf("phase %s: %d LSP and %d direct rounds, %d prompt mismatches, %d empty answers; want 3, 3, 0, 0",
				p.Name, len(p.LSP), len(p.Direct), p.Mismatches, p.Empty)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "REPORT.md"))
	if err != nil || !strings.Contains(string(report), "| phase | fakeollama | path | p50 | p90 | p99 |") {
		t.Errorf("REPORT.md: %v, lacks its table:\n%s", err, report)
	}
}

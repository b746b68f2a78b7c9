package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
)

// TestSmoke runs run.sh with 30 requests at concurrency 4 (the real local
// backend on a port of its own, started and stopped by run.sh) and checks
// the report: its checks table, every request answered and counted with
// the status its kind expects. The resource checks (goroutines, RSS, the
// backend idle after a 2 s settle) are in the table but not held to at
// this size: they are the full run's.
func TestSmoke(t *testing.T) {
	out := filepath.Join(t.TempDir(), "REPORT.md")
	env := benchtest.Env(t, append(benchtest.Backend(t), "INFILL_OLLAMA_HOST=127.0.0.1:"+strconv.Itoa(benchtest.FreePort(t)))...)
	log, runErr := benchtest.RunErr(t, env, 5*time.Minute, "bench/soak/run.sh", "-n", "30", "-c", "4", "-o", out,
		"--", "-warmup", "9", "-settle", "2s", "-max-tokens", "4")
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report (%v): %v\n%s", runErr, err, log)
	}
	for _, want := range []string{
		"# Soak: 30 streaming completions at concurrency 4",
		"| every request answered with a status (client) | 30 of 30 | pass |",
		"| every request counted by code (server: infill_requests_total) | 30 counted, 30 started, of 30 | pass |",
		"| no status but the expected ones (or OK for a cut that came after the end) | 0 unexpected | pass |",
		"| goroutines back to the warm baseline |",
		"| RSS within 10% of the warm baseline |",
		"| backend idle (CPU of its processes) |",
		"## Requests by kind and status (client)",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q (run: %v):\n%s", want, runErr, report)
		}
	}
	if runErr != nil && !strings.Contains(log, "a check failed (see the report)") {
		t.Errorf("run.sh: %v, not for a failed check:\n%s", runErr, log)
	}
}

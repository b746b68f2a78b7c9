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

// smokeFlags are loadbench's smallest workload: seconds per phase, two
// typing sessions.
var smokeFlags = []string{"--", "-unloaded", "1s", "-loaded", "2s", "-typist", "1s", "-sessions", "2",
	"-settle", "200ms", "-warmup", "1"}

// checkReport reads run.sh's BACKEND.json and .md under dir: every mode run
// asked for, each phase with keystrokes sent and answered, the Markdown's
// tables. It returns the Markdown.
func checkReport(t *testing.T, dir, backend string, modes []string, log string) string {
	t.Helper()
	var r struct {
		Backend string `json:"backend"`
		Commit  string `json:"commit"`
		Modes   []struct {
			Mode   string `json:"mode"`
			Phases []struct {
				Name        string `json:"name"`
				Keystrokes  int    `json:"keystrokes"`
				Interactive struct {
					Sent  int            `json:"sent"`
					Codes map[string]int `json:"codes"`
				} `json:"interactive"`
			} `json:"phases"`
		} `json:"modes"`
	}
	data, err := os.ReadFile(filepath.Join(dir, backend+".json"))
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		t.Fatalf("%s.json: %v\n%s", backend, err, log)
	}
	if r.Backend != backend || r.Commit == "" || len(r.Modes) != len(modes) {
		t.Fatalf("%s.json: backend %q, commit %q, %d modes; want %s, a commit, %v", backend, r.Backend, r.Commit, len(r.Modes), backend, modes)
	}
	for i, m := range r.Modes {
		if m.Mode != modes[i] || len(m.Phases) != 3 {
			t.Errorf("mode %d: %s with %d phases; want %s with unloaded, loaded, typist", i, m.Mode, len(m.Phases), modes[i])
		}
		for _, p := range m.Phases {
			answered := 0
			for _, n := range p.Interactive.Codes {
				answered += n
			}
			if p.Keystrokes == 0 || p.Interactive.Sent == 0 || answered == 0 {
				t.Errorf("%s, %s: %d keystrokes, %d sent, codes %v: want keystrokes sent and answered",
					m.Mode, p.Name, p.Keystrokes, p.Interactive.Sent, p.Interactive.Codes)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, backend+".md"))
	if err != nil || !strings.Contains(string(md), "| ") {
		t.Fatalf("%s.md: %v, no table:\n%s", backend, err, md)
	}
	return string(md)
}

// TestSmokeFake runs run.sh --backend fake with the smallest workload (all
// three servers: admission, no burst wait, no admission) and checks the
// report, then that -render writes the same Markdown from the JSON.
func TestSmokeFake(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	log := benchtest.Run(t, benchtest.Env(t), 5*time.Minute, "bench/loadbench/run.sh",
		append([]string{"--backend", "fake", "--out", out}, smokeFlags...)...)
	md := checkReport(t, out, "fake", []string{"admission", "no-burst-wait", "none"}, log)
	bin := benchtest.Build(t, "./bench/loadbench")
	if err := os.Remove(filepath.Join(out, "fake.md")); err != nil {
		t.Fatal(err)
	}
	benchtest.Run(t, benchtest.Env(t), time.Minute, filepath.Join(bin, "loadbench"), "-render", filepath.Join(out, "fake.json"))
	again, err := os.ReadFile(filepath.Join(out, "fake.md"))
	if err != nil || string(again) != md {
		t.Errorf("-render: %v, Markdown differs from the run's:\n%s\n---\n%s", err, again, md)
	}
}

// TestSmokeOllama runs run.sh --backend ollama (a private real Ollama with
// the tiny model) with the smallest workload, admission only.
func TestSmokeOllama(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	log := benchtest.Run(t, benchtest.Env(t, benchtest.Backend(t)...), 5*time.Minute, "bench/loadbench/run.sh",
		append([]string{"--backend", "ollama", "--out", out}, append(smokeFlags, "-modes", "admission")...)...)
	checkReport(t, out, "ollama", []string{"admission"}, log)
}

func TestMain(m *testing.M) {
	code := m.Run()
	benchtest.Cleanup()
	os.Exit(code)
}

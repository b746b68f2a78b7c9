package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/server/servertest"
)

// TestEndToEndEvalRunSpread: one benchmark spread over two real servers
// (each with its own Ollama and sandbox) gives the verdicts of a run on
// one server, for reference middles and for generated completions; and
// when one server is stopped mid-run, the other finishes its tasks and
// the verdicts are again those of one server.
func TestEndToEndEvalRunSpread(t *testing.T) {
	t.Parallel()
	a, b := servertest.StartEval(t, ""), servertest.StartEval(t, "")
	both := a.Addr + "," + b.Addr
	dir := t.TempDir()
	run := func(ctx context.Context, servers, out string, args ...string) string {
		t.Helper()
		code, stdout, stderr := runTool(ctx, servers, append([]string{"eval", "run", "--humaneval-dir", a.HumanEvalDir,
			"-o", filepath.Join(dir, out)}, args...)...)
		if code != 0 {
			t.Fatalf("%s %v: exit %d: %s", servers, args, code, stderr)
		}
		t.Logf("%s %v:\n%s%s", servers, args, stderr, stdout)
		return stderr
	}
	ref := []string{"--reference", "--limit", "30", "humaneval-random-span-light"}
	run(t.Context(), a.Addr, "one.jsonl", ref...)
	stderr := run(t.Context(), both, "two.jsonl", ref...)
	one := cli.Outcomes(t, filepath.Join(dir, "one.jsonl"), true)
	cli.SameOutcomes(t, "reference over two servers", cli.Outcomes(t, filepath.Join(dir, "two.jsonl"), true), one)
	if !strings.Contains(stderr, "results by server: "+a.Addr+" ") || strings.Contains(stderr, "is gone") {
		t.Errorf("stderr:\n%s", stderr)
	}

	gen := []string{"--limit", "3", "--samples", "2", "--k", "1,2", "--max-tokens", "4", "humaneval-single-line"}
	run(t.Context(), a.Addr, "gen-one.jsonl", gen...)
	run(t.Context(), both, "gen-two.jsonl", gen...)
	cli.SameOutcomes(t, "generated over two servers", cli.Outcomes(t, filepath.Join(dir, "gen-two.jsonl"), false),
		cli.Outcomes(t, filepath.Join(dir, "gen-one.jsonl"), false))

	// Stop b, as a crash does (every connection closed at once), once the
	// run is under way: its unfinished tasks go to a.
	dying := filepath.Join(dir, "dying.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan bool, 1)
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
			if data, _ := os.ReadFile(dying); bytes.Count(data, []byte("\n")) >= 8 {
				now, stop := context.WithCancel(context.Background())
				stop() // no grace: calls in flight are cut off
				b.Infill.Shutdown(now)
				stopped <- true
				return
			}
		}
		stopped <- false
	}()
	stderr = run(ctx, both, "dying.jsonl", ref...)
	cancel()
	if !<-stopped {
		t.Fatal("the run did not get under way")
	}
	if !strings.Contains(stderr, "server "+b.Addr+" is gone (UNAVAILABLE") {
		t.Errorf("stderr does not say that b is gone:\n%s", stderr)
	}
	cli.SameOutcomes(t, "reference over two servers, one stopped", cli.Outcomes(t, dying, true), one)
}

package server

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/evaluator"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// TestCompletionLatencies: a generated sample's time to first token and
// total do not count its wait for a backend slot (behind the run's own
// samples), which is reported beside them.
func TestCompletionLatencies(t *testing.T) {
	t.Parallel()
	tm := &infillv1.Timings{QueueWait: durationpb.New(90 * time.Second),
		TimeToFirstToken: durationpb.New(90*time.Second + 300*time.Millisecond), Total: durationpb.New(2 * time.Minute)}
	c := completionOf("x", tm)
	if c.QueueWait != 90*time.Second || c.TTFT != 300*time.Millisecond || c.Total != 30*time.Second {
		t.Errorf("got queue %v, TTFT %v, total %v", c.QueueWait, c.TTFT, c.Total)
	}
	if c := completionOf("", &infillv1.Timings{Total: durationpb.New(time.Second)}); c.TTFT != 0 || c.Total != time.Second || c.QueueWait != 0 {
		t.Errorf("no text, no wait: %+v", c)
	}
}

// TestEvalConfigValidate: the repository roots and interpreter rules must
// be absolute paths; Config.Validate says which is not.
func TestEvalConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		eval EvalConfig
		want string
	}{
		{EvalConfig{RepoRoots: []string{"repos"}}, `AllowedRepoRoots entry "repos" is not absolute`},
		{EvalConfig{Pythons: []evaluator.PythonRule{{Dir: "/repos", Python: "venv/bin/python"}}}, "Pythons rule /repos=venv/bin/python: both paths must be absolute"},
		{EvalConfig{Pythons: []evaluator.PythonRule{{Dir: "repos", Python: "/usr/bin/python3"}}}, "Pythons rule repos=/usr/bin/python3: both paths must be absolute"},
	} {
		cfg := DefaultConfig()
		cfg.Eval.RepoRoots, cfg.Eval.Pythons = c.eval.RepoRoots, c.eval.Pythons
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v; want an error saying %q", c.eval, err, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.Eval.RepoRoots = []string{"/repos"}
	cfg.Eval.Pythons = []evaluator.PythonRule{{Dir: "/repos", Python: "/repos/.venv/bin/python"}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("absolute paths: %v", err)
	}
}

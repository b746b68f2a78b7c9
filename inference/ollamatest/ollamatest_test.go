package ollamatest_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/infill-dev/infill/inference/ollamatest"
)

const numCtx = 2048

func generate(t *testing.T, b *ollamatest.Backend, prompt string, numPredict int) (text string, final *api.GenerateResponse, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sb strings.Builder
	err = b.Client().Generate(ctx, &api.GenerateRequest{
		Model:  b.Model,
		Prompt: prompt,
		Raw:    true,
		Options: map[string]any{
			"num_predict": numPredict,
			"num_ctx":     numCtx,
			"temperature": 0,
			"seed":        1,
		},
	}, func(r api.GenerateResponse) error {
		sb.WriteString(r.Response)
		if r.Done {
			final = &r
		}
		return nil
	})
	return sb.String(), final, err
}

func TestStartGenerateStop(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	if b.Model != ollamatest.DefaultModel || !strings.HasPrefix(b.URL, "http://127.0.0.1:") {
		t.Fatalf("backend = %+v", b)
	}

	text, final, err := generate(t, b, "<|fim_prefix|>def f(x):\n    return <|fim_suffix|>\n<|fim_middle|>", 16)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if final == nil {
		t.Fatal("stream ended without a done message")
	}
	if final.EvalCount < 1 || final.EvalCount > 16 {
		t.Errorf("eval_count = %d, want 1..16", final.EvalCount)
	}
	if final.PromptEvalCount < 5 {
		t.Errorf("prompt_eval_count = %d, want the FIM prompt's tokens", final.PromptEvalCount)
	}
	if final.DoneReason != "length" && final.DoneReason != "stop" {
		t.Errorf("done_reason = %q", final.DoneReason)
	}
	if final.DoneReason == "length" && (final.EvalCount != 16 || text == "") {
		t.Errorf("done_reason length with eval_count %d and text %q", final.EvalCount, text)
	}

	// Same request, same greedy output.
	text2, _, err := generate(t, b, "<|fim_prefix|>def f(x):\n    return <|fim_suffix|>\n<|fim_middle|>", 16)
	if err != nil || text2 != text {
		t.Errorf("second greedy generation = %q, %v; want %q", text2, err, text)
	}

	b.Stop()
	if b.Running() {
		t.Fatal("still running after Stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.Client().Heartbeat(ctx); err == nil {
		t.Fatal("server still answers after Stop")
	}
	b.Stop() // idempotent

	b.Restart()
	if _, final, err := generate(t, b, "<|fim_prefix|>x = <|fim_suffix|>\n<|fim_middle|>", 4); err != nil || final == nil {
		t.Fatalf("after Restart: final %v, err %v", final, err)
	}
}

func TestStopKillsRunners(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	if err := b.Warm(map[string]any{"num_ctx": numCtx}); err != nil {
		t.Fatalf("warm: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := b.Client().ListRunning(ctx)
	if err != nil || len(ps.Models) != 1 {
		t.Fatalf("running models = %+v, %v; want the warmed model", ps, err)
	}
	pgid := pgidOf(t, b)
	b.Stop()
	if err := syscall.Kill(-pgid, 0); err == nil {
		t.Fatalf("process group %d still has members after Stop", pgid)
	}
}

func pgidOf(t *testing.T, b *ollamatest.Backend) int {
	t.Helper()
	pid := b.PID()
	if pid == 0 {
		t.Fatal("server not running")
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatalf("getpgid(%d): %v", pid, err)
	}
	if pgid != pid {
		t.Fatalf("server pid %d is in group %d, want its own group", pid, pgid)
	}
	return pgid
}

// TestTinyModelTriggers checks the tiny model's designed continuations and
// how Ollama ends generation on them.
func TestTinyModelTriggers(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	const prefix = "<|fim_prefix|>a = 1<|fim_suffix|>\n<|fim_middle|>"

	for _, tc := range []struct{ name, trigger string }{
		{"endoftext", ollamatest.TriggerEOS},
		{"im_end", ollamatest.TriggerImEnd},
		{"file_sep", ollamatest.TriggerFileSep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, final, err := generate(t, b, prefix+tc.trigger, 16)
			if err != nil || final == nil {
				t.Fatalf("final %v, err %v", final, err)
			}
			if text != "" || final.DoneReason != "stop" {
				t.Errorf("text %q, done_reason %q; want an immediate stop", text, final.DoneReason)
			}
		})
	}

	t.Run("fim_prefix is text", func(t *testing.T) {
		text, final, err := generate(t, b, prefix+ollamatest.TriggerFimPrefix, 4)
		if err != nil || final == nil {
			t.Fatalf("final %v, err %v", final, err)
		}
		if !strings.HasPrefix(text, "<|fim_prefix|>") {
			t.Errorf("text %q, want it to start with <|fim_prefix|>", text)
		}
	})

	t.Run("repeat aborts without done", func(t *testing.T) {
		text, final, err := generate(t, b, prefix+ollamatest.TriggerRepeat, 100)
		if err != nil {
			t.Fatalf("err %v", err)
		}
		if final != nil {
			t.Fatalf("got done message %+v; Ollama no longer aborts on repeats?", final)
		}
		if n := strings.Count(text, ollamatest.TriggerRepeat); n < 30 || n > 32 {
			t.Errorf("%d repeats before the abort, want about 30", n)
		}
	})
}

// TestSuffix: the tiny model supports insert like the library's base models;
// a raw request drops the suffix, a templated one builds the FIM prompt.
func TestSuffix(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	run := func(prompt, suffix string, raw bool) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stream := false
		var out string
		err := b.Client().Generate(ctx, &api.GenerateRequest{
			Model: b.Model, Prompt: prompt, Suffix: suffix, Raw: raw, Stream: &stream,
			Options: map[string]any{"num_predict": 8, "num_ctx": numCtx, "temperature": 0},
		}, func(r api.GenerateResponse) error { out += r.Response; return nil })
		if err != nil {
			t.Fatalf("generate(raw=%v, suffix=%q): %v", raw, suffix, err)
		}
		return out
	}
	if with, without := run("a = 1", "\n", true), run("a = 1", "", true); with != without {
		t.Errorf("raw with suffix = %q, without = %q; want the suffix ignored", with, without)
	}
	if tmpl, raw := run("a = 1", "\n", false), run("<|fim_prefix|>a = 1<|fim_suffix|>\n<|fim_middle|>", "", true); tmpl != raw {
		t.Errorf("templated FIM = %q, raw FIM = %q; want equal", tmpl, raw)
	}
}

// Pause stops the runners (the server still answers) or everything;
// Resume continues them.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	if err := b.Warm(map[string]any{"num_ctx": numCtx}); err != nil {
		t.Fatal(err)
	}
	pids, err := b.Processes()
	if err != nil || len(pids) < 2 {
		t.Fatalf("processes %v, %v; want the server and a runner", pids, err)
	}
	if cpu, err := b.CPUTime(); err != nil || cpu <= 0 {
		t.Fatalf("cpu time %v, %v", cpu, err)
	}
	heartbeat := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return b.Client().Heartbeat(ctx)
	}
	if n, err := b.Pause(false); err != nil || n != len(pids)-1 {
		t.Fatalf("pause runners: %d, %v; want %d", n, err, len(pids)-1)
	}
	if err := heartbeat(); err != nil {
		t.Fatalf("server with its runners stopped: %v", err)
	}
	if n, err := b.Pause(true); err != nil || n != len(pids) {
		t.Fatalf("pause all: %d, %v", n, err)
	}
	if err := heartbeat(); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := heartbeat(); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	if _, final, err := generate(t, b, "<|fim_prefix|>x = <|fim_suffix|>\n<|fim_middle|>", 2); err != nil || final == nil {
		t.Fatalf("generate after resume: %v", err)
	}
}

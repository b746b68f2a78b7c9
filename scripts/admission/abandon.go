//go:build ignore

// abandon measures how long Ollama stays busy with a request whose client
// went away while the prompt was still being evaluated: it sends a long
// prompt, disconnects after -after, and times a one-token request sent at
// once (Ollama serves one request at a time with OLLAMA_NUM_PARALLEL=1, so
// that request waits for the abandoned evaluation). The figures decide how
// long admission keeps an abandoned request's slot (server/pipeline).
//
//	go run scripts/admission/abandon.go -url http://127.0.0.1:11435 -model infill-tiny
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

func main() {
	u := flag.String("url", "http://127.0.0.1:11435", "Ollama URL")
	model := flag.String("model", "infill-tiny", "model")
	words := flag.Int("words", 1000, "prompt length in words (about two tokens each)")
	after := flag.Duration("after", 500*time.Millisecond, "disconnect after this long")
	rounds := flag.Int("rounds", 3, "rounds")
	flag.Parse()
	base, err := url.Parse(*u)
	if err != nil {
		fail(err)
	}
	c := api.NewClient(base, http.DefaultClient)
	no := false
	gen := func(ctx context.Context, prompt string, n int) (api.Metrics, time.Duration, error) {
		start := time.Now()
		var m api.Metrics
		err := c.Generate(ctx, &api.GenerateRequest{Model: *model, Prompt: prompt, Raw: true, Stream: &no,
			Options: map[string]any{"num_predict": n, "num_ctx": 8192, "temperature": 0}},
			func(r api.GenerateResponse) error { m = r.Metrics; return nil })
		return m, time.Since(start), err
	}
	prompt := func() string {
		var sb strings.Builder
		for range *words {
			fmt.Fprintf(&sb, "w%d ", rand.IntN(50000))
		}
		return sb.String()
	}
	if _, _, err := gen(context.Background(), "warm up", 1); err != nil {
		fail(err)
	}
	for r := range *rounds {
		m, whole, err := gen(context.Background(), prompt(), 1)
		if err != nil {
			fail(err)
		}
		_, tiny, _ := gen(context.Background(), "x", 1)
		ctx, cancel := context.WithTimeout(context.Background(), *after)
		_, _, aerr := gen(ctx, prompt(), 1)
		cancel()
		_, next, err := gen(context.Background(), "x", 1)
		if err != nil {
			fail(err)
		}
		// The probe admission sends: the abandoned prompt's head (its
		// repository context, up to <|fim_prefix|>), one token.
		head := prompt() + "<|fim_prefix|>"
		ctx, cancel = context.WithTimeout(context.Background(), *after)
		_, _, _ = gen(ctx, head+"def f(x):\n    return <|fim_suffix|>\n<|fim_middle|>", 1)
		cancel()
		_, probe, err := gen(context.Background(), head, 1)
		if err != nil {
			fail(err)
		}
		_, after2, _ := gen(context.Background(), "x", 1)
		fmt.Printf("round %d: %d-token prompt evaluated in %v (request %v); idle one-token request %v; "+
			"abandoned after %v (%v): the next one-token request took %v (busy %v after the disconnect); "+
			"a probe with the abandoned prompt returned after %v, and a one-token request after it took %v\n",
			r+1, m.PromptEvalCount, m.PromptEvalDuration.Round(time.Millisecond), whole.Round(time.Millisecond),
			tiny.Round(time.Millisecond), *after, aerr != nil, next.Round(time.Millisecond), (next - tiny).Round(time.Millisecond),
			probe.Round(time.Millisecond), after2.Round(time.Millisecond))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "abandon:", err)
	os.Exit(1)
}

package inference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseServer is a fake OpenAI-compatible server for the cases a real one
// cannot be made to produce on demand (a server that dies mid-stream, a
// malformed or error event, vLLM's and llama.cpp's usage fields). The real
// protocol is exercised against Ollama's own /v1 by the end-to-end tests
// in server/ (TestTwoBackends).
type sseServer struct {
	mu    sync.Mutex
	reqs  []map[string]any
	auth  []string
	paths []string
	serve func(w http.ResponseWriter, r *http.Request, body map[string]any)
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if r.Method == http.MethodPost {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	s.serve(w, r, body)
}

// event writes one server-sent event (v JSON-encoded unless a string).
func event(w http.ResponseWriter, v any) {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	fmt.Fprintf(w, "data: %s\n\n", s)
	w.(http.Flusher).Flush()
}

func textChunk(text string, finish any) map[string]any {
	return map[string]any{"object": "text_completion", "choices": []any{
		map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}}}
}

// sseTokens streams toks the way vLLM does: a chunk per token, the last
// with its finish reason, then the usage chunk and [DONE].
func sseTokens(finish string, toks ...string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, tk := range toks {
			var f any
			if i == len(toks)-1 {
				f = finish
			}
			event(w, textChunk(tk, f))
		}
		event(w, map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 700, "completion_tokens": len(toks),
			"prompt_tokens_details": map[string]any{"cached_tokens": 512}}})
		event(w, "[DONE]")
	}
}

func newTestOpenAI(t *testing.T, s *sseServer, mutate func(*Config)) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.URL = srv.URL + "/v1" // with or without /v1
	cfg.DefaultModel = "m"
	cfg.ContextTokens = 1024
	if mutate != nil {
		mutate(&cfg)
	}
	o, err := NewOpenAI(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOpenAIStreamsAndSendsOptions(t *testing.T) {
	t.Parallel()
	s := &sseServer{serve: sseTokens("length", "a", "b", "c")}
	o := newTestOpenAI(t, s, func(c *Config) {
		c.Token = "secret"
		c.ServedNames = map[string]string{"m": "Qwen/Qwen2.5-Coder-1.5B"}
	})
	got := make([]string, 2)
	seed, topP := int64(10), float32(0.9)
	res, err := o.Generate(context.Background(), Request{Prompt: "<|fim_prefix|>p", PromptTokens: 5, Candidates: 2, Seed: &seed, TopP: &topP, MaxTokens: 3},
		func(i int, text string) error { got[i] += text; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "abc" || got[1] != "abc" {
		t.Fatalf("deltas %q", got)
	}
	if len(res.Candidates) != 2 || res.Candidates[1].Text != "abc" || res.Candidates[0].Finish != FinishLength || res.Model != "m" {
		t.Fatalf("result %+v", res)
	}
	if res.PromptEvalTokens != 700 || res.CachedPromptTokens != 512 || res.CompletionTokens() != 6 || res.TimeToFirstToken <= 0 {
		t.Fatalf("usage %+v", res)
	}
	for i, r := range s.reqs {
		opts, _ := r["stream_options"].(map[string]any)
		if s.paths[i] != "POST /v1/completions" || s.auth[i] != "Bearer secret" {
			t.Fatalf("request %d: %s with %q", i, s.paths[i], s.auth[i])
		}
		if r["model"] != "Qwen/Qwen2.5-Coder-1.5B" || r["prompt"] != "<|fim_prefix|>p" || r["stream"] != true || opts["include_usage"] != true ||
			r["seed"] != float64(10+i) || r["temperature"] != 0.0 || r["max_tokens"] != 3.0 || r["top_p"] != 0.9 || r["top_k"] != nil {
			t.Fatalf("request %d: %v", i, r)
		}
		if stop, _ := r["stop"].([]any); len(stop) != len(QwenStops) || stop[0] != QwenStops[0] {
			t.Fatalf("request %d: stop %v", i, r["stop"])
		}
		if ids, _ := r["stop_token_ids"].([]any); len(ids) != len(QwenStops) {
			t.Fatalf("request %d: stop_token_ids %v", i, r["stop_token_ids"])
		}
	}
}

// The Qwen stop set and the request's stop strings end the text here too,
// whatever the server matched.
func TestOpenAIStops(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: sseTokens("stop", "x = 1", "<|file", "_sep|>", "junk")}, nil)
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "x = 1" || c.Finish != FinishStop {
		t.Fatalf("candidate %+v", c)
	}
	res, err = o.Generate(context.Background(), Request{Prompt: "p", Stop: []string{" = "}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "x" || c.Finish != FinishStopSequence {
		t.Fatalf("candidate %+v", c)
	}
}

// llama.cpp server reports its prompt timings and cache use in timings.
func TestOpenAILlamaCppTimings(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, textChunk("a", nil))
		final := textChunk("", "stop")
		final["timings"] = map[string]any{"prompt_n": 20, "prompt_ms": 12.5, "cache_n": 480}
		event(w, final)
		event(w, "[DONE]")
	}}, nil)
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptEval != 12500*time.Microsecond || res.CachedPromptTokens != 480 || res.PromptEvalTokens != 500 || res.Candidates[0].Finish != FinishStop {
		t.Fatalf("result %+v", res)
	}
}

// A server that ignores stream: true and answers with one JSON object.
func TestOpenAIWholeAnswer(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		c := textChunk("whole", "length")
		c["usage"] = map[string]any{"prompt_tokens": 9, "completion_tokens": 2}
		_ = json.NewEncoder(w).Encode(c)
	}}, nil)
	var deltas []string
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, func(_ int, s string) error { deltas = append(deltas, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "whole" || c.Finish != FinishLength || c.Tokens != 2 || strings.Join(deltas, "") != "whole" {
		t.Fatalf("candidate %+v, deltas %q", c, deltas)
	}
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	status := func(code int, body string) func(http.ResponseWriter, *http.Request, map[string]any) {
		return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}
	stream := func(events ...string) func(http.ResponseWriter, *http.Request, map[string]any) {
		return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprint(w, e)
				w.(http.Flusher).Flush()
			}
		}
	}
	for _, tc := range []struct {
		name  string
		serve func(http.ResponseWriter, *http.Request, map[string]any)
		want  error
	}{
		{"vLLM model missing", status(404, `{"object":"error","message":"The model `+"`m`"+` does not exist.","type":"NotFoundError","code":404}`), ErrModelNotFound},
		{"Ollama model missing", status(404, `{"error":{"message":"model \"m\" not found, try pulling it first","type":"api_error"}}`), ErrModelNotFound},
		{"vLLM prompt too long", status(400, `{"object":"error","message":"This model's maximum context length is 1024 tokens. However, you requested 1100 tokens","code":400}`), ErrPromptTooLong},
		{"llama.cpp prompt too long", status(400, `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`), ErrPromptTooLong},
		{"bad option", status(400, `{"error":{"message":"temperature must be non-negative"}}`), ErrInvalidRequest},
		{"overloaded", status(503, `{"error":{"message":"server busy"}}`), ErrUnavailable},
		{"wrong token", status(401, `{"error":"unauthorized"}`), ErrUnavailable},
		{"dies mid-stream", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, textChunk("x", nil))
			panic(http.ErrAbortHandler)
		}, ErrUnavailable},
		{"malformed event", stream("data: {\"choices\": [{\"text\": \"x\"\n\n"), ErrUnavailable},
		{"error event (vLLM)", stream("data: {\"choices\":[{\"text\":\"x\"}]}\n\n", "data: {\"error\": {\"object\": \"error\", \"message\": \"engine dead\", \"code\": 500}}\n\n"), ErrUnavailable},
		{"error field (llama.cpp)", stream("data: {\"choices\":[{\"text\":\"x\"}]}\n\n", "error: {\"code\":500,\"message\":\"slot died\"}\n\n"), ErrUnavailable},
		{"event: error", stream("event: error\ndata: boom\n\n"), ErrUnavailable},
		{"ends without finishing", stream("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"), ErrIncomplete},
		{"event over the limit", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: \"")
			for range maxLine / 4096 {
				fmt.Fprint(w, strings.Repeat("x", 4096))
			}
			fmt.Fprint(w, strings.Repeat("x", 4096)+"\"\n\n")
		}, ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newTestOpenAI(t, &sseServer{serve: tc.serve}, nil)
			_, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if errors.Is(err, ErrNotSent) {
				t.Fatalf("err = %v is ErrNotSent: the request reached the backend", err)
			}
			t.Log(err)
		})
	}
}

// Several data lines are one event; comments, ids and \r\n line ends are
// allowed; an event with no blank line before the end of the stream still
// counts.
func TestOpenAIEventFraming(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		fmt.Fprint(w, ": keep-alive\r\n\r\nid: 1\r\ndata: {\"choices\":\r\ndata: [{\"text\":\"ab\"}]}\r\n\r\n")
		fmt.Fprint(w, "data:{\"choices\":[{\"text\":\"c\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]")
	}}, nil)
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "abc" || c.Finish != FinishStop || c.Tokens != 2 {
		t.Fatalf("candidate %+v", c)
	}
}

// A finish reason and the end of the stream finish a candidate even
// without [DONE].
func TestOpenAIEndWithoutDone(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, textChunk("a", "length"))
	}}, nil)
	res, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
	if err != nil || res.Candidates[0].Text != "a" || res.Candidates[0].Finish != FinishLength {
		t.Fatalf("%+v, %v", res, err)
	}
}

// A server nobody listens on: ErrNotSent (so another backend may take the
// request), and Activity says so until the backend answers again.
func TestOpenAIUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	cfg := DefaultConfig()
	cfg.URL = srv.URL
	o, err := NewOpenAI(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil); !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrNotSent and ErrUnavailable", err)
	}
	if a := o.Activity(); a.Unreachable.IsZero() {
		t.Fatalf("activity %+v", a)
	}
	if err := o.Ping(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("ping err = %v", err)
	}
	o.track.progress(time.Now())
	if a := o.Activity(); !a.Unreachable.IsZero() {
		t.Fatalf("activity %+v after progress", a)
	}
}

func TestOpenAIPing(t *testing.T) {
	t.Parallel()
	s := &sseServer{serve: func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	}}
	o := newTestOpenAI(t, s, func(c *Config) { c.Token = "t" })
	if err := o.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.paths[0] != "GET /v1/models" || s.auth[0] != "Bearer t" {
		t.Fatalf("ping was %s with %q", s.paths[0], s.auth[0])
	}
}

// A cancel closes the connection: the server's handler sees its request
// end.
func TestOpenAICancelStopsBackend(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-time.After(10 * time.Millisecond):
				event(w, textChunk("t", nil))
			}
		}
	}}, nil)
	cancelStops(t, o, gone)
	// The latency budget returns the partial text instead.
	res, err := o.Generate(context.Background(), Request{Prompt: "p", Budget: 80 * time.Millisecond}, nil)
	if err != nil || res.Candidates[0].Finish != FinishBudget || res.Candidates[0].Text == "" {
		t.Fatalf("budget: %+v, %v", res, err)
	}
}

// The watchdog ends a request the server accepted and never answered.
func TestOpenAIWatchdog(t *testing.T) {
	t.Parallel()
	o := newTestOpenAI(t, &sseServer{serve: func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		<-r.Context().Done()
	}}, func(c *Config) { c.Watchdog = fastWatchdog() })
	var se *StallError
	if _, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil); !errors.As(err, &se) {
		t.Fatalf("err = %v, want a StallError", err)
	}
	if err := o.Probe(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("probe of a silent server: %v", err)
	}
}

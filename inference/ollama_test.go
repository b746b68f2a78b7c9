package inference

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted is a fake Ollama /api/generate for the cases a real server cannot
// be made to produce on demand (a stream that ends without its final
// message, a backend that dies mid-stream, a slow backend). The real server
// is exercised by the end-to-end tests in server/.
type scripted struct {
	mu    sync.Mutex
	reqs  []map[string]any
	serve func(w http.ResponseWriter, r *http.Request, body map[string]any)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.reqs = append(s.reqs, body)
	s.mu.Unlock()
	s.serve(w, r, body)
}

func chunk(w http.ResponseWriter, v map[string]any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func newTestOllama(t *testing.T, s *scripted) *Ollama {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.URL = srv.URL
	cfg.DefaultModel = "m"
	cfg.ContextTokens = 1024
	o, err := NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func tokens(toks ...string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		for _, tk := range toks {
			chunk(w, map[string]any{"response": tk, "done": false})
		}
		chunk(w, map[string]any{"response": "", "done": true, "done_reason": "stop",
			"prompt_eval_count": 7, "eval_count": len(toks)})
	}
}

func TestGenerateStreamsAndSendsOptions(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: tokens("a", "b", "c")}
	o := newTestOllama(t, s)
	got := make([]string, 2) // text by candidate, deltas joined (tokens that arrive together are one delta)
	seed := int64(10)
	res, err := o.Generate(context.Background(), Request{Prompt: "p", PromptTokens: 5, Candidates: 2, Seed: &seed},
		func(i int, text string) error { got[i] += text; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "abc" || got[1] != "abc" {
		t.Fatalf("deltas %q", got)
	}
	if len(res.Candidates) != 2 || res.Candidates[1].Text != "abc" || res.Candidates[0].Finish != FinishStop {
		t.Fatalf("result %+v", res)
	}
	if res.PromptEvalTokens != 7 || res.CompletionTokens() != 6 || res.TimeToFirstToken <= 0 {
		t.Fatalf("usage %+v", res)
	}
	for i, r := range s.reqs {
		opts := r["options"].(map[string]any)
		if r["raw"] != true || r["truncate"] != false || opts["num_ctx"] != 1024.0 ||
			opts["seed"] != float64(10+i) || opts["temperature"] != 0.0 || opts["num_predict"] != 128.0 {
			t.Fatalf("request %d: %v", i, r)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		serve func(http.ResponseWriter, *http.Request, map[string]any)
		want  error
	}{
		{"no done message", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			chunk(w, map[string]any{"response": "x", "done": false})
		}, ErrIncomplete},
		{"model missing", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.WriteHeader(http.StatusNotFound)
			chunk(w, map[string]any{"error": `model "m" not found, try pulling it first`})
		}, ErrModelNotFound},
		{"error mid-stream", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			chunk(w, map[string]any{"response": "x", "done": false})
			chunk(w, map[string]any{"error": "runner crashed"})
		}, ErrUnavailable},
		{"dies mid-stream", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			chunk(w, map[string]any{"response": "x", "done": false})
			panic(http.ErrAbortHandler)
		}, ErrUnavailable},
		{"malformed line", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Write([]byte("{\"response\": \"x\"\n"))
		}, ErrUnavailable},
		{"long lines", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			chunk(w, map[string]any{"response": strings.Repeat("y", 100<<10), "done": false})
			chunk(w, map[string]any{"response": "", "done": true, "done_reason": "length"})
		}, nil},
		{"prompt too long", func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.WriteHeader(http.StatusInternalServerError)
			chunk(w, map[string]any{"error": "the input length exceeds the context length"})
		}, ErrPromptTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newTestOllama(t, &scripted{serve: tc.serve})
			res, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil)
			if tc.want == nil {
				if err != nil || len(res.Candidates[0].Text) != 100<<10 || res.Candidates[0].Finish != FinishLength {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestGenerateUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	cfg := DefaultConfig()
	cfg.URL = srv.URL
	o, _ := NewOllama(cfg, nil)
	if _, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil); !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("err = %v, want ErrNotSent (ErrUnavailable)", err)
	}
	if err := o.Ping(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("ping err = %v", err)
	}
}

func TestGenerateRejectsBeforeSending(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: tokens("a")}
	o := newTestOllama(t, s)
	neg, nan := float32(-1), float32(math.NaN())
	for _, tc := range []struct {
		req   Request
		field string // of the *OptionError, "" for another error
	}{
		{Request{PromptTokens: 1000, MaxTokens: 100}, ""},
		{Request{Temperature: &neg}, "temperature"},
		{Request{Temperature: &nan}, "temperature"}, // NaN passed range checks written as < and >
		{Request{TopP: &nan}, "top_p"},
		{Request{Candidates: 99}, "candidates"},
		{Request{Stop: []string{"x", ""}}, "stop[1]"},
		{Request{MaxTokens: 1 << 20}, "max_tokens"},
	} {
		_, err := o.Generate(context.Background(), tc.req, nil)
		var oe *OptionError
		switch {
		case err == nil:
			t.Fatalf("%+v accepted", tc.req)
		case tc.field == "" && errors.As(err, &oe):
			t.Errorf("%+v: %v is not an option's error", tc.req, err)
		case tc.field != "" && (!errors.As(err, &oe) || oe.Field != tc.field || !errors.Is(err, ErrInvalidRequest)):
			t.Errorf("%+v: %v, want an OptionError for %s", tc.req, err, tc.field)
		}
		if tc.field != "" {
			req := tc.req
			if err := o.CheckOptions(&req); !errors.As(err, &oe) || oe.Field != tc.field {
				t.Errorf("CheckOptions(%+v) = %v", tc.req, err)
			}
		}
	}
	if len(s.reqs) != 0 {
		t.Fatalf("%d requests reached the backend", len(s.reqs))
	}
}

// slow streams a token every 10 ms until the client goes away, and records
// when it noticed.
func slow(gone chan<- struct{}) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		for {
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-time.After(10 * time.Millisecond):
				chunk(w, map[string]any{"response": "t", "done": false})
			}
		}
	}
}

func TestGenerateCancelStopsBackend(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	cancelStops(t, newTestOllama(t, &scripted{serve: slow(gone)}), gone)
}

// cancelStops cancels a generation at its third delta and expects
// context.Canceled (never a silent success) and the backend's handler to
// see its request end (gone closed).
func cancelStops(t *testing.T, g interface {
	Generate(context.Context, Request, DeltaFunc) (*Result, error)
}, gone <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	_, err := g.Generate(ctx, Request{Prompt: "p"}, func(int, string) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled (never a silent success)", err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("backend request still running after cancel")
	}
}

func TestGenerateBudgetReturnsPartial(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	o := newTestOllama(t, &scripted{serve: slow(gone)})
	res, err := o.Generate(context.Background(), Request{Prompt: "p", Budget: 80 * time.Millisecond, Candidates: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 || res.Candidates[0].Finish != FinishBudget || res.Candidates[0].Text == "" {
		t.Fatalf("result %+v", res.Candidates)
	}
	<-gone
}

func TestGenerateStopSequenceCancels(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	s := &scripted{serve: func(w http.ResponseWriter, r *http.Request, b map[string]any) {
		chunk(w, map[string]any{"response": "x = 1\n", "done": false})
		chunk(w, map[string]any{"response": "\nnext", "done": false})
		slow(gone)(w, r, b)
	}}
	o := newTestOllama(t, s)
	res, err := o.Generate(context.Background(), Request{Prompt: "p", Stop: []string{"\n\n"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "x = 1" || c.Finish != FinishStopSequence {
		t.Fatalf("candidate %+v", c)
	}
	<-gone
}

// Tokens that have arrived together go out as one delta; tokens that
// arrive apart go out as they come.
func TestGenerateCoalescesArrivedTokens(t *testing.T) {
	t.Parallel()
	together := func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		var b []byte
		for _, tk := range []string{"a", "b", "c"} {
			line, _ := json.Marshal(map[string]any{"response": tk, "done": false})
			b = append(append(b, line...), '\n')
		}
		w.Write(b) // one write: the reader finds all three buffered
		w.(http.Flusher).Flush()
		time.Sleep(30 * time.Millisecond)
		chunk(w, map[string]any{"response": "d", "done": false})
		chunk(w, map[string]any{"response": "", "done": true, "done_reason": "stop", "eval_count": 4})
	}
	apart := func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		for _, tk := range []string{"a", "b", "c"} {
			chunk(w, map[string]any{"response": tk, "done": false})
			time.Sleep(30 * time.Millisecond)
		}
		chunk(w, map[string]any{"response": "", "done": true, "done_reason": "stop", "eval_count": 3})
	}
	for _, tc := range []struct {
		name  string
		serve func(http.ResponseWriter, *http.Request, map[string]any)
		want  string
	}{
		{"together", together, "abc|d"},
		{"apart", apart, "a|b|c"},
	} {
		o := newTestOllama(t, &scripted{serve: tc.serve})
		var deltas []string
		res, err := o.Generate(context.Background(), Request{Prompt: "p"},
			func(_ int, text string) error { deltas = append(deltas, text); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(deltas, "|"); got != tc.want || res.Candidates[0].Text != strings.ReplaceAll(tc.want, "|", "") {
			t.Errorf("%s: deltas %q, text %q; want %q", tc.name, got, res.Candidates[0].Text, tc.want)
		}
	}
}

// A backend that goes away between two requests: the second is written to
// the kept-alive connection, which the backend closes without answering,
// and nobody listens any more. net/http sends the request again on a new
// connection (a generation is marked safe to repeat), that dial fails, and
// the error is ErrNotSent: another backend may take the request.
func TestGenerateClosedKeptAliveConnection(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := lis.Accept()
		if err != nil {
			return
		}
		lis.Close() // no second connection
		defer conn.Close()
		br := bufio.NewReader(conn)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if i == 1 {
				return // the second request: closed without an answer
			}
			body := `{"response":"a","done":false}` + "\n" + `{"response":"","done":true,"done_reason":"stop","eval_count":1}` + "\n"
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	}()
	cfg := DefaultConfig()
	cfg.URL, cfg.DefaultModel = "http://"+lis.Addr().String(), "m"
	o, err := NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Generate(context.Background(), Request{Prompt: "p"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = o.Generate(context.Background(), Request{Prompt: "p"}, nil)
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("err = %v, want ErrNotSent", err)
	}
	<-served
}

// Command fakeollama is a controlled-latency stand-in for Ollama's HTTP API,
// for the latency benchmark in bench/ghz only: it isolates infill's own
// cost by answering /api/generate with a fixed number of tokens at a fixed
// pace, so what remains of a measured latency is infill (and the client).
// It is never used by tests, which run the real Ollama. bench/loadbench
// uses it too, as a backend of limited parallelism (-parallel, -finish-prompt).
//
// The pace is a fixed schedule by default: token i is written at
// prompt-delay + (i+1) × token-delay after the request arrived, whenever the
// previous write happened, as a backend whose speed is its own (a GPU)
// produces tokens. -schedule chained waits token-delay after each write
// instead, so any time the fake's process waits for a CPU is added to
// every later token; on a machine whose few cores the fake shares with the
// server and the client, that measures the fake's scheduling under their
// load (bench/ghz/NOTES.md, item 17).
//
// -parallel N serves at most N generations at once, as Ollama's runner
// does (OLLAMA_NUM_PARALLEL): the others wait in arrival order, leaving the
// line when their client goes away, and a generation's schedule starts when
// it gets its turn. -finish-prompt keeps a generation whose client went away
// during the prompt delay in its place until that delay is over, as Ollama
// v0.24.0 finishes a prompt evaluation under way after a disconnect.
//
// -models names the models it holds (default infill-tiny, the model every
// benchmark's server is given): /api/tags lists them, as infill's health
// requires of a backend before it reports SERVING, and a generation or
// /api/show of any other model is Ollama's 404 "not found".
//
// Endpoints: GET|HEAD /api/version (health), POST /api/generate (streamed
// NDJSON or one message, honouring num_predict and client cancellation),
// POST /api/show and GET /api/tags (model checks), and GET /fake/last, the
// last generate request as received (prompt sha256, options), which the
// benchmark uses to prove that it sends Ollama exactly what infill sends.
//
//	fakeollama -listen 127.0.0.1:11499 -tokens 16 -token-delay 0 -prompt-delay 0 [-models a,b] [-schedule fixed|chained] [-parallel N] [-finish-prompt]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"
)

// config is the fake's behaviour.
type config struct {
	listen      string
	tokens      int
	tokenDelay  time.Duration
	promptDelay time.Duration
	chained     bool // each delay after the previous write, not on a fixed schedule
	version     string
	parallel    int  // generations at once; 0: no limit
	finish      bool // a disconnect during the prompt delay keeps the slot until it is over
	models      []string
}

func main() {
	var c config
	flag.StringVar(&c.listen, "listen", "127.0.0.1:11499", "loopback address to listen on")
	flag.IntVar(&c.tokens, "tokens", 16, "tokens per generation (fewer when num_predict is lower)")
	flag.DurationVar(&c.tokenDelay, "token-delay", 0, "delay before each token")
	flag.DurationVar(&c.promptDelay, "prompt-delay", 0, "delay before the first token (prompt evaluation)")
	flag.StringVar(&c.version, "version", "0.24.0", "version reported by /api/version")
	flag.IntVar(&c.parallel, "parallel", 0, "generations served at once, the rest wait in arrival order (Ollama's OLLAMA_NUM_PARALLEL); 0: no limit")
	flag.BoolVar(&c.finish, "finish-prompt", false, "a generation abandoned during the prompt delay keeps its slot until the delay is over (as Ollama finishes a prompt evaluation)")
	schedule := flag.String("schedule", "fixed", "fixed: token i at prompt-delay + (i+1) × token-delay after the request; chained: token-delay after each write")
	models := flag.String("models", "infill-tiny", "comma-separated names of the models it holds (listed by /api/tags; others are not found)")
	flag.Parse()
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			c.models = append(c.models, m)
		}
	}
	switch *schedule {
	case "fixed":
	case "chained":
		c.chained = true
	default:
		fmt.Fprintf(os.Stderr, "fakeollama: -schedule %q: want fixed or chained\n", *schedule)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "fakeollama:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %s: only loopback addresses are allowed", c.listen)
	}
	if c.tokens < 0 || c.tokenDelay < 0 || c.promptDelay < 0 || c.parallel < 0 {
		return errors.New("-tokens, -token-delay, -prompt-delay and -parallel must be >= 0")
	}
	if len(c.models) == 0 {
		return errors.New("-models names no model")
	}
	lis, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	f := newFake(c)
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	log.Printf("fakeollama: listening on %s (models %s, tokens %d, token delay %v, prompt delay %v, chained %v, parallel %d, finish prompt %v)",
		lis.Addr(), strings.Join(c.models, ","), c.tokens, c.tokenDelay, c.promptDelay, c.chained, c.parallel, c.finish)
	select {
	case err := <-errc:
		return err
	case <-sig:
		_ = srv.Close()
		log.Printf("fakeollama: stopped after %d generate requests", f.requests.Load())
		return nil
	}
}

// lastRequest is what GET /fake/last returns.
type lastRequest struct {
	Model        string         `json:"model"`
	PromptSHA256 string         `json:"prompt_sha256"`
	PromptBytes  int            `json:"prompt_bytes"`
	Raw          bool           `json:"raw"`
	Stream       *bool          `json:"stream"`
	Truncate     *bool          `json:"truncate"`
	Shift        *bool          `json:"shift"`
	KeepAlive    string         `json:"keep_alive"`
	Options      map[string]any `json:"options"`
	Requests     int64          `json:"requests"`
}

type fake struct {
	cfg      config
	requests atomic.Int64
	slots    chan struct{} // nil: no limit
	mu       sync.Mutex
	last     lastRequest
}

func newFake(c config) *fake {
	f := &fake{cfg: c}
	if c.parallel > 0 {
		f.slots = make(chan struct{}, c.parallel)
	}
	return f
}

// named is the full name of a model, ":latest" when it has no tag.
func named(m string) string {
	if !strings.Contains(m[strings.LastIndex(m, "/")+1:], ":") {
		m += ":latest"
	}
	return strings.ToLower(m)
}

// holds reports whether the fake has model (a name without a tag is
// ":latest", as in Ollama).
func (f *fake) holds(model string) bool {
	for _, m := range f.cfg.models {
		if named(m) == named(model) {
			return true
		}
	}
	return false
}

// notFound is Ollama's answer for a model it does not have.
func notFound(w http.ResponseWriter, model string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("model '%s' not found", model)})
}

func (f *fake) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"version": f.cfg.version})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { // Ollama answers HEAD / too
		_, _ = w.Write([]byte("Ollama is running"))
	})
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		var req api.ShowRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		if !f.holds(req.Model) {
			notFound(w, req.Model)
			return
		}
		writeJSON(w, map[string]any{"modelfile": "", "details": map[string]string{"family": "qwen2"}})
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		var list api.ListResponse
		for _, m := range f.cfg.models {
			list.Models = append(list.Models, api.ListModelResponse{Name: named(m), Model: named(m),
				Details: api.ModelDetails{Family: "qwen2", Format: "gguf"}})
		}
		writeJSON(w, list)
	})
	mux.HandleFunc("POST /api/generate", f.generate)
	mux.HandleFunc("GET /fake/last", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		l := f.last
		f.mu.Unlock()
		l.Requests = f.requests.Load()
		writeJSON(w, l)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// words are the generated tokens: code-like, never a stop string.
var words = []string{"ret", "urn", " x", " +", " y", "\n", "\t", "if", " err", " !=", " nil", " {", "\n\t\t", "}", "(", ")"}

func (f *fake) generate(w http.ResponseWriter, r *http.Request) {
	var req api.GenerateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request: `+strings.ReplaceAll(err.Error(), `"`, `'`)+`"}`, http.StatusBadRequest)
		return
	}
	if !f.holds(req.Model) {
		notFound(w, req.Model)
		return
	}
	f.requests.Add(1)
	sum := sha256.Sum256([]byte(req.Prompt))
	l := lastRequest{Model: req.Model, PromptSHA256: hex.EncodeToString(sum[:]), PromptBytes: len(req.Prompt),
		Raw: req.Raw, Stream: req.Stream, Truncate: req.Truncate, Shift: req.Shift, Options: req.Options}
	if req.KeepAlive != nil {
		l.KeepAlive = req.KeepAlive.Duration.String()
	}
	f.mu.Lock()
	f.last = l
	f.mu.Unlock()

	n, reason := f.cfg.tokens, "stop"
	if v, ok := req.Options["num_predict"].(float64); ok && v >= 0 && int(v) <= n {
		n, reason = int(v), "length"
	}
	stream := req.Stream == nil || *req.Stream
	ctx := r.Context()
	if f.slots != nil { // wait for a slot, in arrival order, or leave with the client
		select {
		case f.slots <- struct{}{}:
			defer func() { <-f.slots }()
		case <-ctx.Done():
			return
		}
	}
	start := time.Now()
	// wait returns at start+at (fixed schedule) or after d (chained), or
	// false when the client went away. A late write is not made up for.
	wait := func(at, d time.Duration) bool {
		if !f.cfg.chained {
			d = time.Until(start.Add(at))
		}
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !wait(f.cfg.promptDelay, f.cfg.promptDelay) {
		if f.cfg.finish { // the evaluation under way runs to its end
			time.Sleep(time.Until(start.Add(f.cfg.promptDelay)))
		}
		return
	}
	promptDone := time.Now()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	var text strings.Builder
	for i := 0; i < n; i++ {
		if !wait(f.cfg.promptDelay+time.Duration(i+1)*f.cfg.tokenDelay, f.cfg.tokenDelay) {
			return
		}
		tok := words[i%len(words)]
		if !stream {
			text.WriteString(tok)
			continue
		}
		if err := enc.Encode(api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Response: tok}); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	end := time.Now()
	final := api.GenerateResponse{Model: req.Model, CreatedAt: end.UTC(), Response: text.String(), Done: true, DoneReason: reason,
		Metrics: api.Metrics{
			TotalDuration:      end.Sub(start),
			PromptEvalCount:    0, // unknown: the fake has no tokenizer (1 made infill warn of a truncated prompt on every call)
			PromptEvalDuration: promptDone.Sub(start),
			EvalCount:          n,
			EvalDuration:       end.Sub(promptDone),
		}}
	_ = enc.Encode(final)
}

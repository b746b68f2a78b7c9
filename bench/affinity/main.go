// Command affinity measures what cache-affinity routing buys over
// round-robin: a typing workload of several editor sessions over two real
// Ollama backends (ollamatest.Launch: the pinned Ollama serving the tiny
// model), through an in-process infill server, once per routing policy,
// each run on fresh backends.
//
// Every session types a statement one character at a time into its own
// file of one repository (by default the Go standard library's net/http),
// waiting for each keystroke's completion before the next (a closed loop,
// so no request is cancelled: cancelled streams wedge Ollama v0.24.0, see
// bench/storm), through the Go client library (digests and edits, as an
// editor plugin sends them). The prompt holds a few thousand tokens of
// repository context (-budget), cursor-independent context first, so a
// backend whose KV cache still holds the session's last prompt evaluates
// only what follows the cursor. Each backend runs -parallel sequences
// (OLLAMA_NUM_PARALLEL, each with its own prompt cache) and infill sends it
// as many at once (-slots). Ollama v0.24.0 puts a prompt in the free
// sequence whose cache shares the longest prefix with it, and any two
// prompts of one repository share their first tokens, so a backend keeps
// only as many sessions' prompts as it runs at once: with 8 sessions, 6
// sequences hold the 6 or fewer that affinity gives a backend, not the 8
// that round-robin sends to each. (OLLAMA_MULTIUSER_CACHE=1, which would
// keep the others, aborts the tiny model's runner in v0.24.0:
// "seq_cp() is only supported for full KV buffers".)
//
// Per keystroke it records the backend's prompt-evaluation time (Ollama's
// prompt_eval_duration, the response's timings.prompt_eval) and the
// end-to-end time of the call at the client. The first -warmup keystrokes
// of every session (cold in every policy) are typed first, by all
// sessions at once, and left out of the figures; once every session is
// done with them, the measured keystrokes follow. Keystrokes answered by
// typed-through (no backend call) are counted apart.
//
//	go run ./bench/affinity -out bench/affinity/results
//
// It writes one JSON file per run (every keystroke) to -out and prints a
// Markdown table of the runs on stdout (REPORT.md's).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference/ollamatest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/pipeline"
)

type options struct {
	src        string
	sessions   int
	keystrokes int
	warmup     int
	think      time.Duration
	budget     int
	maxTokens  int
	numCtx     int
	parallel   int
	slots      int
	loadBound  float64
	commit     string
	policies   []string
	rounds     int
	out        string
	typed      string
}

func main() {
	var o options
	goroot := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	flag.StringVar(&o.src, "src", filepath.Join(goroot, "src", "net", "http"), "directory whose Go files (not tests, not subdirectories) are the repository")
	flag.IntVar(&o.sessions, "sessions", 8, "editor sessions, each typing in its own file")
	flag.IntVar(&o.keystrokes, "keystrokes", 16, "keystrokes per session")
	flag.IntVar(&o.warmup, "warmup", 3, "first keystrokes of each session, typed by all sessions before the measured ones and left out of the figures")
	flag.DurationVar(&o.think, "think", 50*time.Millisecond, "pause between a completion and the next keystroke")
	flag.IntVar(&o.budget, "budget", 3072, "token_budget of each request: prompt plus generation")
	flag.IntVar(&o.maxTokens, "max-tokens", 16, "tokens generated per keystroke")
	flag.IntVar(&o.numCtx, "num-ctx", 4096, "num_ctx of both backends")
	flag.IntVar(&o.parallel, "parallel", 6, "OLLAMA_NUM_PARALLEL of each backend: its parallel sequences, each with its own prompt cache")
	flag.IntVar(&o.slots, "slots", 0, "infill's slots per backend (generations sent at once); 0: -parallel")
	flag.Float64Var(&o.loadBound, "load-bound", server.DefaultConfig().LoadBound, "infill's --load-bound (affinity-unbounded: 0)")
	policies := flag.String("policies", "round-robin,affinity,affinity-unbounded", "routing policies, in the order run: round-robin, affinity, affinity-unbounded (affinity without the load bound)")
	flag.IntVar(&o.rounds, "rounds", 1, "times the policies are run (alternating)")
	flag.StringVar(&o.out, "out", "", "directory for each run's JSON (none: not written)")
	flag.StringVar(&o.typed, "typed", "n, err := w.Write(buf[:k])\n\t", "what each session types at its cursor")
	flag.Parse()
	o.policies = strings.Split(*policies, ",")
	if o.slots == 0 {
		o.slots = o.parallel
	}
	o.commit = commit() // before any run: the tree may change while it runs
	// An interrupted run stops its backends (their runners outlive a
	// killed server).
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		launched.stopAll()
		os.Exit(1)
	}()
	if err := runAll(o); err != nil {
		fmt.Fprintln(os.Stderr, "affinity:", err)
		os.Exit(1)
	}
}

// launched are the backends running now.
var launched backends

type backends struct {
	mu sync.Mutex
	bs map[*ollamatest.Backend]bool
}

func (l *backends) add(b *ollamatest.Backend) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bs == nil {
		l.bs = map[*ollamatest.Backend]bool{}
	}
	l.bs[b] = true
}

func (l *backends) remove(b *ollamatest.Backend) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.bs, b)
}

func (l *backends) stopAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range l.bs {
		b.Stop()
	}
}

// Keystroke is one measured completion.
type Keystroke struct {
	Session    int           `json:"session"`
	Index      int           `json:"index"`
	E2E        time.Duration `json:"e2e_ns"`
	PromptEval time.Duration `json:"prompt_eval_ns"`
	Prompt     int           `json:"prompt_tokens"`
	QueueWait  time.Duration `json:"queue_wait_ns"`
	Reused     bool          `json:"reused,omitempty"`
	Err        string        `json:"err,omitempty"`
}

// Run is one policy's run.
type Run struct {
	Policy     string             `json:"policy"`
	Commit     string             `json:"commit"`
	Started    time.Time          `json:"started"`
	Measured   time.Time          `json:"measured"` // the end of the warm-up
	Wall       time.Duration      `json:"wall_ns"`  // of the measured keystrokes
	LoadBefore string             `json:"loadavg_before"`
	LoadAfter  string             `json:"loadavg_after"`
	Files      []string           `json:"session_files"`
	Sessions   map[string]int     `json:"sessions_per_backend,omitempty"`
	Served     map[string]float64 `json:"generations_per_backend"`
	Spilled    map[string]float64 `json:"spilled_by_reason"`
	// Evaluated is what each generation of the measured keystrokes had
	// evaluated and reused from the cache, from the runners' logs.
	Evaluated  []CacheUse        `json:"evaluated"`
	Keystrokes []Keystroke       `json:"keystrokes"`
	Options    map[string]string `json:"options"`
}

func runAll(o options) error {
	repo, err := loadRepo(o.src)
	if err != nil {
		return err
	}
	files := sessionFiles(repo, o.sessions)
	if len(files) < o.sessions {
		return fmt.Errorf("%s has %d files fit for a session, want %d", o.src, len(files), o.sessions)
	}
	var runs []*Run
	for r := range o.rounds {
		for _, p := range o.policies {
			fmt.Fprintf(os.Stderr, "round %d: %s\n", r+1, p)
			run, err := runPolicy(o, p, repo, files)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			runs = append(runs, run)
			if o.out != "" {
				if err := os.MkdirAll(o.out, 0o755); err != nil {
					return err
				}
				name := filepath.Join(o.out, fmt.Sprintf("%s-%s-%d.json", run.Started.UTC().Format("20060102-150405"), p, r+1))
				data, _ := json.MarshalIndent(run, "", " ")
				if err := os.WriteFile(name, data, 0o644); err != nil {
					return err
				}
			}
		}
	}
	report(os.Stdout, o, runs)
	return nil
}

// loadRepo reads the Go files of dir (not tests, not subdirectories, at
// most 64 KiB each) as the repository, with paths relative to dir's parent.
func loadRepo(dir string) (map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	repo := map[string]string{}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if len(data) <= 64<<10 {
			repo[filepath.Base(dir)+"/"+n] = string(data)
		}
	}
	return repo, nil
}

// sessionFiles picks the n largest files with a cursor place (a function
// body's last return statement).
func sessionFiles(repo map[string]string, n int) []string {
	var paths []string
	for p, c := range repo {
		if cursorOffset(c) >= 0 {
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, func(a, b string) int {
		if d := len(repo[b]) - len(repo[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return paths[:min(n, len(paths))]
}

// cursorOffset is where a session types: before the last "\treturn " that
// starts a line of a function body (-1: none).
func cursorOffset(content string) int {
	i := strings.LastIndex(content, "\n\treturn ")
	if i < 0 {
		return -1
	}
	return i + 2
}

func runPolicy(o options, policy string, repo map[string]string, files []string) (*Run, error) {
	// affinity-unbounded: affinity without the load bound (a backend is
	// passed over only when its queue is full).
	routing, err := pipeline.ParseRouting(strings.TrimSuffix(policy, "-unbounded"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "infill-affinity-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var backs []*ollamatest.Backend
	defer func() {
		for _, b := range backs {
			b.Stop()
			launched.remove(b)
		}
	}()
	names := []string{"a", "b"}
	for _, n := range names {
		d := filepath.Join(dir, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		// OLLAMA_DEBUG=1 for the runner's "loading cache slot" lines: how
		// much of each prompt its cache held (Ollama's prompt_eval_count
		// counts the whole prompt, cached or not).
		b, err := ollamatest.Launch(d, ollamatest.Options{Env: []string{"OLLAMA_NUM_PARALLEL=" + strconv.Itoa(o.parallel), "OLLAMA_DEBUG=1"}})
		if b != nil {
			backs = append(backs, b)
			launched.add(b)
		}
		if err != nil {
			return nil, err
		}
		if err := b.Warm(map[string]any{"num_ctx": o.numCtx}); err != nil {
			return nil, err
		}
	}
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.HTTPListenAddr = ""
	cfg.Routing = routing
	cfg.LoadBound = o.loadBound
	if strings.HasSuffix(policy, "-unbounded") {
		cfg.LoadBound = 0
	}
	cfg.Inference.DefaultModel = backs[0].Model
	cfg.Inference.ContextTokens = o.numCtx
	cfg.Context.ContextTokens = o.numCtx
	// Six cold prompts of 3,000 tokens at once on one loaded core took
	// minutes, and a sequence's next token waits while the runner
	// evaluates the others' prompts (measured: over 10 s, the default
	// token gap): a slow backend, not a stall, here. A stall would fail
	// the request and make health take the backend out.
	cfg.Inference.Watchdog.FirstTokenBase = 30 * time.Minute
	cfg.Inference.Watchdog.TokenGap = 30 * time.Minute
	cfg.Admission.QueueLength = 64
	for i, b := range backs {
		cfg.Backends = append(cfg.Backends, server.BackendConfig{Name: names[i], Kind: server.KindOllama, URL: b.URL, Slots: o.slots})
	}
	srv, addr, stop, err := startInfill(cfg)
	if err != nil {
		return nil, err
	}
	defer stop()

	run := &Run{Policy: policy, Commit: o.commit, Started: time.Now(), Files: files,
		Options: map[string]string{
			"sessions": strconv.Itoa(o.sessions), "keystrokes": strconv.Itoa(o.keystrokes), "warmup": strconv.Itoa(o.warmup),
			"think": o.think.String(), "budget": strconv.Itoa(o.budget), "max_tokens": strconv.Itoa(o.maxTokens),
			"num_ctx": strconv.Itoa(o.numCtx), "parallel": strconv.Itoa(o.parallel), "slots": strconv.Itoa(o.slots), "src": o.src,
			"load_bound": strconv.FormatFloat(cfg.LoadBound, 'g', -1, 64),
		}}
	if routing == pipeline.RouteAffinity {
		run.Sessions = map[string]int{}
		for _, f := range files {
			run.Sessions[pipeline.AffinityOrder(names, "net/http", f)[0]]++
		}
	}
	var typists []*typist
	defer func() {
		for _, ty := range typists {
			ty.c.Close()
		}
	}()
	for s, f := range files {
		ty, err := newTypist(addr, s, f, repo)
		if err != nil {
			return nil, err
		}
		typists = append(typists, ty)
	}
	// Warm-up: every session's first keystrokes, all sessions at once (so
	// that each backend runs as many at once as it will, which is how many
	// prompt caches Ollama fills), until every session is done with them.
	// They are cold in every policy and left out of the figures.
	if err := phase(typists, run, func(ty *typist) (int, int) { return 0, o.warmup }, o); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	servedBefore := counter(srv, "infill_backend_requests_total", "backend", "outcome", "ok")
	spilledBefore := counter(srv, "infill_backend_spilled_total", "reason", "", "")
	run.Measured, run.LoadBefore = time.Now(), loadavg()
	err = phase(typists, run, func(ty *typist) (int, int) { return o.warmup, o.keystrokes }, o)
	run.Wall = time.Since(run.Measured)
	for _, b := range backs {
		run.Evaluated = append(run.Evaluated, cacheUse(b.Logs(), run.Measured)...)
	}
	run.LoadAfter = loadavg()
	run.Served = minus(counter(srv, "infill_backend_requests_total", "backend", "outcome", "ok"), servedBefore)
	run.Spilled = minus(counter(srv, "infill_backend_spilled_total", "reason", "", ""), spilledBefore)
	return run, err
}

// phase has every typist type keystrokes [from, to) at once, and waits
// for all.
func phase(typists []*typist, run *Run, keys func(*typist) (from, to int), o options) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errc := make(chan error, len(typists))
	for _, ty := range typists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := keys(ty)
			for k := from; k < to; k++ {
				ks, err := ty.key(o, k)
				mu.Lock()
				run.Keystrokes = append(run.Keystrokes, ks)
				mu.Unlock()
				if err != nil {
					errc <- fmt.Errorf("session %d (%s): %w", ty.s, ty.f, err)
					return
				}
				time.Sleep(o.think)
			}
		}()
	}
	wg.Wait()
	close(errc)
	var errs []error
	for e := range errc {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// typist types o.typed into its file, a keystroke per completion.
type typist struct {
	c       *infill.Client
	s       int
	f       string
	content string
	off     int
	repo    map[string]string
}

func newTypist(addr string, s int, f string, repo map[string]string) (*typist, error) {
	c, err := infill.Dial(addr, infill.Config{ClientID: fmt.Sprintf("editor-%d", s)}, zap.NewNop())
	if err != nil {
		return nil, err
	}
	return &typist{c: c, s: s, f: f, content: repo[f], off: cursorOffset(repo[f]), repo: repo}, nil
}

// key types keystroke k and waits for its completion.
func (ty *typist) key(o options, k int) (Keystroke, error) {
	typed := []rune(o.typed)
	ch := string(typed[k%len(typed)])
	ty.content = ty.content[:ty.off] + ch + ty.content[ty.off:]
	ty.off += len(ch)
	files := make([]*infillv1.File, 0, len(ty.repo))
	for p, text := range ty.repo {
		if p == ty.f {
			text = ty.content
		}
		files = append(files, &infillv1.File{Path: p, Content: proto.String(text)})
	}
	req := &infillv1.CompleteRequest{
		Repository:  &infillv1.Repository{Name: "net/http", Files: files},
		Cursor:      &infillv1.Cursor{Path: ty.f, Offset: uint64(ty.off), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation:  &infillv1.GenerationOptions{MaxTokens: uint32(o.maxTokens)},
		TokenBudget: uint32(o.budget),
		SessionId:   ty.f,
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	resp, err := ty.c.Complete(ctx, req)
	cancel()
	ks := Keystroke{Session: ty.s, Index: k, E2E: time.Since(begin)}
	if err != nil {
		ks.Err = err.Error()
		return ks, err
	}
	ks.PromptEval = resp.GetTimings().GetPromptEval().AsDuration()
	ks.QueueWait = resp.GetTimings().GetQueueWait().AsDuration()
	ks.Prompt = int(resp.GetUsage().GetPlannedPromptTokens())
	ks.Reused = resp.GetReused()
	return ks, nil
}

// startInfill runs infill in this process in front of cfg's backends and
// waits until it serves.
func startInfill(cfg server.Config) (*server.Server, string, func(), error) {
	log := zap.NewNop()
	if os.Getenv("AFFINITY_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	tok, err := tokenizer.Qwen25()
	if err != nil {
		return nil, "", nil, err
	}
	builder, err := contextpack.NewBuilder(cfg.Context, tok, log.Named("contextpack"))
	if err != nil {
		return nil, "", nil, err
	}
	clients, err := server.OpenBackends(cfg, log)
	if err != nil {
		builder.Close()
		return nil, "", nil, err
	}
	srv, err := server.New(cfg, server.Deps{Builder: builder, Backends: clients}, log)
	if err != nil {
		builder.Close()
		return nil, "", nil, err
	}
	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		builder.Close()
		return nil, "", nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		builder.Close()
	}
	addr := lis.Addr().String()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(time.Minute)
	for _, svc := range []string{server.BackendHealthService("a"), server.BackendHealthService("b")} {
		for {
			r, err := h.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
			if err == nil && r.Status == healthpb.HealthCheckResponse_SERVING {
				break
			}
			if time.Now().After(deadline) {
				stop()
				return nil, "", nil, fmt.Errorf("%s not SERVING within a minute", svc)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return srv, addr, stop, nil
}

// counter sums the server's counter name by the value of label by, over
// the samples whose label key is value (key "": all).
func counter(srv *server.Server, name, by, key, value string) map[string]float64 {
	out := map[string]float64{}
	mfs, err := srv.Metrics().Registry().Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			group, match := "", key == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == by {
					group = l.GetValue()
				}
				if l.GetName() == key && l.GetValue() == value {
					match = true
				}
			}
			if match {
				out[group] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// CacheUse is one generation's prompt as the runner's cache served it.
type CacheUse struct {
	Prompt, Used, Evaluated int
}

var cacheSlot = regexp.MustCompile(`time=(\S+) .*msg="loading cache slot" .*prompt=(\d+) used=(\d+) remaining=(\d+)`)

// cacheUse reads the runner's "loading cache slot" lines logged since
// from an Ollama log (OLLAMA_DEBUG=1), leaving out the health checks'
// one-token prompts.
func cacheUse(log string, since time.Time) []CacheUse {
	var out []CacheUse
	for _, m := range cacheSlot.FindAllStringSubmatch(log, -1) {
		t, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || t.Before(since) {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		u, _ := strconv.Atoi(m[3])
		r, _ := strconv.Atoi(m[4])
		if p > 16 {
			out = append(out, CacheUse{Prompt: p, Used: u, Evaluated: r})
		}
	}
	return out
}

// minus is a - b by key.
func minus(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}

// Summary is a run's figures over its measured keystrokes.
type Summary struct {
	N, Reused, Errors          int
	EvalP50, EvalP90, EvalMean time.Duration
	EvalTotal                  time.Duration
	E2EP50, E2EP99             time.Duration
	PromptTokens               int
	// Tokens evaluated per generation (the runners' logs): p50, mean, and
	// the share of prompt tokens the cache held.
	EvaluatedP50, EvaluatedMean int
	Reuse                       float64
}

func summarize(o options, r *Run) Summary {
	var s Summary
	var eval, e2e []time.Duration
	for _, k := range r.Keystrokes {
		switch {
		case k.Index < o.warmup:
			continue
		case k.Err != "":
			s.Errors++
			continue
		case k.Reused:
			s.Reused++
			continue
		}
		s.N++
		eval = append(eval, k.PromptEval)
		e2e = append(e2e, k.E2E)
		s.EvalTotal += k.PromptEval
		s.PromptTokens = max(s.PromptTokens, k.Prompt)
	}
	if s.N == 0 {
		return s
	}
	s.EvalP50, s.EvalP90 = percentile(eval, 50), percentile(eval, 90)
	s.EvalMean = s.EvalTotal / time.Duration(s.N)
	s.E2EP50, s.E2EP99 = percentile(e2e, 50), percentile(e2e, 99)
	if len(r.Evaluated) > 0 {
		var ev []time.Duration // tokens, sorted as durations
		prompt, used, total := 0, 0, 0
		for _, c := range r.Evaluated {
			ev = append(ev, time.Duration(c.Evaluated))
			prompt, used, total = prompt+c.Prompt, used+c.Used, total+c.Evaluated
		}
		s.EvaluatedP50, s.EvaluatedMean = int(percentile(ev, 50)), total/len(r.Evaluated)
		s.Reuse = float64(used) / float64(prompt)
	}
	return s
}

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func report(w *os.File, o options, runs []*Run) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(w, "| policy | keystrokes (reused, errors) | prompt eval p50 ms | prompt eval mean ms | prompt eval total s | tokens evaluated p50 | mean | cache share | e2e p50 ms | e2e p99 ms | sessions per backend | generations per backend | spilled (load, full) | wall s | load avg before → after |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		s := summarize(o, r)
		split := "—"
		if r.Sessions != nil {
			split = fmt.Sprintf("a %d, b %d", r.Sessions["a"], r.Sessions["b"])
		}
		fmt.Fprintf(w, "| %s | %d (%d, %d) | %s | %s | %.1f | %d | %d | %.0f%% | %s | %s | %s | a %.0f, b %.0f | %.0f, %.0f | %.0f | %s → %s |\n",
			r.Policy, s.N, s.Reused, s.Errors, ms(s.EvalP50), ms(s.EvalMean), s.EvalTotal.Seconds(),
			s.EvaluatedP50, s.EvaluatedMean, 100*s.Reuse,
			ms(s.E2EP50), ms(s.E2EP99), split, r.Served["a"], r.Served["b"], r.Spilled["load"], r.Spilled["full"],
			r.Wall.Seconds(), r.LoadBefore, r.LoadAfter)
	}
	if len(runs) > 0 {
		fmt.Fprintf(w, "\ncommit %s; prompts of up to %d tokens; options %v\n", runs[0].Commit, summarize(o, runs[0]).PromptTokens, runs[0].Options)
	}
}

// Command storm reproduces the cancel storm of issue 20 against the real
// Ollama backend: N streaming generations, C at a time, each cancelled by
// the client as soon as its first token arrives, sent straight to Ollama
// ("direct") or through infill's gRPC StreamComplete ("infill", an
// in-process infill server in front of the same kind of Ollama). Each run
// gets a fresh private Ollama (inference/ollamatest.Launch) serving the tiny
// model, so one run's wedge cannot leak into the next.
//
// A storm is wedged when no stream has received a token for -quiet while
// streams wait (ollamatest.Storm). After a wedge the tool diagnoses the
// backend: does /api/version answer, does a fresh one-token generation
// answer, is the runner using CPU, does it recover by itself within
// -recover-wait, and does a restart of Ollama restore it. Through infill it
// also records the server's health (polled every 50 ms) and the status every
// call ended with.
//
//	go run ./bench/storm -target direct,infill -concurrency 4 -streams 1000
//	go run ./bench/storm -ollama-bin ~/.cache/infill/ollama/0.34.4/ollama ...
//
// It prints one JSON object per run on stdout (the figures bench/storm's
// REPORT.md is written from) and progress on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
)

const numCtx = 4096

// prompt is a raw FIM prompt the tiny model continues with text (not an
// immediate end), so every stream has a first token.
const prompt = "<|fim_prefix|>import math\n\n\ndef area(r):\n    \"\"\"Area of a circle of radius r.\"\"\"\n    return <|fim_suffix|>\n\n\ndef circumference(r):\n    return 2 * math.pi * r\n<|fim_middle|>"

type flags struct {
	bin          string
	targets      []string
	streams      int
	concurrency  int
	parallel     int
	quiet        time.Duration
	drain        time.Duration
	recoverWait  time.Duration
	healWait     time.Duration
	maxTokens    int
	keep         string
	dump         bool
	debug        bool
	serverConfig func(*server.Config)
}

// Run is one storm's record.
type Run struct {
	Target          string         `json:"target"`
	FirstTokenBaseS float64        `json:"watchdog_first_token_base_s,omitempty"`
	BackendSlots    *int           `json:"backend_slots,omitempty"`
	OllamaVersion   string         `json:"ollama_version"`
	NumParallel     int            `json:"ollama_num_parallel"`
	Streams         int            `json:"streams"`
	Concurrency     int            `json:"concurrency"`
	Sent            int            `json:"sent"`
	Cancelled       int            `json:"cancelled_after_first_token"`
	Abandoned       int            `json:"abandoned"`
	Finished        int            `json:"finished_without_error"`
	Failed          map[string]int `json:"failed,omitempty"`
	Wedged          bool           `json:"wedged"`
	CancelledBefore int            `json:"cancelled_before_wedge,omitempty"`
	WedgeAfterS     float64        `json:"wedge_after_s,omitempty"`
	ElapsedS        float64        `json:"elapsed_s"`
	TTFTp50ms       float64        `json:"ttft_p50_ms"`
	TTFTp99ms       float64        `json:"ttft_p99_ms"`
	Diagnosis       *Diagnosis     `json:"diagnosis,omitempty"`
	Health          []Transition   `json:"health,omitempty"`
	// NotServingAfterS is the time from the last token (the wedge's
	// start) to health NOT_SERVING; -1 when it never went.
	NotServingAfterS *float64 `json:"not_serving_after_s,omitempty"`
	// ServingAgainAfterS is the time from NOT_SERVING to SERVING again,
	// by infill's own doing (it restarts a stalled model's runner).
	ServingAgainAfterS *float64 `json:"serving_again_after_s,omitempty"`
	// CallAfterHeal is the status of a Complete call once SERVING again.
	CallAfterHeal string `json:"call_after_heal,omitempty"`
	// Heals are the NOT_SERVING spells health went through and ended by
	// itself during the storm: when each began and how long it lasted.
	Heals []Heal `json:"heals,omitempty"`
}

// Diagnosis is what a wedged backend looks like after the storm.
type Diagnosis struct {
	VersionAnswers     bool    `json:"version_answers"`
	GenerateAnswers    bool    `json:"generate_answers"`
	GenerateError      string  `json:"generate_error,omitempty"`
	RunnerCPUms        float64 `json:"runner_cpu_ms_over_2s"`
	RecoveredByItself  bool    `json:"recovered_by_itself"`
	RecoverWaitS       float64 `json:"recover_wait_s"`
	UnloadRestores     bool    `json:"unload_restores"`
	UnloadError        string  `json:"unload_error,omitempty"`
	RestartRestores    bool    `json:"restart_restores"`
	InfillAfterRestart string  `json:"infill_after_restart,omitempty"`
}

// Heal is one NOT_SERVING spell that ended.
type Heal struct {
	DownAtS float64 `json:"down_at_s"`
	ForS    float64 `json:"for_s"`
}

// Transition is a health change seen by the poller.
type Transition struct {
	AtS    float64 `json:"at_s"`
	Status string  `json:"status"`
}

func main() {
	var f flags
	var targets string
	flag.StringVar(&f.bin, "ollama-bin", "", "Ollama binary (default: the one go.mod pins, as ollamatest finds it)")
	flag.StringVar(&targets, "target", "direct,infill", "comma-separated: direct (straight to Ollama), infill (gRPC StreamComplete)")
	flag.IntVar(&f.streams, "streams", 1000, "streams per run")
	flag.IntVar(&f.concurrency, "concurrency", 4, "streams at once")
	flag.IntVar(&f.parallel, "num-parallel", 1, "OLLAMA_NUM_PARALLEL of the backend")
	flag.DurationVar(&f.quiet, "quiet", 20*time.Second, "no first token for this long while streams wait: wedged")
	flag.DurationVar(&f.drain, "drain", 30*time.Second, "through infill: how long waiting streams may end by themselves after a wedge")
	flag.DurationVar(&f.recoverWait, "recover-wait", 30*time.Second, "after a wedge, how long to wait for the backend to recover by itself")
	flag.DurationVar(&f.healWait, "heal-wait", 3*time.Minute, "through infill: how long a stream that got UNAVAILABLE waits for health to say SERVING again before the storm goes on")
	flag.IntVar(&f.maxTokens, "max-tokens", 16, "num_predict of each stream (the storm cancels after the first)")
	flag.StringVar(&f.keep, "keep", "", "copy each run's Ollama log into this directory")
	flag.BoolVar(&f.dump, "dump", false, "on a wedge, make Ollama's server and runner print their goroutines (SIGQUIT) into the kept log before restarting it")
	flag.BoolVar(&f.debug, "ollama-debug", false, "run Ollama with OLLAMA_DEBUG=1")
	slots := flag.Int("backend-slots", -1, "through infill: admission's --backend-slots (0: no admission; -1: the server default)")
	firstToken := flag.Duration("stall-first-token", 0, "through infill: the watchdog's first-token base (0: the server default)")
	promptEval := flag.Bool("prompt-eval", false, "instead of a storm, measure the model load and prompt evaluation rates (the watchdog's defaults)")
	flag.Parse()
	f.targets = strings.Split(targets, ",")
	f.serverConfig = func(c *server.Config) {
		if *firstToken > 0 {
			c.Inference.Watchdog.FirstTokenBase = *firstToken
		}
		if *slots >= 0 {
			c.Admission.Slots = *slots
		}
	}
	if *promptEval {
		if err := measurePromptEval(f); err != nil {
			fmt.Fprintln(os.Stderr, "storm:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[storm %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(f flags) error {
	for _, target := range f.targets {
		if target != "direct" && target != "infill" {
			return fmt.Errorf("unknown target %q", target)
		}
		r, err := storm(f, target)
		if err != nil {
			return err
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
	return nil
}

func storm(f flags, target string) (*Run, error) {
	dir, err := os.MkdirTemp("", "storm-ollama-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := []string{fmt.Sprintf("OLLAMA_NUM_PARALLEL=%d", f.parallel)}
	if f.debug {
		env = append(env, "OLLAMA_DEBUG=1")
	}
	b, err := ollamatest.Launch(dir, ollamatest.Options{Bin: f.bin, Env: env})
	if err != nil {
		return nil, err
	}
	defer b.Stop()
	if f.keep != "" {
		defer func() {
			name := fmt.Sprintf("ollama-%s-c%d-%s.log", target, f.concurrency, time.Now().Format("150405"))
			if err := os.WriteFile(filepath.Join(f.keep, name), []byte(b.Logs()), 0o644); err != nil {
				logf("keep log: %v", err)
			}
		}()
	}
	version, err := backendVersion(b.URL)
	if err != nil {
		return nil, err
	}
	if err := b.Warm(map[string]any{"num_ctx": numCtx}); err != nil {
		return nil, fmt.Errorf("warm: %w", err)
	}
	r := &Run{Target: target, OllamaVersion: version, NumParallel: f.parallel, Streams: f.streams, Concurrency: f.concurrency}
	logf("%s: Ollama %s (OLLAMA_NUM_PARALLEL=%d) on %s, %d streams at concurrency %d", target, version, f.parallel, b.Host, f.streams, f.concurrency)

	opts := ollamatest.StormOptions{
		Streams: f.streams, Concurrency: f.concurrency, Quiet: f.quiet,
		Progress: func(done int, o ollamatest.StreamOutcome) {
			if done%100 == 0 {
				logf("%s: %d streams done (last: #%d at %.1fs)", target, done, o.Index, o.End.Seconds())
			}
		},
	}
	var fn ollamatest.StreamFunc
	var srv *infill
	begin := time.Now()
	switch target {
	case "direct":
		fn = ollamatest.DirectStream(nil, b.URL, b.Model, prompt, options(f.maxTokens))
	case "infill":
		srv, err = startInfill(b, f.serverConfig)
		if err != nil {
			return nil, err
		}
		r.FirstTokenBaseS = srv.cfg.Inference.Watchdog.FirstTokenBase.Seconds()
		r.BackendSlots = &srv.cfg.Admission.Slots
		defer srv.stop()
		begin = time.Now()
		srv.watch(begin)
		req := request(uint32(f.maxTokens))
		inner := servertest.StormStream(srv.client, &infillv1.StreamCompleteRequest{Repository: req.Repository, Cursor: req.Cursor, Generation: req.Generation})
		// A client backs off after UNAVAILABLE until health says SERVING
		// again; infill heals a wedged runner by itself, so the storm goes
		// on and counts the wedges and heals (Heals).
		fn = func(ctx context.Context, first func()) error {
			err := inner(ctx, first)
			if err != nil && strings.HasPrefix(err.Error(), "Unavailable") {
				time.Sleep(2 * time.Second) // health notices within a check or two
				srv.waitStatus(healthpb.HealthCheckResponse_SERVING, f.healWait)
			}
			return err
		}
		opts.Drain = f.drain
	}
	res := ollamatest.Storm(context.Background(), opts, fn)
	r.Sent = len(res.Outcomes)
	r.Cancelled, r.Abandoned, r.Finished, r.Failed = res.Counts()
	r.Wedged, r.ElapsedS = res.Wedged, res.Elapsed.Seconds()
	p50, p99 := res.TTFT()
	r.TTFTp50ms, r.TTFTp99ms = ms(p50), ms(p99)
	if res.Wedged {
		r.CancelledBefore, r.WedgeAfterS = res.CancelledBefore, res.LastToken.Seconds()
		logf("%s: WEDGED after %d cancelled streams (last token at %.1fs, detected at %.1fs)", target, res.CancelledBefore, res.LastToken.Seconds(), res.Detected.Seconds())
		if srv != nil {
			// infill heals the backend by itself (it restarts a stalled
			// model's runner): wait for it, then make a call.
			healed := srv.waitServing(res.LastToken, 2*time.Minute)
			if healed {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := srv.client.Complete(ctx, request(4))
				cancel()
				r.CallAfterHeal = status.Code(err).String()
				if err != nil {
					r.CallAfterHeal += ": " + status.Convert(err).Message()
				}
				logf("%s: SERVING again by itself; a call after it: %s", target, r.CallAfterHeal)
			} else {
				logf("%s: not SERVING again within 2 minutes", target)
			}
		}
		if r.CallAfterHeal != "OK" {
			r.Diagnosis = diagnose(b, f.recoverWait, srv, f.dump)
		}
	} else {
		logf("%s: no wedge: %d streams in %.1fs", target, r.Sent, r.ElapsedS)
	}
	if srv != nil {
		r.Health = srv.transitions()
		for i, t := range r.Health {
			if t.Status == "NOT_SERVING" && i+1 < len(r.Health) && r.Health[i+1].Status == "SERVING" {
				r.Heals = append(r.Heals, Heal{DownAtS: t.AtS, ForS: r.Health[i+1].AtS - t.AtS})
			}
		}
		if res.Wedged {
			d := -1.0
			for _, t := range r.Health {
				if t.Status == "NOT_SERVING" && t.AtS >= res.LastToken.Seconds() {
					d = t.AtS - res.LastToken.Seconds()
					break
				}
			}
			r.NotServingAfterS = &d
			for _, t := range r.Health {
				if t.Status == "SERVING" && d >= 0 && t.AtS > res.LastToken.Seconds()+d {
					e := t.AtS - res.LastToken.Seconds() - d
					r.ServingAgainAfterS = &e
					break
				}
			}
		}
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func options(maxTokens int) map[string]any {
	return map[string]any{"num_ctx": numCtx, "num_predict": maxTokens, "temperature": 0, "stop": inference.QwenStops}
}

func backendVersion(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/version", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct{ Version string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// diagnose looks at a wedged backend: version, a one-token generation, the
// runner's CPU, recovery by itself, and a restart.
func diagnose(b *ollamatest.Backend, recoverWait time.Duration, srv *infill, dump bool) *Diagnosis {
	d := &Diagnosis{RecoverWaitS: recoverWait.Seconds()}
	// The abandoned streams are gone; give a slow backend time to finish
	// what it had under way (CPU time still rising) before judging it.
	for i := 0; i < 30; i++ {
		c0, err := b.CPUTime()
		time.Sleep(time.Second)
		c1, _ := b.CPUTime()
		if err != nil || c1-c0 < 50*time.Millisecond {
			break
		}
	}
	_, err := backendVersion(b.URL)
	d.VersionAnswers = err == nil
	err = oneToken(b, 30*time.Second)
	d.GenerateAnswers = err == nil
	if err != nil {
		d.GenerateError = err.Error()
	}
	if c0, err := b.CPUTime(); err == nil {
		time.Sleep(2 * time.Second)
		c1, _ := b.CPUTime()
		d.RunnerCPUms = ms(c1 - c0)
	}
	logf("diagnosis: /api/version answers %v, one-token generation answers %v (%v), group CPU %.0f ms over 2 s",
		d.VersionAnswers, d.GenerateAnswers, err, d.RunnerCPUms)
	if d.GenerateAnswers {
		return d
	}
	deadline := time.Now().Add(recoverWait)
	for time.Now().Before(deadline) {
		if oneToken(b, 10*time.Second) == nil {
			d.RecoveredByItself = true
			break
		}
	}
	logf("diagnosis: recovered by itself within %v: %v", recoverWait, d.RecoveredByItself)
	if d.RecoveredByItself {
		return d
	}
	// Unloading the model (keep_alive 0) ends its runner; the next request
	// loads a new one.
	if err := unload(b); err != nil {
		d.UnloadError = err.Error()
	} else {
		d.UnloadRestores = oneToken(b, 30*time.Second) == nil
	}
	logf("diagnosis: unloading the model restores it: %v %s", d.UnloadRestores, d.UnloadError)
	if d.UnloadRestores {
		return d
	}
	if dump {
		pids, _ := b.Processes()
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGQUIT)
		}
		time.Sleep(2 * time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.RestartContext(ctx); err != nil {
		logf("diagnosis: restart failed: %v", err)
		return d
	}
	_ = b.Warm(map[string]any{"num_ctx": numCtx})
	d.RestartRestores = oneToken(b, 10*time.Second) == nil
	logf("diagnosis: a restart of Ollama restores it: %v", d.RestartRestores)
	if srv != nil {
		// Through infill, without restarting infill: does a call succeed
		// again, and does health come back?
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := srv.client.Complete(ctx, request(4))
		d.InfillAfterRestart = status.Code(err).String()
		if err != nil {
			d.InfillAfterRestart += ": " + status.Convert(err).Message()
		}
		time.Sleep(3 * time.Second) // a health interval or so, to see SERVING
		logf("diagnosis: an infill call after the restart: %s", d.InfillAfterRestart)
	}
	return d
}

// unload asks Ollama to unload the model and waits until no model runs.
func unload(b *ollamatest.Backend) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"model":%q,"keep_alive":0}`, b.Model)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/api/generate", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unload: HTTP %s", resp.Status)
	}
	for ctx.Err() == nil {
		ps, err := b.Client().ListRunning(ctx)
		if err == nil && len(ps.Models) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the model is still loaded: %w", ctx.Err())
}

func oneToken(b *ollamatest.Backend, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got := false
	err := ollamatest.DirectStream(nil, b.URL, b.Model, prompt, options(1))(ctx, func() { got = true })
	if err == nil && !got {
		err = errors.New("no token")
	}
	return err
}

// infill is an in-process infill server in front of the backend, as
// cmd/infill-server builds it, with a gRPC client and a health poller.
type infill struct {
	cfg    server.Config
	srv    *server.Server
	conn   *grpc.ClientConn
	client infillv1.CompletionServiceClient
	health healthpb.HealthClient
	served chan error
	close  []func()

	mu    sync.Mutex
	trans []Transition
	done  chan struct{}
	wg    sync.WaitGroup
}

func startInfill(b *ollamatest.Backend, mutate func(*server.Config)) (*infill, error) {
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Inference.URL = b.URL
	cfg.Inference.DefaultModel = b.Model
	cfg.Inference.ContextTokens = numCtx
	cfg.Context.ContextTokens = numCtx
	if mutate != nil {
		mutate(&cfg)
	}
	log := zap.NewNop()
	if os.Getenv("STORM_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	tok, err := tokenizer.Qwen25()
	if err != nil {
		return nil, err
	}
	builder, err := contextpack.NewBuilder(cfg.Context, tok, log.Named("contextpack"))
	if err != nil {
		return nil, err
	}
	backend, err := inference.NewOllama(cfg.Inference, log.Named("inference"))
	if err != nil {
		builder.Close()
		return nil, err
	}
	srv, err := server.New(cfg, server.Deps{Builder: builder, Backend: backend}, log)
	if err != nil {
		builder.Close()
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		builder.Close()
		return nil, err
	}
	s := &infill{cfg: cfg, srv: srv, served: make(chan error, 1), done: make(chan struct{}), close: []func(){builder.Close}}
	go func() { s.served <- srv.Serve(lis) }()
	s.conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.client = infillv1.NewCompletionServiceClient(s.conn)
	s.health = healthpb.NewHealthClient(s.conn)
	deadline := time.Now().Add(30 * time.Second)
	for s.status() != healthpb.HealthCheckResponse_SERVING {
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("infill did not become SERVING within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s, nil
}

func (s *infill) status() healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return r.GetStatus()
}

// watch polls health every 50 ms and records each change.
func (s *infill) watch(begin time.Time) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		last := healthpb.HealthCheckResponse_ServingStatus(-1)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if st := s.status(); st != last {
				last = st
				s.mu.Lock()
				s.trans = append(s.trans, Transition{AtS: time.Since(begin).Seconds(), Status: st.String()})
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
}

// waitServing waits until the poller has seen NOT_SERVING after the last
// token and then SERVING, or until d passes.
func (s *infill) waitServing(lastToken, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		down := false
		for _, t := range s.transitions() {
			if t.AtS >= lastToken.Seconds() && t.Status == "NOT_SERVING" {
				down = true
			} else if down && t.Status == "SERVING" {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// waitStatus waits until health reports st, or d passes.
func (s *infill) waitStatus(st healthpb.HealthCheckResponse_ServingStatus, d time.Duration) {
	deadline := time.Now().Add(d)
	for s.status() != st && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *infill) transitions() []Transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transition(nil), s.trans...)
}

func (s *infill) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.wg.Wait()
	if s.conn != nil {
		s.conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	if err := <-s.served; err != nil {
		logf("infill Serve: %v", err)
	}
	for _, c := range s.close {
		c()
	}
}

const pySource = "import math\n\n\ndef area(r):\n    \"\"\"Area of a circle of radius r.\"\"\"\n    return \n\n\ndef circumference(r):\n    return 2 * math.pi * r\n"

func request(maxTokens uint32) *infillv1.CompleteRequest {
	return &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{
			{Path: "geo/circle.py", Content: proto.String(pySource)},
		}},
		Cursor:     &infillv1.Cursor{Path: "geo/circle.py", Line: 5, Column: 11},
		Generation: &infillv1.GenerationOptions{MaxTokens: maxTokens},
	}
}

// PromptEval is one measured prompt evaluation.
type PromptEval struct {
	PromptTokens  int     `json:"prompt_tokens"`
	EvalMs        float64 `json:"prompt_eval_ms"`
	TokensPerS    float64 `json:"tokens_per_s"`
	FirstTokenMs  float64 `json:"first_token_ms"`
	LoadMs        float64 `json:"load_ms,omitempty"`
	OllamaVersion string  `json:"ollama_version"`
}

// measurePromptEval loads the model (timing the load) and evaluates prompts
// of growing size, each new to the cache, with one token to generate.
func measurePromptEval(f flags) error {
	dir, err := os.MkdirTemp("", "storm-ollama-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := ollamatest.Launch(dir, ollamatest.Options{Bin: f.bin})
	if err != nil {
		return err
	}
	defer b.Stop()
	version, err := backendVersion(b.URL)
	if err != nil {
		return err
	}
	line := "    total += values[i] * weights[i] // accumulate\n"
	for i, lines := range []int{0, 10, 100, 200, 350} {
		// A different first line each time: nothing is reused from the
		// previous prompt's cache.
		p := fmt.Sprintf("<|fim_prefix|>// run %d\n%s<|fim_suffix|>\n<|fim_middle|>", i, strings.Repeat(line, lines))
		var final struct {
			PromptEvalCount    int   `json:"prompt_eval_count"`
			PromptEvalDuration int64 `json:"prompt_eval_duration"`
			LoadDuration       int64 `json:"load_duration"`
		}
		start := time.Now()
		var first time.Duration
		err := postGenerate(b, p, func(raw []byte, text string) {
			if text != "" && first == 0 {
				first = time.Since(start)
			}
			_ = json.Unmarshal(raw, &final)
		})
		if err != nil {
			return err
		}
		m := PromptEval{PromptTokens: final.PromptEvalCount, EvalMs: float64(final.PromptEvalDuration) / 1e6,
			FirstTokenMs: ms(first), OllamaVersion: version}
		if m.EvalMs > 0 {
			m.TokensPerS = float64(m.PromptTokens) / (m.EvalMs / 1000)
		}
		if i == 0 {
			m.LoadMs = float64(final.LoadDuration) / 1e6
		}
		out, _ := json.Marshal(m)
		fmt.Println(string(out))
	}
	return nil
}

// postGenerate sends a raw streaming generation of one token and calls fn
// with every line and its text.
func postGenerate(b *ollamatest.Backend, prompt string, fn func(raw []byte, text string)) error {
	body, _ := json.Marshal(map[string]any{"model": b.Model, "prompt": prompt, "raw": true, "stream": true,
		"options": map[string]any{"num_ctx": numCtx, "num_predict": 1, "temperature": 0}})
	resp, err := http.Post(b.URL+"/api/generate", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		var m struct {
			Response string `json:"response"`
			Error    string `json:"error"`
		}
		_ = json.Unmarshal(raw, &m)
		if m.Error != "" {
			return errors.New(m.Error)
		}
		fn(raw, m.Response)
	}
}

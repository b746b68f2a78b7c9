package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infill-dev/infill/inference/ollamatest"
)

// backend is the Ollama (or its fake) every server of a run talks to.
type backend struct {
	url, model, desc string
	cpu              func() time.Duration
	stop             func()
}

func startBackend(o options, logs string) (*backend, error) {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	if o.backend == "ollama" {
		dir := filepath.Join(logs, "ollama")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		b, err := ollamatest.Launch(dir, ollamatest.Options{Env: []string{"OLLAMA_NUM_PARALLEL=" + strconv.Itoa(o.slots)}})
		if err != nil {
			return nil, err
		}
		// Load the model with the num_ctx infill sends, so that no phase pays the load.
		if err := b.Warm(map[string]any{"num_ctx": o.numCtx}); err != nil {
			b.Stop()
			return nil, err
		}
		return &backend{url: b.URL, model: b.Model,
			desc: fmt.Sprintf("Ollama %s (built from the pinned module), tiny random-weight qwen2 with the real Qwen2.5 vocabulary, num_thread 1, OLLAMA_NUM_PARALLEL=%d", ollamaVersion(b.URL), o.slots),
			cpu:  func() time.Duration { d, _ := b.CPUTime(); return d }, stop: b.Stop}, nil
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(logs, "fakeollama.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.fakeBin, "-listen", addr, "-tokens", strconv.Itoa(o.fakeTokens),
		"-prompt-delay", o.fakePrompt.String(), "-token-delay", o.fakeToken.String(),
		"-parallel", strconv.Itoa(o.slots), "-finish-prompt")
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	stop := func() { terminate(cmd); lf.Close() }
	u := "http://" + addr
	if err := waitHTTP(u+"/api/version", 10*time.Second); err != nil {
		stop()
		return nil, err
	}
	return &backend{url: u, model: "infill-tiny",
		desc: fmt.Sprintf("fakeollama: %d generations at once (the rest wait in arrival order), %d tokens at %v + i × %v on a fixed schedule from the start of a generation, a disconnect during the prompt delay keeps the slot until it ends (-finish-prompt)",
			o.slots, o.fakeTokens, o.fakePrompt, o.fakeToken),
		cpu: func() time.Duration { return processCPU(cmd.Process.Pid) }, stop: stop}, nil
}

func ollamaVersion(base string) string {
	resp, err := http.Get(base + "/api/version")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	var v struct{ Version string }
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return "?"
	}
	return v.Version
}

// proxy forwards everything to the backend and counts the generate
// requests by kind as they arrive.
type proxy struct {
	url string
	srv *http.Server

	mu       sync.Mutex
	counts   backendCounts
	inflight atomic.Int64
}

// backendCounts are the generate requests that reached the backend.
type backendCounts struct {
	// Interactive are the typing sessions' generations.
	Interactive int `json:"interactive"`
	// Probes are one-token generations of a session's prompt head: the
	// probes admission sends after a request abandoned mid-prompt.
	Probes int `json:"probes"`
	// Evaluation are the evaluation stream's generations (and probes).
	Evaluation int `json:"evaluation"`
	// Other are the rest: infill's health probes, warm-ups.
	Other int `json:"other"`
	// MaxInFlight is the most generate requests at the backend at once.
	MaxInFlight int `json:"max_in_flight"`
}

func (c backendCounts) minus(d backendCounts) backendCounts {
	return backendCounts{Interactive: c.Interactive - d.Interactive, Probes: c.Probes - d.Probes,
		Evaluation: c.Evaluation - d.Evaluation, Other: c.Other - d.Other, MaxInFlight: c.MaxInFlight}
}

func startProxy(target string) (*proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{url: "http://" + lis.Addr().String()}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		FlushInterval: -1, // stream every token as it comes
		Transport:     &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second},
		ErrorLog:      log.New(io.Discard, "", 0), // a cancelled request is not news
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/generate" {
			body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.count(body)
			defer p.inflight.Add(-1)
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(lis) }()
	return p, nil
}

// Markers the workload puts in its repository names (which every prompt
// and every probe's head starts with).
const (
	sessionMarker = "loadbench-session-"
	evalMarker    = "loadbench-eval"
)

func (p *proxy) count(body []byte) {
	var req struct {
		Prompt  string         `json:"prompt"`
		Options map[string]any `json:"options"`
	}
	_ = json.Unmarshal(body, &req)
	n, _ := req.Options["num_predict"].(float64)
	in := int(p.inflight.Add(1))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.MaxInFlight = max(p.counts.MaxInFlight, in)
	switch {
	case strings.Contains(req.Prompt, evalMarker):
		p.counts.Evaluation++
	case strings.Contains(req.Prompt, sessionMarker) && n == 1:
		p.counts.Probes++
	case strings.Contains(req.Prompt, sessionMarker):
		p.counts.Interactive++
	default:
		p.counts.Other++
	}
}

// take returns the counts so far and starts a new maximum.
func (p *proxy) take() backendCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts.MaxInFlight = int(p.inflight.Load())
	return c
}

func (p *proxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// server is one infill-server process.
type server struct {
	cmd     *exec.Cmd
	log     *os.File
	addr    string
	metrics string
	conn    *grpc.ClientConn
	health  healthpb.HealthClient
}

func startServer(o options, be *backend, px *proxy, mode, logs string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(logs, "infill-server-"+o.backend+"-"+mode+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.serverBin, "--listen", addr, "--http-listen", "", "--metrics-listen", maddr,
		"--ollama-url", px.url, "--model", be.model, "--num-ctx", strconv.Itoa(o.numCtx),
		"--backend-slots", strconv.Itoa(o.serverSlots(mode)), "--evaluation", "off", "--log-level", "warn")
	if mode == "no-burst-wait" {
		cmd.Args = append(cmd.Args, "--burst-wait", "0")
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, log: lf, addr: addr, metrics: "http://" + maddr + "/metrics"}
	s.conn, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.health = healthpb.NewHealthClient(s.conn)
	deadline := time.Now().Add(60 * time.Second)
	for s.status() != healthpb.HealthCheckResponse_SERVING {
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("infill-server did not become SERVING within 60s (log: " + lf.Name() + ")")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s, nil
}

func (s *server) status() healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return r.GetStatus()
}

// watchHealth polls health every 250 ms until stop is closed and returns
// how long it was not SERVING.
func (s *server) watchHealth(stop <-chan struct{}) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		var down time.Duration
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- down
				return
			case <-t.C:
				if s.status() != healthpb.HealthCheckResponse_SERVING {
					down += 250 * time.Millisecond
				}
			}
		}
	}()
	return out
}

func (s *server) cpu() time.Duration { return processCPU(s.cmd.Process.Pid) }

func (s *server) stop() {
	if s.conn != nil {
		s.conn.Close()
	}
	terminate(s.cmd)
	s.log.Close()
}

// terminate stops a process this program started: SIGTERM, then SIGKILL
// after 15 s.
func terminate(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitHTTP(u string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processCPU is a process's user+system CPU time (/proc/PID/stat; 0 when
// it cannot be read).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// load is the machine's state at one moment: load averages and CPU
// counters (/proc/loadavg, /proc/stat).
type load struct {
	avg         string
	total, idle int64
}

func readLoad() load {
	var l load
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		l.avg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i := 1; i < len(f) && i <= 8; i++ {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			l.total += v
			if i == 4 || i == 5 { // idle, iowait
				l.idle += v
			}
		}
	}
	return l
}

// busy is the share of the machine's CPU time in use between l and m.
func busy(l, m load) float64 {
	if m.total <= l.total {
		return 0
	}
	return 100 * float64((m.total-l.total)-(m.idle-l.idle)) / float64(m.total-l.total)
}

func machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores (shared with other workers)", model, runtime.NumCPU())
}

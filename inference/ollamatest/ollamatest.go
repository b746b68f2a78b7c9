// Package ollamatest starts the real Ollama server for tests: the binary that
// scripts/ollama/build.sh builds from the github.com/ollama/ollama version
// go.mod pins, serving the tiny random-weight qwen2 model with the real Qwen2.5
// vocabulary that scripts/tinymodel generates.
//
// Each [Start] runs its own `ollama serve` on a free loopback port with a
// private HOME and OLLAMA_MODELS under t.TempDir(), creates the model, and
// stops the whole process group (server and model runners) in t.Cleanup.
//
// The binary and model are found through INFILL_OLLAMA_BIN and
// INFILL_TINY_GGUF, else at the defaults `scripts/backend.sh prepare` creates:
// $INFILL_STATE_DIR/ollama/<version>/ollama and
// $INFILL_STATE_DIR/tinymodel/v1/infill-tiny.gguf, where INFILL_STATE_DIR
// defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/infill (it must be absolute:
// go test runs in each package's directory; `eval "$(scripts/backend.sh env)"`
// exports absolute paths). When either is missing the test is skipped,
// except with CI=true, where it fails.
//
// The tiny model has designed greedy transitions (see scripts/tinymodel): a
// raw prompt ending in one of the Trigger* tokens continues deterministically
// at temperature 0.
//
// For outages on demand a Backend can be stopped and restarted, or paused
// (SIGSTOP): its model runners only, which is what a wedged Ollama looks like
// (the server answers /api/version, generations hang), or the whole server.
// [Storm] reproduces the cancel storm that wedges Ollama v0.24.0, and
// [Launch] starts a backend outside a test (bench/storm).
package ollamatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"golang.org/x/mod/modfile"
)

// DefaultModel is the name under which Start creates the tiny model.
const DefaultModel = "infill-tiny"

// Prompt endings with a designed greedy continuation in the tiny model
// (temperature 0, raw prompt). Real models do not behave like this.
const (
	// TriggerEOS is continued by <|endoftext|>: the response is empty and
	// done_reason is "stop".
	TriggerEOS = "<|im_start|>"
	// TriggerImEnd is continued by <|im_end|>, which also ends generation.
	TriggerImEnd = "<|object_ref_start|>"
	// TriggerFileSep is continued by <|file_sep|>, which Ollama's llama.cpp
	// runner treats as end of generation.
	TriggerFileSep = "<|box_start|>"
	// TriggerFimPrefix is continued by <|fim_prefix|>, a control token that
	// does not end generation.
	TriggerFimPrefix = "<|quad_start|>"
	// TriggerRepeat is continued by itself forever, so Ollama aborts the
	// stream after more than 30 identical tokens: HTTP 200 without a final
	// done message.
	TriggerRepeat = "<|vision_pad|>"
)

// FIMTemplate is the prompt template the tiny model is created with: the
// Qwen2.5-Coder PSM fill-in-the-middle format, so that, like the base models
// in Ollama's library, it supports "insert" (a request with a suffix). Raw
// requests bypass it.
const FIMTemplate = `{{- if .Suffix }}<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>{{- else }}{{ .Prompt }}{{- end }}`

// Options adjust Start.
type Options struct {
	// Model is the name to create; default DefaultModel.
	Model string
	// Env is extra environment for `ollama serve` ("KEY=value"), applied
	// after the defaults (e.g. "OLLAMA_NUM_PARALLEL=2").
	Env []string
	// Parameters are the model's default options, as PARAMETER lines in a
	// Modelfile would set them. Default {"num_thread": 1}: on a small shared
	// machine llama.cpp's spinning threads make 2 threads ~20x slower than 1
	// for this tiny model. A request that sends another num_thread reloads
	// the model.
	Parameters map[string]any
	// StartTimeout bounds starting the server and creating the model;
	// default 60s.
	StartTimeout time.Duration
	// Bin is the Ollama binary to run instead of the one Paths finds (to
	// compare versions).
	Bin string
}

// Backend is a running (or stopped) Ollama server owned by one test.
type Backend struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:40123".
	URL string
	// Host is URL's host:port, the form OLLAMA_HOST takes.
	Host string
	// Model is the name of the created tiny model.
	Model string
	// Bin and GGUF are the Ollama binary and tiny model in use.
	Bin, GGUF string
	// Dir holds the server's HOME, OLLAMA_MODELS and ollama.log.
	Dir string

	t    testing.TB
	opts Options

	mu   sync.Mutex
	proc *process
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returns
	err  error         // cmd.Wait's result, valid after done
}

// Paths resolves the Ollama binary and tiny GGUF (environment, then the
// state-directory defaults) and reports an error naming what is missing.
func Paths() (bin, gguf string, err error) { return pathsFor("") }

// pathsFor is Paths with bin, when not empty, as the binary.
func pathsFor(bin string) (_, gguf string, err error) {
	state, err := stateDir()
	if err != nil {
		return "", "", err
	}
	if bin == "" {
		bin = os.Getenv("INFILL_OLLAMA_BIN")
	}
	if bin == "" {
		v, err := ollamaVersion()
		if err != nil {
			return "", "", err
		}
		bin = filepath.Join(state, "ollama", v, "ollama")
	}
	gguf = os.Getenv("INFILL_TINY_GGUF")
	if gguf == "" {
		gguf = filepath.Join(state, "tinymodel", "v1", "infill-tiny.gguf")
	}
	var missing []string
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		missing = append(missing, "Ollama binary "+bin)
	}
	if fi, err := os.Stat(gguf); err != nil || fi.IsDir() {
		missing = append(missing, "tiny model "+gguf)
	}
	if len(missing) > 0 {
		return bin, gguf, fmt.Errorf("missing %s; run scripts/backend.sh prepare (or set INFILL_OLLAMA_BIN / INFILL_TINY_GGUF)", strings.Join(missing, " and "))
	}
	return bin, gguf, nil
}

func stateDir() (string, error) {
	if d := os.Getenv("INFILL_STATE_DIR"); d != "" {
		if !filepath.IsAbs(d) {
			// go test runs in each package's directory.
			return "", fmt.Errorf("INFILL_STATE_DIR=%q must be an absolute path", d)
		}
		return d, nil
	}
	c, err := os.UserCacheDir() // $XDG_CACHE_HOME or $HOME/.cache on Linux
	if err != nil {
		return "", fmt.Errorf("no state directory: set INFILL_STATE_DIR: %w", err)
	}
	return filepath.Join(c, "infill"), nil
}

// ollamaVersion is the github.com/ollama/ollama version without the leading
// "v" (the directory build.sh uses): from the binary's build info, else (test
// binaries carry no dependency list) from the go.mod above the working
// directory.
func ollamaVersion() (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == ollamaModule {
				if d.Replace != nil && d.Replace.Version != "" {
					return strings.TrimPrefix(d.Replace.Version, "v"), nil
				}
				return strings.TrimPrefix(d.Version, "v"), nil
			}
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		path := filepath.Join(dir, "go.mod")
		if data, err := os.ReadFile(path); err == nil {
			f, err := modfile.ParseLax(path, data, nil)
			if err != nil {
				return "", err
			}
			for _, r := range f.Require {
				if r.Mod.Path == ollamaModule {
					return strings.TrimPrefix(r.Mod.Version, "v"), nil
				}
			}
			return "", fmt.Errorf("%s does not require %s; set INFILL_OLLAMA_BIN", path, ollamaModule)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cannot tell the %s version (no build info, no go.mod); set INFILL_OLLAMA_BIN", ollamaModule)
		}
		dir = parent
	}
}

const ollamaModule = "github.com/ollama/ollama"

// Start starts a private Ollama server with the tiny model, or skips the test
// (fails it when CI=true) if the binary or model is missing.
func Start(t testing.TB) *Backend {
	t.Helper()
	return StartWithOptions(t, Options{})
}

// StartWithOptions is Start with options.
func StartWithOptions(t testing.TB, opts Options) *Backend {
	t.Helper()
	if _, _, err := opts.paths(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ollamatest: %v", err)
		}
		t.Skipf("ollamatest: %v", err)
	}
	b, err := launch(t.TempDir(), opts, t.Logf)
	if b != nil {
		b.t = t
		t.Cleanup(func() {
			b.Stop()
			if t.Failed() {
				t.Logf("ollamatest: last lines of %s:\n%s", b.logPath(), tail(b.Logs(), 40))
			}
		})
	}
	if err != nil {
		t.Fatalf("ollamatest: %v", err)
	}
	return b
}

// Launch is Start for programs that are not tests (bench/storm): it starts
// a private Ollama server with the tiny model under dir, which must exist,
// and returns an error where Start would skip or fail. The caller stops it
// with Stop.
func Launch(dir string, opts Options) (*Backend, error) {
	if _, _, err := opts.paths(); err != nil {
		return nil, err
	}
	b, err := launch(dir, opts, func(string, ...any) {})
	if err != nil && b != nil {
		b.Stop()
	}
	return b, err
}

// launch starts the server under dir and creates the model; on error the
// returned Backend (if any) may still run and must be stopped.
func launch(dir string, opts Options, logf func(string, ...any)) (*Backend, error) {
	bin, gguf, err := opts.paths()
	if err != nil {
		return nil, err
	}
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.Parameters == nil {
		opts.Parameters = map[string]any{"num_thread": 1}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	b := &Backend{
		URL:   "http://" + host,
		Host:  host,
		Model: opts.Model,
		Bin:   bin,
		GGUF:  gguf,
		Dir:   dir,
		opts:  opts,
	}
	for _, d := range []string{"home", "models"} {
		if err := os.MkdirAll(filepath.Join(b.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	begin := time.Now()
	if err := b.start(ctx); err != nil {
		return b, fmt.Errorf("%v\n%s", err, tail(b.Logs(), 40))
	}
	up := time.Since(begin)
	if err := b.createModel(ctx); err != nil {
		return b, fmt.Errorf("create model %s: %v\n%s", b.Model, err, tail(b.Logs(), 40))
	}
	logf("ollamatest: ollama serve on %s answered after %v, model %s created after %v",
		b.Host, up.Round(time.Millisecond), b.Model, time.Since(begin).Round(time.Millisecond))
	return b, nil
}

// paths is Paths with Options.Bin in place of the default binary.
func (o Options) paths() (bin, gguf string, err error) {
	return pathsFor(o.Bin)
}

// Client returns an Ollama API client for the server.
func (b *Backend) Client() *api.Client {
	u, _ := url.Parse(b.URL) // URL is built by Start and always parses
	return api.NewClient(u, &http.Client{})
}

// Running reports whether the server process is alive.
func (b *Backend) Running() bool {
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// PID returns the server's process id (also its process group id), or 0
// when it is not running.
func (b *Backend) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return 0
	}
	select {
	case <-b.proc.done:
		return 0
	default:
		return b.proc.cmd.Process.Pid
	}
}

// Stop stops the server and its model runners (SIGTERM to the process group,
// SIGKILL after 10s) and waits for the server to exit. Safe to call twice.
func (b *Backend) Stop() {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return
	}
	pgid := p.cmd.Process.Pid // Setpgid: the server leads its own group
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Runners the server did not take down with it.
	if syscall.Kill(-pgid, 0) == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// Restart starts the server again on the same address with the same models
// directory (the model stays created), after Stop or a crash. It fails the
// test if the server does not come up. Programs use RestartContext.
func (b *Backend) Restart() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.StartTimeout)
	defer cancel()
	if err := b.RestartContext(ctx); err != nil {
		b.t.Fatalf("ollamatest: %v", err)
	}
}

// RestartContext is Restart returning an error.
func (b *Backend) RestartContext(ctx context.Context) error {
	b.Stop()
	if err := b.start(ctx); err != nil {
		return fmt.Errorf("restart: %v\n%s", err, tail(b.Logs(), 40))
	}
	return nil
}

// Pause stops (SIGSTOP) the model runners but not the server: /api/version
// still answers while every generation hangs with the runner idle, which is
// what a wedged backend looks like from outside. Resume continues them. With
// server true the server is stopped as well, so that nothing answers (a
// backend that accepts connections and never replies). It returns the number
// of processes stopped, once every thread of each has stopped; 0 when no
// runner has started yet (Warm first).
func (b *Backend) Pause(server bool) (int, error) {
	return b.signalGroup(syscall.SIGSTOP, server)
}

// Resume continues (SIGCONT) every process of the server's group.
func (b *Backend) Resume() error {
	_, err := b.signalGroup(syscall.SIGCONT, true)
	return err
}

// Processes lists the server's process group: the server (its PID) and its
// model runners.
func (b *Backend) Processes() ([]int, error) {
	pid := b.PID()
	if pid == 0 {
		return nil, errors.New("ollamatest: server not running")
	}
	return groupMembers(pid)
}

func (b *Backend) signalGroup(sig syscall.Signal, server bool) (int, error) {
	pid := b.PID()
	pids, err := b.Processes()
	if err != nil {
		return 0, err
	}
	var sent []int
	for _, p := range pids {
		if p == pid && !server {
			continue
		}
		if err := syscall.Kill(p, sig); err == nil {
			sent = append(sent, p)
		}
	}
	if sig != syscall.SIGSTOP {
		return len(sent), nil
	}
	// Pause returns once every thread has stopped: kill returns before a
	// busy thread stops, and a stopped server that still answers a
	// request sent right after Pause is no stopped server.
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range sent {
		for !stopped(p) {
			if time.Now().After(deadline) {
				return len(sent), fmt.Errorf("ollamatest: pid %d did not stop within 10s of SIGSTOP", p)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(sent), nil
}

// CPUTime is the CPU time (user + system) the server's process group has
// used so far, its model runners included; two readings apart tell whether
// the backend is working or idle.
func (b *Backend) CPUTime() (time.Duration, error) {
	pids, err := b.Processes()
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, p := range pids {
		d, err := cpuTime(p)
		if err == nil { // a runner may exit between the listing and the read
			total += d
		}
	}
	return total, nil
}

// Warm loads the model with the given options (use the num_ctx the code
// under test sends: a different num_ctx reloads the model), so that later
// timings do not include the load.
func (b *Backend) Warm(options map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.StartTimeout)
	defer cancel()
	stream := false
	return b.Client().Generate(ctx, &api.GenerateRequest{Model: b.Model, Options: options, Stream: &stream},
		func(api.GenerateResponse) error { return nil })
}

// Logs returns the server's log so far.
func (b *Backend) Logs() string {
	data, err := os.ReadFile(b.logPath())
	if err != nil {
		return ""
	}
	return string(data)
}

func (b *Backend) logPath() string { return filepath.Join(b.Dir, "ollama.log") }

func (b *Backend) start(ctx context.Context) error {
	logf, err := os.OpenFile(b.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(b.Bin, "serve")
	cmd.Env = append(filteredEnv(),
		"OLLAMA_HOST="+b.Host,
		"OLLAMA_MODELS="+filepath.Join(b.Dir, "models"),
		"HOME="+filepath.Join(b.Dir, "home"),
		"OLLAMA_NO_CLOUD=1",
	)
	cmd.Env = append(cmd.Env, b.opts.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", b.Bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()

	c := b.Client()
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Heartbeat(hctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("ollama serve exited before answering: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("ollama serve does not answer on %s: %w", b.Host, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *Backend) createModel(ctx context.Context) error {
	f, err := os.Open(b.GGUF)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	c := b.Client()
	if err := c.CreateBlob(ctx, digest, f); err != nil {
		return fmt.Errorf("upload %s: %w", b.GGUF, err)
	}
	stream := false
	return c.Create(ctx, &api.CreateRequest{
		Model:      b.Model,
		Files:      map[string]string{filepath.Base(b.GGUF): digest},
		Parameters: b.opts.Parameters,
		Template:   FIMTemplate,
		Stream:     &stream,
	}, func(api.ProgressResponse) error { return nil })
}

// filteredEnv is the test's environment without settings that would leak
// into the private server (other OLLAMA_* variables, HOME).
func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OLLAMA_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	lines := bytes.Split([]byte(strings.TrimRight(s, "\n")), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

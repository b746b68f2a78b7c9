package scripts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/internal/proctest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// repoRoot is the checkout this file sits in.
func repoRoot(t testing.TB) string { return proctest.Root(t) }

// env is the test's environment without OLLAMA_* and INFILL_* settings (a
// developer's or CI's own must not steer the script), plus extra.
func env(extra ...string) []string { return proctest.Env(extra...) }

func freeAddr(t testing.TB) string { return proctest.FreeAddr(t) }

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// script is a running scripts/run.sh.
type script struct {
	out  *syncBuffer
	done chan struct{} // closed when it has exited
	err  error         // its exit, valid after done
	// stop ends its process group (the server, a build under way) and
	// waits for it.
	stop func(t *testing.T)
}

// runScript starts scripts/run.sh args in its own process group with env and
// stops the group (run.sh, its server, or a go build under way) when the
// test ends, unless stop did.
func runScript(t *testing.T, env []string, args ...string) *script {
	t.Helper()
	s := &script{out: &syncBuffer{}, done: make(chan struct{})}
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot(t), "scripts", "run.sh")}, args...)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	s.stop = func(t *testing.T) {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.done
		}
		if t.Failed() {
			t.Logf("scripts/run.sh output:\n%s", s.out.String())
		}
	}
	t.Cleanup(func() {
		select {
		case <-s.done:
			if t.Failed() {
				t.Logf("scripts/run.sh output:\n%s", s.out.String())
			}
		default:
			s.stop(t)
		}
	})
	return s
}

// waitServing waits until the server at addr reports SERVING, failing the
// test if run.sh exits first.
func waitServing(t *testing.T, addr string, s *script) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	health := healthpb.NewHealthClient(conn)
	// Generous: from a fresh clone run.sh builds the server first.
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			t.Fatalf("scripts/run.sh exited before serving: %v", s.err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
		cancel()
		if err == nil && r.Status == healthpb.HealthCheckResponse_SERVING {
			return conn
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the server on %s did not report SERVING within 5 minutes", addr)
	return nil
}

// complete asks for a completion and checks it came from model.
func complete(t *testing.T, conn *grpc.ClientConn, model string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := infillv1.NewCompletionServiceClient(conn).Complete(ctx, &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "demo", Files: []*infillv1.File{
			{Path: "m.py", Content: proto.String("def add(a, b):\n    return \n")},
		}},
		Cursor:     &infillv1.Cursor{Path: "m.py", Line: 1, Column: 11},
		Generation: &infillv1.GenerationOptions{MaxTokens: 8},
	})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Model != model || len(resp.Candidates) != 1 || resp.Usage.GetPromptTokens() == 0 {
		t.Fatalf("Complete answered model %q, %d candidates, usage %+v; want model %q, one candidate, a prompt evaluated",
			resp.Model, len(resp.Candidates), resp.Usage, model)
	}
}

// requirePackages skips (fails under CI) when run.sh would have to install
// Debian packages: a test must not install system packages.
func requirePackages(t *testing.T, groups ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "setup.sh"), append([]string{"check"}, groups...)...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	servertest.Require(t, err, "Debian packages scripts/run.sh needs")
}

// standIn creates name on b as a stand-in for a model pulled from Ollama's
// library: the tiny weights with the real model's reported size (the real
// weights are not reachable here), which is what scripts/setup.sh tells a
// real model from the tiny one by.
func standIn(t *testing.T, b *ollamatest.Backend, name, size string) {
	t.Helper()
	err := b.Client().Create(context.Background(), &api.CreateRequest{Model: name, From: b.Model,
		Info: map[string]any{"parameter_size": size}}, func(api.ProgressResponse) error { return nil })
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// fake copies the tiny model (infill-tiny) of the Ollama c talks to to
// name: what an older run.sh made of `--model name` on an Ollama that
// lacked it.
func fake(t *testing.T, c *api.Client, name string) {
	t.Helper()
	if err := c.Copy(context.Background(), &api.CopyRequest{Source: "infill-tiny", Destination: name}); err != nil {
		t.Fatalf("copy %s: %v", name, err)
	}
}

// banner reads the addresses run.sh printed: the gRPC host:port and the
// HTTP host:port ("" when none), failing the test until they appear.
func banner(t *testing.T, s *script) (grpcAddr, httpAddr string) {
	t.Helper()
	waitLog(t, s, "Ctrl-C stops the server.", 5*time.Minute)
	out := s.out.String()
	g := regexp.MustCompile(`(?m)^  gRPC  (\S+)`).FindStringSubmatch(out)
	if g == nil {
		t.Fatalf("no gRPC address in the banner:\n%s", out)
	}
	if h := regexp.MustCompile(`(?m)^  HTTP  https?://(\S+)`).FindStringSubmatch(out); h != nil {
		httpAddr = h[1]
	}
	return g[1], httpAddr
}

// completeHTTP asks for a completion over the OpenAI dialect at addr and
// checks it came from model.
func completeHTTP(t *testing.T, addr, model string) {
	t.Helper()
	body := `{"model":"` + model + `","prompt":"def add(a, b):\n    return ","suffix":"\n","max_tokens":4}`
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST /v1/completions at %s: %v", addr, err)
	}
	defer resp.Body.Close()
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Model != model || len(out.Choices) != 1 {
		t.Fatalf("POST /v1/completions at %s: %s, %+v, %v; want 200 from %s", addr, resp.Status, out, err, model)
	}
}

// TestRunUsesRunningOllama: when OLLAMA_HOST names an Ollama that has a
// Qwen2.5-Coder base model, scripts/run.sh serves from it and builds and
// writes nothing of its own backend (its state directory stays empty); the
// tiny model under another base model's name beside it is named as what it
// is and not chosen, nor is an instruct model. The banner prints the
// addresses the server listens on: --listen and --http-listen of port 0
// passed through, their ports resolved, each answering.
func TestRunUsesRunningOllama(t *testing.T) {
	t.Parallel()
	requirePackages(t, "build", "sandbox")
	b := ollamatest.Start(t)
	standIn(t, b, "qwen2.5-coder:0.5b-base", "494.03M")
	standIn(t, b, "qwen2.5-coder:1.5b-instruct", "1.54B")
	fake(t, b.Client(), "qwen2.5-coder:1.5b-base")
	state := t.TempDir()
	s := runScript(t, env(
		"OLLAMA_HOST="+b.Host,
		"INFILL_STATE_DIR="+state,
		"INFILL_RESULTS_DIR="+t.TempDir(),
	), "--listen", "127.0.0.1:0", "--http-listen=127.0.0.1:0")
	grpcAddr, httpAddr := banner(t, s)
	for _, a := range []string{grpcAddr, httpAddr} {
		if _, port, _ := net.SplitHostPort(a); port == "" || port == "0" {
			t.Fatalf("banner addresses gRPC %q, HTTP %q: want the ports listened on", grpcAddr, httpAddr)
		}
	}
	conn := waitServing(t, grpcAddr, s)
	complete(t, conn, "qwen2.5-coder:0.5b-base")
	completeHTTP(t, httpAddr, "qwen2.5-coder:0.5b-base")

	log := s.out.String()
	for _, want := range []string{
		"backend: using the Ollama at http://" + b.Host + " with model qwen2.5-coder:0.5b-base",
		"has qwen2.5-coder:1.5b-base, but that is infill's tiny random-weight test model under a real model's name",
		"infill is listening (model qwen2.5-coder:0.5b-base",
		"bin/infill lsp --server " + grpcAddr,
		"docs/editors.md",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("run.sh did not say %q:\n%s", want, log)
		}
	}
	for _, bad := range []string{"Ollama cgo build", "tiny model generation", "tokenizer npm fetch", "starting ollama serve", "random weights"} {
		if strings.Contains(log, bad) {
			t.Errorf("run.sh printed %q: it prepared its own backend:\n%s", bad, log)
		}
	}
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("state directory %s: %v, %d entries (want none: nothing built or started)", state, err, len(entries))
	}
}

// TestRunBannerFromEnvironment: INFILL_LISTEN and INFILL_HTTP_LISTEN are
// the addresses listened on, and the banner says so; an empty
// INFILL_HTTP_LISTEN serves no HTTP and the banner says that.
func TestRunBannerFromEnvironment(t *testing.T) {
	t.Parallel()
	requirePackages(t, "build", "sandbox")
	b := ollamatest.Start(t)
	standIn(t, b, "qwen2.5-coder:0.5b-base", "494.03M")
	for _, httpListen := range []string{freeAddr(t), ""} {
		grpcListen := freeAddr(t)
		s := runScript(t, env("OLLAMA_HOST="+b.Host, "INFILL_STATE_DIR="+t.TempDir(), "INFILL_RESULTS_DIR="+t.TempDir(),
			"INFILL_LISTEN="+grpcListen, "INFILL_HTTP_LISTEN="+httpListen))
		grpcAddr, httpAddr := banner(t, s)
		if grpcAddr != grpcListen || httpAddr != httpListen {
			t.Errorf("banner gRPC %q, HTTP %q; want %q, %q", grpcAddr, httpAddr, grpcListen, httpListen)
		}
		if httpListen == "" && !strings.Contains(s.out.String(), "HTTP  none") {
			t.Errorf("the banner does not say there is no HTTP listener:\n%s", s.out.String())
		}
		waitServing(t, grpcAddr, s)
		if httpListen != "" {
			completeHTTP(t, httpAddr, "qwen2.5-coder:0.5b-base")
		}
		s.stop(t)
	}
}

// runQuick runs scripts/run.sh when it is expected to stop before building
// anything (a refusal): its exit error and output, within a minute.
func runQuick(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(repoRoot(t), "scripts", "run.sh")}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("scripts/run.sh %v did not stop within a minute:\n%s", args, out)
	}
	return string(out), err
}

// TestRunRefuses: the cases where run.sh stops with the fix rather than
// serve something else, each against a real Ollama (one that cannot reach
// Ollama's registry, as offline) or an address where nothing listens: a
// --model no backend has, the tiny model under the name asked for, an
// explicit URL (flag, INFILL_OLLAMA_URL or OLLAMA_HOST) that does not
// answer, a real --model with no Ollama at the default address, and an
// explicit Ollama without a base model where the pull fails. None of them
// builds or starts anything.
func TestRunRefuses(t *testing.T) {
	t.Parallel()
	b := ollamatest.StartWithOptions(t, ollamatest.Options{Env: offline})
	standIn(t, b, "qwen2.5-coder:7b-instruct", "7.62B")
	fake(t, b.Client(), "qwen2.5-coder:1.5b-base")
	dead := "http://" + freeAddr(t)
	state := t.TempDir()
	base := env("INFILL_STATE_DIR="+state, "INFILL_DEFAULT_OLLAMA="+dead)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"a model the Ollama lacks", []string{"OLLAMA_HOST=" + b.Host}, []string{"--model", "qwen2.5-coder:3b-base"},
			[]string{"--model qwen2.5-coder:3b-base: the Ollama at " + b.Host + " does not have it", "ollama pull qwen2.5-coder:3b-base"}},
		{"the tiny model under the name asked for", []string{"OLLAMA_HOST=" + b.Host}, []string{"--model=qwen2.5-coder:1.5b-base"},
			[]string{"tiny random-weight test model under a real model's name", "ollama rm qwen2.5-coder:1.5b-base"}},
		{"--ollama-url does not answer", nil, []string{"--ollama-url", dead, "--model", "qwen2.5-coder:1.5b-base"},
			[]string{"no Ollama answers at " + dead + " (--ollama-url)"}},
		{"INFILL_OLLAMA_URL does not answer", []string{"INFILL_OLLAMA_URL=" + dead}, nil,
			[]string{"no Ollama answers at " + dead + " (INFILL_OLLAMA_URL)"}},
		{"OLLAMA_HOST does not answer", []string{"OLLAMA_HOST=" + dead}, nil,
			[]string{"no Ollama answers at " + dead + " (OLLAMA_HOST)"}},
		{"a real model and no Ollama", nil, []string{"--model", "qwen2.5-coder:1.5b-base"},
			[]string{"--model qwen2.5-coder:1.5b-base: no Ollama answers at " + dead, "ollama pull qwen2.5-coder:1.5b-base", "leave --model out"}},
		{"no base model, the pull fails", nil, []string{"--ollama-url", b.URL},
			[]string{"pulling qwen2.5-coder:1.5b-base (about 1 GB) into it through its API",
				"pulling qwen2.5-coder:1.5b-base into the Ollama at " + b.URL + " failed: ",
				"(--ollama-url) has no Qwen2.5-Coder base model, and pulling qwen2.5-coder:1.5b-base into it failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runQuick(t, append(slices.Clone(base), tc.env...), tc.args...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("run.sh: %v, want exit status 1:\n%s", err, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("run.sh did not say %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"packages: checking", "backend: the local one", "server build"} {
				if strings.Contains(out, bad) {
					t.Errorf("run.sh went on (%q):\n%s", bad, out)
				}
			}
		})
	}
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("state directory %s: %v, %d entries (want none)", state, err, len(entries))
	}
	if models, err := b.Client().List(context.Background()); err == nil {
		for _, m := range models.Models {
			if m.Name == "qwen2.5-coder:3b-base" {
				t.Errorf("run.sh created %s on the user's Ollama", m.Name)
			}
		}
	}
}

// offline is the environment of an Ollama that cannot reach its registry
// whatever the machine can (a proxy where nothing listens): pulls fail at
// once, as offline.
var offline = []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}

// localState is a state directory for scripts/backend.sh whose Ollama
// binary and tiny model link the already prepared ones (nothing is
// rebuilt), its environment (a free port for the local backend), and that
// backend stopped when the test ends.
func localState(t *testing.T) (state string, base []string, ollamaHost string) {
	t.Helper()
	bin, gguf, err := ollamatest.Paths()
	servertest.Require(t, err, "prepared backend")
	root := repoRoot(t)
	state = t.TempDir()
	ollamaHost = freeAddr(t)
	base = env("INFILL_STATE_DIR="+state, "INFILL_OLLAMA_HOST="+ollamaHost)
	pathCmd := exec.Command(filepath.Join(root, "scripts", "ollama", "build.sh"), "--print-path")
	pathCmd.Env = base
	p, err := pathCmd.Output()
	if err != nil {
		t.Fatalf("build.sh --print-path: %v", err)
	}
	links := map[string]string{
		strings.TrimSpace(string(p)):                                bin,
		filepath.Join(state, "tinymodel", "v1", "infill-tiny.gguf"): gguf,
	}
	for link, target := range links {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		down := exec.Command(filepath.Join(root, "scripts", "backend.sh"), "down")
		down.Env = base
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("backend.sh down: %v\n%s", err, out)
		}
	})
	return state, base, ollamaHost
}

// lastLines are the banner's lines from "Ctrl-C stops the server." on.
func lastLines(out string) string {
	_, after, _ := strings.Cut(out, "Ctrl-C stops the server.")
	return after
}

// TestRunStartsLocalBackend: on a machine where no Ollama answers (at
// Ollama's default address; nothing names another), run.sh starts the
// local backend with no question asked and serves the tiny model as
// infill-tiny, its last lines saying why; when that backend dies, run.sh
// restarts it (removing the tiny model's copy under a real name from its
// store) and the server answers again.
func TestRunStartsLocalBackend(t *testing.T) {
	t.Parallel()
	requirePackages(t, "build", "sandbox")
	state, base, ollamaHost := localState(t)
	dead := freeAddr(t) // nothing listens there
	s := runScript(t, append(base,
		"INFILL_DEFAULT_OLLAMA="+dead,
		"INFILL_RESULTS_DIR="+t.TempDir(),
	), "--listen", "127.0.0.1:0", "--http-listen", "")
	grpcAddr, httpAddr := banner(t, s)
	if httpAddr != "" {
		t.Errorf("HTTP address %q with --http-listen empty", httpAddr)
	}
	conn := waitServing(t, grpcAddr, s)
	complete(t, conn, "infill-tiny")

	log := s.out.String()
	for _, want := range []string{
		"no Ollama answers at http://" + dead,
		"backend: the local one",
		"backend: infill-tiny at http://" + ollamaHost,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("run.sh did not say %q:\n%s", want, log)
		}
	}
	if last := lastLines(log); !strings.Contains(last, "random weights") || !strings.Contains(last, "no Ollama answers at "+dead) {
		t.Errorf("the last lines do not say the model is random and why:\n%s", last)
	}
	if strings.Contains(log, "Ollama cgo build") || strings.Contains(log, "pulling") {
		t.Errorf("run.sh rebuilt the Ollama binary it had, or pulled:\n%s", log)
	}

	// The tiny model under a real name in the local backend's store (what
	// an older run.sh left there) goes at the backend's next start.
	local := api.NewClient(&url.URL{Scheme: "http", Host: ollamaHost}, http.DefaultClient)
	fake(t, local, "qwen2.5-coder:1.5b-base")

	// The backend dies under the running server: run.sh's supervisor
	// restarts it, kills the model runner the dead server left behind, and
	// a later completion succeeds without restarting the server.
	_, port, _ := net.SplitHostPort(ollamaHost)
	pidData, err := os.ReadFile(filepath.Join(state, "serve", "ollama-"+port+".pid"))
	if err != nil {
		t.Fatalf("the backend's pid file: %v", err)
	}
	old, err := strconv.Atoi(strings.TrimSpace(string(pidData)))
	if err != nil {
		t.Fatalf("pid file %q: %v", pidData, err)
	}
	if len(processGroup(old)) < 2 {
		t.Fatalf("process group %d holds %v, want ollama serve and its model runner", old, processGroup(old))
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill ollama serve: %v", err)
	}
	waitLog(t, s, "ollama serve on "+ollamaHost+" restarted", 3*time.Minute)
	if left := processGroup(old); len(left) > 0 {
		t.Errorf("processes %v of the dead ollama serve's group are still alive", left)
	}
	complete(t, waitServing(t, grpcAddr, s), "infill-tiny")
	if log := s.out.String(); !strings.Contains(log, "ollama serve on "+ollamaHost+" exited or died") ||
		!strings.Contains(log, "removing qwen2.5-coder:1.5b-base from the local backend") {
		t.Errorf("run.sh did not say the backend died, or that it removed the fake:\n%s", log)
	}
	models, err := local.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models.Models {
		if m.Name != "infill-tiny:latest" {
			t.Errorf("the local backend still has %s", m.Name)
		}
	}
}

// TestRunFallsBackWhenPullFails: an Ollama at the default address that has
// no Qwen2.5-Coder base model (only the tiny one under a real name, which
// is not taken for one) gets qwen2.5-coder:1.5b-base pulled through its
// API, said first; the pull fails (offline), so run.sh starts the local
// backend and its last lines say why.
func TestRunFallsBackWhenPullFails(t *testing.T) {
	t.Parallel()
	requirePackages(t, "build", "sandbox")
	b := ollamatest.StartWithOptions(t, ollamatest.Options{Env: offline})
	fake(t, b.Client(), "qwen2.5-coder:1.5b-base")
	_, base, ollamaHost := localState(t)
	s := runScript(t, append(base,
		"INFILL_DEFAULT_OLLAMA="+b.Host,
		"INFILL_RESULTS_DIR="+t.TempDir(),
	), "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	grpcAddr, httpAddr := banner(t, s)
	complete(t, waitServing(t, grpcAddr, s), "infill-tiny")
	completeHTTP(t, httpAddr, "infill-tiny")
	log := s.out.String()
	pull := strings.Index(log, "pulling qwen2.5-coder:1.5b-base (about 1 GB) into it through its API")
	failed := strings.Index(log, "pulling qwen2.5-coder:1.5b-base into the Ollama at "+b.URL+" failed")
	local := strings.Index(log, "backend: infill-tiny at http://"+ollamaHost)
	if pull < 0 || failed < pull || local < failed {
		t.Errorf("run.sh did not say it pulls, then that the pull failed, then start the local backend:\n%s", log)
	}
	if last := lastLines(log); !strings.Contains(last, "random weights") ||
		!strings.Contains(last, "has no Qwen2.5-Coder base model, and pulling qwen2.5-coder:1.5b-base into it failed (offline?)") {
		t.Errorf("the last lines do not say why the model is the tiny one:\n%s", last)
	}
}

// processGroup lists the live (non-zombie) processes of process group pgid.
func processGroup(pgid int) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name: state ppid pgrp ...
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitLog waits until run.sh's output holds want, failing the test if
// run.sh exits or within seconds it does not.
func waitLog(t *testing.T, s *script, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(s.out.String(), want) {
		select {
		case <-s.done:
			t.Fatalf("scripts/run.sh exited (%v) before saying %q", s.err, want)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("scripts/run.sh did not say %q within %v", want, within)
		}
	}
}

package scripts_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// repoRoot is the checkout this file sits in.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(file))
}

// env is the test's environment without OLLAMA_* and INFILL_* settings (a
// developer's or CI's own must not steer the script), plus extra.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OLLAMA_") || strings.HasPrefix(kv, "INFILL_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

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
}

// runScript starts scripts/run.sh args in its own process group with env and
// stops the group (the server run.sh execs, or a go build under way) when
// the test ends.
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
	t.Cleanup(func() {
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

// TestRunUsesRunningOllama: when OLLAMA_HOST names an Ollama that has a
// Qwen2.5-Coder base model, scripts/run.sh serves from it and builds and
// writes nothing of its own backend: its state directory holds no Ollama
// binary before, and is still empty after.
func TestRunUsesRunningOllama(t *testing.T) {
	requirePackages(t, "build", "sandbox")
	b := ollamatest.Start(t)
	// The name a user's `ollama pull` gives; an instruct model beside it
	// must not be chosen (fill-in-the-middle needs a base model).
	ctx := context.Background()
	for _, name := range []string{"qwen2.5-coder:0.5b-base", "qwen2.5-coder:1.5b-instruct"} {
		if err := b.Client().Copy(ctx, &api.CopyRequest{Source: b.Model, Destination: name}); err != nil {
			t.Fatalf("copy %s: %v", name, err)
		}
	}
	state := t.TempDir()
	addr := freeAddr(t)
	s := runScript(t, env(
		"OLLAMA_HOST="+b.Host,
		"INFILL_STATE_DIR="+state,
		"INFILL_LISTEN="+addr,
		"INFILL_HTTP_LISTEN=", // no HTTP listener: the editors' port may be taken
		"INFILL_RESULTS_DIR="+t.TempDir(),
	))
	conn := waitServing(t, addr, s)
	complete(t, conn, "qwen2.5-coder:0.5b-base")

	log := s.out.String()
	if want := "backend: using the Ollama at http://" + b.Host + " with model qwen2.5-coder:0.5b-base"; !strings.Contains(log, want) {
		t.Errorf("run.sh did not say %q:\n%s", want, log)
	}
	for _, bad := range []string{"Ollama cgo build", "tiny model generation", "tokenizer npm fetch", "starting ollama serve"} {
		if strings.Contains(log, bad) {
			t.Errorf("run.sh printed %q: it prepared its own backend:\n%s", bad, log)
		}
	}
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("state directory %s: %v, %d entries (want none: nothing built or started)", state, err, len(entries))
	}
}

// TestRunStartsLocalBackend: when nothing answers at --ollama-url, run.sh
// says so, starts the local backend (scripts/backend.sh up) and serves from
// it, not from the URL given; when that backend dies, run.sh restarts it and
// the server answers again. The state directory links the already
// prepared binary and model, so nothing is rebuilt here.
func TestRunStartsLocalBackend(t *testing.T) {
	requirePackages(t, "build", "sandbox")
	bin, gguf, err := ollamatest.Paths()
	servertest.Require(t, err, "prepared backend")
	root := repoRoot(t)
	state := t.TempDir()
	ollamaHost := freeAddr(t)
	base := env("INFILL_STATE_DIR="+state, "INFILL_OLLAMA_HOST="+ollamaHost)

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

	addr := freeAddr(t)
	dead := freeAddr(t) // nothing listens there
	s := runScript(t, append(base,
		"INFILL_LISTEN="+addr,
		"INFILL_HTTP_LISTEN=", // no HTTP listener: the editors' port may be taken
		"INFILL_RESULTS_DIR="+t.TempDir(),
	), "--ollama-url", "http://"+dead, "--model=infill-tiny")
	conn := waitServing(t, addr, s)
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
	if strings.Contains(log, "Ollama cgo build") {
		t.Errorf("run.sh rebuilt the Ollama binary it had:\n%s", log)
	}

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
	complete(t, waitServing(t, addr, s), "infill-tiny")
	if log := s.out.String(); !strings.Contains(log, "ollama serve on "+ollamaHost+" exited or died") {
		t.Errorf("run.sh did not say the backend died:\n%s", log)
	} else {
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "ollama serve") {
				t.Log(l)
			}
		}
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

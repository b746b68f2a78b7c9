// Package benchtest runs the benchmarks' smoke runs in the test suite: each
// benchmark under bench/ is run by its own test with its smallest settings,
// against the real test backend (the pinned Ollama with the tiny model) or
// the benchmark's fake, and the report it writes is checked for form — so a
// change that breaks a benchmark fails CI, while its figures (meaningless
// at these sizes) are asserted nowhere.
//
// A smoke run whose dependency is missing (the prepared backend, ghz,
// ../shared, bubblewrap, Python) skips on a developer's machine and fails
// under CI=true, as every other test does.
package benchtest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/internal/proctest"
	"github.com/infill-dev/infill/server/servertest"
)

// Root is the repository's root directory.
func Root(t testing.TB) string { return proctest.Root(t) }

// Env is the test's environment for a benchmark's script or program:
// without the OLLAMA_* and INFILL_* settings of whoever runs the tests
// (they must not steer it), with a state directory of the test's own
// (INFILL_STATE_DIR: run directories and a started backend's files go
// there), plus extra.
func Env(t testing.TB, extra ...string) []string {
	t.Helper()
	return proctest.Env(append([]string{"INFILL_STATE_DIR=" + t.TempDir()}, extra...)...)
}

// Backend is the environment naming the prepared real backend
// (INFILL_OLLAMA_BIN, INFILL_TINY_GGUF), so that scripts/backend.sh and
// inference/ollamatest use it and build nothing. It skips the test when the
// backend is not prepared (fails under CI=true).
func Backend(t testing.TB) []string {
	t.Helper()
	bin, gguf, err := ollamatest.Paths()
	servertest.Require(t, err, "prepared backend")
	return []string{"INFILL_OLLAMA_BIN=" + bin, "INFILL_TINY_GGUF=" + gguf}
}

// Shared is ../shared beside the repository, skipping the test when it is
// absent (failing under CI=true).
func Shared(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(t), "..", "shared")
	_, err := os.Stat(filepath.Join(dir, "data"))
	servertest.Require(t, err, "../shared")
	return dir
}

// Command is the path of an executable on PATH, skipping the test when
// there is none (failing under CI=true).
func Command(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	servertest.Require(t, err, name)
	return p
}

// FreePort is a loopback port nothing listens on at the moment.
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(proctest.FreeAddr(t))
	n, _ := strconv.Atoi(port)
	return n
}

// FreePorts are n loopback ports in a row (port, port+1, ...) nothing
// listens on at the moment, for a script that takes a base port.
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for range 100 {
		base := FreePort(t)
		if base+n > 65535 {
			continue
		}
		ok := true
		var held []net.Listener
		for i := 1; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d free loopback ports in a row", n)
	return 0
}

var (
	buildMu   sync.Mutex
	buildDirs = map[string]string{}
)

// Build builds the main packages pkgs (import paths relative to the
// repository root, e.g. "./server/cmd/infill-server") once per test binary
// and returns the directory holding the executables, named as go build
// names them.
func Build(t testing.TB, pkgs ...string) string {
	t.Helper()
	key := strings.Join(pkgs, " ")
	buildMu.Lock()
	defer buildMu.Unlock()
	if dir, ok := buildDirs[key]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "infill-benchtest-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build %s: %v\n%s", key, err, out)
	}
	buildDirs[key] = dir
	return dir
}

// Cleanup removes what Build made; a smoke test package calls it from
// TestMain after its tests ran.
func Cleanup() {
	buildMu.Lock()
	defer buildMu.Unlock()
	for k, dir := range buildDirs {
		os.RemoveAll(dir)
		delete(buildDirs, k)
	}
}

// Run runs name with args in the repository root with env, in a process
// group of its own that is killed when it ends or when within passes (so a
// script's servers and backends never outlive the test), and returns its
// standard output and error together. It fails the test, with the output,
// when the command fails or runs out of time.
func Run(t testing.TB, env []string, within time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := run(t, env, within, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// RunErr is Run that returns the command's error instead of failing (a
// benchmark that exits non-zero when its own checks fail).
func RunErr(t testing.TB, env []string, within time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	return run(t, env, within, name, args...)
}

func run(t testing.TB, env []string, within time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.Command(name, args...)
	cmd.Dir = Root(t)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		err = errors.New("did not finish within " + within.String())
	}
	// Whatever the script left in its group (it stops what it started; this
	// is the net under it).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return out.String(), err
}

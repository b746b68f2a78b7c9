package scripts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
)

// fakeSystem is a directory of stand-ins for id, sudo, dpkg-query, apt-get
// and apt-cache, first on PATH. They are fakes because the cases cannot be
// made real inside a test: installing system packages, or a non-root user
// without sudo, on the machine that runs the suite. (The real apt path is
// what scripts/test.sh runs on a bare machine in CI.) apt-get and sudo
// append their arguments to calls.
type fakeSystem struct {
	dir, calls string
}

func newFakeSystem(t *testing.T, uid int, sudoWorks bool, installed, candidates []string) *fakeSystem {
	t.Helper()
	dir := t.TempDir()
	f := &fakeSystem{dir: dir, calls: filepath.Join(dir, "calls")}
	sudo := "exit 1"
	if sudoWorks {
		sudo = `echo "sudo $*" >>` + f.calls + `; shift; exec "$@"`
	}
	scripts := map[string]string{
		"id":   `[ "$1" = -u ] && echo ` + strconv.Itoa(uid),
		"sudo": sudo,
		// dpkg-query -W -f=FORMAT NAME...: a line per installed name;
		// status 1 when one is unknown, as the real one.
		"dpkg-query": `shift 2; rc=0; for p in "$@"; do case " ` + strings.Join(installed, " ") +
			` " in *" $p "*) echo "$p installed";; *) echo "dpkg-query: no packages found matching $p" >&2; rc=1;; esac; done; exit $rc`,
		"apt-get":   `echo "apt-get $*" >>` + f.calls,
		"apt-cache": `case " ` + strings.Join(candidates, " ") + ` " in *" $2 "*) echo "  Candidate: 1.0";; *) echo "  Candidate: (none)";; esac`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// run runs scripts/setup.sh with the fakes first on PATH.
func (f *fakeSystem) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "setup.sh"), args...)
	cmd.Env = env("PATH="+f.dir+":"+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *fakeSystem) aptCalls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

const aptPrefix = "apt-get -o DPkg::Lock::Timeout=300 "

func TestPackagesRootInstallsOnceWithReasons(t *testing.T) {
	t.Parallel()
	// Ubuntu's case: chromium has no candidate, chromium-browser has.
	f := newFakeSystem(t, 0, false, []string{"gcc"}, []string{"chromium-browser"})
	out, err := f.run(t, "packages", "build", "report")
	if err != nil {
		t.Fatalf("setup.sh packages: %v\n%s", err, out)
	}
	want := []string{
		aptPrefix + "update",
		aptPrefix + "install -y --no-install-recommends git ca-certificates chromium-browser fonts-dejavu-core",
	}
	if got := f.aptCalls(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("apt-get calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// It says what it installs and why, per group.
	for _, s := range []string{"build: Go builds infill with cgo", "git ca-certificates", "report: the HTML report test", "chromium or chromium-browser fonts-dejavu-core"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestPackagesAllPresentIsSilent(t *testing.T) {
	t.Parallel()
	f := newFakeSystem(t, 0, false, []string{"gcc", "git", "ca-certificates", "neovim", "vim-nox", "vim-youcompleteme", "ycmd"}, nil)
	out, err := f.run(t, "packages", "build", "editor", "build")
	if err != nil || out != "" {
		t.Fatalf("setup.sh packages: %v, output %q; want success and no output", err, out)
	}
	if calls := f.aptCalls(t); calls != nil {
		t.Fatalf("apt-get ran: %v", calls)
	}
}

func TestPackagesWithoutRootNamesTheCommand(t *testing.T) {
	t.Parallel()
	f := newFakeSystem(t, 1000, false, []string{"git"}, nil)
	out, err := f.run(t, "packages", "build", "sandbox")
	if err == nil {
		t.Fatalf("setup.sh packages succeeded without root or sudo:\n%s", out)
	}
	want := "sudo apt-get update && sudo apt-get install -y --no-install-recommends gcc ca-certificates bubblewrap python3 python3-pytest python3-venv"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks the exact command %q:\n%s", want, out)
	}
	if calls := f.aptCalls(t); calls != nil {
		t.Fatalf("apt-get ran: %v", calls)
	}
}

func TestPackagesThroughSudo(t *testing.T) {
	t.Parallel()
	f := newFakeSystem(t, 1000, true, nil, nil)
	// node and npm are on PATH (the machine's or none: either way the
	// fakes below make them present, as nodesource's nodejs does), so the
	// tokenizer and javascript groups need nothing.
	for _, cmd := range []string{"node", "npm"} {
		if err := os.WriteFile(filepath.Join(f.dir, cmd), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := f.run(t, "packages", "editor", "tokenizer", "javascript")
	if err != nil {
		t.Fatalf("setup.sh packages: %v\n%s", err, out)
	}
	calls := strings.Join(f.aptCalls(t), "\n")
	for _, want := range []string{
		"sudo -n env DEBIAN_FRONTEND=noninteractive " + aptPrefix + "update",
		"sudo -n env DEBIAN_FRONTEND=noninteractive " + aptPrefix + "install -y --no-install-recommends neovim",
	} {
		if !strings.Contains(calls, want) {
			t.Errorf("calls lack %q:\n%s", want, calls)
		}
	}
	if strings.Contains(calls, "nodejs") {
		t.Errorf("installed nodejs although node and npm are on PATH:\n%s", calls)
	}
}

// TestFindOllama asks a real Ollama the way scripts/run.sh does: its
// Qwen2.5-Coder base model (a stand-in of the real one's size), never an
// instruct model nor the tiny model under a base model's name (named on
// stderr as what it is, and refused when asked for by name), exactly the
// model INFILL_MODEL names, and an exit status per failure: 1 nothing
// answers, 2 no such model, 3 the model asked for is the tiny one.
func TestFindOllama(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	standIn(t, b, "qwen2.5-coder:0.5b-base", "494.03M")
	standIn(t, b, "qwen2.5-coder:7b-instruct", "7.62B")
	fake(t, b.Client(), "qwen2.5-coder:1.5b-base")
	only := ollamatest.Start(t) // the tiny model under a real name, nothing else
	fake(t, only.Client(), "qwen2.5-coder:1.5b-base")
	port := b.Host[strings.LastIndex(b.Host, ":")+1:]
	dead := freeAddr(t)
	const fakeSays = "has qwen2.5-coder:1.5b-base, but that is infill's tiny random-weight test model under a real model's name"
	for _, c := range []struct {
		name, ollamaHost, arg, model string
		want                         string
		code                         int    // exit status
		stderr                       string // part of it
	}{
		{name: "base model, OLLAMA_HOST host:port", ollamaHost: b.Host, want: "http://" + b.Host + " qwen2.5-coder:0.5b-base", stderr: fakeSays},
		{name: "URL argument wins", ollamaHost: dead, arg: "http://" + b.Host, want: "http://" + b.Host + " qwen2.5-coder:0.5b-base"},
		{name: "bind address", ollamaHost: "0.0.0.0:" + port, want: "http://127.0.0.1:" + port + " qwen2.5-coder:0.5b-base"},
		{name: "INFILL_MODEL without tag", ollamaHost: b.Host, model: "infill-tiny", want: "http://" + b.Host + " infill-tiny"},
		{name: "INFILL_MODEL absent", ollamaHost: b.Host, model: "qwen2.5-coder:32b-base", code: 2,
			stderr: "has no model qwen2.5-coder:32b-base"},
		{name: "INFILL_MODEL is the tiny model under its name", ollamaHost: b.Host, model: "qwen2.5-coder:1.5b-base", code: 3,
			stderr: "refusing qwen2.5-coder:1.5b-base"},
		{name: "only the tiny model under a base model's name", ollamaHost: only.Host, code: 2,
			stderr: "has no Qwen2.5-Coder base model"},
		{name: "nothing listens", ollamaHost: dead, code: 1, stderr: "no Ollama answers at http://" + dead},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"find-ollama"}
			if c.arg != "" {
				args = append(args, c.arg)
			}
			cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "setup.sh"), args...)
			e := env("OLLAMA_HOST=" + c.ollamaHost)
			if c.model != "" {
				e = append(e, "INFILL_MODEL="+c.model)
			}
			cmd.Env = e
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			got := strings.TrimSpace(string(out))
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code || got != c.want || !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("got %q, exit %d, stderr %q; want %q, exit %d, stderr saying %q", got, code, stderr.String(), c.want, c.code, c.stderr)
			}
		})
	}
	out, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "setup.sh"), "fake-models", b.URL).Output()
	if err != nil || string(out) != "qwen2.5-coder:1.5b-base\n" {
		t.Errorf("fake-models: %q, %v; want the tiny model's copy only", out, err)
	}
}

// TestPullModelOffline: a pull through the API of an Ollama that cannot
// reach its registry fails at once, saying why on stderr and stdout, after
// a progress line.
func TestPullModelOffline(t *testing.T) {
	t.Parallel()
	b := ollamatest.StartWithOptions(t, ollamatest.Options{Env: offline})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "scripts", "setup.sh"), "pull-model", b.Host, "qwen2.5-coder:1.5b-base")
	cmd.Env = env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || ctx.Err() != nil {
		t.Fatalf("pull-model: %v (stderr %q), want exit status 1 within a minute", err, stderr.String())
	}
	for _, want := range []string{"setup.sh: pulling qwen2.5-coder:1.5b-base: pulling manifest",
		"pulling qwen2.5-coder:1.5b-base into the Ollama at " + b.URL + " failed: pull model manifest"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if !strings.HasPrefix(string(out), "pull model manifest") {
		t.Errorf("stdout %q: want the reason", out)
	}
}

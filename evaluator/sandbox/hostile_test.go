package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hostile suite: each completion is contained and graded correctly, and
// no process of it survives the run.

func token(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "h" + hex.EncodeToString(b[:])
}

// survivors lists host processes whose command line contains tok.
func survivors(t *testing.T, tok string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), tok) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func assertClean(t *testing.T, tok string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := survivors(t, tok)
		if len(s) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the run: %v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostile runs src as program <tok>.py so that its processes carry tok.
func hostile(t *testing.T, sb *Sandbox, src string, timeout time.Duration) (Result, string) {
	t.Helper()
	tok := token(t)
	name := tok + ".py"
	res, err := sb.Run(context.Background(), Spec{Python: []string{"program", name}, Warm: true, Files: map[string]string{name: src}, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertClean(t, tok)
	return res, tok
}

const solution = "def add(a, b):\n    return a + b\n"
const check = "\nassert add(2, 3) == 5\n"

func TestHostileNetwork(t *testing.T) {
	bothPaths(t, Config{Timeout: 10 * time.Second}, func(t *testing.T, sb *Sandbox) {
		ln, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		targets := []string{"127.0.0.1", "1.1.1.1", "8.8.8.8"}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
					targets = append(targets, ipn.IP.String())
				}
			}
		}
		probe := fmt.Sprintf(`
import socket
reached = []
for host in %q:
    for port in (%d, 80, 53):
        try:
            socket.create_connection((host, port), timeout=1).close()
            reached.append((host, port))
        except OSError:
            pass
try:
    socket.getaddrinfo("example.com", 80)
    reached.append("dns")
except OSError:
    pass
`, targets, port)
		// A completion that needs the network fails ...
		res, _ := hostile(t, sb, solution+probe+"assert reached, 'no network'\n"+check, 0)
		if res.Passed() {
			t.Fatalf("network-dependent completion passed: %s", res.Stderr)
		}
		// ... and one that only probes it still passes, having reached nothing.
		res, _ = hostile(t, sb, solution+probe+"assert not reached, reached\n"+check, 0)
		if !res.Passed() {
			t.Fatalf("network probe reached something or failed: %s %s", res.Status, res.Stderr)
		}
		if n := accepted.Load(); n != 0 {
			t.Fatalf("host listener accepted %d connections from the sandbox", n)
		}
	})
}

func TestHostileWriteOutside(t *testing.T) {
	sb := newTestSandbox(t, Config{})
	hostDir := t.TempDir()
	canary := filepath.Join(hostDir, "canary")
	mustWrite(t, canary, "original")
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "data.txt"), "pristine")
	prog := solution + fmt.Sprintf(`
import os
hits = []
for p in [%q, %q, "/usr/pwned", "/etc/pwned", "/run/infill/runner.py", "/pwned", "/proc/sys/kernel/pwned", "/dev/pwned"]:
    try:
        with open(p, "w") as f:
            f.write("pwned")
        hits.append(p)
    except OSError:
        pass
# Writing inside the private copy and /tmp is allowed and stays private.
with open("data.txt", "w") as f:
    f.write("changed")
with open("/tmp/scratch", "w") as f:
    f.write("ok")
assert not hits, hits
`, canary, filepath.Join(hostDir, "new"))
	res, err := sb.Run(context.Background(), Spec{Python: []string{"program", "p.py"}, SourceDir: src, Files: map[string]string{"p.py": prog + check}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Fatalf("write probe: %s exit %d: %s", res.Status, res.ExitCode, res.Stderr)
	}
	if b, _ := os.ReadFile(canary); string(b) != "original" {
		t.Fatalf("host canary changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "new")); err == nil {
		t.Fatal("file created in a host directory")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "data.txt")); string(b) != "pristine" {
		t.Fatalf("source repository changed: %q", b)
	}
}

func TestHostileForkBomb(t *testing.T) {
	bothPaths(t, Config{Processes: 32}, func(t *testing.T, sb *Sandbox) {
		bomb := `
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`
		// A well-behaved run alongside the bomb is unaffected.
		var wg sync.WaitGroup
		var neighbour Result
		var nerr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(500 * time.Millisecond)
			neighbour, nerr = sb.Run(context.Background(), program(solution+check))
		}()
		res, _ := hostile(t, sb, solution+bomb+check, 3*time.Second)
		wg.Wait()
		if res.Passed() || res.Status != StatusTimeout {
			t.Fatalf("fork bomb: status %s passed %v", res.Status, res.Passed())
		}
		if nerr != nil || !neighbour.Passed() {
			t.Fatalf("neighbour run affected by the fork bomb: %v %s %s", nerr, neighbour.Status, neighbour.Stderr)
		}
	})
}

func TestHostileMemoryBomb(t *testing.T) {
	bothPaths(t, Config{MemoryBytes: 512 << 20}, func(t *testing.T, sb *Sandbox) {
		res, _ := hostile(t, sb, solution+"blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n"+check, 10*time.Second)
		if res.Passed() || res.Status == StatusTimeout {
			t.Fatalf("memory bomb: status %s exit %d passed %v", res.Status, res.ExitCode, res.Passed())
		}
		if !strings.Contains(res.Stderr, "MemoryError") {
			t.Errorf("expected MemoryError, stderr: %s", res.Stderr)
		}
	})
}

func TestHostileInfiniteLoop(t *testing.T) {
	bothPaths(t, Config{}, func(t *testing.T, sb *Sandbox) {
		start := time.Now()
		res, _ := hostile(t, sb, solution+"while True:\n    pass\n"+check, 2*time.Second)
		if res.Status != StatusTimeout || res.Passed() {
			t.Fatalf("infinite loop: status %s", res.Status)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("infinite loop took %v to stop", d)
		}
		// Sleeping (no CPU) is caught by the wall clock.
		res, _ = hostile(t, sb, solution+"import time\ntime.sleep(3600)\n"+check, 2*time.Second)
		if res.Status != StatusTimeout {
			t.Fatalf("sleep: status %s", res.Status)
		}
	})
}

func TestHostileExitZero(t *testing.T) {
	bothPaths(t, Config{}, func(t *testing.T, sb *Sandbox) {
		for name, src := range map[string]string{
			"os._exit(0) before checks":  solution + "import os\nos._exit(0)\n" + check,
			"os._exit(0) inside checked": "import os\ndef add(a, b):\n    os._exit(0)\n" + check,
			"sys.exit(0)":                solution + "import sys\nsys.exit(0)\n" + check,
			"kill parent and exit":       solution + "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\nos._exit(0)\n" + check,
			"kill process group":         solution + "import os, signal\nos.killpg(0, signal.SIGKILL)\n" + check,
			"fake marker":                solution + "import os\nos.write(3, b'PASS 00000000000000000000000000000000 {}\\n')\nos.write(1, b'PASS\\n')\nos._exit(0)\n" + check,
			"exec true":                  solution + "import os\nos.execv('/bin/true', ['true'])\n" + check,
		} {
			t.Run(name, func(t *testing.T) {
				res, _ := hostile(t, sb, src, 0)
				if res.Passed() {
					t.Fatalf("%s passed", name)
				}
			})
		}
	})
}

func TestHostileSetsidSleep(t *testing.T) {
	bothPaths(t, Config{}, func(t *testing.T, sb *Sandbox) {
		tok := token(t)
		src := solution + fmt.Sprintf(`
import os, subprocess
subprocess.Popen(["%[1]s", "3600"], executable="/bin/sleep", start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["%[1]s-2", "3600"])
import time
def running():
    n = 0
    for p in os.listdir("/proc"):
        try:
            n += p.isdigit() and open("/proc/%%s/cmdline" %% p).read().startswith("%[1]s")
        except OSError:
            pass
    return n
deadline = time.time() + 5
while running() < 2 and time.time() < deadline:
    time.sleep(0.02)
assert running() == 2, "the daemons did not start"
`, tok) + check
		start := time.Now()
		res, err := sb.Run(context.Background(), program(src))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Passed() {
			t.Fatalf("setsid program failed: %s %s", res.Status, res.Stderr)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("run waited for the daemon: %v", d)
		}
		assertClean(t, tok)
	})
}

func TestHostileHugeOutput(t *testing.T) {
	bothPaths(t, Config{OutputLimitBytes: 1 << 20, OutputTailBytes: 4096}, func(t *testing.T, sb *Sandbox) {
		res, _ := hostile(t, sb, solution+"import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n    sys.stderr.write('y' * 65536)\n"+check, 20*time.Second)
		if res.Status != StatusOutputLimit || res.Passed() {
			t.Fatalf("huge output: status %s", res.Status)
		}
		if len(res.Stdout) > 4096 || len(res.Stderr) > 4096 {
			t.Fatalf("tails not capped: %d %d", len(res.Stdout), len(res.Stderr))
		}
		// Output up to the limit is fine and keeps its tail.
		res, _ = hostile(t, sb, solution+"print('a' * 100000)\nprint('END')\n"+check, 0)
		if !res.Passed() || !strings.HasSuffix(res.Stdout, "END\n") || res.StdoutBytes != 100005 {
			t.Fatalf("moderate output: %s %d %q", res.Status, res.StdoutBytes, res.Stdout[len(res.Stdout)-10:])
		}
	})
}

func TestContextCancelKillsRun(t *testing.T) {
	bothPaths(t, Config{}, func(t *testing.T, sb *Sandbox) {
		tok := token(t)
		name := tok + ".py"
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := sb.Run(ctx, Spec{Python: []string{"program", name}, Warm: true, Files: map[string]string{name: "import time\ntime.sleep(3600)\n"}})
		if err == nil {
			t.Fatal("cancelled run returned no error")
		}
		assertClean(t, tok)
	})
}

// guardProbes call, harmlessly, each function the human-eval-infilling
// harness's reliability guard disables. Without the guard every probe runs
// to the end (the call succeeds or raises what the probe expects); with it
// the call raises TypeError (the function is None) or the import is
// refused, and the program fails, as it does under the reference harness.
var guardProbes = map[string]string{
	"os.kill":          "os.kill(os.getpid(), 0)",
	"os.system":        "os.system('true')",
	"os.putenv":        "os.putenv('INFILL_PROBE', '1')",
	"os.remove":        "os.remove('/nonexistent')",
	"os.removedirs":    "os.removedirs('/nonexistent-dir')",
	"os.rmdir":         "os.rmdir('/nonexistent-dir')",
	"os.fchdir":        "os.fchdir(os.open('.', os.O_RDONLY))",
	"os.setuid":        "os.setuid(os.getuid())",
	"os.fork":          "pid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)",
	"os.forkpty":       "pid, fd = os.forkpty()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)",
	"os.killpg":        "os.killpg(os.getpgrp(), 0)",
	"os.rename":        "os.rename('/nonexistent-a', '/nonexistent-b')",
	"os.renames":       "os.renames('/nonexistent-a', '/nonexistent-b')",
	"os.truncate":      "os.truncate('/nonexistent', 0)",
	"os.replace":       "os.replace('/nonexistent-a', '/nonexistent-b')",
	"os.unlink":        "os.unlink('/nonexistent')",
	"os.fchmod":        "os.fchmod(os.open('probe.txt', os.O_RDONLY), 0o644)",
	"os.fchown":        "os.fchown(os.open('probe.txt', os.O_RDONLY), -1, -1)",
	"os.chmod":         "os.chmod('probe.txt', 0o644)",
	"os.chown":         "os.chown('probe.txt', -1, -1)",
	"os.chroot":        "os.chroot('/')",
	"os.lchflags":      "os.lchflags('probe.txt', 0)",
	"os.lchmod":        "os.lchmod('probe.txt', 0o644)",
	"os.lchown":        "os.lchown('probe.txt', -1, -1)",
	"os.getcwd":        "os.getcwd()",
	"os.chdir":         "os.chdir('.')",
	"shutil.rmtree":    "shutil.rmtree('/nonexistent-dir')",
	"shutil.move":      "shutil.move('/nonexistent-a', '/nonexistent-b')",
	"shutil.chown":     "shutil.chown('probe.txt', user=os.getuid())",
	"subprocess.Popen": "subprocess.Popen(['true']).wait()",
	"builtins.exit":    "exit(0)",
	"builtins.quit":    "quit(0)",
	"builtins.help":    "help(len)",
	"import ipdb":      "import ipdb",
	"import joblib":    "import joblib",
	"import resource":  "import resource",
	"import psutil":    "import psutil",
	"import tkinter":   "import tkinter",
}

// guardProbe wraps a probe so that, unguarded, only what the probe
// expects is caught: OSError (the call did what it does, on nothing),
// SystemExit (exit and quit), AttributeError (lchflags and lchmod do not
// exist on Linux unless the guard set them), and a module that is simply
// not installed.
func guardProbe(call string) string {
	indented := "    " + strings.ReplaceAll(call, "\n", "\n    ")
	return "import os, shutil, subprocess, sys\n" +
		"with open('probe.txt', 'w') as f:\n    f.write('x')\n" +
		"try:\n" + indented + "\n" +
		"except (OSError, SystemExit, AttributeError):\n    pass\n" +
		"except ImportError as e:\n    assert 'None in sys.modules' not in str(e), e\n" +
		"print('probe ran to the end')\n"
}

// TestHostileReferenceGuard: each function the reference harness disables
// fails a ModeHumanEval program the way it fails under the reference, and
// only because of the guard (the same program passes unguarded), on warm
// and cold sandboxes alike; the guard's settings are visible too.
func TestHostileReferenceGuard(t *testing.T) {
	bothPaths(t, Config{Timeout: 10 * time.Second}, func(t *testing.T, sb *Sandbox) {
		for name, call := range guardProbes {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				src := guardProbe(call)
				free, err := sb.Run(context.Background(), Spec{Python: []string{"program", "p.py"}, Warm: true, Files: map[string]string{"p.py": src}})
				if err != nil || !free.Passed() {
					t.Fatalf("unguarded probe failed (the probe is wrong, not the guard): %v %s %s", err, free.Status, free.Stderr)
				}
				res, err := sb.Run(context.Background(), Spec{Python: []string{"humaneval", "p.py"}, Warm: true, Files: map[string]string{"p.py": src}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Passed() {
					t.Fatalf("%s passed under the guard", name)
				}
				want := "TypeError"
				if strings.HasPrefix(name, "import ") {
					want = "AssertionError" // the probe saw the guard's refusal
				}
				if res.Exception == nil || res.Exception.Type != want {
					t.Fatalf("%s: exception %+v, want %s\n%s", name, res.Exception, want, res.Stderr)
				}
			})
		}
		t.Run("settings", func(t *testing.T) {
			src := "import os, faulthandler\nassert os.environ.get('OMP_NUM_THREADS') == '1'\nassert not faulthandler.is_enabled()\n" +
				"assert __name__ != '__main__'\nimport sys\ntry:\n    sys.stdin.read()\n    raise SystemExit('stdin was readable')\nexcept OSError:\n    pass\n"
			res, err := sb.Run(context.Background(), Spec{Python: []string{"humaneval", "p.py"}, Warm: true, Files: map[string]string{"p.py": src}})
			if err != nil || !res.Passed() {
				t.Fatalf("guard settings: %v %s %+v %s", err, res.Status, res.Exception, res.Stderr)
			}
		})
		// The case: kill the parent, then compute the right
		// answer. Without the guard the signal to the namespace's init
		// is ignored and the program would pass; the reference fails it.
		t.Run("kill parent then right answer", func(t *testing.T) {
			src := "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + solution + check
			res, err := sb.Run(context.Background(), Spec{Python: []string{"humaneval", "p.py"}, Warm: true, Files: map[string]string{"p.py": src}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed() || res.Exception == nil || res.Exception.Type != "TypeError" {
				t.Fatalf("kill parent: passed=%v exception %+v", res.Passed(), res.Exception)
			}
		})
	})
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWarmSamplesIsolated: a sample on a warm sandbox leaves files in every
// writable place, a System V shared memory segment and a setsid daemon that
// keeps writing; the next sample on the same warm sandbox finds none of
// them, sees only its own processes, and the daemon is gone from the host.
func TestWarmSamplesIsolated(t *testing.T) {
	sb := newTestSandbox(t, Config{WarmWorkers: 1})
	if !sb.Warm() {
		if os.Getenv("CI") == "true" {
			t.Fatal("warm sandboxes unavailable")
		}
		t.Skip("warm sandboxes unavailable here")
	}
	tok := token(t)
	first := fmt.Sprintf(`
import ctypes, os, subprocess, time
for p in ("/tmp/left", "/dev/shm/left", "left"):
    with open(p, "w") as f:
        f.write("x")
libc = ctypes.CDLL(None)
assert libc.shmget(0x1f2e3d, 4096, 0o1000 | 0o666) >= 0
subprocess.Popen(["%[1]s", "-c", "while :; do : > /work/daemon; : > /tmp/daemon; sleep 0.02; done"],
                 executable="/bin/sh", start_new_session=True)
time.sleep(0.1)
`, tok)
	second := `
import ctypes, os, time
def check():
    assert os.listdir("/tmp") == [], os.listdir("/tmp")
    assert os.listdir("/dev/shm") == [], os.listdir("/dev/shm")
    assert sorted(os.listdir(".")) == ["p.py"], os.listdir(".")
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    assert pids == [1, 2], pids
check()
assert ctypes.CDLL(None).shmget(0x1f2e3d, 0, 0) == -1, "the shared memory segment survived"
time.sleep(0.2)
check()
`
	for i, src := range []string{first, second} {
		res, err := sb.Run(context.Background(), Spec{Python: []string{"program", "p.py"}, Warm: true, Files: map[string]string{"p.py": src}})
		if err != nil || !res.Passed() || !res.Warm {
			t.Fatalf("sample %d: %v warm=%v %s %s", i, err, res.Warm, res.Status, res.Stderr)
		}
	}
	assertClean(t, tok)
}

// TestStartupNotCharged: with an interpreter that takes a second to start,
// a program that runs for 0.3 s of a 1 s limit passes on both paths; its
// Duration is its own run time and Startup holds the rest.
func TestStartupNotCharged(t *testing.T) {
	// Not under t.TempDir(): its parent is private to the test's user.
	dir, err := os.MkdirTemp("", "infill-slow-python-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	slow := filepath.Join(dir, "slow-python3")
	mustWrite(t, slow, "#!/bin/sh\nsleep 1.2\nexec /usr/bin/python3 \"$@\"\n")
	if err := os.Chmod(slow, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bothPaths(t, Config{PythonPath: slow, ReadOnlyPaths: []string{dir}, Timeout: time.Second}, func(t *testing.T, sb *Sandbox) {
		spec := program("import time\ntime.sleep(0.3)\n")
		res, err := sb.Run(context.Background(), spec)
		if err != nil || !res.Passed() {
			t.Fatalf("%v %s %s", err, res.Status, res.Stderr)
		}
		if res.Duration < 300*time.Millisecond || res.Duration > time.Second {
			t.Errorf("Duration %v, want the program's own ~0.3 s", res.Duration)
		}
		// A warm sandbox paid its start-up before the run; a cold one in it.
		if !res.Warm && res.Startup < time.Second {
			t.Errorf("Startup %v, want the interpreter's 1.2 s", res.Startup)
		}
		// Past the limit is still a timeout.
		res, err = sb.Run(context.Background(), program("import time\ntime.sleep(5)\n"))
		if err != nil || res.Status != StatusTimeout {
			t.Fatalf("sleep past the limit: %v %s", err, res.Status)
		}
	})
}

// TestWarmConcurrent: more runs at once than idle warm sandboxes start more
// of them; every run gets its own, and idle ones beyond the bound stop.
func TestWarmConcurrent(t *testing.T) {
	sb := newTestSandbox(t, Config{WarmWorkers: 1})
	if !sb.Warm() {
		t.Skip("warm sandboxes unavailable here")
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sb.Run(context.Background(), program(fmt.Sprintf("import os\nassert os.getpid() == 2\nprint(%d)\n", i)))
			if err != nil || !res.Passed() || res.Stdout != fmt.Sprintf("%d\n", i) {
				bad.Add(1)
				t.Errorf("run %d: %v %s %q %s", i, err, res.Status, res.Stdout, res.Stderr)
			}
		}()
	}
	wg.Wait()
	if n := len(sb.warm.idle); n > 1 {
		t.Errorf("%d idle warm sandboxes kept, bound is 1", n)
	}
}

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/infill-dev/infill/evaluator/outcome"
)

// threadedSuite is a pytest suite whose test runs 64 threads at once,
// each touching a little memory, and checks that the process really
// needed more than 1 GiB of address space (glibc reserves a 64 MiB malloc
// arena per thread, up to 8 per core, besides each thread's stack): the
// kind of suite the old fixed RLIMIT_AS of 1 GiB broke.
const threadedSuite = `import threading

def peak_address_space():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0

def test_threads():
    ready = threading.Barrier(65)
    done = threading.Event()
    def work():
        data = [bytearray(4096) for _ in range(64)]
        ready.wait()
        done.wait()
        assert len(data) == 64
    threads = [threading.Thread(target=work, daemon=True) for _ in range(64)]
    try:
        for t in threads:
            t.start()
        ready.wait(timeout=20)
        peak = peak_address_space()
    finally:
        done.set()
    for t in threads:
        t.join()
    assert peak > 1 << 30, peak
`

func threadedSpec(t *testing.T) Spec {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "test_threads.py"), []byte(threadedSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	return Spec{Python: []string{"pytest", "-q", "-p", "no:cacheprovider"}, SourceDir: dir}
}

// TestThreadedSuiteFitsDefaults: a suite that needs more than 1 GiB of
// address space passes under the default limits, because the memory
// limit is RLIMIT_DATA (what a process writes to), not RLIMIT_AS; under a
// 1 GiB RLIMIT_AS it fails, and says which limit it hit.
func TestThreadedSuiteFitsDefaults(t *testing.T) {
	spec := threadedSpec(t)
	sb := newTestSandbox(t, Config{Timeout: 60 * time.Second, WarmWorkers: -1})
	res, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() || res.Tests == nil || res.Tests.Passed != 1 {
		t.Fatalf("threaded suite under the defaults: %s exit %d %+v\n%s%s", res.Status, res.ExitCode, res.Tests, res.Stdout, res.Stderr)
	}

	old := newTestSandbox(t, Config{Timeout: 60 * time.Second, WarmWorkers: -1, MemoryBytes: 1 << 30, AddressSpaceBytes: 1 << 30})
	res, err = old.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// Which allocation fails first under a 1 GiB address space depends on
	// timing: a thread's start ("can't start new thread": the thread
	// limit's report, which names memory too) or pytest's own next
	// allocation (MemoryError: the memory limit). Either way the run must
	// fail and name a limit whose value shows the 1 GiB.
	hit := (res.Limit == outcome.LimitThreads && res.LimitValue == "256 processes and threads, 1 GiB of memory per process") ||
		(res.Limit == outcome.LimitMemory && res.LimitValue == "1 GiB per process")
	if res.Passed() || !hit {
		t.Fatalf("threaded suite under a 1 GiB address space: passed=%v limit %q (%s)\n%s", res.Passed(), res.Limit, res.LimitValue, res.Stdout)
	}
}

// TestLimitHit: a run that hits a limit says which, with its value.
func TestLimitHit(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 20 * time.Second, MemoryBytes: 256 << 20, FileSizeBytes: 1 << 20, Processes: 24})
	for name, c := range map[string]struct {
		src   string
		limit outcome.Limit
		value string
	}{
		"memory":    {"b = bytearray(512 << 20)\n", outcome.LimitMemory, "256 MiB per process"},
		"file size": {"open('/tmp/big', 'wb').write(b'x' * (2 << 20))\n", outcome.LimitFileSize, "1 MiB per file"},
		"threads": {"import threading, time\nts = [threading.Thread(target=time.sleep, args=(2,)) for _ in range(40)]\n" +
			"for t in ts:\n    t.start()\n", outcome.LimitThreads, "24 processes and threads, 256 MiB of memory per process"},
		"time": {"while True:\n    pass\n", outcome.LimitTime, "1s"},
		"none": {"assert False, 'plain failure'\n", "", ""},
	} {
		spec := program(c.src)
		spec.Timeout = time.Second
		if name == "threads" {
			spec.Timeout = 10 * time.Second
		}
		res, err := sb.Run(context.Background(), spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Passed() || res.Limit != c.limit || res.LimitValue != c.value {
			t.Errorf("%s: passed=%v limit %q %q, want %q %q\n%s", name, res.Passed(), res.Limit, res.LimitValue, c.limit, c.value, res.Stderr)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"512MiB": 512 << 20, "4GiB": 4 << 30, "4G": 4 << 30, "4gb": 4 << 30, "1.5GiB": 3 << 29,
		"1048576": 1 << 20, "64 MiB": 64 << 20, "2KiB": 2048, "1T": 1 << 40,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1G", "4X", "0", "1e400"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	for n, want := range map[int64]string{4 << 30: "4 GiB", 3 << 29: "1.5 GiB", 100: "100 B", 64 << 20: "64 MiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

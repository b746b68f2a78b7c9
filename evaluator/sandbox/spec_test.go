package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAddressSpace checks that a spec's AddressSpace raises only RLIMIT_AS
// (V8 reserves address space it never writes), and never lowers it.
func TestAddressSpace(t *testing.T) {
	s := &Sandbox{cfg: Config{}.WithDefaults()}
	plain := s.rlimits(s.limitsFor(&Spec{Timeout: 5 * time.Second}), 0)
	big := s.rlimits(s.limitsFor(&Spec{Timeout: 5 * time.Second, AddressSpace: 1 << 40}), 0)
	small := s.rlimits(s.limitsFor(&Spec{Timeout: 5 * time.Second, AddressSpace: 1 << 20}), 0)
	for i := range plain {
		switch {
		case plain[i].prlimit == "as" && (plain[i].hard != s.cfg.AddressSpaceBytes || big[i].hard != 1<<40 || small[i] != plain[i]):
			t.Errorf("as: plain %d, raised %d, lowered %d", plain[i].hard, big[i].hard, small[i].hard)
		case plain[i].prlimit != "as" && (plain[i] != big[i] || plain[i] != small[i]):
			t.Errorf("%s differs: %v, %v, %v", plain[i].prlimit, plain[i], big[i], small[i])
		}
	}
}

// TestRunnerFiles checks that a run's runner files are readable, and
// read-only, at RunnerDir, and that they are not in the copy.
func TestRunnerFiles(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 10 * time.Second, WarmWorkers: -1})
	res, err := sb.Run(context.Background(), Spec{RunnerFiles: map[string]string{"r.txt": "trusted\n"},
		Command: []string{"/bin/sh", "-c", "cat " + RunnerDir + "/r.txt && ! test -e r.txt && ! echo x > " + RunnerDir + "/r.txt"}})
	if err != nil || res.Status != StatusExited || res.ExitCode != 0 || res.Stdout != "trusted\n" {
		t.Fatalf("%v: exit %d, stdout %q, stderr %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, bad := range []map[string]string{{"../x": ""}, {"d/x": ""}} {
		if _, err := sb.Run(context.Background(), Spec{RunnerFiles: bad, Command: []string{"/bin/true"}}); err == nil {
			t.Errorf("runner files %v accepted", bad)
		}
	}
}

// TestCachePrivate checks a Cache: concurrent runs never share a
// directory, a later run reuses one (the pool keeps as many as ran at
// once), its seed is copied into every new one, its scratch directory is
// emptied after each run, and Close removes them all.
func TestCachePrivate(t *testing.T) {
	sb := newTestSandbox(t, Config{Timeout: 20 * time.Second, WarmWorkers: -1})
	cache := &Cache{Key: "test", Target: "/cache", Dirs: []string{"keep", "tmp"}, Scratch: []string{"tmp"},
		Seed: &Spec{Command: []string{"/bin/sh", "-c", "echo seed > /cache/keep/seeded"}}}
	// Each run leaves a marker, waits, and counts the markers it sees: a
	// directory shared with a concurrent run shows two.
	script := `test -f /cache/keep/seeded || exit 3; test -z "$(ls /cache/tmp)" || exit 4
touch /cache/marker-$MARK /cache/tmp/x; sleep 1; ls /cache | grep -c marker- ; rm /cache/marker-$MARK`
	run := func(mark string) Result {
		res, err := sb.Run(context.Background(), Spec{Command: []string{"/bin/sh", "-c", script}, Env: map[string]string{"MARK": mark}, Cache: cache})
		if err != nil {
			t.Error(err)
		}
		return res
	}
	if r := run("a"); r.ExitCode != 0 || r.Stdout != "1\n" {
		t.Fatalf("first run: exit %d %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	var wg sync.WaitGroup
	out := make([]Result, 2)
	for i := range out {
		wg.Go(func() { out[i] = run(string(rune('b' + i))) })
	}
	wg.Wait()
	for i, r := range out {
		if r.ExitCode != 0 || r.Stdout != "1\n" {
			t.Errorf("run %d: exit %d, output %q: a directory seen by two runs at once", i, r.ExitCode, r.Stdout)
		}
	}
	pool := sb.caches.pool("test")
	if n := len(pool.all); n != 2 {
		t.Errorf("%d directories after two concurrent runs, want 2", n)
	}
	if r := run("d"); r.Stdout != "1\n" {
		t.Errorf("a later run: %q", r.Stdout)
	}
	if n := len(pool.all); n != 2 {
		t.Errorf("%d directories after a later, sequential run, want 2 (reused)", n)
	}
	if _, err := sb.Run(context.Background(), Spec{Command: []string{"/bin/true"}, Cache: &Cache{Key: "k", Target: "/etc/x"}}); err == nil || !strings.Contains(err.Error(), "cache") {
		t.Errorf("a cache over the sandbox's own directories: %v", err)
	}
	dirs := append([]string{filepath.Dir(pool.seed)}, pool.all...)
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left after Close: %v", d, err)
		}
	}
}

// TestSpecPath checks a run's environment: Spec.Path first on the one
// PATH, then the sandbox's own variables and the spec's, each once.
func TestSpecPath(t *testing.T) {
	s := &Sandbox{}
	spec := &Spec{Path: []string{"/opt/go/bin"}, Env: map[string]string{"GOROOT": "/opt/go"}}
	env := map[string][]string{}
	for _, kv := range s.env(spec, "/work/m") {
		env[kv[0]] = append(env[kv[0]], kv[1])
	}
	for k, want := range map[string]string{"PATH": "/opt/go/bin:" + defaultPath, "GOROOT": "/opt/go", "HOME": "/tmp"} {
		if got := env[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want once %q", k, got, want)
		}
	}
}

// TestHiddenBind (as root): a directory the sandbox's user cannot reach
// (under a 0700 directory) is bound read-only for it all the same, the run
// still runs as that user without capabilities, and the host's mounts do
// not change. Without a mount namespace for root the run says the remedy.
func TestHiddenBind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root has directories its sandbox's user cannot reach")
	}
	sb := newTestSandbox(t, Config{Timeout: 10 * time.Second, WarmWorkers: -1})
	private := t.TempDir() // 0700, root's
	tool := filepath.Join(private, "tool")
	mustWrite(t, filepath.Join(tool, "bin", "hello"), "hello from a hidden place\n")
	if err := os.Chmod(filepath.Join(tool, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tool, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := func() string { b, _ := os.ReadFile("/proc/self/mountinfo"); return string(b) }
	before := mounts()
	spec := Spec{Binds: []Bind{{Source: tool}}, Command: []string{"/bin/sh", "-c",
		"cat " + tool + "/bin/hello; id -u; grep CapEff /proc/self/status; ! touch " + tool + "/bin/x"}}
	res, err := sb.Run(context.Background(), spec)
	if sb.hidden == nil {
		if err == nil || !strings.Contains(err.Error(), "chmod o+x") {
			t.Fatalf("without a mount namespace: %v, want the remedy", err)
		}
		t.Skip("root cannot make a mount namespace here: checked the remedy only")
	}
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v: exit %d\n%s%s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.HasPrefix(res.Stdout, "hello from a hidden place\n65534\nCapEff:\t0000000000000000\n") {
		t.Errorf("output %q", res.Stdout)
	}
	if mounts() != before {
		t.Error("the host's mounts changed")
	}
	sb.hidden = nil
	if _, err := sb.Run(context.Background(), spec); !errors.Is(err, ErrEnvironment) || !strings.Contains(err.Error(), "chmod o+x") {
		t.Errorf("without a mount namespace: %v, want ErrEnvironment with the remedy", err)
	}
}

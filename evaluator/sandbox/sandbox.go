package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/infill-dev/infill/evaluator/outcome"
	"github.com/infill-dev/infill/internal/errkind"
	"github.com/infill-dev/infill/internal/logctx"
	"go.uber.org/zap"
)

//go:embed runner.py
var runnerPy []byte

// RunnerDir is where a run's RunnerFiles are, read-only, inside the
// sandbox.
const RunnerDir = "/run/runner"

// Spec describes one run: what to copy and write, what to run, and what
// the run may see. The sandbox knows no test runner: a runner of the
// evaluator plans the command, its files and variables, and reads the
// Result; the sandbox isolates, limits, times and captures it.
type Spec struct {
	// SourceDir, if set, is a host directory copied (without following
	// symlinks, skipping Config.SkipNames) to /work/<WorkName>.
	SourceDir string
	// WorkName is the directory under /work that holds the copy and is the
	// working directory of the run (default "repo" with SourceDir, else
	// the run works in /work itself). It must be a single path element.
	WorkName string
	// Files are written into the working directory after the copy, keyed by
	// slash-separated relative path. Writes cannot leave the copy.
	Files map[string]string
	// Python, when set, runs the sandbox's trusted Python runner
	// (runner.py) with these arguments: its mode and what the mode takes
	// ("program", "p.py"; "script", "evaluate_repo.py", args...;
	// "pytest", args...; "humaneval", "p.py"), under the run's
	// interpreter (Environment.Interpreter, else Config.PythonPath). The
	// runner reads the run's nonce on stdin before untrusted code runs,
	// says START on the status pipe then (the run's clock starts there)
	// and reports what happened (Result.PassSignal, Tests, Exception,
	// Failure, Env).
	Python []string `json:",omitempty"`
	// Command is the program and its arguments when Python is not set,
	// resolved inside the sandbox.
	Command []string `json:",omitempty"`
	// Reports says that Command reads the nonce and reports on the status
	// pipe as the Python runner does (infill's reporters loaded into a
	// test runner's process): its clock starts at START.
	Reports bool `json:",omitempty"`
	// Output, if set, is called once per run with the function that starts
	// the run's clock and returns a writer that sees stdout as it arrives
	// (a reader of a test runner's event stream, which starts the clock at
	// its first test event). Otherwise a Command that does not report is
	// timed from its launch.
	Output func(start func()) io.Writer `json:"-"`
	// Build, with Output, bounds the start-up before Output starts the
	// clock (a build before the tests run): past it the run is a timeout
	// (LimitTime, "… building"), not a failure to set up; the CPU limit
	// grows by as much. Zero: Config.StartupTimeout, a setup failure.
	Build time.Duration `json:",omitempty"`
	// Env adds environment variables inside the sandbox.
	Env map[string]string `json:",omitempty"`
	// Path are directories inside the sandbox put first on PATH.
	Path []string `json:",omitempty"`
	// Binds are host directories bound into the sandbox (a toolchain, a
	// module cache).
	Binds []Bind `json:",omitempty"`
	// Cache, if set, is a directory the sandbox keeps between runs, bound
	// writable for this one (a build cache).
	Cache *Cache `json:",omitempty"`
	// RunnerFiles are trusted files of the test runner (reporters, plugins),
	// by name, readable at RunnerDir inside.
	RunnerFiles map[string]string `json:",omitempty"`
	// AddressSpace, if above Config.AddressSpaceBytes, is the run's
	// RLIMIT_AS (V8 reserves address space it never writes).
	AddressSpace int64 `json:",omitempty"`
	// Timeout overrides Config.Timeout when positive.
	Timeout time.Duration `json:",omitempty"`
	// Environment, if set, is the interpreter and the directories of a
	// repository's environment (PythonEnvironment, a node_modules). Such
	// runs always start a sandbox of their own.
	Environment *Environment `json:",omitempty"`
	// Warm lets a run of the Python runner without SourceDir or
	// Environment use a pre-started sandbox (Config.WarmWorkers): a
	// program's run.
	Warm bool `json:",omitempty"`
}

// Bind is a host directory bound into the sandbox at Target (its own path
// when empty), read-only unless Writable.
type Bind struct {
	Source, Target string
	Writable       bool `json:",omitempty"`
}

// reports says whether the run reports on the status pipe, which starts
// its clock.
func (spec *Spec) reports() bool { return len(spec.Python) > 0 || spec.Reports }

// Status says how a run ended.
type Status string

const (
	// StatusExited: the process exited by itself (ExitCode is set).
	StatusExited Status = "exited"
	// StatusSignaled: the test process was killed by a signal (Signal set).
	StatusSignaled Status = "signaled"
	// StatusTimeout: the wall-clock or CPU-time limit was hit.
	StatusTimeout Status = "timeout"
	// StatusOutputLimit: the run wrote more than Config.OutputLimitBytes.
	StatusOutputLimit Status = "output_limit"
)

// Result is the outcome of one run.
type Result struct {
	Status   Status
	ExitCode int // exit status of the test process; -1 when it did not exit
	Signal   int // signal number for StatusSignaled (and CPU-limit kills)
	// PassSignal is true when the trusted runner reported, with this run's
	// nonce, that the test code returned normally ("PASS").
	PassSignal bool
	// Tests are the counts the runner's PASS line carried, if any.
	Tests *outcome.TestCounts
	// Stdout and Stderr are the last Config.OutputTailBytes of each stream.
	Stdout, Stderr string
	// StdoutBytes and StderrBytes are the totals written.
	StdoutBytes, StderrBytes int64
	// Failure is the first failing test the runner reported ("FAIL").
	Failure *outcome.Failure
	// Limit is the resource limit the run hit, if it did not pass because
	// of one, and LimitValue its setting ("4 GiB per process").
	Limit      outcome.Limit
	LimitValue string
	// Exception is what the test code raised, as the runner reported it
	// ("EXC"); nil otherwise.
	Exception *outcome.Exception
	// Env is the runner's word that the environment, not the code under
	// test, failed ("ENV": pytest missing, a usage error); the evaluator's
	// test runner decides what it means.
	Env string `json:",omitempty"`
	// Duration is the run's own time: from the moment the runner was about
	// to run untrusted code (its START) to the end. The wall-clock limit
	// applies to it; start-up is not charged.
	Duration time.Duration
	// Startup is the time from launch to the runner's START.
	Startup time.Duration
	// Warm is set when the run used a pre-started sandbox.
	Warm bool
	// Output is the writer Spec.Output made for this run, holding what it
	// read of stdout.
	Output io.Writer `json:"-"`

	// limits are the run's limits, for NoteLimit.
	limits *runLimits
}

// Passed reports exit status 0 together with the positive pass signal.
// A test runner without one (a plain command) judges the exit status
// alone.
func (r Result) Passed() bool {
	return r.Status == StatusExited && r.ExitCode == 0 && r.PassSignal
}

// NoteLimit records, for a run that exited or was killed by a signal, which
// limit it hit when it did not pass (passed false), from its status and
// what it reported; a run that passed hit none. A timeout or an output
// flood is noted by the run itself. The evaluator's test runner calls it
// once it has read the run (its own failure and pass signal included).
func (r *Result) NoteLimit(passed bool) {
	if r.Status == StatusTimeout || r.Status == StatusOutputLimit {
		return
	}
	r.Limit, r.LimitValue = "", ""
	if passed || r.limits == nil {
		return
	}
	if r.Limit = detectLimit(r); r.Limit != "" {
		r.LimitValue = r.limits.describe(r.Limit)
	}
}

// Errors returned by Sandbox.
var (
	// ErrUnavailable means bubblewrap or user namespaces cannot be used here.
	ErrUnavailable = errkind.New(errkind.FailedPrecondition, "sandbox: bubblewrap sandbox unavailable")
	// ErrInvalidSpec wraps a problem with a Spec.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrSetup means the sandbox could not be set up for this run.
	ErrSetup = errors.New("sandbox: setup failed")
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("sandbox: closed")
	// ErrEnvironment means the run's environment, not the code under test,
	// failed: the test runner is missing (pytest not installed, a command
	// exiting 127), the test entry point is missing, pytest found no tests.
	ErrEnvironment = errors.New("sandbox: environment failure")
)

var (
	errWallTimeout    = errors.New("wall-clock timeout")
	errOutputLimit    = errors.New("output limit exceeded")
	errStartupTimeout = errors.New("start-up timeout")
)

// Sandbox runs Specs. It is safe for concurrent use.
type Sandbox struct {
	cfg        Config
	log        *zap.Logger
	bwrap      string
	supportDir string
	baseArgs   []string
	asRoot     bool
	// hidden binds what the sandbox's user cannot reach (reach.go); nil
	// when not root, or when root cannot make a mount namespace.
	hidden *hiddenTools
	// warm holds pre-started sandboxes for programs of the Python runner
	// (Spec.Warm); nil when disabled or unavailable.
	warm *warmPool
	// caches holds the directories runs keep between them (Spec.Cache).
	caches cachePools

	mu     sync.RWMutex
	closed bool
}

// New validates cfg (after applying defaults), writes the runner to a
// private support directory and probes that a sandbox can start. It returns
// an error wrapping ErrUnavailable when bubblewrap, unprivileged user
// namespaces, prlimit or the interpreter are missing. When warm sandboxes
// are enabled (Config.WarmWorkers) it starts one and runs a probe in it; if
// that fails every run takes the cold path and a warning says why.
func New(cfg Config, log *zap.Logger) (*Sandbox, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bwrap, err := exec.LookPath(cfg.BwrapPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (Debian package bubblewrap)", ErrUnavailable, err)
	}
	for _, p := range []string{cfg.PythonPath, cfg.PrlimitPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	s := &Sandbox{cfg: cfg, log: log, bwrap: bwrap, asRoot: os.Geteuid() == 0}
	if s.asRoot {
		s.hidden = probeHidden()
	}
	if err := s.writeSupport(); err != nil {
		return nil, err
	}
	s.baseArgs = s.buildBaseArgs(true)
	err = s.probe()
	if err != nil && strings.Contains(err.Error(), "disable-userns") {
		// bubblewrap before 0.8 lacks --disable-userns: nested user
		// namespaces stay possible but are still unprivileged.
		log.Warn("sandbox: bubblewrap without --disable-userns; nested user namespaces not blocked")
		s.baseArgs = s.buildBaseArgs(false)
		err = s.probe()
	}
	if err != nil {
		_ = os.RemoveAll(s.supportDir)
		return nil, err
	}
	if cfg.WarmWorkers > 0 {
		s.warm = &warmPool{max: cfg.WarmWorkers}
		if err := s.probeWarm(); err != nil {
			log.Warn("sandbox: warm sandboxes unavailable, every run starts its own", zap.Error(err))
			s.warm.close()
			s.warm = nil
		}
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Sandbox) Config() Config { return s.cfg }

// Warm reports whether pre-started sandboxes are in use.
func (s *Sandbox) Warm() bool { return s.warm != nil }

// Close stops the idle warm sandboxes and removes the support directory.
// Runs in flight finish first.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.warm != nil {
		s.warm.close()
	}
	return errors.Join(s.caches.remove(), os.RemoveAll(s.supportDir))
}

func (s *Sandbox) writeSupport() error {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "infill-sandbox-support-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSetup, err)
	}
	files := map[string][]byte{
		"runner.py": runnerPy,
		"passwd": fmt.Appendf(nil, "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:/tmp:/usr/sbin/nologin\n",
			s.cfg.UID, s.cfg.GID),
		"group": fmt.Appendf(nil, "root:x:0:\nsandbox:x:%d:\n", s.cfg.GID),
		// localhost resolves (vitest's server looks it up) though the
		// sandbox has no network beyond its own loopback.
		"hosts": []byte("127.0.0.1 localhost\n::1 localhost\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("%w: %v", ErrSetup, err)
	}
	s.supportDir = dir
	return nil
}

func (s *Sandbox) buildBaseArgs(disableUserns bool) []string {
	c := s.cfg
	a := []string{"--unshare-all", "--unshare-user"}
	if disableUserns {
		a = append(a, "--disable-userns")
	}
	a = append(a,
		"--die-with-parent", "--new-session",
		"--uid", strconv.Itoa(c.UID), "--gid", strconv.Itoa(c.GID),
		"--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
	)
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(c.TmpfsBytes, 10), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", strconv.FormatInt(c.TmpfsBytes, 10), "--tmpfs", "/tmp",
		"--ro-bind", s.supportDir, "/run/infill",
		"--ro-bind", filepath.Join(s.supportDir, "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(s.supportDir, "group"), "/etc/group",
		"--ro-bind", filepath.Join(s.supportDir, "hosts"), "/etc/hosts",
	)
	etc := []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"}
	if m, err := filepath.Glob("/etc/python3*"); err == nil {
		etc = append(etc, m...)
	}
	for _, p := range etc {
		a = append(a, "--ro-bind-try", p, p)
	}
	for _, p := range c.ReadOnlyPaths {
		a = append(a, "--ro-bind", p, p)
	}
	return a
}

func (s *Sandbox) probe() error {
	res, err := s.Run(context.Background(), Spec{Command: []string{s.cfg.PythonPath, "-c", "pass"}, Timeout: 20 * time.Second})
	if err != nil {
		return fmt.Errorf("%w: probe: %v", ErrUnavailable, err)
	}
	if res.Status != StatusExited || res.ExitCode != 0 {
		return fmt.Errorf("%w: probe exited %d (%s): %s", ErrUnavailable, res.ExitCode, res.Status, strings.TrimSpace(res.Stderr))
	}
	return nil
}

func (spec *Spec) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	switch {
	case len(spec.Python) > 0 && len(spec.Command) > 0:
		return bad("both Python and Command")
	case len(spec.Python) == 0 && (len(spec.Command) == 0 || spec.Command[0] == ""):
		return bad("nothing to run: Python and Command are empty")
	case len(spec.Python) > 0 && spec.Python[0] == "":
		return bad("the Python runner's mode is empty")
	case spec.Build < 0 || spec.Build > 0 && spec.Output == nil:
		return bad("Build needs Output, which starts the clock after the build")
	}
	if spec.WorkName != "" && (!filepath.IsLocal(spec.WorkName) || strings.ContainsRune(spec.WorkName, '/')) {
		return bad("WorkName %q must be a single path element", spec.WorkName)
	}
	for name := range spec.Files {
		if !filepath.IsLocal(name) {
			return bad("file %q must be a local relative path", name)
		}
	}
	for name := range spec.RunnerFiles {
		if !filepath.IsLocal(name) || strings.ContainsRune(name, '/') {
			return bad("runner file %q must be a file name", name)
		}
	}
	if e := spec.Environment; e != nil {
		if err := e.validate(); err != nil {
			return bad("environment: %v", err)
		}
	}
	for _, b := range spec.Binds {
		if err := b.validate(); err != nil {
			return bad("bind: %v", err)
		}
	}
	if c := spec.Cache; c != nil {
		if err := c.validate(); err != nil {
			return bad("cache: %v", err)
		}
	}
	for _, p := range spec.Path {
		if !filepath.IsAbs(p) || strings.ContainsRune(p, ':') {
			return bad("PATH entry %q must be absolute, without a colon", p)
		}
	}
	for k := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return bad("bad environment variable name %q", k)
		}
	}
	if spec.SourceDir != "" {
		fi, err := os.Stat(spec.SourceDir)
		if err != nil {
			return bad("SourceDir: %v", err)
		}
		if !fi.IsDir() {
			return bad("SourceDir %q is not a directory", spec.SourceDir)
		}
	}
	return nil
}

// validate checks a bind: absolute paths, nothing of the sandbox's own
// hidden.
func (b Bind) validate() error {
	target := b.Target
	if target == "" {
		target = b.Source
	}
	switch {
	case !filepath.IsAbs(b.Source) || filepath.Clean(b.Source) == "/":
		return fmt.Errorf("source %q must be an absolute path other than /", b.Source)
	case !filepath.IsAbs(target) || filepath.Clean(target) == "/":
		return fmt.Errorf("target %q must be an absolute path other than /", target)
	case underAny(target, reservedDirs):
		// A bind may not hide the sandbox's own directories (a toolchain
		// under /usr is visible already and needs none).
		return fmt.Errorf("target %s is one of the sandbox's own directories", target)
	}
	return nil
}

// target is where b is bound inside.
func (b Bind) target() string {
	if b.Target == "" {
		return filepath.Clean(b.Source)
	}
	return filepath.Clean(b.Target)
}

// Run executes spec in a fresh sandbox and returns how it ended. A returned
// error means no verdict could be reached: an invalid spec, a sandbox that
// failed to start, an environment failure (ErrEnvironment), or ctx
// cancelled (the run is then killed and ctx's error returned). Test
// failures, crashes, timeouts and floods are Results.
//
// Runs of the Python runner with Spec.Warm and no SourceDir or
// Environment go to a warm sandbox when those are enabled: a pre-started
// one whose server forks each run into fresh PID, mount and IPC namespaces
// with fresh tmpfs /work, /tmp and /dev/shm (see warm.go); isolation and
// limits are those of a cold run.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Result{}, ErrClosed
	}
	if err := spec.validate(); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if s.warm != nil && spec.Warm && len(spec.Python) > 0 && spec.SourceDir == "" && spec.Environment == nil &&
		len(spec.Binds) == 0 && spec.Cache == nil && len(spec.RunnerFiles) == 0 {
		return s.runWarm(ctx, &spec)
	}
	var cache string
	if c := spec.Cache; c != nil {
		dir, release, err := s.caches.take(ctx, s, c)
		if err != nil {
			return Result{}, err
		}
		defer release()
		cache = dir
	}
	return s.runCold(ctx, &spec, cache)
}

// runCold runs spec in a sandbox of its own, with the cache directory
// cache (its Spec.Cache, held for the run; "" without one).
func (s *Sandbox) runCold(ctx context.Context, spec *Spec, cache string) (Result, error) {
	runDir, err := os.MkdirTemp(s.cfg.TempDir, "infill-run-")
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer func() {
		if err := removeTree(runDir); err != nil {
			logctx.From(ctx, s.log).Warn("sandbox: removing run directory", zap.String("dir", runDir), zap.Error(err))
		}
	}()
	hidden, err := s.hide(spec, runDir)
	if err != nil {
		return Result{}, err
	}
	work := filepath.Join(runDir, "work")
	workName := spec.WorkName
	if workName == "" && spec.SourceDir != "" {
		workName = "repo"
	}
	cwd := filepath.Join(work, workName)
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	if spec.SourceDir != "" {
		var skipPaths []string
		if spec.Environment != nil {
			skipPaths = spec.Environment.Skip
		}
		if err := copyTree(spec.SourceDir, cwd, s.cfg.SkipNames, skipPaths); err != nil {
			return Result{}, fmt.Errorf("%w: copying %s: %v", ErrSetup, spec.SourceDir, err)
		}
	}
	if err := writeFiles(cwd, spec.Files); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	runnerDir := ""
	if len(spec.RunnerFiles) > 0 {
		runnerDir = filepath.Join(runDir, "runner")
		if err := os.Mkdir(runnerDir, 0o755); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		if err := writeFiles(runnerDir, spec.RunnerFiles); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	if s.asRoot {
		if err := chownTree(runDir, s.cfg.UID, s.cfg.GID); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	return s.exec(ctx, spec, runDirs{work: work, cwd: cwd, inside: path.Join("/work", workName), runner: runnerDir, cache: cache, hidden: hidden})
}

// limits are the timeouts and rlimits of one run.
type limits struct {
	timeout      time.Duration
	cpu          int64 // seconds, soft; hard is one more
	addressSpace int64 // RLIMIT_AS
}

func (s *Sandbox) limitsFor(spec *Spec) limits {
	timeout := s.cfg.Timeout
	if spec.Timeout > 0 {
		timeout = spec.Timeout
	}
	cpuLimit := s.cfg.CPUTime
	if spec.Timeout > 0 && spec.Timeout < cpuLimit {
		cpuLimit = spec.Timeout
	}
	// A build before the tests (the go command and the compiler) runs on
	// the CPU limit too.
	cpuLimit += spec.Build
	as := max(s.cfg.AddressSpaceBytes, spec.AddressSpace)
	return limits{timeout: timeout, cpu: int64((cpuLimit + time.Second - 1) / time.Second), addressSpace: as}
}

// runLimits are what a Result needs to word the limit it hit.
type runLimits struct {
	cfg *Config
	lim limits
}

func (l *runLimits) describe(limit outcome.Limit) string {
	return l.cfg.describeLimit(limit, l.lim.timeout, l.lim.cpu)
}

// rlimit is one resource limit of a run, by its name in prlimit(1)'s
// options and in Python's resource module.
type rlimit struct {
	prlimit, python string
	soft, hard      int64
}

// rlimits are a run's resource limits; extraProcs is added to the process
// limit for the processes of the sandbox itself (warm sandboxes).
func (s *Sandbox) rlimits(lim limits, extraProcs int) []rlimit {
	c := s.cfg
	procs := int64(c.Processes + extraProcs)
	return []rlimit{
		{"cpu", "RLIMIT_CPU", lim.cpu, lim.cpu + 1},
		{"data", "RLIMIT_DATA", c.MemoryBytes, c.MemoryBytes},
		{"as", "RLIMIT_AS", lim.addressSpace, lim.addressSpace},
		{"nproc", "RLIMIT_NPROC", procs, procs},
		{"fsize", "RLIMIT_FSIZE", c.FileSizeBytes, c.FileSizeBytes},
		{"nofile", "RLIMIT_NOFILE", int64(c.OpenFiles), int64(c.OpenFiles)},
		{"core", "RLIMIT_CORE", 0, 0},
	}
}

// defaultPath is PATH inside the sandbox.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// env is the environment inside the sandbox; cwd is the run's working
// directory (an environment's relative paths are under it).
func (s *Sandbox) env(spec *Spec, cwd string) [][2]string {
	pathVar := defaultPath
	var venv [][2]string
	if e := spec.Environment; e != nil && e.VirtualEnv != "" {
		v := inside(e.VirtualEnv, cwd)
		pathVar = v + "/bin:" + pathVar
		venv = append(venv, [2]string{"VIRTUAL_ENV", v})
	}
	if len(spec.Path) > 0 {
		pathVar = strings.Join(spec.Path, ":") + ":" + pathVar
	}
	// One BLAS/OpenMP thread per process: samples run side by side already,
	// and a pool per core in each would count against the process and
	// memory limits for nothing.
	env := [][2]string{{"PATH", pathVar}, {"HOME", "/tmp"}, {"TMPDIR", "/tmp"},
		{"LANG", "C.UTF-8"}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONNOUSERSITE", "1"},
		{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}, {"MKL_NUM_THREADS", "1"}}
	env = append(env, venv...)
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, [2]string{k, spec.Env[k]})
	}
	return env
}

func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("%w: nonce: %v", ErrSetup, err)
	}
	return hex.EncodeToString(b[:]), nil
}

// capture is one run's output capture and clock: stdout and stderr tails,
// the status pipe, the output limit, and the wall clock, which starts when
// the runner reports START (or at launch for ModeCommand) so that start-up
// is not charged to the run.
type capture struct {
	stdout, stderr, status *tailWriter
	cancel                 context.CancelCauseFunc

	mu       sync.Mutex
	launched time.Time
	started  time.Time
	timer    *time.Timer
	timeout  time.Duration
}

func newCapture(c *Config, cancel context.CancelCauseFunc, timeout time.Duration) *capture {
	limiter := &outputLimiter{limit: c.OutputLimitBytes, exceeded: func() { cancel(errOutputLimit) }}
	cp := &capture{
		stdout: &tailWriter{max: c.OutputTailBytes, lim: limiter},
		stderr: &tailWriter{max: c.OutputTailBytes, lim: limiter},
		cancel: cancel, timeout: timeout,
	}
	cp.status = &tailWriter{max: 64 << 10, lim: limiter, onWrite: cp.sawStatus}
	return cp
}

// launch starts the start-up clock (or, with start, the run's own clock).
func (cp *capture) launch(startup time.Duration, start bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.launched = time.Now()
	if start {
		cp.startLocked()
		return
	}
	cp.timer = time.AfterFunc(startup, func() { cp.cancel(errStartupTimeout) })
}

func (cp *capture) startLocked() {
	if !cp.started.IsZero() {
		return
	}
	if cp.timer != nil {
		cp.timer.Stop()
	}
	cp.started = time.Now()
	cp.timer = time.AfterFunc(cp.timeout, func() { cp.cancel(errWallTimeout) })
}

// start starts the run's clock (ModeGo: the test binary's first event).
func (cp *capture) start() {
	cp.mu.Lock()
	cp.startLocked()
	cp.mu.Unlock()
}

// sawStatus starts the run's clock at the runner's START line.
func (cp *capture) sawStatus(buf []byte) bool {
	if bytes.HasPrefix(buf, []byte("START\n")) || bytes.Contains(buf, []byte("\nSTART\n")) {
		cp.mu.Lock()
		cp.startLocked()
		cp.mu.Unlock()
		return true
	}
	return false
}

// stop stops the clock and fills res's captured fields.
func (cp *capture) stop(res *Result) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.timer != nil {
		cp.timer.Stop()
	}
	now := time.Now()
	if cp.started.IsZero() {
		res.Startup = now.Sub(cp.launched)
	} else {
		res.Startup = cp.started.Sub(cp.launched)
		res.Duration = now.Sub(cp.started)
	}
	res.Stdout, res.Stderr = cp.stdout.String(), cp.stderr.String()
	res.StdoutBytes, res.StderrBytes = cp.stdout.total, cp.stderr.total
}

func (cp *capture) isStarted() bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return !cp.started.IsZero()
}

// finish reads the status pipe: the runner's word that the environment
// failed (Env), its pass signal, counts, exception and failure.
func (cp *capture) finish(res *Result, nonce string) {
	st := parseStatus(cp.status.String(), nonce)
	res.Env = st.env
	res.Exception = st.exception
	res.Failure = st.failure
	res.PassSignal = st.pass
	res.Tests = st.tests
}

// interpreter is the program that runs the Python runner in spec's run.
func (s *Sandbox) interpreter(spec *Spec, cwd string) string {
	if e := spec.Environment; e != nil && e.Interpreter != "" {
		return inside(e.Interpreter, cwd)
	}
	return s.cfg.PythonPath
}

// runDirs are one cold run's directories: on the host its /work (work)
// and working directory (cwd), its runner files (runner), its cache
// (cache) and the mount points of the sources its user cannot reach
// (hidden); inside, its working directory (inside).
type runDirs struct {
	work, cwd, inside, runner, cache string
	hidden                           map[string]string
}

// bwrapArgs is the command line of a cold run: bubblewrap's namespaces,
// mounts and variables, prlimit's limits, and what runs.
func (s *Sandbox) bwrapArgs(spec *Spec, d runDirs, lim limits) []string {
	args := append([]string(nil), s.baseArgs...)
	args = append(args, "--bind", d.work, "/work")
	if e := spec.Environment; e != nil {
		args = append(args, e.args(d.cwd, d.inside, spec.SourceDir, d.hidden)...)
	}
	if d.runner != "" {
		args = append(args, "--ro-bind", d.runner, RunnerDir)
	}
	for _, b := range spec.Binds {
		if b.Writable {
			args = append(args, "--bind", b.Source, b.target())
		} else {
			args = append(args, "--ro-bind", sourceOf(d.hidden, b.Source), b.target())
		}
	}
	if d.cache != "" {
		args = append(args, "--bind", d.cache, spec.Cache.Target)
	}
	// The root tmpfs is made read-only last, after /work is mounted on it.
	args = append(args, "--remount-ro", "/", "--chdir", d.inside, "--clearenv")
	for _, kv := range s.env(spec, d.inside) {
		args = append(args, "--setenv", kv[0], kv[1])
	}
	args = append(args, "--", s.cfg.PrlimitPath)
	for _, r := range s.rlimits(lim, 0) {
		args = append(args, fmt.Sprintf("--%s=%d:%d", r.prlimit, r.soft, r.hard))
	}
	args = append(args, "--")
	if len(spec.Python) > 0 {
		return append(append(args, s.interpreter(spec, d.inside), "-B", "/run/infill/runner.py"), spec.Python...)
	}
	return append(args, spec.Command...)
}

// clockAtLaunch says whether the run's own clock starts when it is
// launched: a command that neither reports START nor has Output start it.
func (spec *Spec) clockAtLaunch() bool { return !spec.reports() && spec.Output == nil }

// exec runs spec in a sandbox of its own (runCold made its directories).
func (s *Sandbox) exec(ctx context.Context, spec *Spec, d runDirs) (Result, error) {
	c := s.cfg
	lim := s.limitsFor(spec)
	nonce, err := newNonce()
	if err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cp := newCapture(&c, cancel, lim.timeout)

	stdinR, statusR, statusW, err := runPipes(nonce)
	if err != nil {
		return Result{}, err
	}
	defer stdinR.Close()
	defer statusR.Close()

	cmd, output := s.command(runCtx, spec, d, lim, cp, stdinR, statusW)

	startup := c.StartupTimeout
	if spec.Build > 0 {
		startup = spec.Build
	}
	cp.launch(startup, spec.clockAtLaunch())
	if err := cmd.Start(); err != nil {
		statusW.Close()
		cp.stop(&Result{})
		return Result{}, fmt.Errorf("%w: starting bwrap: %v", ErrSetup, err)
	}
	statusW.Close()
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		_, _ = io.Copy(cp.status, statusR)
	}()
	waitErr := cmd.Wait()
	select {
	case <-statusDone:
	case <-time.After(cmd.WaitDelay):
		_ = statusR.SetReadDeadline(time.Now())
		<-statusDone
	}
	res := Result{ExitCode: -1, Output: output, limits: &runLimits{cfg: &s.cfg, lim: lim}}
	cp.stop(&res)
	if done, err := s.cut(ctx, runCtx, &res, spec, lim); done {
		return res, err
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("%w: waiting for bwrap: %v", ErrSetup, waitErr)
	}
	code := cmd.ProcessState.ExitCode()
	if spec.clockAtLaunch() && code == 1 && strings.HasPrefix(res.Stderr, "bwrap: ") {
		return res, fmt.Errorf("%w: %s", ErrSetup, lastLine(res.Stderr))
	}
	exitStatus(&res, cmd.ProcessState)
	cp.finish(&res, nonce)
	// A runner that said the environment failed (ENV) before it started
	// the tests did start: the test runner reads what it said.
	if spec.reports() && !cp.isStarted() && code != 0 && res.Env == "" {
		return res, fmt.Errorf("%w: sandbox did not start (exit %d): %s", ErrSetup, code, lastLine(res.Stderr))
	}
	res.NoteLimit(res.Passed())
	return res, nil
}

// command is a cold run's bubblewrap (through the hidden binds' steps
// when it has any: reach.go), its stdin, output capture and status pipe
// (fd 3), in a process group of its own that a cancel kills whole; output
// is what spec.Output made of its stdout.
func (s *Sandbox) command(ctx context.Context, spec *Spec, d runDirs, lim limits, cp *capture, stdin, status *os.File) (cmd *exec.Cmd, output io.Writer) {
	prog, args := s.bwrap, s.bwrapArgs(spec, d, lim)
	if len(d.hidden) > 0 {
		prog, args = s.hiddenCommand(d.hidden, args)
	}
	cmd = exec.CommandContext(ctx, prog, args...)
	cmd.Env = []string{}
	cmd.Stdin = stdin
	cmd.Stdout = cp.stdout
	if spec.Output != nil {
		output = spec.Output(cp.start)
		cmd.Stdout = io.MultiWriter(cp.stdout, output)
	}
	cmd.Stderr = cp.stderr
	cmd.ExtraFiles = []*os.File{status}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.asRoot && len(d.hidden) == 0 {
		// With hidden binds, setpriv drops to the user after the mounts.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), Groups: []uint32{}}
	}
	cmd.Cancel = func() error {
		// bwrap leads its own process group; killing it makes the
		// namespace's init die (--die-with-parent), which kills every
		// process left in the PID namespace.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd, output
}

// runPipes are a run's stdin, which carries the nonce (the runner reads it
// before untrusted code runs), and its status pipe (read end, and the
// write end the run gets as fd 3).
func runPipes(nonce string) (stdin, statusR, statusW *os.File, err error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	if _, err := stdinW.WriteString(nonce + "\n"); err != nil {
		stdinW.Close()
		stdinR.Close()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	stdinW.Close()
	statusR, statusW, err = os.Pipe()
	if err != nil {
		stdinR.Close()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	return stdinR, statusR, statusW, nil
}

// exitStatus sets how a run ended from bwrap's exit: its status, or the
// signal that killed the run (a CPU-time kill is a timeout).
func exitStatus(res *Result, ps *os.ProcessState) {
	code := ps.ExitCode()
	switch {
	case code < 0:
		res.Status = StatusSignaled
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = int(ws.Signal())
		}
	case code > 128 && code <= 128+64:
		// bwrap reports a child killed by signal N as exit status 128+N.
		res.Signal = code - 128
		res.Status = StatusSignaled
		if syscall.Signal(res.Signal) == syscall.SIGXCPU {
			res.Status = StatusTimeout
		}
	default:
		res.Status = StatusExited
		res.ExitCode = code
	}
}

// cut finishes a run its clock, flood or context ended: done says res
// and err are its result.
func (s *Sandbox) cut(ctx, runCtx context.Context, res *Result, spec *Spec, lim limits) (done bool, err error) {
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, errWallTimeout):
		res.Status = StatusTimeout
		s.noteCut(res, lim)
		return true, nil
	case errors.Is(cause, errOutputLimit):
		res.Status = StatusOutputLimit
		s.noteCut(res, lim)
		return true, nil
	case errors.Is(cause, errStartupTimeout) && spec.Build > 0:
		res.Status, res.Limit, res.LimitValue = StatusTimeout, outcome.LimitTime, FormatDuration(spec.Build)+" building"
		return true, nil
	case errors.Is(cause, errStartupTimeout):
		return true, fmt.Errorf("%w: the sandbox did not start within %v", ErrSetup, s.cfg.StartupTimeout)
	case ctx.Err() != nil:
		return true, ctx.Err()
	}
	return false, nil
}

// noteCut records the limit a run cut short hit: its time, CPU time or
// output.
func (s *Sandbox) noteCut(res *Result, lim limits) {
	if res.Limit = detectLimit(res); res.Limit != "" {
		res.LimitValue = s.cfg.describeLimit(res.Limit, lim.timeout, lim.cpu)
	}
}

// runnerStatus is what the runner reported on the status pipe.
type runnerStatus struct {
	pass      bool
	tests     *outcome.TestCounts
	exception *outcome.Exception
	failure   *outcome.Failure
	env       string
}

// parseStatus reads the runner's lines carrying this run's nonce: "PASS",
// "EXC", "FAIL" and "ENV", each followed by JSON.
func parseStatus(status, nonce string) runnerStatus {
	var st runnerStatus
	for _, line := range strings.Split(status, "\n") {
		kind, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, payload, ok := strings.Cut(rest, " ")
		if !ok || n != nonce {
			continue
		}
		switch kind {
		case "PASS":
			st.pass = true
			var tc outcome.TestCounts
			if json.Unmarshal([]byte(payload), &tc) == nil && strings.Contains(payload, `"passed"`) {
				st.tests = &tc
			}
		case "EXC":
			var e outcome.Exception
			if json.Unmarshal([]byte(payload), &e) == nil {
				st.exception = &e
			}
		case "FAIL":
			var f outcome.Failure
			if json.Unmarshal([]byte(payload), &f) == nil {
				st.failure = &f
			}
		case "ENV":
			var e struct {
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(payload), &e) == nil {
				st.env = e.Message
			}
			if st.env == "" {
				st.env = "the test environment failed"
			}
		}
	}
	return st
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// outputLimiter counts bytes across a run's streams and fires once when the
// total exceeds limit.
type outputLimiter struct {
	mu       sync.Mutex
	total    int64
	limit    int64
	fired    bool
	exceeded func()
}

func (l *outputLimiter) add(n int) {
	l.mu.Lock()
	l.total += int64(n)
	fire := !l.fired && l.total > l.limit
	if fire {
		l.fired = true
	}
	l.mu.Unlock()
	if fire {
		l.exceeded()
	}
}

// Tail keeps the last bytes written to it (a test runner's reader of an
// event stream keeps each test's output so).
type Tail = tailWriter

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &tailWriter{max: max} }

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
	lim   *outputLimiter
	// onWrite, if set, sees the tail after each write until it returns true.
	onWrite func(tail []byte) bool
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.total += int64(len(p))
	if len(p) >= w.max {
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
	} else {
		if over := len(w.buf) + len(p) - w.max; over > 0 {
			w.buf = append(w.buf[:0], w.buf[over:]...)
		}
		w.buf = append(w.buf, p...)
	}
	if w.onWrite != nil && w.onWrite(w.buf) {
		w.onWrite = nil
	}
	w.mu.Unlock()
	if w.lim != nil {
		w.lim.add(len(p))
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD")))
}

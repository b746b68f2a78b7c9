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

// Mode selects what runs inside the sandbox and which pass signal applies.
type Mode int

const (
	// ModeProgram executes the Python file Spec.Target as __main__ under the
	// trusted runner (HumanEval). Any exception, SystemExit included, fails.
	ModeProgram Mode = iota + 1
	// ModeScript runs the Python script Spec.Target with Spec.Args like
	// `python script args...` (ExecRepoBench's evaluate_repo.py).
	// SystemExit(0) counts as normal completion.
	ModeScript
	// ModePytest runs pytest.main(Spec.Args) inside the runner and reports
	// the number of passed, failed, errored and skipped tests.
	ModePytest
	// ModeCommand runs Spec.Command directly. It has no positive pass signal
	// beyond the exit status: Result.PassSignal stays false. Exit status 127
	// (command not found) and 126 (not executable) are ErrEnvironment.
	ModeCommand
	// ModeHumanEval runs the Python file Spec.Target the way the
	// human-eval-infilling harness runs a check program: the functions its
	// reliability guard disables are disabled the same way (replaced by
	// None), stdin raises OSError when read, and the text is executed in a
	// fresh, empty globals dict (so __name__ is not "__main__"). Any
	// exception fails; Result.Exception says which.
	ModeHumanEval
)

func (m Mode) String() string {
	switch m {
	case ModeProgram:
		return "program"
	case ModeScript:
		return "script"
	case ModePytest:
		return "pytest"
	case ModeCommand:
		return "command"
	case ModeHumanEval:
		return "humaneval"
	case ModeNode:
		return "node"
	case ModeVitest:
		return "vitest"
	case ModeGo:
		return "go"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Spec describes one run.
type Spec struct {
	Mode Mode
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
	// Target is the Python file (relative to the working directory) for
	// ModeProgram and ModeScript.
	Target string
	// Args are the script arguments (ModeScript) or pytest arguments
	// (ModePytest).
	Args []string
	// Command is argv for ModeCommand, resolved inside the sandbox.
	Command []string
	// Env adds environment variables inside the sandbox.
	Env map[string]string
	// Timeout overrides Config.Timeout when positive.
	Timeout time.Duration
	// Environment, if set, is the interpreter and toolchain the run uses
	// instead of Config.PythonPath (PythonEnvironment). Such runs always
	// start a sandbox of their own.
	Environment *Environment

	// Set by Run for ModeGo (goRun): writable and read-only binds, the
	// toolchain's bin directory (first on PATH), its variables and the go
	// command.
	binds, roBinds [][2]string
	goBin          string
	goEnv          [][2]string
	goCmd          []string
}

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
	// nonce, that the test code returned normally.
	PassSignal bool
	// Tests holds the runner's counts (Mode.CountsTests: pytest and the
	// JavaScript runners with a pass signal; go test always).
	Tests *outcome.TestCounts
	// Stdout and Stderr are the last Config.OutputTailBytes of each stream.
	Stdout, Stderr string
	// StdoutBytes and StderrBytes are the totals written.
	StdoutBytes, StderrBytes int64
	// Failure is the first failing pytest test, when one failed.
	Failure *outcome.Failure
	// Limit is the resource limit the run hit, if it did not pass because
	// of one, and LimitValue its setting ("4 GiB per process").
	Limit      outcome.Limit
	LimitValue string
	// Exception is what the test code raised, as the runner reported it
	// (ModeProgram, ModeHumanEval, ModeScript, ModePytest); nil otherwise.
	Exception *outcome.Exception
	// Duration is the run's own time: from the moment the runner was about
	// to run untrusted code (its START) to the end. The wall-clock limit
	// applies to it; start-up is not charged.
	Duration time.Duration
	// Startup is the time from launch to the runner's START.
	Startup time.Duration
	// Warm is set when the run used a pre-started sandbox.
	Warm bool
}

// Passed reports exit status 0 together with the positive pass signal
// (ModeCommand has none and is judged by its exit status alone).
func (r Result) Passed(m Mode) bool {
	if r.Status != StatusExited || r.ExitCode != 0 {
		return false
	}
	if m == ModeCommand {
		return true
	}
	return r.PassSignal
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
	// warm holds pre-started sandboxes for ModeProgram and ModeHumanEval
	// runs without a SourceDir; nil when disabled or unavailable.
	warm *warmPool
	// gocache holds the Go toolchain and the private build caches of
	// ModeGo runs (gotest.go).
	gocache goCaches

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
	return errors.Join(s.gocache.remove(), os.RemoveAll(s.supportDir))
}

func (s *Sandbox) writeSupport() error {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "infill-sandbox-support-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSetup, err)
	}
	files := map[string][]byte{
		"runner.py":           runnerPy,
		"node_reporter.mjs":   nodeReporterMjs,
		"vitest_reporter.mjs": vitestReporterMjs,
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
	res, err := s.Run(context.Background(), Spec{Mode: ModeCommand, Command: []string{s.cfg.PythonPath, "-c", "pass"}, Timeout: 20 * time.Second})
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
	switch spec.Mode {
	case ModeProgram, ModeScript, ModeHumanEval:
		if spec.Target == "" || !filepath.IsLocal(spec.Target) {
			return bad("Target %q must be a local relative path", spec.Target)
		}
	case ModePytest, ModeNode:
	case ModeVitest:
		if spec.Target == "" || !filepath.IsLocal(spec.Target) {
			return bad("Target %q (vitest's entry script) must be a local relative path", spec.Target)
		}
	case ModeGo:
		if spec.Target == "" || !filepath.IsLocal(spec.Target) {
			return bad("Target %q must be the package's directory, relative", spec.Target)
		}
	case ModeCommand:
		if len(spec.Command) == 0 || spec.Command[0] == "" {
			return bad("Command is empty")
		}
	default:
		return bad("unknown mode %v", spec.Mode)
	}
	if spec.WorkName != "" && (!filepath.IsLocal(spec.WorkName) || strings.ContainsRune(spec.WorkName, '/')) {
		return bad("WorkName %q must be a single path element", spec.WorkName)
	}
	for name := range spec.Files {
		if !filepath.IsLocal(name) {
			return bad("file %q must be a local relative path", name)
		}
	}
	if e := spec.Environment; e != nil {
		if err := e.validate(); err != nil {
			return bad("environment: %v", err)
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

// Run executes spec in a fresh sandbox and returns how it ended. A returned
// error means no verdict could be reached: an invalid spec, a sandbox that
// failed to start, an environment failure (ErrEnvironment), or ctx
// cancelled (the run is then killed and ctx's error returned). Test
// failures, crashes, timeouts and floods are Results.
//
// ModeProgram and ModeHumanEval runs without a SourceDir go to a warm
// sandbox when those are enabled: a pre-started one whose server forks each
// run into fresh PID, mount and IPC namespaces with fresh tmpfs /work, /tmp
// and /dev/shm (see warm.go); isolation and limits are those of a cold run.
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
	if e := spec.Environment; e != nil && s.asRoot {
		for _, m := range e.Mounts {
			if err := reachable(m.Source, s.cfg.UID, s.cfg.GID); err != nil {
				return Result{}, fmt.Errorf("%w: %v", ErrEnvironment, err)
			}
		}
	}
	if err := s.checkNode(&spec); err != nil {
		return Result{}, err
	}
	if s.warm != nil && spec.SourceDir == "" && spec.Environment == nil && (spec.Mode == ModeProgram || spec.Mode == ModeHumanEval) {
		return s.runWarm(ctx, &spec)
	}
	runDir, err := os.MkdirTemp(s.cfg.TempDir, "infill-run-")
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer func() {
		if err := removeTree(runDir); err != nil {
			logctx.From(ctx, s.log).Warn("sandbox: removing run directory", zap.String("dir", runDir), zap.Error(err))
		}
	}()
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
	if spec.Mode == ModeGo {
		release, err := s.goRun(ctx, &spec)
		if err != nil {
			return Result{}, err
		}
		defer release()
	}
	if s.asRoot {
		if err := chownTree(runDir, s.cfg.UID, s.cfg.GID); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	return s.exec(ctx, &spec, work, cwd, path.Join("/work", workName))
}

// limits are the timeouts and rlimits of one run.
type limits struct {
	timeout time.Duration
	cpu     int64 // seconds, soft; hard is one more
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
	if spec.Mode == ModeGo {
		// The go command and the compiler run for the build too.
		cpuLimit += s.cfg.GoBuildTimeout
	}
	return limits{timeout: timeout, cpu: int64((cpuLimit + time.Second - 1) / time.Second)}
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
		{"as", "RLIMIT_AS", c.AddressSpaceBytes, c.AddressSpaceBytes},
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
	if spec.goBin != "" {
		pathVar = spec.goBin + ":" + pathVar
	}
	// One BLAS/OpenMP thread per process: samples run side by side already,
	// and a pool per core in each would count against the process and
	// memory limits for nothing.
	env := [][2]string{{"PATH", pathVar}, {"HOME", "/tmp"}, {"TMPDIR", "/tmp"},
		{"LANG", "C.UTF-8"}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONNOUSERSITE", "1"},
		{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}, {"MKL_NUM_THREADS", "1"}}
	env = append(env, venv...)
	env = append(env, nodeEnv(spec.Mode)...)
	env = append(env, spec.goEnv...)
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

// finish interprets the status pipe: an environment failure becomes
// ErrEnvironment; otherwise the pass signal, pytest counts and exception.
func (cp *capture) finish(res *Result, spec *Spec, nonce string) error {
	if spec.Mode == ModeCommand {
		cmd := strings.Join(spec.Command, " ")
		if len(cmd) > 120 {
			cmd = cmd[:120] + "..."
		}
		switch res.ExitCode {
		case 127:
			return fmt.Errorf("%w: test command not found (exit 127): %s", ErrEnvironment, cmd)
		case 126:
			return fmt.Errorf("%w: test command cannot be executed (exit 126): %s", ErrEnvironment, cmd)
		}
		return nil
	}
	st := parseStatus(cp.status.String(), nonce)
	if st.env != "" && spec.Mode == ModePytest && strings.Contains(res.Stderr+res.Stdout, "ImportError while loading conftest") {
		// pytest calls a conftest.py that does not import a usage error
		// (exit 4), but what breaks it may be the code under test: a
		// failure like any other, whose import error the caller judges.
		st.env = ""
	}
	if st.env != "" {
		if line := usageLine(res.Stderr + "\n" + res.Stdout); line != "" && spec.Mode == ModePytest {
			return fmt.Errorf("%w: %s: %s", ErrEnvironment, st.env, line)
		}
		return fmt.Errorf("%w: %s", ErrEnvironment, st.env)
	}
	res.Exception = st.exception
	res.Failure = st.failure
	res.PassSignal = st.pass
	if spec.Mode.CountsTests() {
		res.Tests = st.tests
		if st.pass && st.tests == nil {
			res.PassSignal = false
		}
	}
	return nil
}

// interpreter is the program that runs the runner in spec's run.
func (s *Sandbox) interpreter(spec *Spec, cwd string) string {
	if e := spec.Environment; e != nil && e.Interpreter != "" {
		return inside(e.Interpreter, cwd)
	}
	return s.cfg.PythonPath
}

// exec runs spec in a sandbox whose /work is hostWork; hostCwd is the
// working directory on the host, cwd inside.
func (s *Sandbox) exec(ctx context.Context, spec *Spec, hostWork, hostCwd, cwd string) (Result, error) {
	c := s.cfg
	lim := s.limitsFor(spec)
	nonce, err := newNonce()
	if err != nil {
		return Result{}, err
	}

	args := append([]string(nil), s.baseArgs...)
	args = append(args, "--bind", hostWork, "/work")
	if e := spec.Environment; e != nil {
		args = append(args, e.args(hostCwd, cwd, spec.SourceDir)...)
	}
	for _, b := range spec.roBinds {
		args = append(args, "--ro-bind", b[0], b[1])
	}
	for _, b := range spec.binds {
		args = append(args, "--bind", b[0], b[1])
	}
	// The root tmpfs is made read-only last, after /work is mounted on it.
	args = append(args, "--remount-ro", "/", "--chdir", cwd, "--clearenv")
	for _, kv := range s.env(spec, cwd) {
		args = append(args, "--setenv", kv[0], kv[1])
	}
	args = append(args, "--", c.PrlimitPath)
	for _, r := range nodeRlimits(spec.Mode, s.rlimits(lim, 0)) {
		args = append(args, fmt.Sprintf("--%s=%d:%d", r.prlimit, r.soft, r.hard))
	}
	args = append(args, "--")
	python := s.interpreter(spec, cwd)
	switch spec.Mode {
	case ModeCommand:
		args = append(args, spec.Command...)
	case ModeNode, ModeVitest:
		args = append(args, s.nodeArgv(spec, cwd)...)
	case ModeGo:
		args = append(args, spec.goCmd...)
	case ModePytest:
		args = append(append(args, python, "-B", "/run/infill/runner.py", "pytest"), spec.Args...)
	default:
		args = append(append(args, python, "-B", "/run/infill/runner.py", spec.Mode.String(), spec.Target), spec.Args...)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cp := newCapture(&c, cancel, lim.timeout)

	// stdin carries the nonce; the runner reads it before untrusted code runs.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer stdinR.Close()
	if _, err := stdinW.WriteString(nonce + "\n"); err != nil {
		stdinW.Close()
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	stdinW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer statusR.Close()

	cmd := exec.CommandContext(runCtx, s.bwrap, args...)
	cmd.Env = []string{}
	cmd.Stdin = stdinR
	cmd.Stdout = cp.stdout
	var goEvents *GoEvents
	if spec.Mode == ModeGo {
		goEvents = NewGoEvents(c.OutputTailBytes)
		goEvents.OnStart = cp.start
		cmd.Stdout = io.MultiWriter(cp.stdout, goEvents)
	}
	cmd.Stderr = cp.stderr
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.asRoot {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID), Groups: []uint32{}}
	}
	cmd.Cancel = func() error {
		// bwrap leads its own process group; killing it makes the
		// namespace's init die (--die-with-parent), which kills every
		// process left in the PID namespace.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	startup := c.StartupTimeout
	if spec.Mode == ModeGo {
		startup = c.GoBuildTimeout
	}
	cp.launch(startup, spec.Mode == ModeCommand)
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
	res := Result{ExitCode: -1}
	cp.stop(&res)
	if goEvents != nil {
		// The tests' output, not the JSON it came in.
		res.Stdout = goEvents.Text()
	}
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, errWallTimeout):
		res.Status = StatusTimeout
		s.noteLimit(&res, spec, lim)
		return res, nil
	case errors.Is(cause, errOutputLimit):
		res.Status = StatusOutputLimit
		s.noteLimit(&res, spec, lim)
		return res, nil
	case errors.Is(cause, errStartupTimeout) && spec.Mode == ModeGo:
		res.Status, res.Limit, res.LimitValue = StatusTimeout, outcome.LimitTime, FormatDuration(c.GoBuildTimeout)+" building"
		return res, nil
	case errors.Is(cause, errStartupTimeout):
		return res, fmt.Errorf("%w: the sandbox did not start within %v", ErrSetup, c.StartupTimeout)
	case ctx.Err() != nil:
		return res, ctx.Err()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("%w: waiting for bwrap: %v", ErrSetup, waitErr)
	}
	code := cmd.ProcessState.ExitCode()
	if spec.Mode == ModeCommand && code == 1 && strings.HasPrefix(res.Stderr, "bwrap: ") {
		return res, fmt.Errorf("%w: %s", ErrSetup, lastLine(res.Stderr))
	}
	switch {
	case code < 0:
		res.Status = StatusSignaled
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
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
	if spec.Mode == ModeGo {
		if err := finishGo(&res, goEvents); err != nil {
			return res, err
		}
	} else if err := cp.finish(&res, spec, nonce); err != nil {
		return res, err
	}
	if spec.Mode != ModeCommand && spec.Mode != ModeGo && !cp.isStarted() && code != 0 {
		return res, fmt.Errorf("%w: sandbox did not start (exit %d): %s", ErrSetup, code, lastLine(res.Stderr))
	}
	s.noteLimit(&res, spec, lim)
	return res, nil
}

// noteLimit records which limit a run that did not pass hit.
func (s *Sandbox) noteLimit(res *Result, spec *Spec, lim limits) {
	if res.Passed(spec.Mode) {
		return
	}
	if res.Limit = detectLimit(res); res.Limit != "" {
		res.LimitValue = s.cfg.describeLimit(res.Limit, lim.timeout, lim.cpu)
	}
}

// usageLine picks, from the output of a pytest that stopped on a usage
// error, the line that says what was wrong: argparse's "error:" line, the
// warning filter pytest could not parse and why, a plugin it could not
// load.
func usageLine(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.Contains(t, ": error: "):
			return t[strings.Index(t, ": error: ")+2:]
		case strings.HasPrefix(t, "ERROR: while parsing the following warning configuration"):
			entry := ""
			for _, n := range lines[i+1:] {
				if n = strings.TrimSpace(n); n != "" {
					entry = n
					break
				}
			}
			cause := ""
			for _, n := range lines[i+1:] {
				n = strings.TrimSpace(n)
				if strings.HasPrefix(n, "ModuleNotFoundError:") || strings.HasPrefix(n, "ImportError:") || strings.HasPrefix(n, "AttributeError:") {
					cause = n
				}
			}
			return strings.TrimSpace("warning filter " + entry + ": " + cause)
		case strings.HasPrefix(t, "ImportError: Error importing plugin"), strings.HasPrefix(t, "Missing required plugins"),
			strings.HasPrefix(t, "ERROR: file or directory not found"), strings.HasPrefix(t, "ERROR: not found"):
			return strings.TrimPrefix(t, "ERROR: ")
		}
	}
	return ""
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

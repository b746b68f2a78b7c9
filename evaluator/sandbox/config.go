package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Config configures a Sandbox. The zero value of each field selects the
// default documented on it; call Validate (New does) after setting fields.
type Config struct {
	// BwrapPath is the bubblewrap binary (default: "bwrap" looked up in PATH).
	BwrapPath string
	// PythonPath is the interpreter used inside the sandbox (default
	// /usr/bin/python3, Debian's). It must lie under /usr or ReadOnlyPaths.
	PythonPath string
	// PrlimitPath is util-linux prlimit(1) used to set rlimits inside the
	// namespace (default /usr/bin/prlimit). It must lie under /usr.
	PrlimitPath string
	// TempDir holds the per-run private copies (default os.TempDir()).
	TempDir string
	// Timeout is the wall-clock limit of one run (default 30s).
	Timeout time.Duration
	// CPUTime is RLIMIT_CPU per process (default: Timeout rounded up).
	CPUTime time.Duration
	// MemoryBytes is RLIMIT_DATA per process (default 4 GiB): the memory a
	// process may write to — heap, anonymous private mappings, thread
	// stacks as they are created. Address-space reservations that are
	// never written (glibc's 64 MiB malloc arena per thread, V8's and Go's
	// heaps reserved PROT_NONE) do not count, so a threaded test suite
	// pays only for its threads' stacks, as RLIMIT_AS would not let it.
	MemoryBytes int64
	// AddressSpaceBytes is RLIMIT_AS per process (default 4 × MemoryBytes):
	// a backstop for what RLIMIT_DATA does not count (shared anonymous
	// mappings such as mmap.mmap(-1, n)). Reservations count here, so it
	// stays well above MemoryBytes.
	AddressSpaceBytes int64
	// Processes is RLIMIT_NPROC inside the sandbox's user namespace: the
	// processes and threads a run may have at once (default 256).
	Processes int
	// FileSizeBytes is RLIMIT_FSIZE (default 64 MiB).
	FileSizeBytes int64
	// OpenFiles is RLIMIT_NOFILE (default 256).
	OpenFiles int
	// TmpfsBytes is the size of the private /tmp (default 64 MiB).
	TmpfsBytes int64
	// OutputTailBytes is how much of the end of stdout and of stderr is kept
	// (default 16 KiB each).
	OutputTailBytes int
	// OutputLimitBytes is the total stdout+stderr a run may write before it is
	// killed (default 8 MiB).
	OutputLimitBytes int64
	// UID and GID are the ids inside the sandbox (default 65534, nobody).
	// When the calling process is root the sandbox is also started as this
	// uid outside, because the kernel does not apply RLIMIT_NPROC to root.
	UID, GID int
	// ReadOnlyPaths are extra host paths (absolute) bound read-only at the
	// same place, e.g. a virtual environment.
	ReadOnlyPaths []string
	// SkipNames are file or directory names not copied into the private copy
	// (default ".git" and "__pycache__").
	SkipNames []string
	// StartupTimeout bounds the time from launch until the runner is about
	// to run untrusted code (default 30s); past it the run is an ErrSetup.
	// Start-up is not charged to Timeout.
	StartupTimeout time.Duration
	// WarmWorkers is the most idle pre-started sandboxes kept for programs
	// of the Python runner (Spec.Warm; default
	// runtime.NumCPU(); negative: none, every run starts its own sandbox).
	// One is started on demand for each run in flight that finds none idle.
	WarmWorkers int
}

// Defaults.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMemoryBytes      = 4 << 30
	DefaultProcesses        = 256
	DefaultFileSizeBytes    = 64 << 20
	DefaultOpenFiles        = 256
	DefaultTmpfsBytes       = 64 << 20
	DefaultOutputTailBytes  = 16 << 10
	DefaultOutputLimitBytes = 8 << 20
	DefaultStartupTimeout   = 30 * time.Second
	nobody                  = 65534
)

// ErrInvalidConfig is returned (wrapped) by Validate.
var ErrInvalidConfig = errors.New("sandbox: invalid config")

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.BwrapPath == "" {
		c.BwrapPath = "bwrap"
	}
	if c.PythonPath == "" {
		c.PythonPath = "/usr/bin/python3"
	}
	if c.PrlimitPath == "" {
		c.PrlimitPath = "/usr/bin/prlimit"
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.CPUTime == 0 {
		c.CPUTime = c.Timeout
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.AddressSpaceBytes == 0 {
		c.AddressSpaceBytes = 4 * c.MemoryBytes
	}
	if c.Processes == 0 {
		c.Processes = DefaultProcesses
	}
	if c.FileSizeBytes == 0 {
		c.FileSizeBytes = DefaultFileSizeBytes
	}
	if c.OpenFiles == 0 {
		c.OpenFiles = DefaultOpenFiles
	}
	if c.TmpfsBytes == 0 {
		c.TmpfsBytes = DefaultTmpfsBytes
	}
	if c.OutputTailBytes == 0 {
		c.OutputTailBytes = DefaultOutputTailBytes
	}
	if c.OutputLimitBytes == 0 {
		c.OutputLimitBytes = DefaultOutputLimitBytes
	}
	if c.UID == 0 {
		c.UID = nobody
	}
	if c.GID == 0 {
		c.GID = nobody
	}
	if c.SkipNames == nil {
		c.SkipNames = []string{".git", "__pycache__"}
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = DefaultStartupTimeout
	}
	if c.WarmWorkers == 0 {
		c.WarmWorkers = runtime.NumCPU()
	}
	return c
}

// Validate reports the first invalid field. It expects defaults applied.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Timeout <= 0 || c.StartupTimeout <= 0:
		return bad("Timeout and StartupTimeout must be positive")
	case c.CPUTime <= 0:
		return bad("CPUTime must be positive")
	case c.MemoryBytes < 16<<20:
		return bad("MemoryBytes %d below 16 MiB", c.MemoryBytes)
	case c.AddressSpaceBytes < c.MemoryBytes:
		return bad("AddressSpaceBytes %d below MemoryBytes %d", c.AddressSpaceBytes, c.MemoryBytes)
	case c.Processes < 2:
		return bad("Processes must be at least 2 (runner and sandbox init)")
	case c.FileSizeBytes <= 0 || c.OpenFiles < 16 || c.TmpfsBytes <= 0:
		return bad("FileSizeBytes, TmpfsBytes must be positive and OpenFiles at least 16")
	case c.OutputTailBytes <= 0 || c.OutputLimitBytes < int64(c.OutputTailBytes):
		return bad("OutputTailBytes must be positive and not above OutputLimitBytes")
	case c.UID <= 0 || c.GID <= 0:
		return bad("UID and GID must be non-root")
	}
	if !filepath.IsAbs(c.PythonPath) || !filepath.IsAbs(c.PrlimitPath) {
		return bad("PythonPath and PrlimitPath must be absolute")
	}
	for _, p := range c.ReadOnlyPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			return bad("ReadOnlyPaths entry %q must be an absolute path other than /", p)
		}
	}
	if !c.visible(c.PythonPath) {
		return bad("PythonPath %q is not under /usr or a ReadOnlyPaths entry", c.PythonPath)
	}
	if !underDir(c.PrlimitPath, "/usr") {
		return bad("PrlimitPath %q is not under /usr", c.PrlimitPath)
	}
	return nil
}

// visible reports whether host path p is mounted inside the sandbox.
func (c Config) visible(p string) bool {
	if underDir(p, "/usr") || underDir(p, "/bin") {
		return true
	}
	for _, ro := range c.ReadOnlyPaths {
		if underDir(p, ro) {
			return true
		}
	}
	return false
}

func underDir(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

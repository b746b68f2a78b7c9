package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Environment is the toolchain a run uses instead of the sandbox's default
// interpreter (Config.PythonPath): the interpreter that runs the trusted
// runner and the tests, the host directories it needs (bound read-only),
// and the variables it expects. PythonEnvironment makes one for a Python
// interpreter or virtual environment; a runner for another language plugs
// in the same way (its interpreter, its toolchain's directories, its
// variables).
//
// Paths inside the sandbox (Interpreter, Mount.Target, VirtualEnv) are
// absolute, or relative to the run's working directory: the private copy
// of the repository, for an environment that lives inside the repository.
type Environment struct {
	// Name describes it in messages: "virtual environment .venv".
	Name string
	// Interpreter runs the runner (absolute, or relative to the working
	// directory). Empty: Config.PythonPath.
	Interpreter string
	// Mounts are bound read-only.
	Mounts []Mount
	// VirtualEnv, if set, is exported as VIRTUAL_ENV and its bin directory
	// goes first on PATH, as activating it would.
	VirtualEnv string
	// Skip are slash-separated paths relative to the source directory that
	// are not copied into the private copy (a virtual environment inside
	// the repository, which is mounted instead).
	Skip []string
	// AliasSource also shows the private copy at the source directory's
	// own host path, so that absolute paths the environment holds (an
	// editable install of the repository, a .pth file) reach the copy
	// with the completion — never the pristine repository, which is not
	// visible. It is left out where that path would hide part of the
	// sandbox (/usr, /proc, the working directory, ...).
	AliasSource bool
}

// Mount binds the host directory Source read-only at Target.
type Mount struct {
	Source string
	Target string
}

// systemDirs are bound read-only in every sandbox already.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// reservedDirs may not be hidden by a mount or the source alias.
var reservedDirs = append([]string{"/proc", "/dev", "/etc", "/run", "/sys", "/work"}, systemDirs...)

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if underDir(p, d) {
			return true
		}
	}
	return false
}

// PythonEnvironment resolves the interpreter python for running tests of
// the repository at repoDir (both host paths; a relative python is inside
// repoDir) without running anything on the host: the interpreter's venv
// (the directory above its bin/ holding pyvenv.cfg), and the installation
// the venv was made from when it lies outside the directories every
// sandbox has (/usr). A venv inside the repository is mounted in the
// private copy where it was, and not copied; one outside at its own path.
// An error wraps ErrEnvironment: no such interpreter, or an installation
// that cannot be mounted (not a Python prefix: no lib/python3.*).
func PythonEnvironment(python, repoDir string) (*Environment, error) {
	host := python
	if !filepath.IsAbs(host) {
		if repoDir == "" || !filepath.IsLocal(host) {
			return nil, fmt.Errorf("%w: interpreter %q: a relative path must stay inside the repository", ErrEnvironment, python)
		}
		host = filepath.Join(repoDir, host)
	}
	host = filepath.Clean(host)
	fi, err := os.Stat(host)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: interpreter %s: %w", ErrEnvironment, python, unwrapPath(err))
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("%w: interpreter %s is not an executable file", ErrEnvironment, python)
	}
	env := &Environment{}
	venv := filepath.Dir(filepath.Dir(host))
	home := ""
	if cfg, err := os.ReadFile(filepath.Join(venv, "pyvenv.cfg")); err == nil {
		home = pyvenvHome(string(cfg))
	} else {
		venv = ""
	}
	real, err := filepath.EvalSymlinks(host)
	if err != nil {
		return nil, fmt.Errorf("%w: interpreter %s: %w", ErrEnvironment, python, unwrapPath(err))
	}
	var prefixes []string // installations to mount, host paths
	for _, bin := range []string{filepath.Dir(real), home} {
		if bin == "" || underAny(bin, systemDirs) || venv != "" && underDir(bin, venv) {
			continue
		}
		if b, err := filepath.EvalSymlinks(bin); err == nil {
			bin = b
		}
		prefix := filepath.Dir(bin)
		if underAny(prefix, systemDirs) || venv != "" && underDir(prefix, venv) {
			continue
		}
		if err := checkPrefix(prefix); err != nil {
			return nil, fmt.Errorf("%w: interpreter %s comes from %s: %v", ErrEnvironment, python, prefix, err)
		}
		prefixes = append(prefixes, prefix)
	}
	for _, p := range prefixes {
		if !containsMount(env.Mounts, p) {
			env.Mounts = append(env.Mounts, Mount{Source: p, Target: p})
		}
	}
	if venv == "" {
		// A plain installation: run it by its real path, which its prefix
		// (now mounted, or under /usr) holds.
		env.Name, env.Interpreter = "interpreter "+python, real
		return env, nil
	}
	env.AliasSource = true
	rel, inRepo := "", false
	if repoDir != "" {
		if r, err := filepath.Rel(repoDir, venv); err == nil && filepath.IsLocal(r) {
			rel, inRepo = filepath.ToSlash(r), true
		}
	}
	exe := filepath.Base(host)
	if inRepo {
		env.Name = "virtual environment " + rel
		env.Skip = []string{rel}
		env.Mounts = append(env.Mounts, Mount{Source: venv, Target: rel})
		env.VirtualEnv = rel
		env.Interpreter = path.Join(rel, "bin", exe)
		return env, nil
	}
	env.Name = "virtual environment " + venv
	if underAny(venv, reservedDirs) && !underAny(venv, systemDirs) {
		return nil, fmt.Errorf("%w: virtual environment %s lies where the sandbox has its own files", ErrEnvironment, venv)
	}
	if !underAny(venv, systemDirs) {
		env.Mounts = append(env.Mounts, Mount{Source: venv, Target: venv})
	}
	env.VirtualEnv = venv
	env.Interpreter = filepath.Join(venv, "bin", exe)
	return env, nil
}

// RepositoryPython finds a virtual environment inside the repository at
// repoDir: .venv/ or venv/ holding pyvenv.cfg and bin/python. It returns
// the interpreter's path relative to repoDir, or "" when there is none.
func RepositoryPython(repoDir string) string {
	for _, dir := range []string{".venv", "venv"} {
		if fi, err := os.Stat(filepath.Join(repoDir, dir, "pyvenv.cfg")); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for _, exe := range []string{"python", "python3"} {
			if fi, err := os.Stat(filepath.Join(repoDir, dir, "bin", exe)); err == nil && !fi.IsDir() {
				return dir + "/bin/" + exe
			}
		}
	}
	return ""
}

// pyvenvHome reads the home key of a pyvenv.cfg: the directory of the
// interpreter the venv was made from.
func pyvenvHome(cfg string) string {
	sc := bufio.NewScanner(strings.NewReader(cfg))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == "home" {
			if h := strings.TrimSpace(v); filepath.IsAbs(h) {
				return filepath.Clean(h)
			}
		}
	}
	return ""
}

// checkPrefix accepts a directory to mount for an interpreter: a Python
// installation (lib/python3.* inside), never / or a place the sandbox
// keeps for itself.
func checkPrefix(prefix string) error {
	if prefix == "/" || underAny(prefix, reservedDirs) {
		return errors.New("not a directory the sandbox can mount")
	}
	for _, lib := range []string{"lib", "lib64"} {
		if m, _ := filepath.Glob(filepath.Join(prefix, lib, "python3*")); len(m) > 0 {
			return nil
		}
	}
	return errors.New("not a Python installation (no lib/python3.* in it)")
}

func containsMount(ms []Mount, src string) bool {
	for _, m := range ms {
		if m.Source == src {
			return true
		}
	}
	return false
}

// unwrapPath drops an *fs.PathError's operation and path (the message
// names the path already).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// validate checks the paths: inside ones absolute or local, sources
// absolute, nothing hiding the sandbox's own directories.
func (e *Environment) validate() error {
	inside := func(p string) error {
		switch {
		case p == "":
			return errors.New("empty path")
		case filepath.IsAbs(p):
			if filepath.Clean(p) == "/" || underAny(p, reservedDirs) && !underAny(p, systemDirs) {
				return fmt.Errorf("%s is one of the sandbox's own directories", p)
			}
		case !filepath.IsLocal(p):
			return fmt.Errorf("%q must be absolute or stay inside the working directory", p)
		}
		return nil
	}
	if e.Interpreter != "" {
		if err := inside(e.Interpreter); err != nil {
			return fmt.Errorf("interpreter: %w", err)
		}
	}
	if e.VirtualEnv != "" {
		if err := inside(e.VirtualEnv); err != nil {
			return fmt.Errorf("virtual environment: %w", err)
		}
	}
	for _, m := range e.Mounts {
		if !filepath.IsAbs(m.Source) {
			return fmt.Errorf("mount source %q is not absolute", m.Source)
		}
		if filepath.IsAbs(m.Target) && underAny(m.Target, systemDirs) {
			return fmt.Errorf("mount target %s would hide the system", m.Target)
		}
		if err := inside(m.Target); err != nil {
			return fmt.Errorf("mount: %w", err)
		}
	}
	for _, p := range e.Skip {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return fmt.Errorf("skipped path %q must be relative", p)
		}
	}
	return nil
}

// inside resolves p (absolute, or relative to the working directory cwd)
// to its path inside the sandbox.
func inside(p, cwd string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return path.Join(cwd, filepath.ToSlash(p))
}

// aliasTarget is where the private copy is shown besides cwd: the source
// directory's own path, when that hides nothing of the sandbox's.
func aliasTarget(source, cwd string) (string, bool) {
	source = filepath.Clean(source)
	if !filepath.IsAbs(source) || source == "/" || underDir(source, cwd) || underDir(cwd, source) {
		return "", false
	}
	for _, d := range reservedDirs {
		if d == "/work" {
			continue // the run's own /work: a path under it is made there
		}
		if underDir(source, d) || underDir(d, source) {
			return "", false
		}
	}
	return source, true
}

// args are bubblewrap's arguments for e in a run whose copy is at hostCwd
// on the host and cwd inside: its mounts, in the copy and (AliasSource)
// the copy again at the source directory's path with the mounts that lie
// in it; a source the sandbox's user cannot reach from its mount point in
// hidden.
func (e *Environment) args(hostCwd, cwd, source string, hidden map[string]string) []string {
	var a []string
	mount := func(base string) {
		for _, m := range e.Mounts {
			if !filepath.IsAbs(m.Target) {
				a = append(a, "--ro-bind", sourceOf(hidden, m.Source), inside(m.Target, base))
			} else if base == cwd {
				a = append(a, "--ro-bind", sourceOf(hidden, m.Source), m.Target)
			}
		}
	}
	mount(cwd)
	if e.AliasSource && source != "" {
		if at, ok := aliasTarget(source, cwd); ok {
			a = append(a, "--bind", hostCwd, at)
			mount(at)
		}
	}
	return a
}

// reachable says whether uid:gid (the sandbox's user, which bubblewrap
// runs as when the caller is root) can reach dir and read it: search
// permission on every directory above it, read and search on it.
func reachable(dir string, uid, gid int) error {
	may := func(p string, bits fs.FileMode) (bool, error) {
		fi, err := os.Stat(p)
		if err != nil {
			return false, err
		}
		perm := fi.Mode().Perm()
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case ok && int(st.Uid) == uid:
			return perm&(bits<<6) == bits<<6, nil
		case ok && int(st.Gid) == gid:
			return perm&(bits<<3) == bits<<3, nil
		}
		return perm&bits == bits, nil
	}
	dir = filepath.Clean(dir)
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		ok, err := may(p, 0o1)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the sandbox's user (uid %d) cannot reach %s: %s is not searchable by others (chmod o+x)", uid, dir, p)
		}
		if p == "/" {
			break
		}
	}
	ok, err := may(dir, 0o5)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the sandbox's user (uid %d) cannot read %s (chmod o+rx)", uid, dir)
	}
	return nil
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Directories the sandbox's user cannot reach. Started as root, bubblewrap
// runs as Config.UID (the kernel does not apply RLIMIT_NPROC to root), and
// that user cannot bind what it cannot reach: an interpreter installed in
// root's home (pyenv's /root/.pyenv/versions/3.11.7 under a 0700 /root), a
// toolchain there (/root/.cargo). Such a read-only bind is made in two
// steps: as root, in a mount namespace of the run's own (unshare(1) with
// private propagation, so the host's mounts never change and the mount
// ends with the run), the directory is bound onto a mount point inside the
// run's directory, which the sandbox's user reaches; then setpriv(1)
// drops to that user and bubblewrap binds the mount point where the
// directory lies. Only the directory itself is shown: what it holds must
// be readable by others (an ordinary installation is), and nothing above
// it is. Where root cannot make a mount namespace (a container without
// CAP_SYS_ADMIN), such a run is an ErrEnvironment that names the remedy.

// hiddenTools are the programs of the two steps.
type hiddenTools struct {
	unshare, setpriv string
}

// probeHidden finds unshare and setpriv and checks that this process may
// make a private mount namespace and bind in it. nil: it cannot.
func probeHidden() *hiddenTools {
	var t hiddenTools
	var err error
	if t.unshare, err = exec.LookPath("unshare"); err != nil {
		return nil
	}
	if t.setpriv, err = exec.LookPath("setpriv"); err != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "infill-mount-probe-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if exec.CommandContext(ctx, t.unshare, "--mount", "--propagation", "private", "--", "mount", "--bind", dir, dir).Run() != nil {
		return nil
	}
	return &t
}

// hiddenScript binds each SOURCE onto its MOUNTPOINT ("$1" "$2", ... up to
// "--"), then runs what follows "--" as the sandbox's user.
const hiddenScript = `while [ "$1" != -- ]; do mount --bind -- "$1" "$2" || exit 125; shift 2; done; shift
exec "$@"`

// hide plans the read-only binds of spec whose sources the sandbox's user
// cannot reach: it makes a mount point for each in the run's directory
// runDir and returns where each source is to be bound from (nil: every
// source is reachable).
func (s *Sandbox) hide(spec *Spec, runDir string) (map[string]string, error) {
	if !s.asRoot {
		return nil, nil
	}
	var sources []string
	if e := spec.Environment; e != nil {
		for _, m := range e.Mounts {
			sources = append(sources, m.Source)
		}
	}
	for _, b := range spec.Binds {
		if !b.Writable {
			sources = append(sources, b.Source)
		}
	}
	var hidden map[string]string
	for _, src := range sources {
		if _, ok := hidden[src]; ok {
			continue
		}
		err := reachable(src, s.cfg.UID, s.cfg.GID)
		if err == nil {
			continue
		}
		if s.hidden == nil {
			return nil, fmt.Errorf("%w: %v; %s", ErrEnvironment, err, unreachableRemedy(src, s.cfg.UID))
		}
		if hidden == nil {
			hidden = map[string]string{}
		}
		mp := filepath.Join(runDir, "hidden", strconv.Itoa(len(hidden)))
		if err := os.MkdirAll(mp, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		hidden[src] = mp
	}
	return hidden, nil
}

// unreachableRemedy says what makes dir usable when this process cannot
// bind it for the sandbox's user.
func unreachableRemedy(dir string, uid int) string {
	return fmt.Sprintf("the sandbox (bubblewrap as uid %d) binds only what that user can reach, and this process cannot make a "+
		"mount namespace to bind %s for it (no CAP_SYS_ADMIN, or no unshare/setpriv): make every directory above it searchable "+
		"(chmod o+x on each, e.g. chmod o+x /root), install it where others can read it (e.g. PYENV_ROOT=/opt/pyenv), "+
		"or make the virtual environment from Debian's /usr/bin/python3", uid, dir)
}

// hiddenCommand is the command line that makes the binds of hidden and
// runs bwrap with args as the sandbox's user.
func (s *Sandbox) hiddenCommand(hidden map[string]string, args []string) (string, []string) {
	argv := []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", hiddenScript, "sh"}
	for src, mp := range hidden {
		argv = append(argv, src, mp)
	}
	argv = append(argv, "--", s.hidden.setpriv, "--reuid="+strconv.Itoa(s.cfg.UID), "--regid="+strconv.Itoa(s.cfg.GID),
		"--clear-groups", "--pdeathsig=KILL", "--", s.bwrap)
	return s.hidden.unshare, append(argv, args...)
}

// sourceOf is where src is bound from: its mount point when hidden.
func sourceOf(hidden map[string]string, src string) string {
	if mp, ok := hidden[src]; ok {
		return mp
	}
	return src
}

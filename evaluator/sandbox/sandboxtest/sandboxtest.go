// Package sandboxtest helps tests build what the sandbox runs: a virtual
// environment made from Debian's python3 holding a package the system
// python lacks (made locally: nothing is downloaded), and directories the
// sandbox's user can read when the tests run as root.
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SharedTempDir is t.TempDir() opened to other users (o+rx, its parent
// o+x), so that the sandbox's user (nobody, when the tests run as root)
// can read what is mounted from it.
func SharedTempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// MakeVenv makes a virtual environment at dir with Debian's python3 -m
// venv --without-pip (--system-site-packages when systemSite, which gives
// it Debian's pytest) and puts a package named pkg into its
// site-packages, with answer() returning 42. It returns the
// site-packages directory. Without python3's venv module it skips, or
// fails under CI=true.
func MakeVenv(t testing.TB, dir, pkg string, systemSite bool) string {
	t.Helper()
	return MakeVenvWith(t, "/usr/bin/python3", dir, pkg, systemSite)
}

// MakeVenvWith is MakeVenv with the interpreter python.
func MakeVenvWith(t testing.TB, python, dir, pkg string, systemSite bool) string {
	t.Helper()
	args := []string{"-m", "venv", "--without-pip"}
	if systemSite {
		args = append(args, "--system-site-packages")
	}
	out, err := exec.Command(python, append(args, dir)...).CombinedOutput()
	if err != nil {
		msg := "python3 -m venv: " + err.Error() + ": " + string(out) + " (Debian package python3-venv)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sp, err := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages"))
	if err != nil || len(sp) != 1 {
		t.Fatalf("site-packages of %s: %v %v", dir, sp, err)
	}
	if err := os.MkdirAll(filepath.Join(sp[0], pkg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sp[0], pkg, "__init__.py"), []byte("def answer():\n    return 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sp[0]
}

// WriteFiles writes files (slash-separated paths) under dir.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ForeignPython is a Python 3 installed outside /usr, as pyenv installs
// one in root's home: $INFILL_FOREIGN_PYTHON, else the python3 on PATH
// when its installation is not Debian's (a pyenv shim's), else a pyenv
// version under $HOME/.pyenv. It returns the interpreter and its
// installation's prefix; without one it skips (under CI=true too: not
// every machine has one).
func ForeignPython(t testing.TB) (python, prefix string) {
	t.Helper()
	var cands []string
	if p := os.Getenv("INFILL_FOREIGN_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	if home, err := os.UserHomeDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", "3.1[1-9]*", "bin", "python3"))
		cands = append(cands, m...)
	}
	for _, c := range cands {
		out, err := exec.Command(c, "-c", "import sys; print(sys.base_prefix)").Output()
		if err != nil {
			continue
		}
		prefix := strings.TrimSpace(string(out))
		if prefix == "" || prefix == "/usr" || strings.HasPrefix(prefix, "/usr/") {
			continue
		}
		return filepath.Join(prefix, "bin", "python3"), prefix
	}
	t.Skip("no Python 3 installed outside /usr here (pyenv's): set INFILL_FOREIGN_PYTHON")
	return "", ""
}

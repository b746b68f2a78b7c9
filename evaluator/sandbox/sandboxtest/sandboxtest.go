// Package sandboxtest helps tests build what the sandbox runs: a virtual
// environment made from Debian's python3 holding a package the system
// python lacks (made locally: nothing is downloaded), and directories the
// sandbox's user can read when the tests run as root.
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
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
	args := []string{"-m", "venv", "--without-pip"}
	if systemSite {
		args = append(args, "--system-site-packages")
	}
	out, err := exec.Command("/usr/bin/python3", append(args, dir)...).CombinedOutput()
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

package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/infill-dev/infill/clients/internal/cli"
	"github.com/infill-dev/infill/server/servertest"
)

// TestEndToEndComplete runs `infill complete` against the real server and
// backend (tiny random-weight model): properties of the output only.
func TestEndToEndComplete(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	repo := t.TempDir()
	for name, content := range map[string]string{
		"geo/circle.py":     "import math\n\n\ndef circumference(r):\n    return \n",
		"geo/__init__.py":   "from .circle import circumference\n",
		"node_modules/x.js": "module.exports = 1\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Main(t.Context(), append([]string{"--server", srv.Addr}, args...), cli.Env{Stdout: &stdout, Stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}

	code, _, stderr := run("complete", "--repo", repo, "--show-context", "--stats", "--max-tokens", "8",
		filepath.Join(repo, "geo", "circle.py"), "5:12")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"repository " + filepath.Base(repo) + ": 2 files sent",
		"\nKIND ", "\nprefix ", "\nsuffix ",
		"model " + srv.Model + ",",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if m := regexp.MustCompile(`generated (\d+);`).FindStringSubmatch(stderr); m == nil || m[1] == "0" {
		t.Errorf("stats show no generated tokens:\n%s", stderr)
	}

	code, stdout, stderr := run("complete", "--repo", repo, filepath.Join(repo, "geo", "circle.py"), "99:1")
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "infill: INVALID_ARGUMENT: cursor.line: ") ||
		strings.Count(stderr, "\n") != 1 {
		t.Errorf("bad cursor: exit %d, stderr %q", code, stderr)
	}
	t.Logf("bad cursor: %s", strings.TrimSpace(stderr))
}

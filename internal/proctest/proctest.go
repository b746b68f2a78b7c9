// Package proctest helps tests that run the repository's own scripts and
// programs as processes (scripts/*_test.go, the benchmarks' smoke runs):
// the repository's root, an environment that the user's OLLAMA_* and
// INFILL_* settings do not steer, and free loopback addresses.
package proctest

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root is the repository's root directory.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Env is the test process's environment without its OLLAMA_* and INFILL_*
// settings (a developer's or CI's own must not steer the script), plus
// extra.
func Env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OLLAMA_") || strings.HasPrefix(kv, "INFILL_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// FreeAddr is a loopback host:port nothing listens on at the moment.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Package repofstest owns the test helper that lays out repositories on
// disk for the tests of repofs and of its users (the client library, the
// server's workspace mode).
package repofstest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFiles writes files (slash path → content) under root, making
// directories as needed; a failure fails the test.
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

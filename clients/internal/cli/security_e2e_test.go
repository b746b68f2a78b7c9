package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/servertest"
)

// TestTLSAndToken: `infill complete` and `infill lsp` against the real
// server and backend with mutual TLS and a bearer token: the client
// certificate and token from the flags (or $INFILL_TOKEN) get
// completions; a wrong token is UNAUTHENTICATED.
func TestTLSAndToken(t *testing.T) {
	t.Parallel()
	certs := servertest.NewCerts(t)
	token := auth.NewToken()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(auth.Line(token, "cli", []auth.Scope{auth.ScopeComplete}, time.Time{})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := servertest.StartWith(t, servertest.Options{
		Config: func(c *server.Config) {
			c.Auth.TokenFile = tokens
			c.TLS = server.TLSConfig{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, ClientCAFile: certs.CAFile}
		},
		ClientTLS: certs.ClientTLS(),
	})
	repo := t.TempDir()
	file := filepath.Join(repo, "circle.py")
	if err := os.WriteFile(file, []byte("import math\n\n\ndef circumference(r):\n    return \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsFlags := []string{"--tls-ca", certs.CAFile, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
	run := func(env map[string]string, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(t.Context(), append(append([]string{"--server", srv.Addr}, tlsFlags...), args...),
			Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
		return code, stderr.String()
	}
	if code, stderr := run(nil, "--token", token, "complete", "--repo", repo, "--stats", "--max-tokens", "4", file, "5:12"); code != 0 || !strings.Contains(stderr, "model "+srv.Model) {
		t.Fatalf("complete with --token: exit %d: %s", code, stderr)
	}
	if code, stderr := run(map[string]string{"INFILL_TOKEN": token}, "complete", "--repo", repo, "--max-tokens", "4", file, "5:12"); code != 0 {
		t.Fatalf("complete with $INFILL_TOKEN: exit %d: %s", code, stderr)
	}
	if code, stderr := run(nil, "--token", auth.NewToken(), "complete", "--repo", repo, file, "5:12"); code != ExitError || !strings.Contains(stderr, "UNAUTHENTICATED") {
		t.Errorf("complete with a wrong token: exit %d: %s", code, stderr)
	}
	var out bytes.Buffer
	if code := Main(t.Context(), []string{"--server", srv.Addr, "--tls-cert", certs.ClientCert, "complete", file, "5:12"},
		Env{Stdout: &out, Stderr: &out}); code != ExitUsage || !strings.Contains(out.String(), "--tls-key") {
		t.Errorf("--tls-cert without --tls-key: exit %d: %s", code, out.String())
	}

	// The language server dials with the same flags.
	lspComplete := func(tok string) map[string]any {
		s := startLSP(t, srv.Addr, append(tlsFlags, "--token", tok)...)
		s.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"processId": nil, "capabilities": map[string]any{}}})
		s.response(1)
		s.send(map[string]any{"method": "initialized", "params": map[string]any{}})
		s.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{"textDocument": map[string]any{
			"uri": "untitled:t.py", "languageId": "python", "version": 1, "text": "def f():\n    return "}}})
		s.send(map[string]any{"id": 2, "method": "textDocument/completion", "params": map[string]any{
			"textDocument": map[string]any{"uri": "untitled:t.py"}, "position": map[string]any{"line": 1, "character": 11}}})
		res := s.response(2)
		s.send(map[string]any{"id": 3, "method": "shutdown"})
		s.response(3)
		s.send(map[string]any{"method": "exit"})
		if code := s.exitCode(); code != ExitOK {
			t.Errorf("infill lsp exit %d: %s", code, s.stder.String())
		}
		return res
	}
	if res := lspComplete(token); res["error"] != nil || res["result"] == nil {
		t.Errorf("lsp completion with the token: %v", res)
	}
	if res := lspComplete(auth.NewToken()); !strings.Contains(stringOf(res["error"]), "UNAUTHENTICATED") {
		t.Errorf("lsp completion with a wrong token: %v, want an UNAUTHENTICATED error", res)
	}
}

func stringOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["message"].(string)
		return s
	}
	return ""
}

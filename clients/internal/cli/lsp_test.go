package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/internal/lsp"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/servertest"
)

// instantBackend answers every generation at once with "pass".
type instantBackend struct{}

func (instantBackend) Ping(context.Context) error            { return nil }
func (instantBackend) Model(string) string                   { return "m" }
func (instantBackend) ContextTokens(string) int              { return 4096 }
func (instantBackend) MaxTokens(n int) int                   { return max(n, 8) }
func (instantBackend) CheckOptions(*inference.Request) error { return nil }
func (instantBackend) Generate(_ context.Context, _ inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	if err := d(0, "pass"); err != nil {
		return nil, err
	}
	return &inference.Result{Model: "m", Candidates: []inference.Candidate{{Text: "pass", Finish: inference.FinishStop, Tokens: 1}}}, nil
}

// lspSession runs `infill lsp` in-process on pipes.
type lspSession struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Reader
	code  chan int
	stder *syncBuffer
}

func startLSP(t *testing.T, addr string, flags ...string) *lspSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &lspSession{t: t, in: inW, out: bufio.NewReader(outR), code: make(chan int, 1), stder: &syncBuffer{}}
	go func() {
		s.code <- Main(t.Context(), append(append([]string{"--server", addr}, flags...), "lsp"), Env{Stdin: inR, Stdout: outW, Stderr: s.stder})
		outW.Close()
	}()
	return s
}

func (s *lspSession) send(v map[string]any) {
	s.t.Helper()
	v["jsonrpc"] = "2.0"
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		s.t.Fatal(err)
	}
}

// next reads the next message from stdout, which must be nothing but
// LSP frames.
func (s *lspSession) next() map[string]any {
	s.t.Helper()
	n := -1
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			s.t.Fatalf("reading a header: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		v, ok := strings.CutPrefix(line, "Content-Length: ")
		if !ok {
			s.t.Fatalf("stdout holds %q, not an LSP header", line)
		}
		n, _ = strconv.Atoi(v)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(s.out, body); err != nil {
		s.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		s.t.Fatalf("%s: %v", body, err)
	}
	return m
}

// response reads until the response to id.
func (s *lspSession) response(id int) map[string]any {
	s.t.Helper()
	for {
		m := s.next()
		if m["id"] == float64(id) && m["method"] == nil {
			return m
		}
	}
}

func (s *lspSession) exitCode() int {
	select {
	case c := <-s.code:
		return c
	case <-time.After(30 * time.Second):
		s.t.Fatal("infill lsp did not exit")
	}
	return -1
}

// `infill lsp` on stdin/stdout: a session from initialize to exit, with
// a completion from the server; exit code 0 after shutdown, 1 without.
func TestLSPStdio(t *testing.T) {
	t.Parallel()
	addr := servertest.StartLocal(t, instantBackend{}).Addr
	s := startLSP(t, addr)
	s.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"processId": nil, "capabilities": map[string]any{}}})
	if caps, _ := s.response(1)["result"].(map[string]any); caps == nil {
		t.Fatal("no initialize result")
	}
	s.send(map[string]any{"method": "initialized", "params": map[string]any{}})
	s.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{"textDocument": map[string]any{
		"uri": "untitled:t.py", "languageId": "python", "version": 1, "text": "def f():\n    "}}})
	s.send(map[string]any{"id": 2, "method": "textDocument/completion", "params": map[string]any{
		"textDocument": map[string]any{"uri": "untitled:t.py"}, "position": map[string]any{"line": 1, "character": 4}}})
	res := s.response(2)
	items, _ := res["result"].(map[string]any)["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["textEdit"].(map[string]any)["newText"] != "pass" {
		t.Fatalf("completion: %v", res)
	}
	s.send(map[string]any{"id": 3, "method": "shutdown"})
	s.response(3)
	s.send(map[string]any{"method": "exit"})
	if code := s.exitCode(); code != ExitOK {
		t.Errorf("exit code %d after shutdown; stderr:\n%s", code, s.stder.b.String())
	}

	s = startLSP(t, addr)
	s.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"processId": nil, "capabilities": map[string]any{}}})
	s.response(1)
	s.send(map[string]any{"method": "exit"})
	if code := s.exitCode(); code != ExitError {
		t.Errorf("exit code %d without shutdown; want 1", code)
	}
}

func TestLSPHelpShowsEditorConfigurations(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := Main(t.Context(), []string{"lsp", "--help"}, Env{Stdout: &out, Stderr: &out}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	// Every configuration docs/editors.md shows, each line indented.
	for _, c := range lsp.EditorConfigs() {
		_, after, ok := strings.Cut(out.String(), "\n"+c.Title+":\n\n")
		if !ok {
			t.Errorf("lsp --help lacks %q", c.Title)
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(c.Text, "\n"), "\n") {
			next, rest, _ := strings.Cut(after, "\n")
			if line != "" {
				line = "  " + line
			}
			if next != line {
				t.Errorf("lsp --help under %q has %q; want editors/%s's %q", c.Title, next, c.Name, line)
				break
			}
			after = rest
		}
	}
	for _, want := range []string{"Zed", "--listen"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lsp --help lacks %q", want)
		}
	}
	out.Reset()
	if code := Main(t.Context(), []string{"lsp", "--log-level", "loud"}, Env{Stdout: &out, Stderr: &out}); code != ExitUsage {
		t.Errorf("a bad --log-level: exit %d: %s", code, out.String())
	}
}

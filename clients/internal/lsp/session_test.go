package lsp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
	"google.golang.org/grpc"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// unused is a Completer for tests that must never reach a server.
type unused struct{ t *testing.T }

func (u unused) Complete(context.Context, *infillv1.CompleteRequest, ...grpc.CallOption) (*infillv1.CompleteResponse, error) {
	u.t.Error("Complete called")
	return nil, errors.New("unused")
}

// get walks a decoded JSON object.
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// The handshake advertises what the server does, in the encoding the
// client prefers among those it offers.
func TestInitializeCapabilities(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		caps     map[string]any
		want     string
		clangdTo string
	}{
		{"none offered", map[string]any{}, encodingUTF16, ""},
		{"3.17 order", map[string]any{"general": map[string]any{"positionEncodings": []string{"utf-32", "utf-8", "utf-16"}}}, encodingUTF32, ""},
		{"unknown first", map[string]any{"general": map[string]any{"positionEncodings": []string{"utf-7", "utf-8"}}}, encodingUTF8, ""},
		{"clangd extension", map[string]any{"offsetEncoding": []string{"utf-8", "utf-16"}}, encodingUTF8, encodingUTF8},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := startEditor(t, unused{t}, Config{})
			res := e.initialize(map[string]any{"capabilities": c.caps})
			caps := get(res, "capabilities")
			if got := get(caps, "positionEncoding"); got != c.want {
				t.Errorf("positionEncoding %v; want %s", got, c.want)
			}
			if got, _ := get(res, "offsetEncoding").(string); got != c.clangdTo {
				t.Errorf("offsetEncoding %q; want %q", got, c.clangdTo)
			}
			if get(caps, "inlineCompletionProvider") != true || get(caps, "completionProvider") == nil {
				t.Errorf("completion providers missing: %v", caps)
			}
			if get(caps, "textDocumentSync", "change") != float64(2) || get(caps, "textDocumentSync", "openClose") != true {
				t.Errorf("textDocumentSync %v; want incremental with open/close", get(caps, "textDocumentSync"))
			}
			if get(caps, "workspace", "workspaceFolders", "changeNotifications") != true {
				t.Errorf("workspace folders %v", get(caps, "workspace"))
			}
			if get(res, "serverInfo", "name") != "infill" {
				t.Errorf("serverInfo %v", get(res, "serverInfo"))
			}
			if err := e.shutdown(); err != nil {
				t.Errorf("Serve after shutdown and exit: %v", err)
			}
		})
	}
}

// The lifecycle's errors: requests before initialize, a second
// initialize, requests after shutdown, and exit without shutdown.
func TestLifecycleErrors(t *testing.T) {
	t.Parallel()
	e := startEditor(t, unused{t}, Config{})
	if m := e.call(methodCompletion, position("file:///x.py", 0, 0)); m.Error == nil || m.Error.Code != codeServerNotInitialized {
		t.Errorf("completion before initialize: %+v", m.Error)
	}
	e.initialize(nil)
	if m := e.call(methodInitialize, map[string]any{"capabilities": map[string]any{}}); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidRequest {
		t.Errorf("second initialize: %+v", m.Error)
	}
	if m := e.call(methodShutdown, nil); m.Error != nil || string(m.Result) != "null" {
		t.Errorf("shutdown: %s %+v", m.Result, m.Error)
	}
	if m := e.call(methodCompletion, position("file:///x.py", 0, 0)); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidRequest {
		t.Errorf("completion after shutdown: %+v", m.Error)
	}
	e.notify(methodExit, nil)
	if err := <-e.served; err != nil {
		t.Errorf("exit after shutdown: %v", err)
	}
	e.served <- nil

	e = startEditor(t, unused{t}, Config{})
	e.initialize(nil)
	e.notify(methodExit, nil)
	if err := <-e.served; !errors.Is(err, ErrExitWithoutShutdown) {
		t.Errorf("exit without shutdown: %v", err)
	}
	e.served <- nil
}

// Bad input gets a JSON-RPC error and the session goes on: a frame that
// is not JSON, JSON that is not a message, a batch, an unknown method,
// bad params, a position past the end of a document, a document never
// opened. The last request shows the server still answers.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := startEditor(t, unused{t}, Config{})
	e.initialize(nil)

	null := e.expectNull()
	body := `{"jsonrpc":"2.0","id":7,"method":` // cut short
	e.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	if m := e.await("parse error", null); m.Error == nil || m.Error.Code != jsonrpc2.CodeParseError {
		t.Errorf("not JSON: %+v", m.Error)
	}

	e.mu.Lock()
	answer := make(chan message, 1)
	e.waiting["41"] = answer
	e.mu.Unlock()
	body = `{"jsonrpc":"2.0","id":41,"params":{}}` // no method, no result
	e.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	if m := e.await("invalid request", answer); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidRequest {
		t.Errorf("not a message: %+v", m.Error)
	}

	null = e.expectNull()
	body = `[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]`
	e.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	if m := e.await("batch", null); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidRequest {
		t.Errorf("batch: %+v", m.Error)
	}

	if m := e.call("textDocument/hover", position("file:///x.py", 0, 0)); m.Error == nil || m.Error.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("unknown method: %+v", m.Error)
	}
	if m := e.call(methodInlineCompletion, map[string]any{"textDocument": 3}); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidParams {
		t.Errorf("bad params: %+v", m.Error)
	}
	if m := e.call(methodCompletion, nil); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidParams {
		t.Errorf("no params: %+v", m.Error)
	}
	if m := e.call(methodInlineCompletion, position("file:///never.py", 0, 0)); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidParams ||
		!strings.Contains(m.Error.Message, "not open") {
		t.Errorf("a document never opened: %+v", m.Error)
	}
	e.open("untitled:Untitled-1", "python", "x = 1\ny = 2\n")
	if m := e.call(methodInlineCompletion, position("untitled:Untitled-1", 5, 0)); m.Error == nil || m.Error.Code != jsonrpc2.CodeInvalidParams ||
		!strings.Contains(m.Error.Message, "past the end") {
		t.Errorf("a position past the end: %+v", m.Error)
	}
	// A notification that is broken is logged; nothing answers it.
	e.notify(methodDidChange, map[string]any{"textDocument": "nope"})
	e.notify("$/unknownNotification", map[string]any{})

	if err := e.shutdown(); err != nil {
		t.Errorf("the session did not go on to a clean end: %v", err)
	}
}

// A header that does not say where the body ends ends the connection
// (nothing can find the next message); Serve returns.
func TestBrokenHeaderEndsSession(t *testing.T) {
	t.Parallel()
	e := startEditor(t, unused{t}, Config{})
	e.initialize(nil)
	e.raw("Content-Type: application/json\r\n\r\n{}")
	if err := <-e.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	e.served <- nil
}

// Settings from initializationOptions and didChangeConfiguration (flat
// or under "infill", null putting a default back) reach the request;
// settings that cannot work are refused at initialize and shown once
// after.
func TestSettingsReachTheRequest(t *testing.T) {
	t.Parallel()
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{Settings: Settings{MaxTokens: 7}})
	if m := e.call(methodInitialize, map[string]any{"capabilities": map[string]any{}, "initializationOptions": map[string]any{"temperature": 5}}); m.Error == nil ||
		m.Error.Code != jsonrpc2.CodeInvalidParams {
		t.Fatalf("a temperature of 5 at initialize: %+v", m.Error)
	}
	e.initialize(map[string]any{"initializationOptions": map[string]any{
		"model": "infill-tiny", "temperature": 0.5, "stop": []string{"\n\n"}, "latencyBudgetMs": 250, "unknownKey": 1}})
	e.open("untitled:a", "python", "def f():\n    ")
	e.call(methodInlineCompletion, position("untitled:a", 1, 4))
	req := rec.lastSent()
	if req.GetModel() != "infill-tiny" || req.GetGeneration().GetMaxTokens() != 7 || req.GetGeneration().GetTemperature() != 0.5 ||
		strings.Join(req.GetGeneration().GetStop(), ",") != "\n\n" || req.GetLatencyBudget().AsDuration().Milliseconds() != 250 ||
		req.GetClientId() != clientID || !strings.HasPrefix(req.GetSessionId(), "lsp-") {
		t.Errorf("request after initializationOptions: %v", req)
	}

	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"infill": map[string]any{"maxTokens": 3, "temperature": nil, "candidates": 2}}})
	e.call(methodInlineCompletion, position("untitled:a", 1, 4))
	req = rec.lastSent()
	if req.GetGeneration().GetMaxTokens() != 3 || req.GetGeneration().Temperature != nil || req.GetModel() != "infill-tiny" || req.GetGeneration().GetCandidates() != 2 {
		t.Errorf("request after didChangeConfiguration: %v", req)
	}

	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"maxTokens": "many"}})
	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"maxTokens": "many"}})
	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"candidates": 99}})
	msgs := e.waitNotes(methodShowMessage, 2)
	e.call(methodInlineCompletion, position("untitled:a", 1, 4))
	if req = rec.lastSent(); req.GetGeneration().GetMaxTokens() != 3 {
		t.Errorf("a refused setting changed the request: %v", req)
	}
	if n := len(e.notesOf(methodShowMessage)); n != 2 {
		t.Errorf("%d messages for two bad settings (one twice): %v", n, msgs)
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

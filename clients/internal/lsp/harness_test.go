package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The test Ollama's http.Transport closes idle connections lazily.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// waitFor bounds every wait of these tests; a wait that runs out is a
// failure, not a measurement.
const waitFor = 60 * time.Second

// message is one JSON-RPC message as the editor side sees it.
type message struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *jsonrpc2.Error  `json:"error,omitempty"`
}

// editor is the editor's end of an in-memory pipe to Serve: it sends
// requests and notifications, answers the server's requests (replies),
// and keeps the server's notifications.
type editor struct {
	t      *testing.T
	conn   net.Conn
	stream *frameStream
	served chan error // Serve's result

	mu        sync.Mutex
	nextID    int
	waiting   map[string]chan message // by id's JSON
	notes     []message
	requests  []message      // the server's requests
	replies   map[string]any // answers to the server's requests by method; a func(message) any is called
	noteAdded chan struct{}
}

// startEditor runs Serve on one end of a pipe and returns the other.
func startEditor(t *testing.T, c Completer, cfg Config) *editor {
	t.Helper()
	serverEnd, editorEnd := net.Pipe()
	e := &editor{
		t: t, conn: editorEnd, stream: newFrameStream(editorEnd, zaptest.NewLogger(t)), served: make(chan error, 1),
		waiting: map[string]chan message{}, replies: map[string]any{}, noteAdded: make(chan struct{}, 1),
	}
	log := zaptest.NewLogger(t)
	go func() { e.served <- Serve(context.Background(), serverEnd, c, cfg, log) }()
	go e.read()
	t.Cleanup(func() {
		e.conn.Close()
		select {
		case <-e.served:
		case <-time.After(waitFor):
			t.Error("Serve did not return after the editor closed the pipe")
		}
	})
	return e
}

func (e *editor) read() {
	for {
		var raw json.RawMessage
		if err := e.stream.ReadObject(&raw); err != nil {
			e.mu.Lock()
			for id, ch := range e.waiting {
				close(ch)
				delete(e.waiting, id)
			}
			e.mu.Unlock()
			return
		}
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			e.t.Errorf("the server sent %s: %v", raw, err)
			continue
		}
		switch {
		case m.Method != "" && m.ID != nil: // a request to the editor
			e.mu.Lock()
			e.requests = append(e.requests, m)
			reply, ok := e.replies[m.Method]
			e.mu.Unlock()
			go func() {
				resp := map[string]any{"jsonrpc": "2.0", "id": m.ID}
				switch f, isFunc := reply.(func(message) any); {
				case isFunc:
					resp["result"] = f(m)
				case ok:
					resp["result"] = reply
				default:
					resp["error"] = jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "not in this test"}
				}
				e.stream.WriteObject(resp) //nolint:errcheck // the pipe may close
			}()
		case m.Method != "":
			e.mu.Lock()
			e.notes = append(e.notes, m)
			e.mu.Unlock()
			select {
			case e.noteAdded <- struct{}{}:
			default:
			}
		default:
			key := "null"
			if m.ID != nil {
				key = string(*m.ID)
			}
			e.mu.Lock()
			ch := e.waiting[key]
			delete(e.waiting, key)
			e.mu.Unlock()
			if ch == nil {
				e.t.Errorf("a response nobody waits for: %s", raw)
				continue
			}
			ch <- m
		}
	}
}

// send sends a request and returns its id and where its answer arrives.
func (e *editor) send(method string, params any) (int, <-chan message) {
	e.mu.Lock()
	e.nextID++
	id := e.nextID
	ch := make(chan message, 1)
	e.waiting[fmt.Sprint(id)] = ch
	e.mu.Unlock()
	if err := e.stream.WriteObject(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		e.t.Fatalf("send %s: %v", method, err)
	}
	return id, ch
}

// call sends a request and waits for its answer.
func (e *editor) call(method string, params any) message {
	e.t.Helper()
	_, ch := e.send(method, params)
	return e.await(method, ch)
}

func (e *editor) await(what string, ch <-chan message) message {
	e.t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			e.t.Fatalf("%s: the connection closed", what)
		}
		return m
	case <-time.After(waitFor):
		e.t.Fatalf("%s: no answer within %v", what, waitFor)
	}
	return message{}
}

// expectNull registers a wait for a response with a null id (to a
// message whose id could not be read).
func (e *editor) expectNull() <-chan message {
	ch := make(chan message, 1)
	e.mu.Lock()
	e.waiting["null"] = ch
	e.mu.Unlock()
	return ch
}

func (e *editor) notify(method string, params any) {
	e.t.Helper()
	if err := e.stream.WriteObject(map[string]any{"jsonrpc": "2.0", "method": method, "params": params}); err != nil {
		e.t.Fatalf("notify %s: %v", method, err)
	}
}

// raw writes bytes as they are.
func (e *editor) raw(b string) {
	e.t.Helper()
	if _, err := e.conn.Write([]byte(b)); err != nil {
		e.t.Fatal(err)
	}
}

// requestsOf returns how many requests of method the server sent so far.
func (e *editor) requestsOf(method string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, m := range e.requests {
		if m.Method == method {
			n++
		}
	}
	return n
}

// notes returns the server's notifications of method so far.
func (e *editor) notesOf(method string) []message {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []message
	for _, m := range e.notes {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// waitNotes waits until the server sent n notifications of method.
func (e *editor) waitNotes(method string, n int) []message {
	e.t.Helper()
	deadline := time.After(waitFor)
	for {
		if got := e.notesOf(method); len(got) >= n {
			return got
		}
		select {
		case <-e.noteAdded:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("%d %s notifications within %v; want %d", len(e.notesOf(method)), method, waitFor, n)
		}
	}
}

// initialize runs the handshake with params (a JSON object; rootUri and
// capabilities as the test needs) and returns initialize's result.
func (e *editor) initialize(params map[string]any) map[string]any {
	e.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["capabilities"]; !ok {
		params["capabilities"] = map[string]any{}
	}
	if _, ok := params["processId"]; !ok {
		params["processId"] = nil
	}
	m := e.call(methodInitialize, params)
	if m.Error != nil {
		e.t.Fatalf("initialize: %v", m.Error)
	}
	var out map[string]any
	if err := json.Unmarshal(m.Result, &out); err != nil {
		e.t.Fatal(err)
	}
	e.notify(methodInitialized, map[string]any{})
	return out
}

// shutdown ends the session as an editor does, and returns Serve's result.
func (e *editor) shutdown() error {
	e.t.Helper()
	if m := e.call(methodShutdown, nil); m.Error != nil {
		e.t.Fatalf("shutdown: %v", m.Error)
	}
	e.notify(methodExit, nil)
	select {
	case err := <-e.served:
		e.served <- err
		return err
	case <-time.After(waitFor):
		e.t.Fatal("Serve did not return after exit")
	}
	return nil
}

func (e *editor) open(uri, lang, text string) {
	e.notify(methodDidOpen, map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": lang, "version": 1, "text": text}})
}

// change sends one incremental change.
func (e *editor) change(uri string, version int, sl, sc, el, ec int, text string) {
	e.notify(methodDidChange, map[string]any{
		"textDocument": map[string]any{"uri": uri, "version": version},
		"contentChanges": []any{map[string]any{
			"range": map[string]any{"start": map[string]any{"line": sl, "character": sc}, "end": map[string]any{"line": el, "character": ec}},
			"text":  text,
		}},
	})
}

func position(uri string, line, char int) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": line, "character": char}}
}

// inlineItems decodes an inlineCompletion answer.
func inlineItems(t *testing.T, m message) []inlineCompletionItem {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("inlineCompletion: %v", m.Error)
	}
	var l inlineCompletionList
	if err := json.Unmarshal(m.Result, &l); err != nil {
		t.Fatalf("inlineCompletion result %s: %v", m.Result, err)
	}
	return l.Items
}

// writeRepo writes files under a new directory and returns it.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// recorder is the real infill server and context builder
// (servertest.StartLocal) in front of a backend that answers at once
// with a fixed text and keeps every prompt: the case of "what reached the
// server", which the tiny model's random text cannot show. Its client
// records every request as sent on the wire.
type recorder struct {
	client *infill.Client
	addr   string

	mu      sync.Mutex
	prompts []string
	sent    []*infillv1.CompleteRequest
	answer  string
}

func (r *recorder) Ping(context.Context) error            { return nil }
func (r *recorder) Model(string) string                   { return "m" }
func (r *recorder) ContextTokens(string) int              { return 8192 }
func (r *recorder) MaxTokens(n int) int                   { return max(n, 16) }
func (r *recorder) CheckOptions(*inference.Request) error { return nil }
func (r *recorder) Generate(_ context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	r.mu.Lock()
	r.prompts = append(r.prompts, req.Prompt)
	text := r.answer
	r.mu.Unlock()
	if err := d(0, text); err != nil {
		return nil, err
	}
	var cands []inference.Candidate
	for i := range max(req.Candidates, 1) {
		cands = append(cands, inference.Candidate{Index: i, Text: text, Finish: inference.FinishStop, Tokens: 1})
	}
	return &inference.Result{Model: "m", Candidates: cands}, nil
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{answer: "x"}
	addr := servertest.StartLocal(t, r).Addr
	r.addr = addr
	cfg := infill.Config{DialOptions: append(DialOptions(), grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if cr, ok := req.(*infillv1.CompleteRequest); ok {
				r.mu.Lock()
				r.sent = append(r.sent, proto.Clone(cr).(*infillv1.CompleteRequest))
				r.mu.Unlock()
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))}
	c, err := infill.Dial(addr, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.client = c
	return r
}

func (r *recorder) lastSent() *infillv1.CompleteRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) == 0 {
		return nil
	}
	return r.sent[len(r.sent)-1]
}

func (r *recorder) lastPrompt() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.prompts) == 0 {
		return ""
	}
	return r.prompts[len(r.prompts)-1]
}

// describe says how a request carried each file: content, digest or
// edits (with their sizes).
func describe(req *infillv1.CompleteRequest) string {
	var parts []string
	for _, f := range req.GetRepository().GetFiles() {
		switch {
		case f.Content != nil:
			parts = append(parts, fmt.Sprintf("%s:content", f.GetPath()))
		case len(f.GetEdits()) > 0:
			n := 0
			for _, e := range f.GetEdits() {
				n += len(e.GetText())
			}
			parts = append(parts, fmt.Sprintf("%s:edits(%d,%dB)", f.GetPath(), len(f.GetEdits()), n))
		default:
			parts = append(parts, fmt.Sprintf("%s:digest", f.GetPath()))
		}
	}
	if b := req.GetRepository().GetBase(); b != "" {
		parts = append([]string{"base"}, parts...)
	}
	return strings.Join(parts, " ")
}

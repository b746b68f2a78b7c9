package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
)

// The tests here run against the real infill server and the real Ollama
// with the tiny random-weight model (servertest.Start): they assert
// properties of what came back, never its text. The backend is watched
// through a wrapper that records each generation: when it ended, why,
// and how many deltas it produced, so a cancel is seen to stop it.

const circlePy = `import math


def area(r):
    """Area of a circle of radius r."""
    return math.pi * r ** 2


def circumference(r):
    return 
`

// generation is one Generate call at the backend.
type generation struct {
	first  chan struct{} // closed at the first delta
	done   chan struct{} // closed when Generate returned
	deltas atomic.Int64

	// Set before done closes.
	err    error
	ctxErr error
	text   string
	tokens int
	prompt string
	// maxTokens and stop are the request's (maxTokens 0: the backend's
	// default).
	maxTokens int
	stop      []string
	took      time.Duration
}

// watched wraps the real backend.
type watched struct {
	server.Backend
	calls chan *generation
}

func (w *watched) Generate(ctx context.Context, req inference.Request, onDelta inference.DeltaFunc) (*inference.Result, error) {
	g := &generation{first: make(chan struct{}), done: make(chan struct{}), prompt: req.Prompt, maxTokens: req.MaxTokens, stop: req.Stop}
	w.calls <- g
	start := time.Now()
	var once sync.Once
	res, err := w.Backend.Generate(ctx, req, func(i int, text string) error {
		g.deltas.Add(1)
		once.Do(func() { close(g.first) })
		return onDelta(i, text)
	})
	g.err, g.ctxErr, g.took = err, ctx.Err(), time.Since(start)
	if res != nil && len(res.Candidates) > 0 {
		g.text, g.tokens = res.Candidates[0].Text, res.Candidates[0].Tokens
	}
	close(g.done)
	return res, err
}

func startWatched(t *testing.T) (*servertest.Server, *watched) {
	t.Helper()
	w := &watched{calls: make(chan *generation, 64)}
	srv := servertest.StartWith(t, servertest.Options{Deps: func(d *server.Deps) {
		w.Backend = d.Backend
		d.Backend = w
	}})
	return srv, w
}

func (w *watched) next(t *testing.T) *generation {
	t.Helper()
	select {
	case g := <-w.calls:
		return g
	case <-time.After(waitFor):
		t.Fatal("no generation reached the backend")
	}
	return nil
}

// matching returns the backend's next generation whose prompt match
// accepts, passing over others (the server's probes, an earlier
// session's last requests).
func (w *watched) matching(t *testing.T, what string, match func(prompt string) bool) *generation {
	t.Helper()
	deadline := time.After(waitFor)
	var passed []string
	for {
		select {
		case g := <-w.calls:
			if match(g.prompt) {
				return g
			}
			passed = append(passed, fmt.Sprintf("%.60q", g.prompt))
		case <-deadline:
			t.Fatalf("%s: no generation within %v (passed over %v)", what, waitFor, passed)
		}
	}
}

// finished waits for the backend's next n generations to end and returns
// them; one that failed fails the test.
func (w *watched) finished(t *testing.T, n int) []*generation {
	t.Helper()
	gens := make([]*generation, n)
	for i := range gens {
		gens[i] = w.next(t)
		wait(t, fmt.Sprintf("generation %d", i+1), gens[i].done)
		if gens[i].err != nil {
			t.Fatalf("generation %d: the backend: %v", i+1, gens[i].err)
		}
	}
	return gens
}

func wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("%s: not within %v", what, waitFor)
	}
}

func dialReal(t *testing.T, addr string) *infill.Client {
	t.Helper()
	c, err := infill.Dial(addr, infill.Config{DialOptions: DialOptions()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A completion answered from the real server and backend: the text the
// backend generated is the item's, placed at the cursor; the completion
// item replaces the word before the cursor with the word and the text.
func TestCompletionFromRealBackend(t *testing.T) {
	t.Parallel()
	srv, w := startWatched(t)
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy, "geo/__init__.py": "from .circle import area\n"})
	e := startEditor(t, dialReal(t, srv.Addr), Config{Settings: Settings{MaxTokens: 8}})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	uri := pathURI(filepath.Join(root, "geo", "circle.py"))
	e.open(uri, "python", circlePy)

	items := inlineItems(t, e.call(methodInlineCompletion, position(uri, 9, 11)))
	g := w.next(t)
	wait(t, "the generation", g.done)
	if g.err != nil || g.tokens == 0 {
		t.Fatalf("the backend: %d tokens, %v", g.tokens, g.err)
	}
	if g.text == "" {
		if len(items) != 0 {
			t.Errorf("the backend generated nothing visible, yet items %+v", items)
		}
	} else if len(items) != 1 || items[0].InsertText != g.text || items[0].Range.Start != pos(9, 11) {
		t.Errorf("items %+v; want the backend's %q at 9:11", items, g.text)
	}

	// textDocument/completion after typing "ret" on a new line.
	e.change(uri, 2, 9, 11, 9, 11, "\n    ret")
	m := e.call(methodCompletion, position(uri, 10, 7))
	g = w.next(t)
	wait(t, "the generation", g.done)
	if m.Error != nil {
		t.Fatalf("completion: %v", m.Error)
	}
	var list struct {
		IsIncomplete bool `json:"isIncomplete"`
		Items        []struct {
			Label    string `json:"label"`
			TextEdit struct {
				Range   struct{ Start, End struct{ Line, Character int } }
				NewText string `json:"newText"`
			} `json:"textEdit"`
			InsertTextFormat int `json:"insertTextFormat"`
		} `json:"items"`
	}
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	if !list.IsIncomplete {
		t.Error("isIncomplete false: the editor would filter a stale completion instead of asking again")
	}
	if g.text != "" {
		if len(list.Items) != 1 {
			t.Fatalf("items %+v", list.Items)
		}
		it := list.Items[0]
		r := it.TextEdit.Range
		if it.TextEdit.NewText != "ret"+g.text || r.Start.Line != 10 || r.Start.Character != 4 || r.End.Line != 10 || r.End.Character != 7 ||
			it.InsertTextFormat != 1 || it.Label == "" {
			t.Errorf("item %+v; want \"ret\"+%q over 10:4-10:7 as plain text", it, g.text)
		}
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// editCircle opens geo/circle.py of a repository in an editor whose
// language server asks the real server (maxTokens per completion).
func editCircle(t *testing.T, maxTokens uint32) (*editor, *watched, string) {
	t.Helper()
	srv, w := startWatched(t)
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy})
	e := startEditor(t, dialReal(t, srv.Addr), Config{Settings: Settings{MaxTokens: maxTokens}})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	uri := pathURI(filepath.Join(root, "geo", "circle.py"))
	e.open(uri, "python", circlePy)
	return e, w, uri
}

// longGeneration starts an inline completion that the tiny model makes
// long, and returns its answer channel and its backend generation once
// the backend is generating.
func longGeneration(t *testing.T, e *editor, w *watched, uri string) (int, <-chan message, *generation) {
	t.Helper()
	id, ch := e.send(methodInlineCompletion, position(uri, 9, 11))
	g := w.next(t)
	wait(t, "the first token", g.first)
	return id, ch, g
}

// $/cancelRequest ends the gRPC call, and the server's cancel stops the
// backend: its generation returns with an error while its context is
// cancelled (a generation that had ended on its own returns none), and
// the editor gets RequestCancelled.
func TestCancelStopsBackend(t *testing.T) {
	t.Parallel()
	e, w, uri := editCircle(t, 600)

	id, ch, g := longGeneration(t, e, w, uri)
	cancelAt := time.Now()
	e.notify(methodCancelRequest, map[string]any{"id": id})
	m := e.await("the cancelled request", ch)
	wait(t, "the backend to stop", g.done)
	if m.Error == nil || m.Error.Code != codeRequestCancelled {
		t.Errorf("answer to a cancelled request: %s %+v", m.Result, m.Error)
	}
	if g.ctxErr == nil || g.err == nil {
		t.Errorf("the backend's generation ended with %v (context %v); want a cancel", g.err, g.ctxErr)
	}
	t.Logf("cancelled after %d deltas of 600 tokens; the backend returned %v after the cancel", g.deltas.Load(), time.Since(cancelAt))
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// A newer request for the same document cancels the older at once: the
// older's generation stops at the backend and the older gets an empty
// answer (not an error), without the editor cancelling anything.
func TestNewerRequestSupersedes(t *testing.T) {
	t.Parallel()
	e, w, uri := editCircle(t, 600)

	_, older, g := longGeneration(t, e, w, uri)
	newerID, newer, g2 := longGeneration(t, e, w, uri)
	m := e.await("the older request", older)
	wait(t, "the older generation to stop", g.done)
	if items := inlineItems(t, m); len(items) != 0 {
		t.Errorf("the superseded request got items %+v", items)
	}
	if g.ctxErr == nil || g.err == nil {
		t.Errorf("the older generation ended with %v (context %v), not cancelled", g.err, g.ctxErr)
	}
	select {
	case <-g2.done:
		t.Error("the newer generation ended too")
	default:
	}
	e.notify(methodCancelRequest, map[string]any{"id": newerID})
	e.await("the newer request", newer)
	wait(t, "the newer generation to stop", g2.done)
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// proxy forwards TCP to the current upstream; down refuses and cuts
// connections, as a server that went away.
type proxy struct {
	lis net.Listener

	mu       sync.Mutex
	upstream string
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, upstream: upstream}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		lis.Close()
		p.to("")
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		up := p.upstream
		if up == "" {
			p.mu.Unlock()
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", up)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, u)
		p.wg.Add(2)
		p.mu.Unlock()
		go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }() //nolint:errcheck
		go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }() //nolint:errcheck
	}
}

// to points the proxy at upstream ("" for none) and cuts every
// connection.
func (p *proxy) to(upstream string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = upstream
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// When the infill server goes away, completions answer empty and the
// user is told once, however many requests fail; when a server is back
// at the address (a new process: it holds none of the session's
// content), completions resume without the editor doing anything: the
// client sends the content the new server lacks.
func TestReconnectAfterServerRestart(t *testing.T) {
	t.Parallel()
	srv, w := startWatched(t)
	p := startProxy(t, srv.Addr)
	c := dialReal(t, p.lis.Addr().String())
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy})
	e := startEditor(t, c, Config{Settings: Settings{MaxTokens: 4}, Server: p.lis.Addr().String()})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	uri := pathURI(filepath.Join(root, "geo", "circle.py"))
	e.open(uri, "python", circlePy)

	e.call(methodInlineCompletion, position(uri, 9, 11))
	wait(t, "a generation", w.next(t).done)

	p.to("") // the server goes away
	for i := range 3 {
		m := e.call(methodInlineCompletion, position(uri, 9, 11))
		if items := inlineItems(t, m); len(items) != 0 {
			t.Fatalf("request %d while the server is away: items %+v", i, items)
		}
	}
	msgs := e.waitNotes(methodShowMessage, 1)
	if !strings.Contains(string(msgs[0].Params), "unavailable") {
		t.Errorf("message %s", msgs[0].Params)
	}

	// A new server process at the same address, on the same Ollama.
	icfg := inference.DefaultConfig()
	icfg.URL, icfg.DefaultModel, icfg.ContextTokens = srv.Backend.URL, srv.Model, 4096
	backend, err := inference.NewOllama(icfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	w2 := &watched{Backend: backend, calls: make(chan *generation, 64)}
	p.to(servertest.StartLocal(t, w2).Addr)
	e.change(uri, 2, 9, 11, 9, 11, "r")
	deadline := time.Now().Add(waitFor)
	for {
		m := e.call(methodInlineCompletion, position(uri, 9, 12))
		if m.Error != nil {
			t.Fatalf("after the restart: %+v", m.Error)
		}
		select {
		case g := <-w2.calls:
			wait(t, "a generation on the new server", g.done)
			if g.err != nil {
				t.Fatalf("the new server's generation: %v", g.err)
			}
		default:
			if time.Now().After(deadline) {
				t.Fatal("no completion reached the new server")
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	if n := len(e.notesOf(methodShowMessage)); n != 1 {
		t.Errorf("%d messages for one outage; want 1", n)
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

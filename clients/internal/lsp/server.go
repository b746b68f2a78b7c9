package lsp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// Completer asks the infill server for completions; *infill.Client is
// one (its repository deltas, digests, edits and retries are what make a
// keystroke cheap on the wire).
type Completer interface {
	Complete(ctx context.Context, req *infillv1.CompleteRequest, opts ...grpc.CallOption) (*infillv1.CompleteResponse, error)
}

// ErrExitWithoutShutdown is Serve's error when the editor sent exit
// without shutdown first (LSP: the process then exits with code 1).
var ErrExitWithoutShutdown = errors.New("exit without shutdown")

// Serve speaks LSP on rwc until the editor sends exit, closes the stream
// or ctx ends, then cancels the completions in flight, waits for
// everything it started and closes rwc. It returns nil after shutdown
// and exit, or when the editor closed the stream.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, c Completer, cfg Config, log *zap.Logger) error {
	if err := cfg.Validate(); err != nil {
		rwc.Close()
		return err
	}
	if log == nil {
		log = zap.NewNop()
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newSession(ctx, c, cfg, log)
	conn := jsonrpc2.NewConn(ctx, newFrameStream(rwc, log), s, jsonrpc2.SetLogger(printfLogger{log}))
	s.mu.Lock()
	if s.conn == nil {
		s.conn = conn
	}
	s.mu.Unlock()
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
	}
	cancel() // completions in flight, loads waiting, calls to the editor
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitErr != nil {
		return s.exitErr
	}
	if s.state != stateExited && parent.Err() != nil {
		return parent.Err()
	}
	return nil
}

// printfLogger sends jsonrpc2's log lines to zap at Debug.
type printfLogger struct{ log *zap.Logger }

func (p printfLogger) Printf(format string, v ...any) {
	p.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// session is one editor connection.
type session struct {
	ctx context.Context // ends with the connection
	c   Completer
	cfg Config
	log *zap.Logger
	id  string // CompleteRequest.session_id

	wg sync.WaitGroup // goroutines the session started

	mu        sync.Mutex
	conn      *jsonrpc2.Conn
	state     int
	enc       string
	caps      clientCapabilities
	base      Settings // the flags with initializationOptions over them
	settings  Settings // base with the editor's workspace settings over it
	pull      pullState
	ws        *workspace
	inflight  map[jsonrpc2.ID]*call
	latest    map[string]*call // the newest completion per document
	history   editHistory      // the editor's recent edits (history.go)
	shown     map[string]bool  // messages shown since the last success
	noWatcher bool             // the client does not watch files for us
	exitErr   error
	closing   bool // Serve waits for the session's goroutines: start no more
}

// Session states.
const (
	stateNew = iota
	stateRunning
	stateShutdown
	stateExited
)

func newSession(ctx context.Context, c Completer, cfg Config, log *zap.Logger) *session {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &session{
		ctx: ctx, c: c, cfg: cfg, log: log, id: "lsp-" + hex.EncodeToString(b[:]),
		enc: encodingUTF16, base: cfg.Settings, settings: cfg.Settings, ws: newWorkspace(),
		inflight: map[jsonrpc2.ID]*call{}, latest: map[string]*call{}, shown: map[string]bool{},
		noWatcher: true,
	}
}

// rpcError is a JSON-RPC error a handler returns.
func rpcError(code int64, format string, a ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

func invalidParams(err error) *jsonrpc2.Error {
	return rpcError(jsonrpc2.CodeInvalidParams, "invalid params: %v", err)
}

// decode unmarshals a message's params; missing params are an error.
func decode(req *jsonrpc2.Request, v any) *jsonrpc2.Error {
	if req.Params == nil || string(*req.Params) == "null" {
		return rpcError(jsonrpc2.CodeInvalidParams, "invalid params: %s needs params", req.Method)
	}
	if err := json.Unmarshal(*req.Params, v); err != nil {
		return invalidParams(err)
	}
	return nil
}

// Handle is jsonrpc2's handler. It runs in the connection's read loop,
// one message at a time in the order the editor sent them: document
// changes apply in order, and a completion request sees the text as it
// was when it arrived. Only completions run on (in goroutines), so that
// $/cancelRequest and newer requests are read while they wait.
func (s *session) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	s.mu.Lock()
	if s.conn == nil {
		s.conn = conn
	}
	s.mu.Unlock()
	if req.Notif {
		s.notification(req)
		return
	}
	result, err := s.request(req)
	s.reply(req.ID, result, err)
}

// pending is the result of a request a goroutine answers later.
var pending = new(struct{})

func (s *session) reply(id jsonrpc2.ID, result any, err *jsonrpc2.Error) {
	var sendErr error
	if err != nil {
		sendErr = s.conn.ReplyWithError(s.ctx, id, err)
	} else {
		if result == pending {
			return
		}
		if result == jsonNull {
			result = nil
		}
		sendErr = s.conn.Reply(s.ctx, id, result)
	}
	if sendErr != nil && !errors.Is(sendErr, jsonrpc2.ErrClosed) {
		s.log.Debug("reply not sent", zap.Error(sendErr))
	}
}

// jsonNull is a handler's null result.
var jsonNull = new(struct{ null bool })

func (s *session) request(req *jsonrpc2.Request) (any, *jsonrpc2.Error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	switch {
	case req.Method == methodInitialize && state == stateNew:
		return s.initialize(req)
	case req.Method == methodInitialize:
		return nil, rpcError(jsonrpc2.CodeInvalidRequest, "initialize was already received")
	case state == stateNew:
		return nil, rpcError(codeServerNotInitialized, "the server is not initialized: send initialize first")
	case state != stateRunning:
		return nil, rpcError(jsonrpc2.CodeInvalidRequest, "the server is shutting down")
	}
	switch req.Method {
	case methodShutdown:
		s.mu.Lock()
		s.state = stateShutdown
		s.mu.Unlock()
		return jsonNull, nil
	case methodCompletion:
		var p protocol.CompletionParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return s.startCompletion(req.ID, kindCompletion, p.TextDocumentPositionParams)
	case methodInlineCompletion:
		var p inlineCompletionParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return s.startCompletion(req.ID, kindInline, p.TextDocumentPositionParams)
	case methodPredictEdit:
		var p inlineCompletionParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return s.startCompletion(req.ID, kindPredict, p.TextDocumentPositionParams)
	}
	return nil, rpcError(jsonrpc2.CodeMethodNotFound, "method not supported: %s", req.Method)
}

func (s *session) notification(req *jsonrpc2.Request) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if req.Method == methodExit {
		s.exit()
		return
	}
	if state != stateRunning && state != stateShutdown {
		s.log.Debug("notification before initialize dropped", zap.String("method", req.Method))
		return
	}
	if req.Method == methodInitialized {
		s.initialized()
		return
	}
	handle, ok := notifications[req.Method]
	if !ok {
		s.log.Debug("notification ignored", zap.String("method", req.Method))
		return
	}
	err := handle(s, req)
	if err != nil {
		// A notification has no answer: the log is all there is.
		s.log.Warn("notification not applied", zap.String("method", req.Method), zap.Error(err))
	}
}

// notifications are the notifications handled after initialize, by
// method; their params decode into the handler's argument.
var notifications = map[string]func(*session, *jsonrpc2.Request) error{
	methodCancelRequest:    on(func(s *session, p cancelParams) error { s.cancel(p.ID); return nil }),
	methodDidOpen:          on((*session).didOpen),
	methodDidChange:        on((*session).didChange),
	methodDidSave:          on((*session).didSave),
	methodDidClose:         on((*session).didClose),
	methodDidChangeWatched: on((*session).didChangeWatched),
	methodDidChangeFolders: on((*session).didChangeFolders),
	methodDidChangeConfig: on(func(s *session, p struct {
		Settings json.RawMessage `json:"settings"`
	}) error {
		s.didChangeConfiguration(p.Settings)
		return nil
	}),
}

// on decodes a notification's params for f.
func on[T any](f func(*session, T) error) func(*session, *jsonrpc2.Request) error {
	return func(s *session, req *jsonrpc2.Request) error {
		var p T
		if err := decode(req, &p); err != nil {
			return err
		}
		return f(s, p)
	}
}

func (s *session) initialize(req *jsonrpc2.Request) (any, *jsonrpc2.Error) {
	var p initializeParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	settings, unknown, err := s.base.apply(rawJSON(p.InitializationOptions))
	if err != nil {
		return nil, invalidParams(fmt.Errorf("initializationOptions: %w", err))
	}
	enc := encodingUTF16
	offered := []string(nil)
	if p.Capabilities.General != nil {
		offered = p.Capabilities.General.PositionEncodings
	}
	clangd := len(offered) == 0 && len(p.Capabilities.OffsetEncoding) > 0
	if clangd {
		offered = p.Capabilities.OffsetEncoding
	}
	for _, e := range offered {
		if e == encodingUTF8 || e == encodingUTF16 || e == encodingUTF32 {
			enc = e
			break
		}
	}
	var roots []string
	for _, f := range p.WorkspaceFolders {
		if dir, ok := uriPath(f.URI); ok {
			roots = append(roots, dir)
		}
	}
	if len(roots) == 0 && p.RootURI != nil {
		if dir, ok := uriPath(*p.RootURI); ok {
			roots = append(roots, dir)
		}
	}
	if len(roots) == 0 && p.RootPath != nil && *p.RootPath != "" {
		roots = append(roots, *p.RootPath)
	}

	s.mu.Lock()
	s.state = stateRunning
	s.enc = enc
	s.caps = p.Capabilities
	s.base, s.settings = settings, settings
	if w := p.Capabilities.Workspace; w != nil && w.DidChangeWatchedFiles != nil && w.DidChangeWatchedFiles.DynamicRegistration {
		s.noWatcher = false
	}
	for _, root := range roots {
		if r := s.ws.addFolder(root); r != nil {
			s.loadLocked(r)
		}
	}
	watching := !s.noWatcher
	s.mu.Unlock()
	if len(unknown) > 0 {
		s.log.Warn("unknown settings ignored", zap.Strings("names", unknown))
	}
	name := ""
	if p.ClientInfo != nil {
		name = p.ClientInfo.Name
	}
	s.log.Info("initialized", zap.String("client", name), zap.String("position_encoding", enc),
		zap.Strings("folders", roots), zap.Bool("file_watching", watching))

	sync := protocol.TextDocumentSyncKindIncremental
	openClose := true
	includeText := false
	supported := true
	result := initializeResult{
		Capabilities: serverCapabilities{
			ServerCapabilities: protocol.ServerCapabilities{
				TextDocumentSync: protocol.TextDocumentSyncOptions{
					OpenClose: &openClose,
					Change:    &sync,
					Save:      protocol.SaveOptions{IncludeText: &includeText},
				},
				CompletionProvider: &protocol.CompletionOptions{
					TriggerCharacters: []string{".", "(", "[", "{", ",", ":", "=", " "},
				},
				Workspace: &protocol.ServerCapabilitiesWorkspace{
					WorkspaceFolders: &protocol.WorkspaceFoldersServerCapabilities{
						Supported: &supported, ChangeNotifications: &protocol.BoolOrString{Value: true},
					},
				},
			},
			PositionEncoding:         enc,
			InlineCompletionProvider: true,
		},
		ServerInfo: &protocol.InitializeResultServerInfo{Name: "infill", Version: &s.cfg.Version},
	}
	if clangd {
		result.OffsetEncoding = enc
	}
	return result, nil
}

// rawJSON turns a decoded any back into JSON.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// initialized registers file watching and asks for the settings, where
// the client supports them.
func (s *session) initialized() {
	s.mu.Lock()
	watch := !s.noWatcher
	pull := s.caps.Workspace != nil && s.caps.Workspace.Configuration
	conn := s.conn
	s.mu.Unlock()
	if watch {
		s.goDo(func() {
			params := protocol.RegistrationParams{Registrations: []protocol.Registration{{
				ID: methodDidChangeWatchedReg, Method: methodDidChangeWatched,
				RegisterOptions: watchersOptions{Watchers: []protocol.FileSystemWatcher{{GlobPattern: "**/*"}}},
			}}}
			if err := conn.Call(s.ctx, methodRegisterCapability, params, nil); err != nil {
				s.log.Info("file watching not registered; files are re-read on save", zap.Error(err))
				s.mu.Lock()
				s.noWatcher = true
				s.mu.Unlock()
			}
		})
	}
	if pull {
		s.mu.Lock()
		s.pullSettingsLocked()
		s.mu.Unlock()
	}
}

// goLocked runs f in a goroutine the session waits for; s.mu is held.
// Once the session closes it starts nothing and reports false, so that
// no goroutine starts after Serve began to wait for them.
func (s *session) goLocked(f func()) bool {
	if s.closing {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// goDo is goLocked for a caller that does not hold s.mu.
func (s *session) goDo(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goLocked(f)
}

// exit ends the connection.
func (s *session) exit() {
	s.mu.Lock()
	if s.state != stateShutdown {
		s.exitErr = ErrExitWithoutShutdown
	}
	s.state = stateExited
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// showOnce shows msg to the user unless a message with key was shown
// since the last successful completion.
func (s *session) showOnce(key string, typ protocol.MessageType, msg string) {
	s.mu.Lock()
	if s.shown[key] {
		s.mu.Unlock()
		return
	}
	s.shown[key] = true
	conn := s.conn
	s.mu.Unlock()
	s.log.Warn("shown to the user", zap.String("message", msg))
	if conn == nil {
		return
	}
	if err := conn.Notify(s.ctx, methodShowMessage, protocol.ShowMessageParams{Type: typ, Message: msg}); err != nil {
		s.log.Debug("showMessage not sent", zap.Error(err))
	}
}

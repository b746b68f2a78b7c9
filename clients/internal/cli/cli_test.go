package cli

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/*.txtar")

// Sections of a case archive. Every other file is written into the
// working directory before the tool runs.
const (
	secArgs    = "args"    // command line, shell-like words (double quotes group)
	secEnv     = "env"     // NAME=value lines
	secServer  = "server"  // the fake server's script, see parseScript
	secStdout  = "stdout"  // golden
	secStderr  = "stderr"  // golden
	secExit    = "exit"    // golden
	secRequest = "request" // golden: what the server received
)

var golden = []string{secStdout, secStderr, secExit, secRequest}

// TestGolden runs each testdata/*.txtar case against a scripted in-process
// server and compares stdout, stderr, the exit code and the request the
// server saw with the archive's golden sections (-update rewrites them).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runCase(t, file)
		})
	}
}

func runCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	work := t.TempDir()
	for _, f := range ar.Files {
		switch f.Name {
		case secArgs, secEnv, secServer, secStdout, secStderr, secExit, secRequest:
			sections[f.Name] = string(f.Data)
			continue
		}
		path := filepath.Join(work, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data := f.Data
		// A file ending in the noNewline marker is written without its
		// final newline (e.g. a results file with a torn last line).
		if d, ok := bytes.CutSuffix(data, []byte("\n"+noNewline)); ok {
			data = d
		}
		if strings.HasSuffix(f.Name, ".bin") {
			data = append([]byte{0}, data...) // txtar cannot hold a NUL byte
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)

	srv := &scriptServer{attempts: parseScript(t, sections[secServer])}
	dialOpt := serve(t, srv)
	var target, auth string
	env := Env{
		Stdout: &bytes.Buffer{},
		Stderr: &bytes.Buffer{},
		Getenv: envFrom(sections[secEnv]),
		Dial: func(tgt string, cfg infill.Config) (*infill.Client, error) {
			target = tgt
			auth = "none"
			if cfg.Token != "" {
				auth = "bearer token"
			}
			cfg.DialOptions = append(cfg.DialOptions, dialOpt)
			cfg.Retry.InitialBackoff, cfg.Retry.MaxBackoff = time.Millisecond, time.Millisecond
			return infill.Dial("passthrough:///bufnet", cfg, nil)
		},
	}
	// TERMINAL=1 in the env section makes stdout count as a terminal.
	env.StdoutIsTerminal = env.Getenv("TERMINAL") == "1"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code := Main(ctx, splitArgs(t, sections[secArgs]), env)

	got := map[string]string{
		secStdout:  env.Stdout.(*bytes.Buffer).String(),
		secStderr:  env.Stderr.(*bytes.Buffer).String(),
		secExit:    fmt.Sprintf("%d\n", code),
		secRequest: srv.summary(target, auth),
	}
	for k, v := range got {
		got[k] = markNoNewline(strings.ReplaceAll(v, work, "$WORK"))
	}
	if *update {
		var files []txtar.File
		for _, f := range ar.Files {
			if !isGolden(f.Name) {
				files = append(files, f)
			}
		}
		for _, name := range golden {
			files = append(files, txtar.File{Name: name, Data: []byte(got[name])})
		}
		ar.Files = files
		if err := os.WriteFile(filepath.Join(origDir, file), txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range golden {
		if want, ok := sections[name]; !ok {
			t.Errorf("section %s missing; run go test -update", name)
		} else if got[name] != want {
			t.Errorf("%s differs\n--- got\n%s--- want\n%s", name, got[name], want)
		}
	}
}

// noNewline marks, as diff does, output that does not end in a newline
// (txtar would add one).
const noNewline = "\\ no newline at end\n"

func markNoNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n" + noNewline
}

// origDir is the package directory, for -update after t.Chdir.
var origDir, _ = os.Getwd()

func isGolden(name string) bool {
	for _, g := range golden {
		if name == g {
			return true
		}
	}
	return false
}

func envFrom(s string) func(string) string {
	vars := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[strings.TrimSpace(k)] = v
		}
	}
	return func(k string) string { return vars[k] }
}

// splitArgs splits on spaces; "double quoted" words may hold spaces.
func splitArgs(t *testing.T, s string) []string {
	var args []string
	sc := bufio.NewScanner(strings.NewReader(strings.TrimSpace(s)))
	sc.Split(bufio.ScanRunes)
	var cur strings.Builder
	inWord, quoted := false, false
	for sc.Scan() {
		r := sc.Text()
		switch {
		case r == `"`:
			quoted = !quoted
			inWord = true
		case (r == " " || r == "\n") && !quoted:
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteString(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in args %q", s)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}

// step is one scripted server action.
type step struct {
	msg   *infillv1.StreamCompleteResponse // nil for an error or sleep step
	code  codes.Code
	text  string
	sleep time.Duration
}

// parseScript reads the server section: per attempt, lines of
//
//	start {StreamStart as protojson}
//	delta "Go-quoted text"
//	done {CompleteResponse as protojson}
//	error CODE_NAME message
//	sleep DURATION (ends early when the client goes away)
//
// with a line "---" between attempts. An attempt without an error line
// ends the stream with OK after its last message.
func parseScript(t *testing.T, s string) [][]step {
	t.Helper()
	attempts := [][]step{nil}
	for n, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line == "---" {
			attempts = append(attempts, nil)
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		var st step
		switch verb {
		case "start":
			m := &infillv1.StreamStart{}
			if err := protojson.Unmarshal([]byte(rest), m); err != nil {
				t.Fatalf("server line %d: %v", n+1, err)
			}
			st.msg = &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Start{Start: m}}
		case "delta":
			text, err := strconv.Unquote(rest)
			if err != nil {
				t.Fatalf("server line %d: %v", n+1, err)
			}
			st.msg = &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Delta{
				Delta: &infillv1.TextDelta{Text: text}}}
		case "done":
			m := &infillv1.CompleteResponse{}
			if err := protojson.Unmarshal([]byte(rest), m); err != nil {
				t.Fatalf("server line %d: %v", n+1, err)
			}
			st.msg = &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Done{Done: m}}
		case "sleep":
			d, err := time.ParseDuration(rest)
			if err != nil {
				t.Fatalf("server line %d: %v", n+1, err)
			}
			st.sleep = d
		case "error":
			name, msg, _ := strings.Cut(rest, " ")
			st.code = codeByName(t, name)
			st.text = strings.ReplaceAll(msg, `\n`, "\n")
		default:
			t.Fatalf("server line %d: unknown verb %q", n+1, verb)
		}
		attempts[len(attempts)-1] = append(attempts[len(attempts)-1], st)
	}
	return attempts
}

func codeByName(t *testing.T, name string) codes.Code {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if infill.CodeName(c) == name {
			return c
		}
	}
	t.Fatalf("unknown code %q", name)
	return 0
}

// scriptServer plays one scripted attempt per call and records requests.
type scriptServer struct {
	infillv1.UnimplementedCompletionServiceServer
	attempts [][]step

	mu    sync.Mutex
	calls int
	last  *infillv1.StreamCompleteRequest
	auth  string
}

func (s *scriptServer) StreamComplete(req *infillv1.StreamCompleteRequest, st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]) error {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.last = req
	md, _ := metadata.FromIncomingContext(st.Context())
	s.auth = strings.Join(md.Get("authorization"), ",")
	s.mu.Unlock()
	if n >= len(s.attempts) {
		return status.Error(codes.Internal, "script has no more attempts")
	}
	for _, step := range s.attempts[n] {
		if step.sleep > 0 {
			select {
			case <-st.Context().Done():
				return st.Context().Err()
			case <-time.After(step.sleep):
			}
			continue
		}
		if step.msg == nil {
			return status.Error(step.code, step.text)
		}
		if err := st.Send(step.msg); err != nil {
			return err
		}
	}
	return nil
}

// summary renders what the server received, deterministically.
func (s *scriptServer) summary(target, auth string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "calls: %d\n", s.calls)
	if s.last == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "target: %s\n", target)
	fmt.Fprintf(&b, "credentials: %s, authorization header %q\n", auth, s.auth)
	r := s.last
	fmt.Fprintf(&b, "repository: %s\n", r.GetRepository().GetName())
	for _, f := range r.GetRepository().GetFiles() {
		fmt.Fprintf(&b, "  %s (%d bytes)\n", f.GetPath(), len(f.GetContent()))
	}
	c := r.GetCursor()
	fmt.Fprintf(&b, "cursor: %s line %d column %d (0-based, %s)\n", c.GetPath(), c.GetLine(), c.GetColumn(),
		strings.TrimPrefix(c.GetEncoding().String(), "POSITION_ENCODING_"))
	fmt.Fprintf(&b, "model: %q, max_tokens: %d, client_id: %q\n", r.GetModel(),
		r.GetGeneration().GetMaxTokens(), r.GetClientId())
	if d := r.GetContextDetail(); d != infillv1.ContextDetail_CONTEXT_DETAIL_UNSPECIFIED {
		fmt.Fprintf(&b, "context_detail: %s\n", strings.TrimPrefix(d.String(), "CONTEXT_DETAIL_"))
	}
	return b.String()
}

func serve(t *testing.T, srv infillv1.CompletionServiceServer) grpc.DialOption {
	t.Helper()
	return serveWith(t, func(s *grpc.Server) { infillv1.RegisterCompletionServiceServer(s, srv) })
}

// serveWith starts an in-memory gRPC server with what register adds and
// returns a dial option reaching it; the server stops with the test.
func serveWith(t *testing.T, register func(*grpc.Server)) grpc.DialOption {
	t.Helper()
	opt, _ := serveGRPC(t, register)
	return opt
}

// serveGRPC is serveWith that also returns the server (to Stop it early,
// as a crash would).
func serveGRPC(t *testing.T, register func(*grpc.Server)) (grpc.DialOption, *grpc.Server) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	register(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}), s
}

func TestIsLocal(t *testing.T) {
	t.Parallel()
	for target, want := range map[string]bool{
		"127.0.0.1:50051":       true,
		"localhost:50051":       true,
		"[::1]:50051":           true,
		"dns:///localhost:1":    true,
		"unix:///run/infill.s":  true,
		"example.com:443":       false,
		"10.0.0.2:50051":        false,
		"dns:///example.com:80": false,
	} {
		if got := isLocal(target); got != want {
			t.Errorf("isLocal(%q) = %v", target, got)
		}
	}
}

// A hint appears once, whether or not the error is a status; the hint for
// an unreachable server appears only when the client could not connect.
func TestErrorLine(t *testing.T) {
	t.Parallel()
	dial := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{hintError{fmt.Errorf("no tests"), "choose them with --pytest"}, "no tests; choose them with --pytest"},
		{hintError{status.Error(codes.Unimplemented, "unknown service"), "older server?"}, "UNIMPLEMENTED: unknown service; older server?"},
		{fmt.Errorf("eval: %w", hintError{fmt.Errorf("no tests"), "h"}), "eval: no tests; h"},
		{dial, "UNAVAILABLE: " + status.Convert(dial).Message() + " (is infill-server running there? set --server or INFILL_SERVER)"},
		{status.Error(codes.Unavailable, "backend unavailable: connect: connection refused"), "UNAVAILABLE: backend unavailable: connect: connection refused"},
	} {
		if got := errorLine(tc.err); got != tc.want {
			t.Errorf("errorLine(%v)\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
}

func TestInterruptExitCode(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.py"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &blockingServer{started: started, seen: make(chan error, 1)}
	dialOpt := serve(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel() // as SIGINT does through signal.NotifyContext
	}()
	var stderr bytes.Buffer
	code := Main(ctx, []string{"complete", "--repo", work, filepath.Join(work, "a.py"), "1:1"}, Env{
		Stdout: &bytes.Buffer{}, Stderr: &stderr,
		Dial: func(_ string, cfg infill.Config) (*infill.Client, error) {
			cfg.DialOptions = append(cfg.DialOptions, dialOpt)
			return infill.Dial("passthrough:///bufnet", cfg, nil)
		},
	})
	if code != ExitInterrupted || stderr.String() != "infill: interrupted\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	select {
	case err := <-srv.seen:
		if status.Code(err) != codes.Canceled && err != context.Canceled {
			t.Errorf("server saw %v; want a cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server never saw the cancel")
	}
}

type blockingServer struct {
	infillv1.UnimplementedCompletionServiceServer
	started chan struct{}
	seen    chan error
}

func (b *blockingServer) StreamComplete(_ *infillv1.StreamCompleteRequest, st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]) error {
	close(b.started)
	<-st.Context().Done()
	b.seen <- st.Context().Err()
	return st.Context().Err()
}

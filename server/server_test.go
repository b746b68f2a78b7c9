package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// http.Transport idle connections to the test Ollama are closed
		// lazily by the transport; they are not request goroutines.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// fakeBackend scripts backend behaviour for the server's own logic (error
// mapping, recovery, shutdown); the real backend is in e2e_test.go.
type fakeBackend struct {
	err        error
	panic      bool
	wait       chan struct{}
	promptEval int
	deltas     int // text deltas to send (one when 0)
}

func (f *fakeBackend) Ping(context.Context) error            { return nil }
func (f *fakeBackend) Model(n string) string                 { return "m" }
func (f *fakeBackend) ContextTokens(string) int              { return 4096 }
func (f *fakeBackend) MaxTokens(n int) int                   { return max(n, 16) }
func (f *fakeBackend) CheckOptions(*inference.Request) error { return nil }
func (f *fakeBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	if f.panic {
		panic("boom")
	}
	if f.wait != nil {
		select { // like the real backend, a cancelled call stops at once
		case <-f.wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	n := max(f.deltas, 1)
	for range n {
		if err := d(0, "x"); err != nil {
			return nil, err
		}
	}
	return &inference.Result{Model: "m", PromptEvalTokens: f.promptEval,
		Candidates: []inference.Candidate{{Text: strings.Repeat("x", n), Finish: inference.FinishStop, Tokens: n}}}, nil
}

type fakeBuilder struct{ err error }

func (f fakeBuilder) Build(context.Context, contextpack.Request) (*contextpack.Prompt, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &contextpack.Prompt{Text: "p", Tokens: 100, Manifest: contextpack.Manifest{PromptTokens: 100}}, nil
}

// CountPrompt lets the fake predict edits (a token per four bytes).
func (fakeBuilder) CountPrompt(text string) int { return len(text)/4 + 1 }

func startFake(t testing.TB, b server.PromptBuilder, be server.Backend) (infillv1.CompletionServiceClient, *server.Server) {
	t.Helper()
	return startFakeLog(t, b, be, zaptest.NewLogger(t))
}

func startFakeLog(t testing.TB, b server.PromptBuilder, be server.Backend, log *zap.Logger) (infillv1.CompletionServiceClient, *server.Server) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.ShutdownGrace = 200 * time.Millisecond
	srv, err := server.New(cfg, server.Deps{Builder: b, Backend: be}, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	// The codec the Go client installs (clients/go/infill).
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Shutdown(context.Background())
	})
	return infillv1.NewCompletionServiceClient(conn), srv
}

// drain reads a stream to its end: nil once it ends well, else the
// call's or the stream's error.
func drain[T any](st grpc.ServerStreamingClient[T], err error) error {
	for err == nil {
		_, err = st.Recv()
	}
	if err == io.EOF {
		return nil
	}
	return err
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		builder, backend error
		want             codes.Code
	}{
		{&contextpack.ArgumentError{Field: "cursor.line", Reason: "x"}, nil, codes.InvalidArgument},
		{&contextpack.MissingContentError{Paths: []string{"a"}}, nil, codes.FailedPrecondition},
		{fmt.Errorf("%w: small", contextpack.ErrBudget), nil, codes.InvalidArgument},
		{nil, fmt.Errorf("%w: x", inference.ErrPromptTooLong), codes.FailedPrecondition},
		{nil, &inference.ModelError{Model: "m", Hint: "pull"}, codes.NotFound},
		{nil, fmt.Errorf("%w: refused", inference.ErrUnavailable), codes.Unavailable},
		{nil, fmt.Errorf("%w: no done", inference.ErrIncomplete), codes.Unavailable},
		{nil, fmt.Errorf("%w: temperature", inference.ErrInvalidRequest), codes.InvalidArgument},
		{nil, context.DeadlineExceeded, codes.DeadlineExceeded},
		{nil, errors.New("mystery"), codes.Internal},
	}
	for _, tc := range cases {
		client, _ := startFake(t, fakeBuilder{err: tc.builder}, &fakeBackend{err: tc.backend})
		_, err := client.Complete(context.Background(), request(8))
		if status.Code(err) != tc.want {
			t.Errorf("builder %v backend %v: got %v, want %v", tc.builder, tc.backend, err, tc.want)
		}
	}
}

// A long list of missing digests stays deliverable: the message names ten
// paths, the details list paths up to a size bound and then say how many
// more there are (20,000 long paths made a trailer the client refused).
func TestMissingContentBounded(t *testing.T) {
	t.Parallel()
	paths := make([]string, 20000)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/file%05d.py", strings.Repeat("deep/", 60), i)
	}
	client, _ := startFake(t, fakeBuilder{err: &contextpack.MissingContentError{Paths: paths}}, &fakeBackend{})
	_, err := client.Complete(context.Background(), request(8))
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || len(st.Message()) > 4000 || !strings.Contains(st.Message(), "and 19990 more") {
		t.Fatalf("code %v, message of %d bytes: %.200s", st.Code(), len(st.Message()), st.Message())
	}
	listed, more := infill.MissingContent(err)
	if !more || len(listed) == 0 || len(listed) >= len(paths) || !slices.Equal(listed, paths[:len(listed)]) {
		t.Fatalf("listed %d of %d paths, more %v", len(listed), len(paths), more)
	}
	pf := st.Details()[0].(*errdetails.PreconditionFailure)
	if last := pf.Violations[len(pf.Violations)-1]; !strings.HasPrefix(last.GetDescription(), fmt.Sprint(len(paths)-len(listed), " more")) {
		t.Errorf("last violation %v", last)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, fakeBuilder{}, &fakeBackend{})
	both := &infillv1.File{Path: "a", Content: proto.String("x = 1\n"), Digest: contextpack.Digest("x = 1\n")}
	for name, tc := range map[string]struct {
		req  *infillv1.CompleteRequest
		want string // in the message
	}{
		"no repository": {&infillv1.CompleteRequest{Cursor: &infillv1.Cursor{Path: "a"}}, "repository.files"},
		"no cursor":     {&infillv1.CompleteRequest{Repository: request(1).Repository}, "cursor"},
		"no source": {&infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{{Path: "a"}}},
			Cursor: &infillv1.Cursor{Path: "a"}}, "repository.files[0]: needs content or digest"},
		"content and digest": {&infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{both}},
			Cursor: &infillv1.Cursor{Path: "a"}}, "repository.files[0]: has both content and digest"},
		"content and edits": {&infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{{Path: "a",
			Content: proto.String("x = 1\n"), Edits: []*infillv1.Edit{{Text: "y"}}}}},
			Cursor: &infillv1.Cursor{Path: "a"}}, "repository.files[0]: has both content and edits"},
		"bad budget": {&infillv1.CompleteRequest{Repository: request(1).Repository, Cursor: request(1).Cursor,
			LatencyBudget: &durationpb.Duration{Seconds: -1}}, "latency_budget"},
		"unknown encoding": {&infillv1.CompleteRequest{Repository: request(1).Repository,
			Cursor: &infillv1.Cursor{Path: request(1).Cursor.Path, Encoding: 99}}, "cursor.encoding: unknown value 99"},
		"long client_id": {&infillv1.CompleteRequest{Repository: request(1).Repository, Cursor: request(1).Cursor,
			ClientId: strings.Repeat("c", 257)}, "client_id: 257 bytes"},
		"long session_id": {&infillv1.CompleteRequest{Repository: request(1).Repository, Cursor: request(1).Cursor,
			SessionId: strings.Repeat("s", 1<<20)}, "session_id"},
		// Offsets beyond an int are named as sent, not as converted.
		"huge edit": {&infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{
			request(1).Repository.Files[0], {Path: "b", Digest: contextpack.Digest("x"), Edits: []*infillv1.Edit{{}, {Start: 3, End: math.MaxUint64}}}}},
			Cursor: request(1).Cursor}, "repository.files[1].edits[1]: range [3, 18446744073709551615) is past the end of any text"},
		"huge offset": {&infillv1.CompleteRequest{Repository: request(1).Repository,
			Cursor: &infillv1.Cursor{Path: request(1).Cursor.Path, Offset: 1<<62 + 1, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET}},
			"cursor.offset: 4611686018427387905 is past the end of any text"},
	} {
		_, err := client.Complete(context.Background(), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: %v, want InvalidArgument with %q", name, err, tc.want)
		}
	}
}

func TestDefaultsWithoutGenerationOptions(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, fakeBuilder{}, &fakeBackend{})
	req := request(1)
	req.Generation = nil
	if _, err := client.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestWarnsWhenBackendCountDiffers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		evaluated int
		warn      string
	}{{100, ""}, {101, ""}, {60, "truncated"}, {140, "tokenizers disagree"}} {
		client, _ := startFake(t, fakeBuilder{}, &fakeBackend{promptEval: tc.evaluated})
		resp, err := client.Complete(context.Background(), request(1))
		if err != nil {
			t.Fatal(err)
		}
		w := resp.Context.Warnings
		if tc.warn == "" && len(w) != 0 || tc.warn != "" && (len(w) != 1 || !strings.Contains(w[0], tc.warn)) {
			t.Errorf("evaluated %d of 100: warnings %q", tc.evaluated, w)
		}
	}
}

// TestLogsCallerNotCode checks the rpc log line: ids, sizes and timings at
// Info, and no source code at any level above Debug.
func TestLogsCallerNotCode(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	client, srv := startFakeLog(t, fakeBuilder{}, &fakeBackend{}, zap.New(core))
	req := request(4)
	req.ClientId, req.SessionId = "vim-test", "s-42"
	if _, err := client.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	st, err := client.StreamComplete(context.Background(), streamRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = st.Recv()
	}
	srv.Shutdown(context.Background())
	rpcs := logs.FilterMessage("rpc").All()
	if len(rpcs) != 2 {
		t.Fatalf("%d rpc log lines", len(rpcs))
	}
	for _, e := range rpcs {
		f := e.ContextMap()
		if f["client_id"] != "vim-test" || f["session_id"] != "s-42" || f["request_id"] == "" {
			t.Errorf("rpc line %v", f)
		}
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), "circumference") {
			t.Errorf("source code logged at %v: %q", e.Level, e.Message)
		}
	}
}

func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, fakeBuilder{}, &fakeBackend{panic: true})
	if _, err := client.Complete(context.Background(), request(8)); status.Code(err) != codes.Internal {
		t.Fatalf("err = %v", err)
	}
	st, err := client.StreamComplete(context.Background(), streamRequest(request(8)))
	if err == nil {
		_, err = st.Recv()
		for err == nil {
			_, err = st.Recv()
		}
	}
	if status.Code(err) != codes.Internal {
		t.Fatalf("stream err = %v", err)
	}
}

func TestShutdownWaitsThenStops(t *testing.T) {
	t.Parallel()
	be := &fakeBackend{wait: make(chan struct{})}
	client, srv := startFake(t, fakeBuilder{}, be)
	errc := make(chan error, 1)
	go func() {
		_, err := client.Complete(context.Background(), request(8))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the call reach the backend
	start := time.Now()
	srv.Shutdown(context.Background()) // grace 200ms, then hard stop
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if err := <-errc; status.Code(err) != codes.Unavailable {
		t.Fatalf("in-flight call after hard stop: %v", err)
	}
}

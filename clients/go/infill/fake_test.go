package infill

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// fakeServer is a CompletionService whose behaviour each test scripts, per
// attempt (1-based). It tests client logic only.
type fakeServer struct {
	infillv1.UnimplementedCompletionServiceServer

	stream func(attempt int, req *infillv1.StreamCompleteRequest, st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]) error
	unary  func(attempt int, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error)
	// predict and streamPredict answer the edit predictions.
	predict       func(attempt int, req *infillv1.PredictEditRequest) (*infillv1.PredictEditResponse, error)
	streamPredict func(attempt int, req *infillv1.StreamPredictEditRequest, st grpc.ServerStreamingServer[infillv1.StreamPredictEditResponse]) error

	mu       sync.Mutex
	attempts int
	requests []*infillv1.Repository
}

func (f *fakeServer) next(repo *infillv1.Repository) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	f.requests = append(f.requests, repo)
	return f.attempts
}

func (f *fakeServer) Attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func (f *fakeServer) Requests() []*infillv1.Repository {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*infillv1.Repository(nil), f.requests...)
}

func (f *fakeServer) Complete(ctx context.Context, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	return f.unary(f.next(req.GetRepository()), req)
}

func (f *fakeServer) StreamComplete(req *infillv1.StreamCompleteRequest, st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]) error {
	return f.stream(f.next(req.GetRepository()), req, st)
}

func (f *fakeServer) PredictEdit(ctx context.Context, req *infillv1.PredictEditRequest) (*infillv1.PredictEditResponse, error) {
	return f.predict(f.next(req.GetRepository()), req)
}

func (f *fakeServer) StreamPredictEdit(req *infillv1.StreamPredictEditRequest, st grpc.ServerStreamingServer[infillv1.StreamPredictEditResponse]) error {
	return f.streamPredict(f.next(req.GetRepository()), req, st)
}

// serve starts srv on an in-memory listener and returns a dial option
// reaching it.
func serve(t testing.TB, srv infillv1.CompletionServiceServer, opts ...grpc.ServerOption) grpc.DialOption {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(opts...)
	infillv1.RegisterCompletionServiceServer(s, srv)
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
	})
}

// newTestClient dials srv in memory. Backoff sleeps are recorded, not slept.
func newTestClient(t testing.TB, srv infillv1.CompletionServiceServer, cfg Config) (*Client, *[]time.Duration) {
	t.Helper()
	cfg.DialOptions = append(cfg.DialOptions, serve(t, srv))
	c, err := Dial("passthrough:///bufnet", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	sleeps := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*sleeps = append(*sleeps, d)
		return ctx.Err()
	}
	return c, sleeps
}

func start(model string) *infillv1.StreamCompleteResponse {
	return &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Start{
		Start: &infillv1.StreamStart{Model: model, RequestId: "req-" + model}}}
}

func delta(text string) *infillv1.StreamCompleteResponse {
	return &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Delta{
		Delta: &infillv1.TextDelta{Text: text}}}
}

func done(text string) *infillv1.StreamCompleteResponse {
	return &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Done{
		Done: &infillv1.CompleteResponse{Candidates: []*infillv1.Candidate{{Text: text,
			FinishReason: infillv1.FinishReason_FINISH_REASON_STOP}}}}}
}

func sendAll(st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse], msgs ...*infillv1.StreamCompleteResponse) error {
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			return err
		}
	}
	return nil
}

// collected is what a test consumer saw from Stream.
type collected struct {
	starts int
	text   string
	done   *infillv1.CompleteResponse
	err    error
	events int
}

func collect(seq func(func(*infillv1.StreamCompleteResponse, error) bool)) collected {
	var c collected
	for ev, err := range seq {
		c.events++
		if err != nil {
			c.err = err
			continue
		}
		switch {
		case ev.GetStart() != nil:
			c.starts++
		case ev.GetDelta() != nil:
			c.text += ev.GetDelta().GetText()
		case ev.GetDone() != nil:
			c.done = ev.GetDone()
		}
	}
	return c
}

func testRequest() *infillv1.StreamCompleteRequest {
	return &infillv1.StreamCompleteRequest{
		Repository: &infillv1.Repository{Name: "r", Files: []*infillv1.File{
			{Path: "a.py", Content: proto.String("x = 1\n")}}},
		Cursor: &infillv1.Cursor{Path: "a.py", Line: 1},
	}
}

package infill

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

type streamSrv = grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]

func TestStreamRetriesUnavailableBeforeFirstDelta(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{stream: func(attempt int, _ *infillv1.StreamCompleteRequest, st streamSrv) error {
		switch attempt {
		case 1: // fails before anything is sent
			return status.Error(codes.Unavailable, "backend down")
		case 2: // fails after StreamStart, before any text
			if err := st.Send(start("m2")); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "backend down")
		}
		return sendAll(st, start("m3"), delta("foo"), delta("bar"), done("foobar"))
	}}
	c, sleeps := newTestClient(t, srv, Config{})
	var starts []string
	got := collect(func(yield func(*infillv1.StreamCompleteResponse, error) bool) {
		for ev, err := range c.Stream(t.Context(), testRequest()) {
			if s := ev.GetStart(); s != nil {
				starts = append(starts, s.GetModel())
			}
			if !yield(ev, err) {
				return
			}
		}
	})
	if got.err != nil {
		t.Fatalf("stream failed: %v", got.err)
	}
	if srv.Attempts() != 3 || len(*sleeps) != 2 {
		t.Fatalf("attempts %d, backoff sleeps %d; want 3 and 2", srv.Attempts(), len(*sleeps))
	}
	if len(starts) != 1 || starts[0] != "m3" {
		t.Errorf("StreamStart events %v; want only the successful attempt's (m3)", starts)
	}
	if got.text != "foobar" || got.done == nil {
		t.Errorf("text %q, done %v", got.text, got.done)
	}
}

func TestStreamNotRetriedAfterDelta(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{stream: func(attempt int, _ *infillv1.StreamCompleteRequest, st streamSrv) error {
		if err := sendAll(st, start("m"), delta("partial")); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "backend went away")
	}}
	c, sleeps := newTestClient(t, srv, Config{})
	got := collect(c.Stream(t.Context(), testRequest()))
	if status.Code(got.err) != codes.Unavailable {
		t.Fatalf("err %v; want UNAVAILABLE", got.err)
	}
	if srv.Attempts() != 1 || len(*sleeps) != 0 {
		t.Errorf("attempts %d, sleeps %d; want 1 and 0", srv.Attempts(), len(*sleeps))
	}
	if got.starts != 1 || got.text != "partial" {
		t.Errorf("consumer saw %d starts and %q; want the start and the partial text", got.starts, got.text)
	}
}

func TestOtherCodesNeverRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition,
		codes.Internal, codes.ResourceExhausted, codes.Unknown} {
		t.Run(CodeName(code), func(t *testing.T) {
			msg := "cursor.line: line 99 past end of file (12 lines)"
			srv := &fakeServer{
				stream: func(int, *infillv1.StreamCompleteRequest, streamSrv) error {
					return status.Error(code, msg)
				},
				unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
					return nil, status.Error(code, msg)
				},
			}
			c, sleeps := newTestClient(t, srv, Config{})
			got := collect(c.Stream(t.Context(), testRequest()))
			if st := status.Convert(got.err); st.Code() != code || st.Message() != msg {
				t.Errorf("stream: err %v; want %v %q", got.err, code, msg)
			}
			if got.events != 1 {
				t.Errorf("stream yielded %d events; want only the error", got.events)
			}
			_, err := c.Complete(t.Context(), &infillv1.CompleteRequest{})
			if status.Code(err) != code {
				t.Errorf("unary: err %v; want %v", err, code)
			}
			if srv.Attempts() != 2 || len(*sleeps) != 0 {
				t.Errorf("attempts %d (want 1 per call), sleeps %d", srv.Attempts(), len(*sleeps))
			}
		})
	}
}

func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{
		stream: func(int, *infillv1.StreamCompleteRequest, streamSrv) error {
			return status.Error(codes.Unavailable, "down")
		},
		unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
			return nil, status.Error(codes.Unavailable, "down")
		},
	}
	c, sleeps := newTestClient(t, srv, Config{Retry: RetryPolicy{MaxAttempts: 3}})
	if err := collect(c.Stream(t.Context(), testRequest())).err; status.Code(err) != codes.Unavailable {
		t.Fatalf("err %v; want UNAVAILABLE", err)
	}
	if srv.Attempts() != 3 || len(*sleeps) != 2 {
		t.Fatalf("stream: attempts %d, sleeps %d; want 3 and 2", srv.Attempts(), len(*sleeps))
	}
	if _, err := c.Complete(t.Context(), &infillv1.CompleteRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("unary err %v; want UNAVAILABLE", err)
	}
	if srv.Attempts() != 6 {
		t.Fatalf("unary: attempts %d; want 3 more", srv.Attempts()-3)
	}

	one, _ := newTestClient(t, srv, Config{Retry: RetryPolicy{MaxAttempts: 1}})
	before := srv.Attempts()
	_, _ = one.Complete(t.Context(), &infillv1.CompleteRequest{})
	if n := srv.Attempts() - before; n != 1 {
		t.Errorf("MaxAttempts 1 made %d attempts", n)
	}
}

func TestCompleteRetriesUnavailable(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{unary: func(attempt int, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		if attempt == 1 {
			return nil, status.Error(codes.Unavailable, "down")
		}
		return &infillv1.CompleteResponse{Model: "m", Candidates: []*infillv1.Candidate{{Text: "ok"}}}, nil
	}}
	c, sleeps := newTestClient(t, srv, Config{})
	resp, err := c.Complete(t.Context(), &infillv1.CompleteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCandidates()[0].GetText() != "ok" || srv.Attempts() != 2 || len(*sleeps) != 1 {
		t.Errorf("resp %v, attempts %d, sleeps %d", resp, srv.Attempts(), len(*sleeps))
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	t.Parallel()
	c := newClient(nil, Config{Retry: RetryPolicy{
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2, Jitter: 0.2,
	}}.withDefaults(), nil)
	want := []time.Duration{100, 200, 400, 800, 1000, 1000} // ms, before jitter
	for i, base := range want {
		base *= time.Millisecond
		for _, r := range []float64{0, 0.5, 0.999999} {
			c.rand = func() float64 { return r }
			got := c.backoff(i + 1)
			lo, hi := time.Duration(float64(base)*0.8), min(time.Duration(float64(base)*1.2), time.Second)
			if got < lo-time.Microsecond || got > hi {
				t.Errorf("attempt %d, rand %v: backoff %v outside [%v, %v]", i+1, r, got, lo, hi)
			}
		}
		c.rand = func() float64 { return 0.5 }
		if got := c.backoff(i + 1); got != base {
			t.Errorf("attempt %d: backoff without jitter %v, want %v", i+1, got, base)
		}
	}
}

func TestRetryWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return nil, status.Error(codes.Unavailable, "down")
	}}
	c, _ := newTestClient(t, srv, Config{Retry: RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour}})
	c.sleep = sleepCtx // really wait
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.Complete(ctx, &infillv1.CompleteRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("err %v; want DEADLINE_EXCEEDED", err)
	}
	if time.Since(began) > 10*time.Second {
		t.Errorf("backoff did not end with the context")
	}
}

// blockingStream sends a start and a delta, then waits for the client to go
// away and reports what its context saw.
func blockingStream(seen chan<- error) func(int, *infillv1.StreamCompleteRequest, streamSrv) error {
	return func(_ int, _ *infillv1.StreamCompleteRequest, st streamSrv) error {
		if err := sendAll(st, start("m"), delta("first")); err != nil {
			return err
		}
		select {
		case <-st.Context().Done():
			seen <- st.Context().Err()
			return st.Context().Err()
		case <-time.After(30 * time.Second):
			seen <- errors.New("client never cancelled")
			return nil
		}
	}
}

func TestStreamContextCancelReachesServer(t *testing.T) {
	t.Parallel()
	seen := make(chan error, 1)
	srv := &fakeServer{stream: blockingStream(seen)}
	c, _ := newTestClient(t, srv, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var text string
	var last error
	for ev, err := range c.Stream(ctx, testRequest()) {
		if err != nil {
			last = err
			continue
		}
		text += ev.GetDelta().GetText()
		if text == "first" {
			cancel()
		}
	}
	if status.Code(last) != codes.Canceled {
		t.Errorf("stream ended with %v; want CANCELLED", last)
	}
	if err := <-seen; !errors.Is(err, context.Canceled) {
		t.Errorf("server saw %v; want context.Canceled", err)
	}
	if srv.Attempts() != 1 {
		t.Errorf("attempts %d; a cancel is never retried", srv.Attempts())
	}
}

func TestStreamBreakCancelsServer(t *testing.T) {
	t.Parallel()
	seen := make(chan error, 1)
	srv := &fakeServer{stream: blockingStream(seen)}
	c, _ := newTestClient(t, srv, Config{})
	for ev, err := range c.Stream(t.Context(), testRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetDelta() != nil {
			break
		}
	}
	if err := <-seen; !errors.Is(err, context.Canceled) {
		t.Errorf("server saw %v; want context.Canceled", err)
	}
}

func TestStreamWithoutFinalResponseIsAnError(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{stream: func(_ int, _ *infillv1.StreamCompleteRequest, st streamSrv) error {
		return sendAll(st, start("m"), delta("half"))
	}}
	c, _ := newTestClient(t, srv, Config{})
	got := collect(c.Stream(t.Context(), testRequest()))
	if !errors.Is(got.err, ErrNoFinalResponse) || got.text != "half" {
		t.Errorf("err %v, text %q; want ErrNoFinalResponse after the partial text", got.err, got.text)
	}
}

func TestStreamDoneWithoutDeltasYieldsStart(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{stream: func(_ int, _ *infillv1.StreamCompleteRequest, st streamSrv) error {
		return sendAll(st, start("m"), done(""))
	}}
	c, _ := newTestClient(t, srv, Config{})
	got := collect(c.Stream(t.Context(), testRequest()))
	if got.err != nil || got.starts != 1 || got.done == nil || got.events != 2 {
		t.Errorf("got %+v; want start then done", got)
	}
}

func TestRequestNotModifiedAndClientIDFilled(t *testing.T) {
	t.Parallel()
	var gotID string
	srv := &fakeServer{stream: func(_ int, req *infillv1.StreamCompleteRequest, st streamSrv) error {
		gotID = req.GetClientId()
		if req.GetCursor().GetPath() != "a.py" || req.GetRepository().GetName() != "r" {
			t.Errorf("request fields lost: %v", req)
		}
		return sendAll(st, done(""))
	}}
	c, _ := newTestClient(t, srv, Config{ClientID: "test-plugin", Transfer: TransferDigests})
	req := testRequest()
	if err := collect(c.Stream(t.Context(), req)).err; err != nil {
		t.Fatal(err)
	}
	if gotID != "test-plugin" || req.GetClientId() != "" {
		t.Errorf("server saw client_id %q, caller's request has %q", gotID, req.GetClientId())
	}
}

func TestMessageSizeLimit(t *testing.T) {
	t.Parallel()
	srv := &fakeServer{unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return &infillv1.CompleteResponse{}, nil
	}}
	c, _ := newTestClient(t, srv, Config{MaxMessageBytes: 1024})
	req := &infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{
		{Path: "big", Content: proto.String(strings.Repeat("x", 4096))}}}}
	_, err := c.Complete(t.Context(), req)
	if status.Code(err) != codes.ResourceExhausted || srv.Attempts() != 0 {
		t.Errorf("err %v, attempts %d; want RESOURCE_EXHAUSTED before sending", err, srv.Attempts())
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Token: "t"},
		{MaxMessageBytes: -1},
		{Retry: RetryPolicy{MaxAttempts: -1}},
		{Retry: RetryPolicy{Multiplier: 0.5}},
		{Retry: RetryPolicy{Jitter: 1.5}},
		{Retry: RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}},
		{Transfer: TransferWhole + 1},
		{Transfer: -1},
		{Retry: RetryPolicy{Jitter: math.NaN()}}, // NaN passed range checks and turned backoff off
		{Retry: RetryPolicy{Multiplier: math.NaN()}},
		{Retry: RetryPolicy{Multiplier: math.Inf(1)}},
		{ClientID: strings.Repeat("c", 257)}, // the server refuses every call with it
	}
	for _, cfg := range bad {
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v; want ErrInvalidConfig", cfg, err)
		}
		if _, err := Dial("localhost:1", cfg, nil); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Dial accepted %+v", cfg)
		}
	}
	for _, cfg := range []Config{
		{Token: "t", AllowTokenWithoutTLS: true},
		// Credentials may come in DialOptions; the token still refuses a
		// plaintext connection when called.
		{Token: "t", DialOptions: []grpc.DialOption{grpc.WithUserAgent("x")}},
		// One backoff bound set: the other default gives way.
		{Retry: RetryPolicy{InitialBackoff: 5 * time.Second}},
		{Retry: RetryPolicy{MaxBackoff: 50 * time.Millisecond}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", cfg, err)
		}
	}
	if p := (RetryPolicy{MaxBackoff: 50 * time.Millisecond}).withDefaults(); p.InitialBackoff != 50*time.Millisecond {
		t.Errorf("InitialBackoff %v under MaxBackoff 50ms", p.InitialBackoff)
	}
	// NewClient does not apply Token (the caller's dial does), so it does
	// not refuse one.
	conn, err := grpc.NewClient("localhost:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := NewClient(conn, Config{Token: "t"}, nil); err != nil {
		t.Errorf("NewClient with a token: %v", err)
	}
	d := DefaultConfig()
	if d.MaxMessageBytes != 64<<20 || d.Retry.MaxAttempts != 4 || d.Keepalive.Time != time.Minute {
		t.Errorf("defaults %+v", d)
	}
}

package server_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// harness is a real infill gRPC server on loopback in front of a real
// Ollama serving the tiny model.
type harness struct {
	backend *ollamatest.Backend
	conn    *grpc.ClientConn
	client  infillv1.CompletionServiceClient
	eval    infillv1.EvaluationServiceClient
	health  healthpb.HealthClient
}

func start(t *testing.T, mutate func(*server.Config)) *harness {
	t.Helper()
	return startWith(t, mutate, nil)
}

// startWith runs the real server (servertest) and dials it.
func startWith(t *testing.T, mutate func(*server.Config), deps func(*server.Deps)) *harness {
	t.Helper()
	return dial(t, servertest.StartWith(t, servertest.Options{Config: mutate, Deps: deps}))
}

func dial(t *testing.T, srv *servertest.Server) *harness {
	t.Helper()
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &harness{backend: srv.Backend, conn: conn, client: infillv1.NewCompletionServiceClient(conn),
		eval: infillv1.NewEvaluationServiceClient(conn), health: healthpb.NewHealthClient(conn)}
}

func (h *harness) waitHealth(t *testing.T, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last healthpb.HealthCheckResponse_ServingStatus
	for time.Now().Before(deadline) {
		r, err := h.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
		if err == nil && r.Status == want {
			return
		}
		if err == nil {
			last = r.Status
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("health stayed %v, want %v", last, want)
}

const pySource = `import math


def area(r):
    """Area of a circle of radius r."""
    return math.pi * r ** 2


def circumference(r):
    return 
`

func request(maxTokens uint32) *infillv1.CompleteRequest {
	return &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{
			{Path: "geo/circle.py", Content: proto.String(pySource)},
		}},
		Cursor:     &infillv1.Cursor{Path: "geo/circle.py", Line: 9, Column: 11},
		Generation: &infillv1.GenerationOptions{MaxTokens: maxTokens},
	}
}

func streamRequest(r *infillv1.CompleteRequest) *infillv1.StreamCompleteRequest {
	return &infillv1.StreamCompleteRequest{Repository: r.Repository, Cursor: r.Cursor, Generation: r.Generation,
		TokenBudget: r.TokenBudget, Model: r.Model, LatencyBudget: r.LatencyBudget,
		ClientId: r.ClientId, SessionId: r.SessionId, ContextDetail: r.ContextDetail}
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	h := start(t, nil)

	t.Run("unary", func(t *testing.T) {
		req := request(24)
		seed := int64(1)
		req.Generation.Candidates, req.Generation.Seed = 2, &seed
		resp, err := h.client.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Candidates) != 2 {
			t.Fatalf("%d candidates, want 2", len(resp.Candidates))
		}
		for i, c := range resp.Candidates {
			if int(c.Index) != i || c.FinishReason == infillv1.FinishReason_FINISH_REASON_UNSPECIFIED {
				t.Fatalf("candidate %d: %+v", i, c)
			}
			if c.CompletionTokens > 24 {
				t.Fatalf("candidate %d: %d tokens > max 24", i, c.CompletionTokens)
			}
		}
		u := resp.Usage
		if u.PromptTokens == 0 || u.PlannedPromptTokens == 0 || u.CompletionTokens == 0 {
			t.Fatalf("usage %+v", u)
		}
		if resp.Model != h.backend.Model || resp.RequestId == "" || resp.Context.PromptTokens != u.PlannedPromptTokens {
			t.Fatalf("response %+v", resp)
		}
		if resp.Timings.Total.AsDuration() < resp.Timings.ContextAssembly.AsDuration() {
			t.Fatalf("timings %+v", resp.Timings)
		}
		// The tokenizer is exact: the backend evaluated exactly the planned
		// prompt (+1 at most for a BOS it may add) on this cold request.
		if len(resp.Context.Warnings) != 0 {
			t.Fatalf("warnings: %v", resp.Context.Warnings)
		}
	})

	t.Run("stream", func(t *testing.T) {
		st, err := h.client.StreamComplete(context.Background(), streamRequest(request(24)))
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		var sawStart bool
		var done *infillv1.CompleteResponse
		for {
			m, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch e := m.Event.(type) {
			case *infillv1.StreamCompleteResponse_Start:
				sawStart = true
				if e.Start.Context.GetPromptTokens() == 0 {
					t.Fatal("start without context manifest")
				}
			case *infillv1.StreamCompleteResponse_Delta:
				if !sawStart || done != nil {
					t.Fatal("delta out of order")
				}
				text.WriteString(e.Delta.Text)
			case *infillv1.StreamCompleteResponse_Done:
				done = e.Done
			}
		}
		if done == nil || len(done.Candidates) != 1 || done.Candidates[0].Text != text.String() {
			t.Fatalf("done %+v, streamed %q", done, text.String())
		}
		if done.Usage.CompletionTokens == 0 {
			t.Fatalf("usage %+v", done.Usage)
		}
	})

	t.Run("bad cursor", func(t *testing.T) {
		req := request(8)
		req.Cursor.Line = 99
		_, err := h.client.Complete(context.Background(), req)
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "line 99") {
			t.Fatalf("err = %v", err)
		}
		var br *errdetails.BadRequest
		for _, d := range st.Details() {
			if b, ok := d.(*errdetails.BadRequest); ok {
				br = b
			}
		}
		if br == nil || br.FieldViolations[0].Field != "cursor.line" {
			t.Fatalf("details %v", st.Details())
		}
	})

	t.Run("generation options", func(t *testing.T) {
		nan := float32(math.NaN())
		for field, gen := range map[string]*infillv1.GenerationOptions{
			"generation.temperature": {Temperature: &nan}, // not UNAVAILABLE: clients retry that
			"generation.max_tokens":  {MaxTokens: math.MaxUint32},
			"generation.stop[0]":     {Stop: []string{""}},
		} {
			req := request(8)
			req.Generation = gen
			_, err := h.client.Complete(context.Background(), req)
			st := status.Convert(err)
			var br *errdetails.BadRequest
			for _, d := range st.Details() {
				if b, ok := d.(*errdetails.BadRequest); ok {
					br = b
				}
			}
			if st.Code() != codes.InvalidArgument || br == nil || br.FieldViolations[0].Field != field {
				t.Errorf("%s: %v, details %v", field, err, st.Details())
			}
		}
	})

	t.Run("unknown file", func(t *testing.T) {
		req := request(8)
		req.Cursor.Path = "nope.py"
		if _, err := h.client.Complete(context.Background(), req); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("unknown digest", func(t *testing.T) {
		req := request(8)
		req.Repository.Files = append(req.Repository.Files, &infillv1.File{Path: "geo/other.py",
			Digest: "sha256:" + strings.Repeat("ab", 32)})
		_, err := h.client.Complete(context.Background(), req)
		st := status.Convert(err)
		if st.Code() != codes.FailedPrecondition {
			t.Fatalf("err = %v", err)
		}
		var pf *errdetails.PreconditionFailure
		for _, d := range st.Details() {
			if p, ok := d.(*errdetails.PreconditionFailure); ok {
				pf = p
			}
		}
		if pf == nil || len(pf.Violations) != 1 || pf.Violations[0].Subject != "geo/other.py" {
			t.Fatalf("details %v", st.Details())
		}
	})

	t.Run("unknown model", func(t *testing.T) {
		req := request(8)
		req.Model = "qwen2.5-coder:0.5b-base-missing"
		_, err := h.client.Complete(context.Background(), req)
		st := status.Convert(err)
		if st.Code() != codes.NotFound || !strings.Contains(st.Message(), req.Model) || !strings.Contains(st.Message(), "ollama pull") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		time.Sleep(2 * time.Millisecond)
		if _, err := h.client.Complete(ctx, request(8)); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestBackendDown(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.backend.Stop()
	h.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	_, err := h.client.Complete(context.Background(), request(8))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want UNAVAILABLE", err)
	}
	h.backend.Restart()
	h.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	if _, err := h.client.Complete(context.Background(), request(8)); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestStatusCodesAreNotSilentSuccess(t *testing.T) {
	t.Parallel()
	// A cancelled stream must end with CANCELED on the client, never with a
	// clean EOF and an empty result.
	h := start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := h.client.StreamComplete(ctx, streamRequest(request(512)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil { // start
		t.Fatal(err)
	}
	cancel()
	for {
		_, err := st.Recv()
		if err == nil {
			continue
		}
		if status.Code(err) != codes.Canceled || errors.Is(err, io.EOF) {
			t.Fatalf("err = %v, want CANCELED", err)
		}
		break
	}
}

// TestCancelStopsGeneration shows that a client cancel stops generation at
// the backend: Ollama serves one request at a time here, so if the cancelled
// long generation went on, the next request would wait behind it. The check
// compares two durations from the same run (no absolute timing).
func TestCancelStopsGeneration(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const long = 600

	// Baseline: how long the long generation takes when nobody cancels it.
	begin := time.Now()
	full, err := h.client.Complete(context.Background(), request(long))
	if err != nil {
		t.Fatal(err)
	}
	fullTime := time.Since(begin)
	if n := full.Usage.CompletionTokens; n < long/2 {
		t.Fatalf("baseline generated only %d tokens; the test needs a long generation", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	st, err := h.client.StreamComplete(ctx, streamRequest(request(long)))
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if m.GetDelta() != nil {
			break
		}
	}
	cancel()
	begin = time.Now()
	if _, err := h.client.Complete(context.Background(), request(1)); err != nil {
		t.Fatal(err)
	}
	next := time.Since(begin)
	t.Logf("uncancelled %d-token generation: %v; next request after a cancel: %v", full.Usage.CompletionTokens, fullTime, next)
	if next > fullTime/2 {
		t.Fatalf("the request after a cancel took %v, more than half of a whole long generation (%v): generation was not stopped", next, fullTime)
	}
}

package server_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// countingBackend counts the generations that reach the real backend.
type countingBackend struct {
	server.Backend
	calls atomic.Int32
}

func (c *countingBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	c.calls.Add(1)
	return c.Backend.Generate(ctx, req, d)
}

// startCounting runs the real server on the real backend, counting the
// generations that reach it.
func startCounting(t *testing.T, mutate func(*server.Config)) (*harness, *countingBackend) {
	t.Helper()
	var cb *countingBackend
	h := startWith(t, mutate, func(d *server.Deps) {
		cb = &countingBackend{Backend: d.Backend}
		d.Backend = cb
	})
	return h, cb
}

// firstDelta opens a stream and returns once its first text arrived.
func firstDelta(t *testing.T, h *harness, ctx context.Context, r *infillv1.CompleteRequest) infillv1.CompletionService_StreamCompleteClient {
	t.Helper()
	st, err := h.client.StreamComplete(ctx, streamRequest(r))
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("before the first text: %v", err)
		}
		if m.GetDelta() != nil {
			return st
		}
	}
}

// streamEnd reads a stream to its end and returns its error (nil: done).
func streamEnd(st infillv1.CompletionService_StreamCompleteClient) error {
	for {
		if _, err := st.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// A newer request of the same session cancels the one still generating:
// it ends CANCELLED saying it was superseded, the backend stops (the new
// request is not kept waiting behind the old generation) and the new one
// is served.
func TestSupersedeStopsTheBackend(t *testing.T) {
	t.Parallel()
	h, cb := startCounting(t, nil)
	const long = 400
	begin := time.Now()
	full, err := h.client.Complete(context.Background(), request(long))
	if err != nil {
		t.Fatal(err)
	}
	fullTime := time.Since(begin)
	if full.Usage.CompletionTokens < long/2 {
		t.Fatalf("baseline generated only %d tokens; the test needs a long generation", full.Usage.CompletionTokens)
	}

	first := request(long)
	first.ClientId, first.SessionId = "editor", "buffer-1"
	st := firstDelta(t, h, context.Background(), first)
	second := request(1)
	second.ClientId, second.SessionId = "editor", "buffer-1"
	begin = time.Now()
	resp, err := h.client.Complete(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	next := time.Since(begin)
	err = streamEnd(st)
	if status.Code(err) != codes.Canceled || !strings.Contains(status.Convert(err).Message(), "superseded") {
		t.Fatalf("superseded stream ended with %v, want CANCELLED saying superseded", err)
	}
	if resp.Usage.GetCompletionTokens() > 1 || cb.calls.Load() != 3 {
		t.Fatalf("second request: %d tokens, %d backend calls", resp.Usage.GetCompletionTokens(), cb.calls.Load())
	}
	t.Logf("uncancelled generation %v; the superseding request took %v", fullTime, next)
	if next > fullTime/2 {
		t.Fatalf("the superseding request took %v, more than half a whole long generation (%v): the old one was not stopped", next, fullTime)
	}
}

// A request whose deadline is shorter than the current queue wait is
// refused at once with RESOURCE_EXHAUSTED and a retry delay, without
// reaching the backend; so is one that finds the queue full.
func TestDeadlineShedding(t *testing.T) {
	t.Parallel()
	h, cb := startCounting(t, func(c *server.Config) { c.Admission.QueueLength = 1 })
	// Measure a generation first, so the estimate is the backend's.
	if _, err := h.client.Complete(context.Background(), request(200)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := firstDelta(t, h, ctx, request(600))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	short, scancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer scancel()
	begin := time.Now()
	_, err := h.client.Complete(short, request(8))
	took := time.Since(begin)
	s := status.Convert(err)
	if s.Code() != codes.ResourceExhausted {
		t.Fatalf("short deadline: %v, want RESOURCE_EXHAUSTED", err)
	}
	var retry *errdetails.RetryInfo
	for _, d := range s.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
		t.Fatalf("no RetryInfo in %v", s.Details())
	}
	t.Logf("refused in %v, retry after %v", took, retry.GetRetryDelay().AsDuration())

	// Two more without a deadline: one waits, the other finds the queue
	// (of one) full and is refused at once.
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.client.Complete(ctx, request(8))
			errs <- err
		}()
		time.Sleep(100 * time.Millisecond)
	}
	full := <-errs
	if status.Code(full) != codes.ResourceExhausted || !strings.Contains(status.Convert(full).Message(), "already waiting") {
		t.Fatalf("full queue: %v", full)
	}
	if n := cb.calls.Load(); n != 2 {
		t.Fatalf("%d generations reached the backend, want 2 (the refused ones must not)", n)
	}
	cancel()
	_ = streamEnd(st)
}

// An evaluation flood does not delay an interactive request by more than
// one generation: it starts as soon as the slot frees, ahead of the
// evaluation requests that came before it.
func TestInteractiveBeforeEvaluation(t *testing.T) {
	t.Parallel()
	h, _ := startCounting(t, nil)
	eval := func() *infillv1.CompleteRequest {
		r := request(80)
		r.RequestClass = infillv1.RequestClass_REQUEST_CLASS_EVALUATION
		return r
	}
	const flood = 4
	type done struct {
		resp *infillv1.CompleteResponse
		at   time.Time
	}
	evals := make(chan done, flood)
	for range flood {
		go func() {
			resp, err := h.client.Complete(context.Background(), eval())
			if err != nil {
				t.Error(err)
			}
			evals <- done{resp, time.Now()}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the flood is queued behind the first of it
	resp, err := h.client.Complete(context.Background(), request(8))
	if err != nil {
		t.Fatal(err)
	}
	interactiveDone := time.Now()
	var longest time.Duration
	later := 0
	for range flood {
		d := <-evals
		if d.resp == nil {
			continue
		}
		if gen := d.resp.Timings.Total.AsDuration() - d.resp.Timings.QueueWait.AsDuration(); gen > longest {
			longest = gen
		}
		if d.at.After(interactiveDone) {
			later++
		}
	}
	wait := resp.Timings.QueueWait.AsDuration()
	t.Logf("interactive waited %v; longest evaluation generation %v; %d of %d evaluation requests finished after it", wait, longest, later, flood)
	if later < flood-2 {
		t.Errorf("only %d evaluation requests finished after the interactive one: it did not go first", later)
	}
	if wait > longest+longest/2 {
		t.Errorf("interactive request waited %v, more than one generation (%v)", wait, longest)
	}
}

// When the user types the first characters of the completion just served,
// the rest is answered without the backend, marked reused; typing anything
// else asks the backend again.
func TestTypedThroughE2E(t *testing.T) {
	t.Parallel()
	h, cb := startCounting(t, nil)
	prefix := "import math\n\n\ndef circumference(r):\n    return "
	suffix := "\n\n\nprint(circumference(1))\n"
	at := func(p string) *infillv1.CompleteRequest {
		return &infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{{Path: "geo/c.py", Content: proto.String(p + suffix)}}},
			Cursor:     &infillv1.Cursor{Path: "geo/c.py", Offset: uint64(len(p)), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
			Generation: &infillv1.GenerationOptions{MaxTokens: 12},
			ClientId:   "editor", SessionId: "buffer-1",
		}
	}
	first, err := h.client.Complete(context.Background(), at(prefix))
	if err != nil {
		t.Fatal(err)
	}
	text := first.Candidates[0].Text
	_, size := utf8.DecodeRuneInString(text)
	if first.Reused || len(text) <= size {
		t.Fatalf("first completion %q (reused %v): the test needs two characters or more", text, first.Reused)
	}
	typed := text[:size]
	resp, err := h.client.Complete(context.Background(), at(prefix+typed))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Reused || resp.Candidates[0].Text != text[size:] || cb.calls.Load() != 1 {
		t.Fatalf("typed %q of %q: reused %v, text %q, %d backend calls", typed, text, resp.Reused, resp.Candidates[0].Text, cb.calls.Load())
	}
	other := at(prefix + "\x01")
	if resp, err = h.client.Complete(context.Background(), other); err != nil || resp.Reused || cb.calls.Load() != 2 {
		t.Fatalf("other text: %v, reused %v, %d backend calls", err, resp.GetReused(), cb.calls.Load())
	}
}

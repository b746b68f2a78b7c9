package ollamatest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infill-dev/infill/inference/ollamatest"
)

// A backend that answers the first ten streams and then nothing: the storm
// stops at the wedge, counts the cancelled streams before it and abandons
// the waiting ones after Drain.
func TestStormDetectsWedge(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	fn := func(ctx context.Context, first func()) error {
		if n.Add(1) <= 10 {
			first()
		}
		<-ctx.Done()
		return ctx.Err()
	}
	res := ollamatest.Storm(context.Background(), ollamatest.StormOptions{
		Streams: 100, Concurrency: 3, Quiet: 200 * time.Millisecond, Drain: 50 * time.Millisecond,
	}, fn)
	cancelled, abandoned, finished, failed := res.Counts()
	if !res.Wedged || res.CancelledBefore != 10 || cancelled != 10 || abandoned != 3 || finished != 0 || len(failed) != 0 {
		t.Fatalf("wedged %v after %d; cancelled %d abandoned %d finished %d failed %v",
			res.Wedged, res.CancelledBefore, cancelled, abandoned, finished, failed)
	}
	if len(res.Outcomes) != 13 || res.Detected < res.LastToken+200*time.Millisecond {
		t.Fatalf("%d outcomes, last token %v, detected %v", len(res.Outcomes), res.LastToken, res.Detected)
	}
}

// Without a wedge every stream is sent and cancelled at its first token;
// errors before a token are recorded, streams that end by themselves too.
func TestStormCompletes(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	boom := errors.New("UNAVAILABLE: boom")
	fn := func(ctx context.Context, first func()) error {
		switch n.Add(1) % 10 {
		case 0:
			return boom
		case 1:
			return nil // ended without a token
		}
		time.Sleep(time.Millisecond)
		first()
		<-ctx.Done()
		return ctx.Err()
	}
	res := ollamatest.Storm(context.Background(), ollamatest.StormOptions{Streams: 50, Concurrency: 4}, fn)
	cancelled, abandoned, finished, failed := res.Counts()
	if res.Wedged || cancelled != 40 || abandoned != 0 || finished != 5 || failed[boom.Error()] != 5 {
		t.Fatalf("wedged %v; cancelled %d abandoned %d finished %d failed %v", res.Wedged, cancelled, abandoned, finished, failed)
	}
	for i, o := range res.Outcomes {
		if o.Index != i || o.End < o.Start || (o.Cancelled && o.First < o.Start) {
			t.Fatalf("outcome %d: %+v", i, o)
		}
	}
	if p50, p99 := res.TTFT(); p50 <= 0 || p99 < p50 {
		t.Fatalf("ttft p50 %v p99 %v", p50, p99)
	}
}

// DirectStream against the real backend: the first token arrives and the
// cancel ends the stream.
func TestDirectStream(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	opts := map[string]any{"num_ctx": numCtx, "num_predict": 8, "temperature": 0}
	if err := b.Warm(map[string]any{"num_ctx": numCtx}); err != nil {
		t.Fatal(err)
	}
	res := ollamatest.Storm(context.Background(), ollamatest.StormOptions{Streams: 6, Concurrency: 2},
		ollamatest.DirectStream(nil, b.URL, b.Model, "<|fim_prefix|>def f(x):\n    return <|fim_suffix|>\n<|fim_middle|>", opts))
	cancelled, _, _, failed := res.Counts()
	if cancelled+len(failed) != 6 || cancelled == 0 {
		t.Fatalf("cancelled %d, failed %v, wedged %v", cancelled, failed, res.Wedged)
	}
}

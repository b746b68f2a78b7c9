package ollamatest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// A cancel storm: many streaming generations, each cancelled by the client
// as soon as its first token arrives, with more waiting than the backend
// runs at once. Ollama v0.24.0 wedges under it (issue 20): after a few dozen
// cancelled streams every later generation hangs with the runner idle while
// /api/version still answers. Storm reproduces it against any target (Ollama
// itself with DirectStream, or infill's gRPC API with a StreamFunc of the
// caller's) and tells a wedge apart from a slow queue by progress: the storm
// is wedged when no stream has received a token for StormOptions.Quiet while
// streams wait.

// StreamFunc runs one streaming generation: it calls first once, when the
// first token arrives, and returns when the stream ends. The storm cancels
// ctx right after first, so the usual end is ctx's cancellation; any error
// is recorded as the stream's outcome.
type StreamFunc func(ctx context.Context, first func()) error

// StormOptions size a storm.
type StormOptions struct {
	// Streams to send in all; Concurrency of them at once.
	Streams, Concurrency int
	// Quiet: when no stream has had a first token for this long while
	// streams are waiting, the backend is wedged and the storm sends no
	// more. Default 20s; it must exceed the longest honest wait, which is
	// about Concurrency × one short generation when the backend runs one
	// at a time.
	Quiet time.Duration
	// Drain is how long streams still waiting when the storm stops may go
	// on to end by themselves (a server's stall watchdog answering them)
	// before they are cancelled; 0 cancels them at once.
	Drain time.Duration
	// Duration, if set, stops sending new streams after this long; the
	// ones under way go on (a deadline on the storm's ctx would reach every
	// stream, and a server that sheds requests it cannot start before
	// their deadline would refuse them all near the end).
	Duration time.Duration
	// Progress, if set, is called after every stream ends.
	Progress func(done int, last StreamOutcome)
}

// StreamOutcome is how one stream of a storm went. Times are offsets from
// the storm's start.
type StreamOutcome struct {
	Index int
	// Start, First (0: no token) and End of the stream.
	Start, First, End time.Duration
	// Err is what the StreamFunc returned (nil for a stream that ended by
	// itself without error).
	Err error
	// Cancelled: the storm cancelled it after its first token, as planned.
	Cancelled bool
	// Abandoned: the storm cancelled it without a first token, because
	// the backend was wedged and Drain passed. Streams cancelled because
	// the storm's ctx ended are not abandoned: Err says what they got.
	Abandoned bool
}

// StormResult is the outcome of a storm.
type StormResult struct {
	Outcomes []StreamOutcome // in order of Index; streams never sent are absent
	// Wedged: the storm stopped because no token came for Quiet.
	Wedged bool
	// LastToken is when the last first token arrived (the wedge began
	// after it); CancelledBefore counts the streams cancelled after a
	// first token by then.
	LastToken       time.Duration
	CancelledBefore int
	// Detected is when the storm declared the wedge (LastToken + Quiet).
	Detected time.Duration
	Elapsed  time.Duration
}

// Counts sorts the outcomes: cancelled after the first token, abandoned
// (wedge), ended by themselves without error, and failed by error message.
func (r *StormResult) Counts() (cancelled, abandoned, finished int, failed map[string]int) {
	failed = map[string]int{}
	for _, o := range r.Outcomes {
		switch {
		case o.Cancelled:
			cancelled++
		case o.Abandoned:
			abandoned++
		case o.Err == nil:
			finished++
		default:
			failed[o.Err.Error()]++
		}
	}
	return
}

// TTFT returns the p50 and p99 time to first token of the streams that had
// one.
func (r *StormResult) TTFT() (p50, p99 time.Duration) {
	var ds []time.Duration
	for _, o := range r.Outcomes {
		if o.First > 0 {
			ds = append(ds, o.First-o.Start)
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)-1)*50/100], ds[(len(ds)-1)*99/100]
}

// Storm sends opts.Streams streams through fn, opts.Concurrency at a time,
// cancelling each after its first token, until all are done, ctx ends or
// the backend wedges.
func Storm(ctx context.Context, opts StormOptions, fn StreamFunc) *StormResult {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 20 * time.Second
	}
	begin := time.Now()
	since := func() time.Duration { return time.Since(begin) }

	// issue stops new streams; abandon cancels the ones still waiting.
	issue, stopIssuing := context.WithCancel(ctx)
	defer stopIssuing()
	if opts.Duration > 0 {
		t := time.AfterFunc(opts.Duration, stopIssuing)
		defer t.Stop()
	}
	abandonCtx, abandon := context.WithCancel(context.Background())
	defer abandon()
	var drained atomic.Bool // abandoned for a wedge, not for ctx

	var (
		mu        sync.Mutex
		outcomes  = make([]StreamOutcome, 0, opts.Streams)
		lastToken = since() // the storm's start counts as progress
		cancelled int       // streams cancelled after a first token so far
		waiting   int       // streams sent and without a first token yet
		res       = &StormResult{}
	)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < opts.Streams; i++ {
			select {
			case next <- i:
			case <-issue.Done():
				return
			}
		}
	}()

	one := func(i int) {
		// Not under issue: a stream still waiting when the storm stops
		// issuing may end by itself during Drain.
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(abandonCtx, cancel)
		defer stop()
		o := StreamOutcome{Index: i, Start: since()}
		mu.Lock()
		waiting++
		mu.Unlock()
		var once sync.Once
		gotFirst := false
		o.Err = fn(sctx, func() {
			once.Do(func() {
				mu.Lock()
				o.First = since()
				lastToken = o.First
				waiting--
				gotFirst = true
				mu.Unlock()
				cancel()
			})
		})
		o.End = since()
		mu.Lock()
		if gotFirst {
			o.Cancelled = true
			cancelled++
		} else {
			waiting--
			if drained.Load() && sctx.Err() != nil {
				o.Abandoned = true
			}
		}
		outcomes = append(outcomes, o)
		n := len(outcomes)
		mu.Unlock()
		if opts.Progress != nil {
			opts.Progress(n, o)
		}
	}

	var wg sync.WaitGroup
	for w := 0; w < opts.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				one(i)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// The watch: a wedge is Quiet without a first token while streams wait.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
watch:
	for {
		select {
		case <-done:
			break watch
		case <-ctx.Done():
			abandon()
			<-done
			break watch
		case <-tick.C:
			mu.Lock()
			quiet := since() - lastToken
			wedged := waiting > 0 && quiet >= opts.Quiet
			if wedged {
				res.Wedged, res.LastToken, res.CancelledBefore, res.Detected = true, lastToken, cancelled, since()
			}
			mu.Unlock()
			if wedged {
				stopIssuing()
				if opts.Drain > 0 {
					select {
					case <-done:
					case <-time.After(opts.Drain):
					}
				}
				drained.Store(true)
				abandon()
				<-done
				break watch
			}
		}
	}
	res.Elapsed = since()
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].Index < outcomes[j].Index })
	res.Outcomes = outcomes
	return res
}

// DirectStream is a StreamFunc that posts a raw streaming generation of
// prompt straight to the Ollama server at baseURL, calling first at the
// first non-empty token. hc nil means a client of its own.
func DirectStream(hc *http.Client, baseURL, model, prompt string, options map[string]any) StreamFunc {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	}
	body, err := json.Marshal(map[string]any{
		"model": model, "prompt": prompt, "raw": true, "stream": true, "options": options,
	})
	return func(ctx context.Context, first func()) error {
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/api/generate", bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %s", resp.Status)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m struct {
				Response string `json:"response"`
				Done     bool   `json:"done"`
				Error    string `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				return err
			}
			if m.Error != "" {
				return errors.New(m.Error)
			}
			if m.Response != "" {
				first()
			}
			if m.Done {
				return nil
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		return errors.New("stream ended without its final message")
	}
}

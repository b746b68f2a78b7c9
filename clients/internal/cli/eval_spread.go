package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/internal/evalwire"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// A run spread over several servers (eval run --server a,b,...): the tasks
// wait in one queue; each server has one Evaluate stream and is sent the
// next task whenever fewer than its window of samples are in flight on it,
// so a faster server takes more. A task is the unit handed out: all its
// samples go to one server, which numbers them from 0 as a single server
// would (sample i of a generated task uses seed+i), so the results are
// those of a run on one server. When a server's stream breaks as a
// server going away breaks it (UNAVAILABLE and the like), the tasks it
// had not finished go back to the front of the queue for the others;
// their samples that had already come back are in the results file and
// are dropped when they come back again. Other errors (a bad task, a
// refused token) would fail on any server: they end the run, as on one.

// defaultWindowWorkers stands for a server's sandbox workers when it does
// not say (an older server): its window is twice that.
const defaultWindowWorkers = 4

// spreadServer is one server of a spread run and what it has in flight.
type spreadServer struct {
	addr string
	rpc  infillv1.EvaluationServiceClient
	// window is how many samples are kept in flight on it: twice its
	// sandbox workers, so that it has the next ones while results travel.
	window int

	mu       sync.Mutex
	inflight []*flight // sent, not yet finished, in the order sent
	samples  int       // the samples of inflight
	freed    chan struct{}

	// Tallies for the footer (written by the server's own goroutines
	// before the run's wait ends).
	graded  int
	lostErr error
	requeue int
}

// flight is a task sent to a server and how many of its samples are back.
type flight struct {
	task      *evaluator.Task
	want, got int
}

// workQueue holds the tasks of a spread run that no server has, and
// counts those not yet finished anywhere.
type workQueue struct {
	mu      sync.Mutex
	todo    []*evaluator.Task
	pending int           // queued or in flight
	wake    chan struct{} // closed when work comes back or the last task finishes
}

func newWorkQueue(tasks []*evaluator.Task) *workQueue {
	return &workQueue{todo: slices.Clone(tasks), pending: len(tasks), wake: make(chan struct{})}
}

// take returns the next task; false when every task is finished or ctx is
// done. While other servers still have tasks in flight it waits: one may
// go away and its tasks come back.
func (q *workQueue) take(ctx context.Context) (*evaluator.Task, bool) {
	for {
		q.mu.Lock()
		if len(q.todo) > 0 {
			t := q.todo[0]
			q.todo = q.todo[1:]
			q.mu.Unlock()
			return t, true
		}
		if q.pending == 0 {
			q.mu.Unlock()
			return nil, false
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// finished counts one task done.
func (q *workQueue) finished() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending--; q.pending == 0 {
		q.broadcast()
	}
}

// putBack returns tasks to the front of the queue, in their order.
func (q *workQueue) putBack(tasks []*evaluator.Task) {
	if len(tasks) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.todo = append(slices.Clone(tasks), q.todo...)
	q.broadcast()
}

func (q *workQueue) left() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}

func (q *workQueue) broadcast() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// serverGone reports whether err, which broke a server's stream, is one a
// server that went away (stopped, crashed, unreachable) causes; the other
// codes are answers that any server would give.
func serverGone(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.Unknown:
		return true
	}
	return false
}

// spread runs src's tasks over servers through one shared queue.
func (r *evalRun) spread(ctx context.Context, src evalSource, servers []*spreadServer) error {
	r.servers = servers
	todo, inRun := r.plan(src)
	if len(todo) == 0 {
		fmt.Fprintf(r.env.Stderr, "nothing to do: all %s are in %s\n", plural(r.state.Total, "sample"), r.path)
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	q := newWorkQueue(todo)
	gen := r.f.generation(r.cmd)

	gr := r.startGrading(src, inRun)
	defer gr.end(false)
	var mu sync.Mutex // one result at a time into the file and the progress
	add := func(s *spreadServer, res evaluator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		s.graded++
		return gr.add(res)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.serve(ctx, q, func(t *evaluator.Task) *infillv1.EvaluateRequest { return r.request(t, gen) },
				func(res evaluator.Result) error { return add(s, res) })
			if err == nil || ctx.Err() != nil {
				return
			}
			var fatal runError
			if errors.As(err, &fatal) || !serverGone(err) {
				cancel(err)
				return
			}
			// Gone: its unfinished tasks go to the others.
			back := s.drain()
			q.putBack(back)
			mu.Lock()
			s.lostErr, s.requeue = err, len(back)
			what := "it had no unfinished task"
			if len(back) > 0 {
				what = "its " + plural(len(back), "unfinished task") + map[bool]string{true: " goes", false: " go"}[len(back) == 1] + " back in the queue"
			}
			fmt.Fprintf(r.env.Stderr, "server %s is gone (%s); %s\n", s.addr, errorLine(err), what)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		var fatal runError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		return r.streamError(ctx, err)
	}
	if left := q.left(); left > 0 {
		var errs []string
		for _, s := range servers {
			if s.lostErr != nil {
				errs = append(errs, s.addr+": "+errorLine(s.lostErr))
			}
		}
		return hintError{status.Errorf(codes.Unavailable, "every server is gone with %s unfinished (%s)",
			plural(left, "task"), strings.Join(errs, "; ")),
			fmt.Sprintf("the %d results so far are in %s: run the same command again to go on", len(r.results), r.path)}
	}
	gr.end(true)
	fmt.Fprintln(r.env.Stderr, r.serverTally())
	return nil
}

// serverTally says how many samples each server sent back.
func (r *evalRun) serverTally() string {
	var parts []string
	for _, s := range r.servers {
		part := fmt.Sprintf("%s %d", s.addr, s.graded)
		if s.lostErr != nil {
			part += fmt.Sprintf(" (gone; %s requeued)", plural(s.requeue, "task"))
		}
		parts = append(parts, part)
	}
	return "results by server: " + strings.Join(parts, ", ")
}

// runError is an error of the run itself (the results file, --max-errors,
// a result not asked for), not of a server's stream: it ends the run.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// serve runs one server's stream until the queue is empty and everything
// it was sent is back (nil), or it fails. On failure the tasks it had not
// finished stay in its inflight list for drain.
func (s *spreadServer) serve(ctx context.Context, q *workQueue, request func(*evaluator.Task) *infillv1.EvaluateRequest,
	add func(evaluator.Result) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.freed = make(chan struct{}, 1)
	if s.window == 0 {
		s.window = 2 * s.workers(ctx)
	}
	stream, err := s.rpc.Evaluate(ctx)
	if err != nil {
		return err
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		s.send(ctx, q, stream, request)
	}()
	defer func() {
		cancel()
		<-sent // after this, inflight holds every task this server has
	}()
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			if n := s.unfinished(); n > 0 {
				return status.Errorf(codes.Unavailable, "the server ended the stream with %s unfinished", plural(n, "task"))
			}
			return nil
		}
		if err != nil {
			return err
		}
		pr := m.GetResult()
		if pr == nil {
			continue // the summary: scores are computed from the results file
		}
		res := evalwire.ResultOf(pr)
		done, ok := s.back(res)
		if !ok {
			return runError{status.Errorf(codes.Internal, "server %s sent a result for a task not sent to it (%s/%s #%d)",
				s.addr, res.Benchmark, res.TaskID, res.Sample)}
		}
		if err := add(res); err != nil {
			return runError{err}
		}
		if done {
			q.finished()
			select {
			case s.freed <- struct{}{}:
			default:
			}
		}
	}
}

// workers asks the server how many samples it grades at once.
func (s *spreadServer) workers(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.rpc.ListBenchmarks(ctx, &infillv1.ListBenchmarksRequest{})
	if err != nil || resp.GetWorkers() == 0 {
		return defaultWindowWorkers // the Evaluate stream says what is wrong
	}
	return int(resp.GetWorkers())
}

// send hands the server tasks from the queue while it has room, until the
// queue is empty and every task is finished (then it closes its side of
// the stream) or ctx is done.
func (s *spreadServer) send(ctx context.Context, q *workQueue, stream infillv1.EvaluationService_EvaluateClient,
	request func(*evaluator.Task) *infillv1.EvaluateRequest) {
	for {
		for !s.hasRoom() {
			select {
			case <-s.freed:
			case <-ctx.Done():
				return
			}
		}
		t, ok := q.take(ctx)
		if !ok {
			if ctx.Err() == nil {
				_ = stream.CloseSend()
			}
			return
		}
		req := request(t)
		n := int(max(req.GetSamples(), 1))
		if c := len(req.GetCompletions()); c > 0 {
			n = c
		}
		s.mu.Lock()
		s.inflight = append(s.inflight, &flight{task: t, want: n})
		s.samples += n
		s.mu.Unlock()
		if err := stream.Send(req); err != nil {
			return // the receive side reports why the stream ended
		}
	}
}

// hasRoom reports whether fewer than window samples are in flight (a task
// larger than the window goes alone).
func (s *spreadServer) hasRoom() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples < s.window
}

// back counts a result of a task in flight: done when it was the task's
// last sample; not ok when the task is not in flight here.
func (s *spreadServer) back(res evaluator.Result) (done, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.inflight, func(f *flight) bool {
		return f.task.ID == res.TaskID && f.task.Benchmark == res.Benchmark
	})
	if i < 0 {
		return false, false
	}
	f := s.inflight[i]
	if f.got++; f.got < f.want {
		return false, true
	}
	s.inflight = slices.Delete(s.inflight, i, i+1)
	s.samples -= f.want
	return true, true
}

func (s *spreadServer) unfinished() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight)
}

// drain empties inflight and returns its tasks, once serve has returned.
func (s *spreadServer) drain() []*evaluator.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*evaluator.Task
	for _, f := range s.inflight {
		out = append(out, f.task)
	}
	s.inflight, s.samples = nil, 0
	return out
}

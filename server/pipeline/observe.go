package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/infill-dev/infill/inference"
)

// Observer is told what each completion did, for metrics (server/metrics
// implements it; this package imports no metrics library). Completed is
// called once per Complete call, on the caller's goroutine, after the call
// has ended: it must be quick and must not block.
type Observer interface {
	Completed(o Outcome)
}

// Cause says why a completion ended before its generation did.
type Cause int

// Causes of a completion cut short.
const (
	// CauseNone: the completion ran to its end, or failed otherwise.
	CauseNone Cause = iota
	// CauseClient: the caller cancelled (an editor moved on, a client
	// disconnected).
	CauseClient
	// CauseSuperseded: a newer request of the same session (latest wins).
	CauseSuperseded
	// CauseBudget: the latency budget ran out; the partial text was
	// returned (not an error).
	CauseBudget
	// CauseDeadline: the caller's deadline passed (a cancel that came
	// within deadlineSlack of it counts: a gRPC client cancels at its
	// deadline).
	CauseDeadline
)

func (c Cause) String() string {
	return [...]string{"", "client", "superseded", "budget", "deadline"}[c]
}

// Outcome is what one Complete call did.
type Outcome struct {
	// Surface and Class are the request's.
	Surface string
	Class   Class
	// Err is the call's error; nil for a result (a budget cut included).
	Err error
	// Cause is why it was cut short, if it was.
	Cause Cause
	// Shed: admission refused it (an *OverloadError).
	Shed bool
	// Reused: answered from the session's last completion (typed-through).
	Reused bool
	// Assembled: the prompt was built, in Assembly.
	Assembled bool
	Assembly  time.Duration
	// Queued: it asked the admission gate for a backend slot and waited
	// QueueWait for the answer (a slot, a refusal or its caller's end).
	Queued    bool
	QueueWait time.Duration
	// TimeToFirstToken from the start of the call; 0 when no text came.
	TimeToFirstToken time.Duration
	Total            time.Duration
	// CompletionTokens the backend generated (every candidate).
	CompletionTokens int
}

// deadlineSlack: a cancel this close to the call's deadline is the
// deadline's. A gRPC client's deadline cancels the call (RST_STREAM) at
// about the moment the server's copy of the deadline passes, and the
// cancel often arrives first.
const deadlineSlack = 50 * time.Millisecond

// cause sorts how a call with context ctx ended.
func cause(ctx context.Context, err error, res *Result) Cause {
	switch {
	case err == nil:
		for _, c := range resCandidates(res) {
			if c.Finish == inference.FinishBudget {
				return CauseBudget
			}
		}
		return CauseNone
	case errors.Is(err, ErrSuperseded):
		return CauseSuperseded
	case errors.Is(err, context.Canceled):
		if d, ok := ctx.Deadline(); ok && time.Until(d) < deadlineSlack {
			return CauseDeadline
		}
		return CauseClient
	case errors.Is(err, context.DeadlineExceeded):
		return CauseDeadline
	}
	return CauseNone
}

func resCandidates(res *Result) []inference.Candidate {
	if res == nil {
		return nil
	}
	return res.Candidates
}

// Stats is what the pipeline holds now.
type Stats struct {
	// InFlight counts Complete calls under way, by Class.
	InFlight [2]int
	// Busy is the backend slots taken: generations, and probes holding
	// the slot of a request abandoned before its first token (all
	// backends).
	Busy int
	// Queued counts requests waiting for a slot, by Class (all backends).
	Queued [2]int
	// Backends are each backend's figures, in configuration order.
	Backends []BackendStats
}

// BackendStats is one backend's share of Stats.
type BackendStats struct {
	Name string
	// Up: its health checks last said it serves (false before the first).
	Up bool
	// Busy and Queued as in Stats, for this backend.
	Busy   int
	Queued [2]int
	// Generations sent to it, by how they ended: OK, Failed (an error of
	// the backend), Cancelled (by the caller), NotSent (it could not be
	// reached: the request went on to the next backend).
	OK, Failed, Cancelled, NotSent uint64
	// Spilled counts requests it was the first choice for that went on
	// to the next backend, by why: Down (health), Full (its admission
	// refused at once), Unreachable (a connection failed), Load (over its
	// share of the load, Config.LoadBound).
	SpilledDown, SpilledFull, SpilledUnreachable, SpilledLoad uint64
}

// Stats reports the calls under way and the admission gates' state.
func (p *Pipeline) Stats() Stats {
	s := Stats{InFlight: [2]int{int(p.inflight[0].Load()), int(p.inflight[1].Load())}}
	for _, t := range p.targets {
		b := BackendStats{Name: t.Name, Up: t.health.Load() == healthUp,
			OK: t.ok.Load(), Failed: t.failed.Load(), Cancelled: t.cancelled.Load(), NotSent: t.notSent.Load(),
			SpilledDown: t.spilled[spillDown].Load(), SpilledFull: t.spilled[spillFull].Load(),
			SpilledUnreachable: t.spilled[spillUnreachable].Load(), SpilledLoad: t.spilled[spillLoad].Load()}
		b.Busy, b.Queued = t.gate.stats()
		s.Busy += b.Busy
		s.Queued[0] += b.Queued[0]
		s.Queued[1] += b.Queued[1]
		s.Backends = append(s.Backends, b)
	}
	return s
}

type nopObserver struct{}

func (nopObserver) Completed(Outcome) {}

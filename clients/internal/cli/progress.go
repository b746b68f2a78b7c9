package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cheggaaa/pb/v3"
)

// runState is how far an evaluation run is. Counts cover the whole run,
// samples resumed from the results file included.
type runState struct {
	Done, Total int
	// Resumed were already in the results file when the run started.
	Resumed int
	// Passed and Executed (samples with a pass/fail/timeout verdict) give
	// the pass rate so far.
	Passed, Executed int
	// Errors are samples that reached no verdict in this run.
	Errors int
}

func (s runState) passRate() string {
	if s.Executed == 0 {
		return "pass -"
	}
	return fmt.Sprintf("pass %.1f%%", 100*float64(s.Passed)/float64(s.Executed))
}

func (s runState) extra() string {
	if s.Errors == 0 {
		return ""
	}
	return ", " + plural(s.Errors, "error")
}

// progress shows a run's state as it changes.
type progress interface {
	update(s runState)
	finish(s runState)
}

// newProgress returns a progress bar when w is a terminal, else plain
// lines every interval (and at the end).
func newProgress(w io.Writer, terminal bool, name string, interval time.Duration) progress {
	if terminal {
		return &barProgress{w: w, name: name}
	}
	return &lineProgress{w: w, name: name, every: interval, now: time.Now}
}

// barTemplate: done/total, bar, percent, pass rate, rate, ETA.
const barTemplate = `{{string . "name"}} {{counters . }} {{bar . "[" "=" ">" " " "]"}} {{percent . }}` +
	` {{string . "pass"}} {{speed . "%s samples/s" "? samples/s"}} {{rtime . "ETA %s" "in %s" "ETA ?"}}`

// barProgress draws a cheggaaa/pb bar; its rate and ETA count only this
// run's samples (pb measures the speed from the value it was started at).
type barProgress struct {
	w    io.Writer
	name string
	mu   sync.Mutex
	bar  *pb.ProgressBar
}

func (b *barProgress) update(s runState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.Total <= 0 {
		return
	}
	if b.bar == nil {
		b.bar = pb.New(s.Total)
		b.bar.SetTemplateString(barTemplate)
		b.bar.SetWriter(b.w)
		b.bar.Set(pb.Terminal, true)
		b.bar.SetMaxWidth(120)
		b.bar.SetRefreshRate(250 * time.Millisecond)
		b.bar.Set("name", b.name)
		b.bar.SetCurrent(int64(s.Done))
		b.bar.Set("pass", s.passRate()+s.extra())
		b.bar.Start()
		return
	}
	b.bar.SetTotal(int64(s.Total))
	b.bar.Set("pass", s.passRate()+s.extra())
	b.bar.SetCurrent(int64(s.Done))
}

func (b *barProgress) finish(s runState) {
	b.update(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		b.bar.Finish()
	}
}

// lineProgress prints "name: done/total (pct), pass x%, rate, ETA" lines,
// for logs and pipes.
type lineProgress struct {
	w     io.Writer
	name  string
	every time.Duration
	now   func() time.Time

	mu        sync.Mutex
	started   bool
	start     time.Time
	startDone int
	last      time.Time
}

func (l *lineProgress) update(s runState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.started {
		l.started, l.start, l.startDone, l.last = true, now, s.Done, now
		return
	}
	if l.every > 0 && now.Sub(l.last) >= l.every && s.Done < s.Total { // the last line is finish's
		l.last = now
		l.print(s, now, false)
	}
}

func (l *lineProgress) finish(s runState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started || s.Done == l.startDone {
		return // nothing happened (an early error): no final line
	}
	l.print(s, l.now(), true)
}

func (l *lineProgress) print(s runState, now time.Time, final bool) {
	pct := 0.0
	if s.Total > 0 {
		pct = 100 * float64(s.Done) / float64(s.Total)
	}
	line := fmt.Sprintf("%s: %d/%d (%.0f%%), %s%s", l.name, s.Done, s.Total, pct, s.passRate(), s.extra())
	elapsed := now.Sub(l.start)
	if n := s.Done - l.startDone; n > 0 && elapsed > 0 {
		rate := float64(n) / elapsed.Seconds()
		line += fmt.Sprintf(", %s samples/s", formatRate(rate))
		if !final && s.Total > s.Done {
			eta := time.Duration(float64(s.Total-s.Done) / rate * float64(time.Second))
			line += ", ETA " + roundDuration(eta).String()
		}
	}
	if final {
		line += ", took " + roundDuration(elapsed).String()
	}
	fmt.Fprintln(l.w, line)
}

func formatRate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.2g", r)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Millisecond)
	}
}

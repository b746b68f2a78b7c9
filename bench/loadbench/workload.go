package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/metrics/scrape"
)

// Kinds of request.
const (
	kindKeystroke = "keystroke" // a keystroke of a word
	kindTyped     = "typed"     // a keystroke typing a completion's first characters
	kindEval      = "evaluation"
)

// call is one request and how it ended. Its fields are written by the
// goroutine that runs it and read after done is closed.
type call struct {
	kind   string
	pause  bool // the last keystroke of a word: the user pauses after it
	sent   time.Time
	ttft   time.Duration // 0: no text came
	total  time.Duration
	code   string
	msg    string
	reused bool
	text   string
	finish infillv1.FinishReason
	queue  time.Duration
	done   chan struct{}
}

// recorder runs calls and keeps them.
type recorder struct {
	mu    sync.Mutex
	calls []*call
	wg    sync.WaitGroup
}

func (r *recorder) start(client infillv1.CompletionServiceClient, req *infillv1.StreamCompleteRequest, kind string, pause bool, timeout time.Duration) *call {
	c := &call{kind: kind, pause: pause, sent: time.Now(), done: make(chan struct{})}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(c.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := c.run(ctx, client, req)
		c.total = time.Since(c.sent)
		c.code, c.msg = "OK", ""
		if err != nil {
			s, _ := status.FromError(err)
			c.code, c.msg = s.Code().String(), s.Message()
		}
	}()
	return c
}

func (c *call) run(ctx context.Context, client infillv1.CompletionServiceClient, req *infillv1.StreamCompleteRequest) error {
	st, err := client.StreamComplete(ctx, req)
	if err != nil {
		return err
	}
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch ev := m.GetEvent().(type) {
		case *infillv1.StreamCompleteResponse_Delta:
			if c.ttft == 0 && ev.Delta.GetText() != "" {
				c.ttft = time.Since(c.sent)
			}
		case *infillv1.StreamCompleteResponse_Done:
			d := ev.Done
			c.reused = d.GetReused()
			c.queue = d.GetTimings().GetQueueWait().AsDuration()
			if cs := d.GetCandidates(); len(cs) > 0 {
				c.text, c.finish = cs[0].GetText(), cs[0].GetFinishReason()
			}
			if c.ttft == 0 && c.text != "" {
				c.ttft = time.Since(c.sent)
			}
		}
	}
}

func (r *recorder) take() []*call {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.calls
	r.calls = nil
	return cs
}

// session is one editor buffer being typed in: a small Python package of
// its own, the cursor on an empty line of a function in service.py.
type session struct {
	id         int
	client     infillv1.CompletionServiceClient
	repo, path string
	head, tail string
	typed      string // typed at the cursor so far
	script     string // what the user types, in a loop
	pos        int
	others     []*infillv1.File
	rng        *rand.Rand
}

func newSession(id int, client infillv1.CompletionServiceClient, seed uint64) *session {
	pkg := fmt.Sprintf("shop%d", id)
	models := fmt.Sprintf(`"""Data of shop %d."""
from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    price: float
    count: int = 1
    weight: float = 0.0


@dataclass
class Order:
    number: int
    items: list[Item] = field(default_factory=list)

    def add(self, item: Item) -> None:
        self.items.append(item)
`, id)
	util := `"""Small helpers."""


def money(x: float) -> float:
    return round(x + 1e-9, 2)


def clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))
`
	head := fmt.Sprintf(`"""Order service of shop %d."""
from .models import Item, Order
from .util import clamp, money


def order_total(order: Order) -> float:
    total = 0.0
    for item in order.items:
        total += item.price * item.count
    return money(total)


def discounted(order: Order, rate: float) -> float:
    rate = clamp(rate, 0.0, 0.5)
    `, id)
	tail := `


def heaviest(order: Order) -> Item:
    return max(order.items, key=lambda it: it.weight)
`
	script := "total = order_total(order)\n    cut = total * rate\n    if cut > total:\n        cut = total\n    return money(total - cut)\n    "
	return &session{id: id, client: client, repo: fmt.Sprintf("%s%d", sessionMarker, id), path: pkg + "/service.py",
		head: head, tail: tail, script: script, pos: (id * 7) % len(script),
		others: []*infillv1.File{file(pkg+"/models.py", models), file(pkg+"/util.py", util), file(pkg+"/__init__.py", "")},
		rng:    rand.New(rand.NewPCG(seed, uint64(id)))}
}

func file(path, content string) *infillv1.File { return &infillv1.File{Path: path, Content: &content} }

func (s *session) request(o *options) *infillv1.StreamCompleteRequest {
	return &infillv1.StreamCompleteRequest{
		Repository: &infillv1.Repository{Name: s.repo, Files: append([]*infillv1.File{file(s.path, s.head+s.typed+s.tail)}, s.others...)},
		Cursor: &infillv1.Cursor{Path: s.path, Offset: uint64(len(s.head) + len(s.typed)),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation:    &infillv1.GenerationOptions{MaxTokens: uint32(o.maxTokens)},
		ClientId:      "loadbench",
		SessionId:     fmt.Sprintf("buffer-%d", s.id),
		LatencyBudget: durationpb.New(o.budget),
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
	}
}

// typeNext types the script's next character; after 300 bytes the user
// starts over (the line is undone), so prompts stay the same size.
func (s *session) typeNext() {
	if len(s.typed) > 300 {
		s.typed = ""
	}
	s.typed += s.script[s.pos : s.pos+1]
	s.pos = (s.pos + 1) % len(s.script)
}

// loop types until the phase ends: words of keystrokes, each a request;
// after each word a pause, in which the completion may be typed through.
func (s *session) loop(o *options, rec *recorder, until time.Time) {
	sleep := func(d time.Duration) { time.Sleep(d) }
	sleep(time.Duration(s.rng.Int64N(int64(o.pause)))) // sessions do not start in step
	for time.Now().Before(until) {
		k := o.wordMin + s.rng.IntN(o.wordMax-o.wordMin+1)
		var c *call
		for i := range k {
			s.typeNext()
			c = rec.start(s.client, s.request(o), kindKeystroke, i == k-1, o.deadline)
			if i < k-1 {
				sleep(o.keystroke)
			}
		}
		pauseEnd := time.Now().Add(o.pause)
		t := time.NewTimer(o.pause)
		select {
		case <-c.done:
			t.Stop()
			if c.code == "OK" && !c.reused && c.finish != infillv1.FinishReason_FINISH_REASON_BUDGET &&
				utf8.RuneCountInString(c.text) >= 2 && s.rng.Float64() < o.typeThrough {
				// The user accepts by typing the completion's first
				// characters (the server keeps at least one for reuse).
				n := 1 + s.rng.IntN(min(2, utf8.RuneCountInString(c.text)-1))
				text := c.text
				for range n {
					sleep(o.keystroke)
					_, size := utf8.DecodeRuneInString(text)
					s.typed += text[:size]
					text = text[size:]
					rec.start(s.client, s.request(o), kindTyped, false, o.deadline)
				}
			}
		case <-t.C:
		}
		if d := time.Until(pauseEnd); d > 0 {
			sleep(d)
		}
	}
}

// serial types one keystroke at a time, each after the answer to the one
// before (and the completion typed through as in loop): requests on an
// otherwise idle backend.
func (s *session) serial(o *options, rec *recorder, until time.Time) {
	for time.Now().Before(until) {
		s.typeNext()
		c := rec.start(s.client, s.request(o), kindKeystroke, true, o.deadline)
		<-c.done
		if c.code == "OK" && !c.reused && c.finish != infillv1.FinishReason_FINISH_REASON_BUDGET &&
			utf8.RuneCountInString(c.text) >= 2 && s.rng.Float64() < o.typeThrough {
			time.Sleep(o.keystroke)
			_, size := utf8.DecodeRuneInString(c.text)
			s.typed += c.text[:size]
			<-rec.start(s.client, s.request(o), kindTyped, false, o.deadline).done
		}
		time.Sleep(o.keystroke)
	}
}

// evalTasks are the evaluation stream's prompts: functions to complete, one
// file each, in the evaluation's own repository.
var evalTasks = func() []string {
	names := []string{"add", "mean", "median", "clip", "dedupe", "chunks", "flatten", "rotate", "is_prime", "gcd",
		"lcm", "reverse_words", "count_vowels", "title_case", "running_sum", "pairwise", "argmax", "argmin", "normalize", "histogram"}
	var out []string
	for i, n := range names {
		out = append(out, fmt.Sprintf("def %s(xs, k=%d):\n    \"\"\"Task %d of the evaluation: %s of xs.\"\"\"\n    ", n, i+1, i, strings.ReplaceAll(n, "_", " ")))
	}
	return out
}()

// evalLoop keeps one evaluation request in flight until the phase ends.
func evalLoop(o *options, client infillv1.CompletionServiceClient, rec *recorder, until time.Time, next *atomic.Int64) {
	for time.Now().Before(until) {
		c := rec.start(client, evalRequest(o, int(next.Add(1))), kindEval, false, o.evalDeadline)
		<-c.done
		if c.code != "OK" && c.code != "DEADLINE_EXCEEDED" {
			time.Sleep(10 * time.Millisecond) // a refusal: as a harness retrying at once, less the busy loop
		}
	}
}

func evalRequest(o *options, n int) *infillv1.StreamCompleteRequest {
	task := evalTasks[n%len(evalTasks)]
	path := fmt.Sprintf("tasks/task_%d.py", n%len(evalTasks))
	body := task + "\n\n\ndef check(candidate):\n    assert candidate is not None\n"
	return &infillv1.StreamCompleteRequest{
		Repository: &infillv1.Repository{Name: evalMarker, Files: []*infillv1.File{file(path, body)}},
		Cursor: &infillv1.Cursor{Path: path, Offset: uint64(len(task)),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation:    &infillv1.GenerationOptions{MaxTokens: uint32(o.evalMaxTokens)},
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
		RequestClass:  infillv1.RequestClass_REQUEST_CLASS_EVALUATION,
	}
}

// runMode starts a server, warms it up and measures both phases.
func runMode(o options, be *backend, px *proxy, mode, logs string) (*modeResult, error) {
	srv, err := startServer(o, be, px, mode, logs)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	// A connection per session, as each editor has its own.
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() (infillv1.CompletionServiceClient, error) {
		conn, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec())))
		if err != nil {
			return nil, err
		}
		conns = append(conns, conn)
		return infillv1.NewCompletionServiceClient(conn), nil
	}
	sessions := make([]*session, o.sessions)
	for i := range sessions {
		cl, err := dial()
		if err != nil {
			return nil, err
		}
		sessions[i] = newSession(i, cl, o.seed)
	}
	evalClient, err := dial()
	if err != nil {
		return nil, err
	}
	// Warm-up: each session's prompt and each evaluation task once, one
	// at a time, without a session (the server's caches and the
	// backend's, as after an editor opened its file). A failed request is
	// tried twice more and reported.
	rec := &recorder{}
	var failed []string
	warm := func(client infillv1.CompletionServiceClient, req *infillv1.StreamCompleteRequest) error {
		for range 3 {
			c := rec.start(client, req, kindKeystroke, false, 2*time.Minute)
			if <-c.done; c.code == "OK" {
				return nil
			}
			failed = append(failed, c.code+": "+c.msg)
			time.Sleep(5 * time.Second)
		}
		return fmt.Errorf("warm-up failed three times: %s", strings.Join(failed, "; "))
	}
	for range o.warmupPerSession {
		for _, s := range sessions {
			req := s.request(&o)
			req.SessionId, req.LatencyBudget = "", nil
			if err := warm(s.client, req); err != nil {
				return nil, err
			}
		}
		for i := range evalTasks {
			if err := warm(evalClient, evalRequest(&o, i)); err != nil {
				return nil, err
			}
		}
	}
	rec.take()
	m := &modeResult{Mode: mode, BackendSlots: o.serverSlots(mode), WarmupFailures: failed}
	phases := []struct {
		name     string
		sessions []*session
		eval     int
		d        time.Duration
	}{{"unloaded", sessions[:1], 0, o.unloaded}, {"loaded", sessions, o.evalInflight, o.loaded}, {"typist", sessions[1:2], 0, o.typist}}
	for _, ph := range phases {
		if ph.d <= 0 || len(ph.sessions) == 0 {
			continue
		}
		time.Sleep(o.settle)
		logf("%s: %s phase, %d sessions, %d evaluation requests in flight, %v", mode, ph.name, len(ph.sessions), ph.eval, ph.d)
		r, err := measure(&o, srv, be, px, rec, ph.name, ph.sessions, evalClient, ph.eval, ph.d)
		if err != nil {
			return nil, err
		}
		m.Phases = append(m.Phases, r)
	}
	m.ServerLog = logEvents(srv.log.Name())
	return m, nil
}

// logEvents counts the server's log lines about a backend that stopped
// answering (it logs them at warn and above).
func logEvents(path string) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		for _, ev := range []string{"backend down: NOT_SERVING", "\tbackend stalled\t",
			"restarted the model's runner", "restarting the model's runner failed"} {
			if strings.Contains(line, ev) {
				out[strings.Trim(ev, "\t")]++
			}
		}
	}
	return out
}

func measure(o *options, srv *server, be *backend, px *proxy, rec *recorder, name string, sessions []*session,
	evalClient infillv1.CompletionServiceClient, evalInflight int, d time.Duration) (*phaseResult, error) {
	ctx := context.Background()
	m0, err := scrape.Get(ctx, srv.metrics)
	if err != nil {
		return nil, err
	}
	l0, b0, s0, bc0 := readLoad(), px.take(), srv.cpu(), be.cpu()
	stopHealth := make(chan struct{})
	health := srv.watchHealth(stopHealth)
	start := time.Now()
	until := start.Add(d)
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if name == "unloaded" {
				s.serial(o, rec, until)
			} else {
				s.loop(o, rec, until)
			}
		}()
	}
	var next atomic.Int64
	for range evalInflight {
		wg.Add(1)
		go func() { defer wg.Done(); evalLoop(o, evalClient, rec, until, &next) }()
	}
	wg.Wait()
	calls := rec.take()
	elapsed := time.Since(start)
	close(stopHealth)
	down := <-health
	l1, b1, s1, bc1 := readLoad(), px.take(), srv.cpu(), be.cpu()
	m1, err := scrape.Get(ctx, srv.metrics)
	if err != nil {
		return nil, err
	}
	r := summarize(o, name, calls, b1.minus(b0))
	r.Seconds = elapsed.Seconds()
	r.LoadStart, r.LoadEnd, r.BusyPct = l0.avg, l1.avg, busy(l0, l1)
	r.ServerCPUs, r.BackendCPUs = (s1 - s0).Seconds(), (bc1 - bc0).Seconds()
	r.HealthDownS = down.Seconds()
	delta := func(name string, labels ...string) float64 {
		return m1.Value(name, labels...) - m0.Value(name, labels...)
	}
	r.Server = map[string]float64{
		"shed_interactive":  delta("infill_admission_shed_total", "class", "interactive"),
		"shed_evaluation":   delta("infill_admission_shed_total", "class", "evaluation"),
		"superseded":        delta("infill_cancellations_total", "cause", "superseded"),
		"budget":            delta("infill_cancellations_total", "cause", "budget"),
		"typed_through":     delta("infill_cache_hits_total", "cache", "typed_through"),
		"goroutines_before": m0.Value("go_goroutines"),
		"goroutines_after":  m1.Value("go_goroutines"),
	}
	logf("%s phase: %d calls, load %s → %s", name, len(calls), l0.avg, l1.avg)
	return r, nil
}

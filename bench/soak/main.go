// Command soak drives a running infill server (bench/soak/run.sh starts
// it, with the real local Ollama behind it) with many streaming
// completions at a fixed concurrency, a third cancelled by the client at
// their first text and a third superseded by a newer request of the same
// session at theirs (the newer request is the last third, served to the
// end), and checks that the server comes back to where it was: its
// goroutines (go_goroutines) back to the warm baseline, its resident memory
// (process_resident_memory_bytes) within a bound of the warm baseline, the
// backend idle (/api/ps, its processes' CPU time from /proc), and every
// request accounted for by status code, on the client and in the server's
// own counts (infill_requests_total). It writes a Markdown report.
//
// It is a benchmark, not a test: run it on a quiet machine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/metrics/scrape"
)

type options struct {
	addr, metrics, ollama string
	ollamaPID             int
	n, concurrency        int
	warmup                int
	maxTokens             int
	settle                time.Duration
	rssBound              float64
	goroutineSlack        int
	out, commit, note     string
	timeout               time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:50051", "infill gRPC address")
	flag.StringVar(&o.metrics, "metrics", "http://127.0.0.1:9090/metrics", "infill metrics URL")
	flag.StringVar(&o.ollama, "ollama", "http://127.0.0.1:11435", "the backend's URL (for /api/ps)")
	flag.IntVar(&o.ollamaPID, "ollama-pid", 0, "the backend server's pid, leader of its process group (runner CPU from /proc); 0: not measured")
	flag.IntVar(&o.n, "n", 10000, "requests")
	flag.IntVar(&o.concurrency, "c", 16, "requests at once")
	flag.IntVar(&o.warmup, "warmup", 300, "requests (same mix) before the baselines are taken")
	flag.IntVar(&o.maxTokens, "max-tokens", 48, "generation limit of each request")
	flag.DurationVar(&o.settle, "settle", 100*time.Second,
		"quiet time before each reading (baseline and final): longer than the idle timeout (90 s) of the server's connections to the backend")
	flag.Float64Var(&o.rssBound, "rss-bound", 0.10, "largest RSS growth over the warm baseline that passes")
	flag.IntVar(&o.goroutineSlack, "goroutine-slack", 0, "goroutines over the baseline that still pass")
	flag.StringVar(&o.out, "out", "", "Markdown report to write (default: stdout only)")
	flag.StringVar(&o.commit, "commit", "", "the commit measured, for the report")
	flag.StringVar(&o.note, "note", "", "a paragraph for the report (where and why it ran)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound of one request, a cancel rather than a deadline (a request that hits it is a failure)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// kind is what a request of the mix is for.
type kind int

const (
	cancelled  kind = iota // cancelled by the client at its first text
	superseded             // superseded by the session's next request at its first text
	served                 // the superseding request, served to its end
)

var kindNames = [...]string{"cancelled by the client", "superseded", "superseding (served)"}

// expected is the outcome each kind should have.
var expected = [...]string{"Canceled", "Canceled (superseded)", "OK"}

// tally counts outcomes by kind and code, and latencies of the served.
type tally struct {
	mu      sync.Mutex
	codes   [3]map[string]int
	ttft    []time.Duration // every request that had text
	total   []time.Duration // served requests
	early   [2]int          // cancelled/superseded requests that ended before the cut
	started atomic.Int64
}

func newTally() *tally {
	t := &tally{}
	for i := range t.codes {
		t.codes[i] = map[string]int{}
	}
	return t
}

func (t *tally) add(k kind, code string, ttft, total time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.codes[k][code]++
	if ttft > 0 {
		t.ttft = append(t.ttft, ttft)
	}
	if k == served && code == "OK" {
		t.total = append(t.total, total)
	}
	if k != served && code == "OK" {
		t.early[k]++
	}
}

func run(o options) error {
	conn, err := grpc.NewClient(o.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec()), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := infillv1.NewCompletionServiceClient(conn)
	if err := waitServing(conn); err != nil {
		return err
	}
	ctx := context.Background()
	rep := &report{opts: o, start: time.Now(), machine: machine()}

	// Warm up with the same mix, then take the baselines at rest.
	fmt.Fprintf(os.Stderr, "soak: warm-up, %d requests\n", o.warmup)
	warm := newTally()
	drive(ctx, client, o, o.warmup, "warm", warm)
	if err := quiesce(o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: baseline after %v at rest\n", o.settle)
	time.Sleep(o.settle)
	before, err := readings(o)
	if err != nil {
		return err
	}
	rep.before = before

	fmt.Fprintf(os.Stderr, "soak: %d requests at concurrency %d\n", o.n, o.concurrency)
	t := newTally()
	peak := &sampler{}
	stopSampling := peak.sample(o.metrics)
	begin := time.Now()
	drive(ctx, client, o, o.n, "soak", t)
	rep.elapsed = time.Since(begin)
	stopSampling()
	if err := quiesce(o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: final readings after %v at rest\n", o.settle)
	time.Sleep(o.settle)
	after, err := readings(o)
	if err != nil {
		return err
	}
	rep.after, rep.tally, rep.peakRSS, rep.timeline = after, t, peak.max.Load(), peak.tenths()
	rep.ollama = backendState(o)
	text := rep.markdown()
	fmt.Print(text)
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			return err
		}
	}
	if !rep.passed() {
		return errors.New("a check failed (see the report)")
	}
	return nil
}

func waitServing(conn *grpc.ClientConn) error {
	h := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "infill.v1.CompletionService"})
		cancel()
		if err == nil && r.Status == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server is not SERVING after 2 minutes (%v %v)", r.GetStatus(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// drive sends n requests, concurrency at once: units of one cancelled
// request, and of a superseded request with the request that supersedes
// it (two requests); a remainder of n that no unit fits is served
// requests.
func drive(ctx context.Context, client infillv1.CompletionServiceClient, o options, n int, tag string, t *tally) {
	type unit struct {
		id   int
		kind kind // cancelled or superseded (a pair)
	}
	units := make(chan unit)
	go func() {
		defer close(units)
		sent, id := 0, 0
		for sent < n {
			k := cancelled
			switch {
			case n-sent == 1:
				k = served
			case id%2 == 1:
				k = superseded
			}
			units <- unit{id, k}
			sent += map[kind]int{cancelled: 1, superseded: 2, served: 1}[k]
			id++
		}
	}()
	var wg sync.WaitGroup
	var done atomic.Int64
	for w := range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprintf("%s-worker-%d", tag, w) // one editor buffer per worker
			step := int64(max(n/10, 1))
			for u := range units {
				k := int64(1)
				switch u.kind {
				case cancelled:
					cancelAtFirstText(ctx, client, o, request(o, u.id, "", ""), t)
				case superseded:
					supersedeAtFirstText(ctx, client, o, u.id, session, t)
					k = 2
				case served:
					serve(ctx, client, o, request(o, u.id, "", ""), t)
				}
				if d := done.Add(k); d/step != (d-k)/step {
					fmt.Fprintf(os.Stderr, "soak: %s %d/%d at %s\n", tag, d, n, time.Now().Format(time.TimeOnly))
				}
			}
		}()
	}
	wg.Wait()
}

// code is a status as the report names it.
func code(err error) string {
	if err == nil {
		return "OK"
	}
	s := status.Convert(err)
	if s.Code() == codes.Canceled && strings.Contains(s.Message(), "superseded") {
		return "Canceled (superseded)"
	}
	return s.Code().String()
}

// bounded is ctx cancelled after o.timeout without a deadline: a deadline
// would let admission refuse a request the queue cannot start in time
// (RESOURCE_EXHAUSTED), which is not what the soak exercises. timedOut
// says whether the bound cancelled it.
func bounded(ctx context.Context, o options) (context.Context, context.CancelFunc, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	var hit atomic.Bool
	t := time.AfterFunc(o.timeout, func() { hit.Store(true); cancel() })
	return ctx, func() { t.Stop(); cancel() }, hit.Load
}

// outcome is code(err), or a timeout when the bound cancelled the request.
func outcome(err error, timedOut func() bool) string {
	if timedOut() {
		return "client timeout"
	}
	return code(err)
}

// cancelAtFirstText streams r and cancels at its first text.
func cancelAtFirstText(ctx context.Context, client infillv1.CompletionServiceClient, o options, r *infillv1.StreamCompleteRequest, t *tally) {
	ctx, cancel, timedOut := bounded(ctx, o)
	defer cancel()
	begin := time.Now()
	var ttft time.Duration
	err := stream(ctx, client, r, func() {
		ttft = time.Since(begin)
		cancel()
	})
	t.add(cancelled, outcome(err, timedOut), ttft, time.Since(begin))
}

// supersedeAtFirstText streams a request of session and, at its first
// text, sends the session's next request (the user typed on).
func supersedeAtFirstText(ctx context.Context, client infillv1.CompletionServiceClient, o options, id int, session string, t *tally) {
	ctx, cancel, timedOut := bounded(ctx, o)
	defer cancel()
	first := request(o, id, session, "")
	next := request(o, id, session, "x")
	begin := time.Now()
	var ttft time.Duration
	var wg sync.WaitGroup
	err := stream(ctx, client, first, func() {
		ttft = time.Since(begin)
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(ctx, client, o, next, t)
		}()
	})
	t.add(superseded, outcome(err, timedOut), ttft, time.Since(begin))
	if ttft == 0 { // never had text: its successor was not sent; send it now
		serve(ctx, client, o, next, t)
	}
	wg.Wait()
}

func serve(ctx context.Context, client infillv1.CompletionServiceClient, o options, r *infillv1.StreamCompleteRequest, t *tally) {
	ctx, cancel, timedOut := bounded(ctx, o)
	defer cancel()
	begin := time.Now()
	var ttft time.Duration
	err := stream(ctx, client, r, func() { ttft = time.Since(begin) })
	t.add(served, outcome(err, timedOut), ttft, time.Since(begin))
}

// stream runs one StreamComplete to its end; first is called at the
// first text.
func stream(ctx context.Context, client infillv1.CompletionServiceClient, r *infillv1.StreamCompleteRequest, first func()) error {
	st, err := client.StreamComplete(ctx, r)
	if err != nil {
		return err
	}
	had := false
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if d := m.GetDelta(); d != nil && d.Text != "" && !had {
			had = true
			first()
		}
	}
}

// repoFiles is a small repository every request sends (the server keeps
// it by digest after the first).
var repoFiles = func() []*infillv1.File {
	var fs []*infillv1.File
	for i := range 8 {
		var b strings.Builder
		fmt.Fprintf(&b, "from .util%d import helper_%d\n\n\n", (i+1)%8, (i+1)%8)
		for j := range 6 {
			fmt.Fprintf(&b, "def helper_%d_%d(values, scale=%d):\n    \"\"\"Scale and sum.\"\"\"\n    total = 0\n", i, j, j+1)
			b.WriteString("    for v in values:\n        total += v * scale\n    return total\n\n\n")
		}
		fs = append(fs, &infillv1.File{Path: fmt.Sprintf("pkg/util%d.py", i), Content: proto.String(b.String())})
	}
	return fs
}()

// request is a completion in pkg/main.py; id makes its text unique (no
// typed-through reuse between units), typed is what the user typed since
// the unit's first request.
func request(o options, id int, session, typed string) *infillv1.StreamCompleteRequest {
	prefix := fmt.Sprintf("from .util0 import helper_0_1\n\n# request %d\n\n\ndef report(values):\n    total = helper_0_1(values)\n    return %s", id, typed)
	suffix := "\n\n\nprint(report([1, 2, 3]))\n"
	files := make([]*infillv1.File, 0, len(repoFiles)+1)
	for _, f := range repoFiles { // a message per request: the codec may cache sizes in it
		files = append(files, proto.Clone(f).(*infillv1.File))
	}
	files = append(files, &infillv1.File{Path: "pkg/main.py", Content: proto.String(prefix + suffix)})
	return &infillv1.StreamCompleteRequest{
		Repository: &infillv1.Repository{Name: "soak", Files: files},
		Cursor: &infillv1.Cursor{Path: "pkg/main.py", Offset: uint64(len(prefix)),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation: &infillv1.GenerationOptions{MaxTokens: uint32(o.maxTokens)},
		ClientId:   "soak", SessionId: session,
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
	}
}

// quiesce waits until the server has no completion in flight and no slot
// taken (abandoned requests' probes included).
func quiesce(o options) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, err := scrape.Get(context.Background(), o.metrics)
		if err != nil {
			return err
		}
		if f.Value("infill_completions_in_flight") == 0 && f.Value("infill_backend_slots_busy") == 0 &&
			f.Value("infill_admission_queued") == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server still has work after 2 minutes: in flight %v, slots busy %v",
				f.Value("infill_completions_in_flight"), f.Value("infill_backend_slots_busy"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reading is the server's state at rest.
type reading struct {
	goroutines float64
	rss        float64
	heap       float64            // go_memstats_heap_inuse_bytes after a collection
	store      float64            // infill_content_store_bytes: files and indexes the server holds
	stacks     map[string]int     // goroutines by stack (pprof), nil without it
	requests   map[string]float64 // gRPC StreamComplete calls by code
	causes     map[string]float64 // cancellations by cause
	started    float64            // grpc_server_started_total of StreamComplete
}

func readings(o options) (reading, error) {
	// With pprof on the metrics listener: a collection first (a heap
	// profile with gc=1), so that heap figures compare live memory, and
	// the goroutines by stack, to name what a difference is.
	base := strings.TrimSuffix(o.metrics, "/metrics")
	if _, err := get(base + "/debug/pprof/heap?gc=1"); err == nil {
		time.Sleep(2 * time.Second)
	}
	var r reading
	for range 20 { // the last of several reads: a finished call's goroutines may take a moment
		f, err := scrape.Get(context.Background(), o.metrics)
		if err != nil {
			return r, err
		}
		r = reading{
			goroutines: f.Value("go_goroutines"),
			rss:        f.Value("process_resident_memory_bytes"),
			requests:   f.By("infill_requests_total", "code", "method", "/infill.v1.CompletionService/StreamComplete"),
			causes:     f.By("infill_cancellations_total", "cause"),
			started:    f.Value("grpc_server_started_total", "grpc_method", "StreamComplete"),
			heap:       f.Value("go_memstats_heap_inuse_bytes"),
			store:      f.Value("infill_content_store_bytes"),
		}
		time.Sleep(250 * time.Millisecond)
	}
	if body, err := get(base + "/debug/pprof/goroutine?debug=1"); err == nil {
		r.stacks = goroutineStacks(body)
	}
	return r, nil
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

// goroutineStacks reads a goroutine profile (debug=1): goroutines by their
// stack's functions, innermost first.
func goroutineStacks(profile string) map[string]int {
	out := map[string]int{}
	for _, group := range strings.Split(profile, "\n\n") {
		lines := strings.Split(strings.TrimSpace(group), "\n")
		n, err := strconv.Atoi(strings.SplitN(lines[0], " ", 2)[0])
		if err != nil {
			continue
		}
		var fns []string
		for _, l := range lines[1:] {
			f := strings.Fields(l) // "#", address, function+offset, file:line
			if len(f) >= 3 && f[0] == "#" {
				fn, _, _ := strings.Cut(f[2], "+")
				fns = append(fns, fn)
			}
		}
		out[strings.Join(fns, " < ")] += n
	}
	return out
}

// stackDiff lists the stacks with more goroutines after than before.
func stackDiff(before, after map[string]int) []string {
	var out []string
	for _, k := range sortedKeys(after) {
		if d := after[k] - before[k]; d > 0 {
			out = append(out, fmt.Sprintf("+%d %s", d, k))
		}
	}
	return out
}

// sampler reads the server's metrics every second during the run: the
// highest RSS, and a timeline of RSS, content store and goroutines (to
// show whether caches plateau or keep growing).
type sampler struct {
	max atomic.Uint64
	mu  sync.Mutex
	tl  []sample
}

// sample is one reading of the timeline.
type sample struct {
	at                     time.Duration // since the run began
	rss, store, goroutines float64
}

func (p *sampler) sample(url string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if f, err := scrape.Get(ctx, url); err == nil {
				v := uint64(f.Value("process_resident_memory_bytes"))
				for {
					old := p.max.Load()
					if v <= old || p.max.CompareAndSwap(old, v) {
						break
					}
				}
				p.mu.Lock()
				p.tl = append(p.tl, sample{time.Since(begin), f.Value("process_resident_memory_bytes"),
					f.Value("infill_content_store_bytes"), f.Value("go_goroutines")})
				p.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// tenths is the timeline at each tenth of the run (the last sample at or
// before it).
func (p *sampler) tenths() []sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tl) == 0 {
		return nil
	}
	end := p.tl[len(p.tl)-1].at
	var out []sample
	j := 0
	for i := 1; i <= 10; i++ {
		at := end * time.Duration(i) / 10
		for j+1 < len(p.tl) && p.tl[j+1].at <= at {
			j++
		}
		out = append(out, p.tl[j])
	}
	return out
}

// backend is what the backend looks like after the run.
type backend struct {
	ps      string        // /api/ps
	cpu     time.Duration // CPU time of its process group over window
	window  time.Duration
	procs   int
	cpuErr  error
	psError error
}

func backendState(o options) backend {
	var b backend
	b.ps, b.psError = apiPS(o.ollama)
	if o.ollamaPID == 0 {
		b.cpuErr = errors.New("no -ollama-pid")
		return b
	}
	b.window = 5 * time.Second
	c0, n, err := groupCPU(o.ollamaPID)
	if err != nil {
		b.cpuErr = err
		return b
	}
	time.Sleep(b.window)
	c1, _, err := groupCPU(o.ollamaPID)
	b.cpu, b.procs, b.cpuErr = c1-c0, n, err
	return b
}

func apiPS(base string) (string, error) {
	resp, err := http.Get(strings.TrimRight(base, "/") + "/api/ps")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			SizeVRAM  int64     `json:"size_vram"`
			Size      int64     `json:"size"`
			ExpiresAt time.Time `json:"expires_at"`
			Context   int       `json:"context_length"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		return "", err
	}
	var parts []string
	for _, m := range ps.Models {
		parts = append(parts, fmt.Sprintf("%s (num_ctx %d, %d MiB, unloads %s)", m.Name, m.Context, m.Size>>20,
			m.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	if len(parts) == 0 {
		return "no model loaded", nil
	}
	return "loaded: " + strings.Join(parts, "; "), nil
}

// groupCPU sums utime+stime of the processes in process group pgid.
func groupCPU(pgid int) (time.Duration, int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	var total time.Duration
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g != pgid {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * time.Second / 100 // USER_HZ
		n++
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no process in group %d", pgid)
	}
	return total, n, nil
}

func machine() string {
	load, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(load))
	if len(f) > 3 {
		f = f[:3]
	}
	return fmt.Sprintf("%d cores, load average %s at the start; %s", runtime.NumCPU(), strings.Join(f, " "), runtime.Version())
}

type report struct {
	opts          options
	start         time.Time
	machine       string
	elapsed       time.Duration
	before, after reading
	tally         *tally
	peakRSS       uint64
	timeline      []sample
	ollama        backend
	checks        []check
}

type check struct {
	name, got string
	ok        bool
}

func (r *report) evaluate() {
	if r.checks != nil {
		return
	}
	add := func(name string, ok bool, format string, args ...any) {
		r.checks = append(r.checks, check{name, fmt.Sprintf(format, args...), ok})
	}
	t := r.tally
	client := 0
	for k := range t.codes {
		for _, n := range t.codes[k] {
			client += n
		}
	}
	server := 0.0
	for c, n := range r.after.requests {
		server += n - r.before.requests[c]
	}
	started := r.after.started - r.before.started
	add("every request answered with a status (client)", client == r.opts.n, "%d of %d", client, r.opts.n)
	add("every request counted by code (server: infill_requests_total)", int(server) == r.opts.n && int(started) == r.opts.n,
		"%.0f counted, %.0f started, of %d", server, started, r.opts.n)
	unexpected := 0
	for k := range t.codes {
		for c, n := range t.codes[k] {
			if c != expected[k] && !(kind(k) != served && c == "OK") {
				unexpected += n
			}
		}
	}
	add("no status but the expected ones (or OK for a cut that came after the end)", unexpected == 0, "%d unexpected", unexpected)
	g0, g1 := r.before.goroutines, r.after.goroutines
	add("goroutines back to the warm baseline", g1 <= g0+float64(r.opts.goroutineSlack), "%.0f after, %.0f before", g1, g0)
	growth := (r.after.rss - r.before.rss) / r.before.rss
	add(fmt.Sprintf("RSS within %.0f%% of the warm baseline", 100*r.opts.rssBound), growth <= r.opts.rssBound,
		"%.1f MiB after, %.1f MiB before (%+.1f%%)", r.after.rss/(1<<20), r.before.rss/(1<<20), 100*growth)
	b := r.ollama
	switch {
	case b.cpuErr != nil:
		add("backend idle (CPU of its processes)", false, "not measured: %v", b.cpuErr)
	default:
		share := b.cpu.Seconds() / b.window.Seconds()
		add("backend idle (CPU of its processes)", share < 0.02, "%v CPU in %v over %d processes (%.1f%%)",
			b.cpu, b.window, b.procs, 100*share)
	}
}

func (r *report) passed() bool {
	r.evaluate()
	for _, c := range r.checks {
		if !c.ok {
			return false
		}
	}
	return true
}

func (r *report) markdown() string {
	r.evaluate()
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "# Soak: %d streaming completions at concurrency %d\n\n", o.n, o.concurrency)
	fmt.Fprintf(&b, "Commit `%s`, %s; %s. `bench/soak/run.sh` against the real local Ollama (the tiny model, "+
		"`scripts/backend.sh up`), infill-server with its defaults (one backend slot) but `--cache-bytes` (bench/soak/run.sh sets it low so the content store fills early and evicts for the rest of the run), %d warm-up requests first. "+
		"Each request sends a 9-file repository and asks for %d tokens; a third are cancelled by the client at their "+
		"first text, a third are superseded at their first text by the session's next request (one session per "+
		"worker), which is the last third and is served to its end.\n\n",
		o.commit, r.start.UTC().Format("2006-01-02 15:04 UTC"), r.machine, o.warmup, o.maxTokens)
	if o.note != "" {
		fmt.Fprintf(&b, "%s\n\n", o.note)
	}
	fmt.Fprintf(&b, "Ran %v (%.1f requests/s).\n\n", r.elapsed.Round(time.Second), float64(o.n)/r.elapsed.Seconds())
	b.WriteString("## Checks\n\n| check | result | |\n| --- | --- | --- |\n")
	for _, c := range r.checks {
		mark := "pass"
		if !c.ok {
			mark = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.name, c.got, mark)
	}
	b.WriteString("\n## Requests by kind and status (client)\n\n| kind | status | requests |\n| --- | --- | --- |\n")
	t := r.tally
	for k := range t.codes {
		for _, c := range sortedKeys(t.codes[k]) {
			fmt.Fprintf(&b, "| %s | %s | %d |\n", kindNames[k], c, t.codes[k][c])
		}
	}
	fmt.Fprintf(&b, "\nOK among the cut kinds: the stream had ended before the cut arrived (%d cancelled, %d superseded).\n",
		t.early[0], t.early[1])
	b.WriteString("\n## The server's counts (deltas over the run)\n\n| infill_requests_total{method=StreamComplete} code | calls |\n| --- | --- |\n")
	for _, c := range sortedKeys(r.after.requests) {
		if d := r.after.requests[c] - r.before.requests[c]; d != 0 {
			fmt.Fprintf(&b, "| %s | %.0f |\n", c, d)
		}
	}
	b.WriteString("\n| infill_cancellations_total cause | completions |\n| --- | --- |\n")
	for _, c := range sortedKeys(r.after.causes) {
		fmt.Fprintf(&b, "| %s | %.0f |\n", c, r.after.causes[c]-r.before.causes[c])
	}
	b.WriteString("\nThe pipeline counts a cut when it stopped a completion under way; a cancel that arrives " +
		"once the text is generated (while the last messages are sent) ends the call CANCELLED without one.\n")
	b.WriteString("\n## Latency (client)\n\n| | p50 | p90 | p99 | max |\n| --- | --- | --- | --- | --- |\n")
	for _, l := range []struct {
		name string
		ds   []time.Duration
	}{{"time to first text (every request that had text)", t.ttft}, {"whole request (served)", t.total}} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", l.name, pct(l.ds, 50), pct(l.ds, 90), pct(l.ds, 99), pct(l.ds, 100))
	}
	b.WriteString("\n## Resources\n\n| | warm baseline | after the run and a settle | peak during the run |\n| --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| goroutines (go_goroutines) | %.0f | %.0f | |\n", r.before.goroutines, r.after.goroutines)
	fmt.Fprintf(&b, "| RSS (process_resident_memory_bytes) | %.1f MiB | %.1f MiB | %.1f MiB |\n",
		r.before.rss/(1<<20), r.after.rss/(1<<20), float64(r.peakRSS)/(1<<20))
	fmt.Fprintf(&b, "| Go heap in use after a collection (go_memstats_heap_inuse_bytes) | %.1f MiB | %.1f MiB | |\n",
		r.before.heap/(1<<20), r.after.heap/(1<<20))
	fmt.Fprintf(&b, "| content store and indexes (infill_content_store_bytes) | %.2f MiB | %.2f MiB | |\n",
		r.before.store/(1<<20), r.after.store/(1<<20))
	if len(r.timeline) > 0 {
		b.WriteString("\nDuring the run, at each tenth of it (sampled every second; RSS without a forced collection):\n\n" +
			"| elapsed | RSS | content store | goroutines |\n| --- | --- | --- | --- |\n")
		for _, s := range r.timeline {
			fmt.Fprintf(&b, "| %s | %.1f MiB | %.2f MiB | %.0f |\n", s.at.Round(time.Second), s.rss/(1<<20), s.store/(1<<20), s.goroutines)
		}
	}
	if r.before.stacks != nil && r.after.stacks != nil {
		if d := stackDiff(r.before.stacks, r.after.stacks); len(d) > 0 {
			b.WriteString("\nGoroutines after the run that the baseline did not have (pprof, by stack, innermost first):\n\n")
			for _, l := range d {
				fmt.Fprintf(&b, "- `%s`\n", l)
			}
		} else {
			b.WriteString("\nNo stack has more goroutines after the run than at the baseline (pprof).\n")
		}
	}
	fmt.Fprintf(&b, "\nBackend after the run: /api/ps: %s", r.ollama.ps)
	if r.ollama.psError != nil {
		fmt.Fprintf(&b, "(error: %v)", r.ollama.psError)
	}
	if r.ollama.cpuErr == nil {
		fmt.Fprintf(&b, "; CPU time of its %d processes over %v: %v.\n", r.ollama.procs, r.ollama.window, r.ollama.cpu)
	} else {
		fmt.Fprintf(&b, "; CPU not measured: %v.\n", r.ollama.cpuErr)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func pct(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)].Round(time.Millisecond).String()
}

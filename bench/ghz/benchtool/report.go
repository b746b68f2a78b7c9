package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ghzReport is the part of a ghz JSON report (v0.120.0) the summary uses.
type ghzReport struct {
	Name      string          `json:"name"`
	EndReason string          `json:"endReason"`
	Date      string          `json:"date"`
	Options   json.RawMessage `json:"options"`
	Count     uint64          `json:"count"`
	Total     time.Duration   `json:"total"`
	Average   time.Duration   `json:"average"`
	Fastest   time.Duration   `json:"fastest"`
	Slowest   time.Duration   `json:"slowest"`
	Rps       float64         `json:"rps"`
	ErrorDist map[string]int  `json:"errorDistribution"`
	Status    map[string]int  `json:"statusCodeDistribution"`
	Latency   []struct {
		Percentage int           `json:"percentage"`
		Latency    time.Duration `json:"latency"`
	} `json:"latencyDistribution"`
	Tags map[string]string `json:"tags"`
}

// ghzSummary is one ghz run in summary.json.
type ghzSummary struct {
	Name        string `json:"name"`
	Suite       string `json:"suite"`
	Backend     string `json:"backend"`
	Payload     string `json:"payload"`
	Method      string `json:"method"`
	Concurrency int    `json:"concurrency"`
	EndReason   string `json:"end_reason"`
	Count       uint64 `json:"count"`
	OK          int    `json:"ok"`
	Errors      int    `json:"errors"`
	// CutAtEnd are calls in flight when a duration-bound run ended: ghz
	// closes the connection under them. Counted apart from Errors.
	CutAtEnd  int            `json:"cut_at_end"`
	Status    map[string]int `json:"status_codes"`
	ErrorDist map[string]int `json:"error_distribution,omitempty"`
	Rps       float64        `json:"rps"`
	TotalS    float64        `json:"total_s"`
	P50Ms     float64        `json:"p50_ms"`
	P90Ms     float64        `json:"p90_ms"`
	P99Ms     float64        `json:"p99_ms"`
	MeanMs    float64        `json:"mean_ms"`
	FastestMs float64        `json:"fastest_ms"`
	SlowestMs float64        `json:"slowest_ms"`
	Date      string         `json:"date"`
	// ServerCPUMsPerCall is infill-server's CPU time over the run (from
	// /proc, 10 ms ticks) divided by the calls made.
	ServerCPUMsPerCall float64        `json:"server_cpu_ms_per_call,omitempty"`
	Options            map[string]any `json:"ghz_options"`
}

// summary is summary.json: everything REPORT.md is made from.
type summary struct {
	Meta     map[string]string `json:"meta"`
	Load     []loadMark        `json:"load"`
	Payloads []payloadInfo     `json:"payloads"`
	Ghz      []ghzSummary      `json:"ghz"`
	Pairs    []pairResult      `json:"pairs"`
	Floor    []floorResult     `json:"floor,omitempty"`
}

type loadMark struct {
	Phase   string `json:"phase"`
	LoadAvg string `json:"loadavg"`
	// BusyPct is the machine's CPU use over the phase (all processes, all
	// cores, from /proc/stat), when run.sh recorded it.
	BusyPct string `json:"busy_pct,omitempty"`
}

func reportCmd(args []string) error {
	fl := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fl.String("in", "", "run directory written by run.sh (meta.txt, load.txt, payloads/, ghz/, pair/)")
	out := fl.String("out", "", "directory for REPORT.md and results/ (required)")
	notes := fl.String("notes", "", "markdown file appended to the report (hand-written notes)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("-in and -out are required")
	}
	var sum summary
	var err error
	if sum.Meta, err = readKV(filepath.Join(*in, "meta.txt")); err != nil {
		return err
	}
	if sum.Load, err = readLoad(filepath.Join(*in, "load.txt")); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(*in, "payloads", "payloads.json")); err == nil {
		if err := json.Unmarshal(b, &sum.Payloads); err != nil {
			return err
		}
		for i := range sum.Payloads {
			sum.Payloads[i].File = filepath.Base(sum.Payloads[i].File)
		}
	}
	ghzFiles, _ := filepath.Glob(filepath.Join(*in, "ghz", "*.json"))
	sort.Strings(ghzFiles)
	for _, f := range ghzFiles {
		g, err := readGhz(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if g.Suite == "warmup" {
			continue
		}
		sum.Ghz = append(sum.Ghz, g)
	}
	sortGhz(sum.Ghz, sum.Payloads)
	if sum.Pairs, err = readJSONs(filepath.Join(*in, "pair", "*.json"), func(p *pairResult) {
		p.Samples = nil // kept in the run directory only
		p.Payload = filepath.Base(p.Payload)
	}); err != nil {
		return err
	}
	sort.SliceStable(sum.Pairs, func(i, j int) bool { return sum.Pairs[i].Started.Before(sum.Pairs[j].Started) })
	if sum.Floor, err = readJSONs(filepath.Join(*in, "floor", "*.json"), func(f *floorResult) {
		f.Gaps = nil // kept in the run directory only
		f.Payload = filepath.Base(f.Payload)
	}); err != nil {
		return err
	}
	sort.SliceStable(sum.Floor, func(i, j int) bool { return sum.Floor[i].RequestBytes > sum.Floor[j].RequestBytes })
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(sum, "", " ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(*out, "summary.json"), append(b, '\n')); err != nil {
		return err
	}
	var notesText string
	if *notes != "" {
		nb, err := os.ReadFile(*notes)
		if err != nil {
			return err
		}
		notesText = string(nb)
	}
	md := renderReport(&sum, notesText)
	if err := writeFileAtomic(filepath.Join(*out, "REPORT.md"), []byte(md)); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", filepath.Join(*out, "REPORT.md"), filepath.Join(*out, "summary.json"))
	return nil
}

// readJSONs decodes every file matching glob, in name order, trimming
// each with trim.
func readJSONs[T any](glob string, trim func(*T)) ([]T, error) {
	files, _ := filepath.Glob(glob)
	sort.Strings(files)
	var out []T
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		trim(&v)
		out = append(out, v)
	}
	return out, nil
}

func readGhz(file string) (ghzSummary, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return ghzSummary{}, err
	}
	var r ghzReport
	if err := json.Unmarshal(b, &r); err != nil {
		return ghzSummary{}, err
	}
	g := ghzSummary{Name: r.Name, Suite: r.Tags["suite"], Backend: r.Tags["backend"], Payload: r.Tags["payload"],
		Method: r.Tags["method"], EndReason: r.EndReason, Count: r.Count, Status: r.Status, ErrorDist: r.ErrorDist,
		Rps: round3(r.Rps), TotalS: round3(r.Total.Seconds()), MeanMs: ms(r.Average), FastestMs: ms(r.Fastest),
		SlowestMs: ms(r.Slowest), Date: r.Date}
	g.Concurrency, _ = strconv.Atoi(r.Tags["concurrency"])
	for code, n := range r.Status {
		if code == "OK" {
			g.OK += n
		} else {
			g.Errors += n
		}
	}
	if r.EndReason == "timeout" {
		for msg, n := range r.ErrorDist {
			if strings.Contains(msg, "use of closed network connection") || strings.Contains(msg, "the client connection is closing") ||
				strings.Contains(msg, "context canceled") {
				g.CutAtEnd += n
				g.Errors -= n
			}
		}
	}
	for _, l := range r.Latency {
		switch l.Percentage {
		case 50:
			g.P50Ms = ms(l.Latency)
		case 90:
			g.P90Ms = ms(l.Latency)
		case 99:
			g.P99Ms = ms(l.Latency)
		}
	}
	if b, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".cpu"); err == nil && r.Count > 0 {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			g.ServerCPUMsPerCall = round3(v / float64(r.Count))
		}
	}
	// Keep ghz's options without the request data (megabytes of source).
	var opts map[string]any
	if err := json.Unmarshal(r.Options, &opts); err == nil {
		delete(opts, "data")
		g.Options = opts
	}
	return g, nil
}

// sortGhz orders runs by suite (as first seen), repository size, variant,
// method and concurrency.
func sortGhz(gs []ghzSummary, payloads []payloadInfo) {
	suite := map[string]int{"ollama": 0, "ceiling": 1}
	for _, g := range gs {
		if _, ok := suite[g.Suite]; !ok {
			suite[g.Suite] = len(suite)
		}
	}
	pl := map[string]payloadInfo{}
	for _, p := range payloads {
		pl[p.Name] = p
	}
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		pa, pb := pl[a.Payload], pl[b.Payload]
		switch {
		case suite[a.Suite] != suite[b.Suite]:
			return suite[a.Suite] < suite[b.Suite]
		case pa.N != pb.N:
			return pa.N < pb.N
		case pa.Variant != pb.Variant:
			return pa.Variant > pb.Variant // full before digest
		case a.Method != b.Method:
			return a.Method < b.Method
		}
		return a.Concurrency < b.Concurrency
	})
}

func readKV(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m, sc.Err()
}

// readLoad reads load.txt: "phase<TAB>loadavg<TAB>busy%" lines.
func readLoad(file string) ([]loadMark, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []loadMark
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < 2 {
			continue
		}
		m := loadMark{Phase: parts[0], LoadAvg: parts[1]}
		if len(parts) > 2 {
			m.BusyPct = parts[2]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Targets from the issue: infill adds under 5% to the median latency and
// under 2 ms at p50, with warm caches.
const (
	targetRatio   = 0.05
	targetDeltaMs = 2.0
)

func renderReport(s *summary, notes string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := s.Meta
	w("# infill latency benchmark (ghz)\n\n")
	mode := ""
	if m["mode_flag"] != "" {
		mode = " " + m["mode_flag"]
	}
	w("Generated by `bench/ghz/run.sh%s` — do not edit by hand (notes: `bench/ghz/NOTES.md`).\n\n", mode)
	w("| | |\n| --- | --- |\n")
	for _, k := range []struct{ key, label string }{
		{"date", "date (UTC)"}, {"commit", "commit"}, {"cpu", "CPU"}, {"cores", "cores (nproc)"}, {"mem", "memory"},
		{"kernel", "kernel"}, {"go", "Go"}, {"ghz", "ghz"}, {"ollama", "Ollama"}, {"model", "model"},
		{"num_ctx", "num_ctx"}, {"max_tokens", "max_tokens"}, {"source", "payload source"},
		{"fake", "fake backend"}, {"others", "other load at start"},
	} {
		if v := m[k.key]; v != "" {
			w("| %s | %s |\n", k.label, mdEscape(v))
		}
	}
	w("\n")
	if len(s.Load) > 0 {
		w("Machine load during the run (the machine is shared; load average = runnable tasks over 1/5/15 min; busy = all processes' CPU share over the phase, 100%% = both cores):\n\n")
		w("| phase | load average | busy |\n| --- | --- | --- |\n")
		for _, l := range s.Load {
			w("| %s | %s | %s |\n", l.Phase, l.LoadAvg, orDash(l.BusyPct))
		}
		w("\n")
	}

	if len(s.Payloads) > 0 {
		w("## Payloads\n\n")
		w("A cursor in `%s` (line %d, column %d, 0-based, at the start of a statement in a function body) in a repository of the N real Go files nearest to it in the Go source tree (non-test, ≤ 64 KiB each). `full`: every file with content; `digest`: every file but the cursor file as its sha256 digest, what an IDE client sends once the server holds the content; `snapshot` (pair and floor only): the cursor file alone on the repository snapshot a first full request returned (`Repository.base`; 35.5 KB at 500 files); `-typing` (pair, paced fake only): one character typed at the cursor before every infill request, so that no request repeats and the prompt memo never answers; the cursor file goes as an edit to the text infill last received (`File.edits`), as the Go client sends a keystroke, and the request bytes of these rows are the median as sent. Generation: max_tokens %d, temperature 0.\n\n",
			s.Payloads[0].CursorPath, s.Payloads[0].CursorLine, s.Payloads[0].CursorColumn, s.Payloads[0].MaxTokens)
		w("| payload | files | source bytes | request bytes |\n| --- | ---: | ---: | ---: |\n")
		for _, p := range s.Payloads {
			w("| %s | %d | %d | %d |\n", p.Name, p.Files, p.ContentBytes, p.RequestBytes)
		}
		w("\n")
	}

	pairsFor := func(prefix string) []pairResult {
		var out []pairResult
		for _, p := range s.Pairs {
			if strings.HasPrefix(p.Backend, prefix) {
				out = append(out, p)
			}
		}
		return out
	}
	if ps := pairsFor("ollama"); len(ps) > 0 {
		w("## 1. infill vs the same prompt straight to Ollama\n\n")
		w("Real backend (Ollama built from the pinned module, tiny random-weight qwen2 model). Each round sends `Complete`, `StreamComplete` and the identical raw `/api/generate` request (prompt built by the same contextpack Builder and configuration as the server, same options: num_ctx, num_predict, temperature 0, seed, stop set, keep_alive), back to back in rotating order, one at a time, after warm-up (contextpack store and index, Ollama's prompt cache and model, connections all warm). Same Go load generator (`benchtool pair`) for both sides; the direct side reads Ollama's NDJSON with plain net/http. Latencies in ms, to the end of the response / stream; paired Δ = median over rounds of (infill − direct) with a 95%% bootstrap interval, on which the target columns are judged (unresolved: the interval straddles the target); *same text*: rounds in which infill's completion equals Ollama's direct one.\n\n")
		pairTable(w, ps)
	}
	if ps := pairsFor("fake"); len(ps) > 0 {
		w("## 2. infill's own cost against a controlled backend (fakeollama)\n\n")
		w("`bench/fakeollama` answers `/api/generate` with a fixed number of tokens at a fixed pace, so the difference between infill and the direct request is infill's own work (request decoding, digest lookup, context assembly, gRPC, re-streaming) plus one extra loopback hop. Each run first checks that infill and the direct path sent the fake byte-for-byte the same request (prompt sha256, options, flags): ✔ below.\n\n")
		pairTable(w, ps)
	}
	if len(s.Floor) > 0 {
		w("## 2b. The gRPC floor\n\n")
		w("The same requests sent to a `CompletionService` that does nothing but wait %.0f ms (`benchtool floor`: its own process, the same grpc-go and message limits as infill-server, the same client as the pair runs%s). *Gap* = the client's latency minus the handler's own time: the cost of one gRPC call on this machine (marshalling, loopback, HTTP/2, wake-ups) before any work. Infill's overhead over a direct Ollama request contains this gap; the direct request pays its own HTTP hop, which infill pays too, to the backend.\n\n", s.Floor[0].DelayMs, floorOrder(s.Floor))
		w("| payload | request bytes | gap p50 | gap p90 | calls |\n| --- | ---: | ---: | ---: | ---: |\n")
		for _, f := range s.Floor {
			w("| n%d-%s | %d | %s ms | %s ms | %d |\n", f.N, f.Variant, f.RequestBytes, fmtMs(f.GapP50Ms), fmtMs(f.GapP90Ms), f.Rounds)
		}
		w("\n")
	}
	suites := map[string][]ghzSummary{}
	var order []string
	for _, g := range s.Ghz {
		if _, ok := suites[g.Suite]; !ok {
			order = append(order, g.Suite)
		}
		suites[g.Suite] = append(suites[g.Suite], g)
	}
	titles := map[string]string{
		"ollama":  "## 3. ghz suite against the real backend\n\nghz v0.120.0 through server reflection (no proto file), one run per payload and method after a warm-up run. Latency is the whole call (the whole stream for `StreamComplete`); rps is completed calls per second of the run.\n\n",
		"ceiling": "## 4. Server ceiling: ghz against infill with a zero-latency backend\n\nfakeollama with no delay (16 tokens at once): what remains is infill's cost, ghz's and the fake's, all on the same 2 shared cores, so the ceiling below is the whole loopback system's, an upper bound on what infill alone costs.\n\n",
	}
	for _, suite := range order {
		if t, ok := titles[suite]; ok {
			w("%s", t)
		} else {
			w("## ghz: %s\n\n", suite)
		}
		w("| payload | method | concurrency | calls | errors | rps | p50 | p90 | p99 | mean | infill CPU per call | end |\n| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
		for _, g := range suites[suite] {
			errs := fmt.Sprint(g.Errors)
			if g.Errors > 0 {
				var codes []string
				for c, n := range g.Status {
					if c != "OK" {
						codes = append(codes, fmt.Sprintf("%s×%d", c, n))
					}
				}
				sort.Strings(codes)
				errs += " (" + strings.Join(codes, ", ") + ")"
			}
			if g.CutAtEnd > 0 {
				errs += fmt.Sprintf(" + %d cut at end", g.CutAtEnd)
			}
			cpu := "–"
			if g.ServerCPUMsPerCall > 0 {
				cpu = fmt.Sprintf("%.2f ms", g.ServerCPUMsPerCall)
			}
			w("| %s | %s | %d | %d | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", g.Payload, g.Method, g.Concurrency, g.Count, errs,
				g.Rps, fmtMs(g.P50Ms), fmtMs(g.P90Ms), fmtMs(g.P99Ms), fmtMs(g.MeanMs), cpu, g.EndReason)
		}
		w("\n")
	}
	if notes != "" {
		w("%s", strings.TrimRight(notes, "\n")+"\n")
	}
	return b.String()
}

func pairTable(w func(string, ...any), ps []pairResult) {
	w("| backend | payload | prompt tokens | gen tokens | direct p50 / p90 / p99 | Complete p50 / p90 / p99 | StreamComplete p50 / p90 / p99 | Δp50 Complete / Stream | paired Δ median Complete [95%% CI] | paired Δ median Stream [95%% CI] | TTFT p50 direct / Stream | infill CPU per call | assembly p50 | rounds | same text | errors | < %.0f ms | < %.0f%% |\n", targetDeltaMs, 100*targetRatio)
	w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, p := range ps {
		c, st, d := p.Kinds[kindComplete], p.Kinds[kindStream], p.Kinds[kindDirect]
		oc, ost := p.Overhead[kindComplete], p.Overhead[kindStream]
		errs := c.Errors + st.Errors + d.Errors
		backend := p.Backend
		if p.Verify.Checked && p.Verify.SameRequest && p.Verify.PromptMatches {
			backend += " ✔"
		}
		cpu := "–"
		if p.ServerCPUMsPerCall > 0 {
			cpu = fmt.Sprintf("%.2f ms", p.ServerCPUMsPerCall)
		}
		absV, ratioV := verdicts(p.ZeroLatency, oc, ost)
		w("| %s | %s | %d | %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %+.2f / %+.2f ms (%+.1f%% / %+.1f%%) | %+.2f ms [%+.2f, %+.2f] | %+.2f ms [%+.2f, %+.2f] | %s / %s | %s | %s ms | %d | %d/%d | %d | %s | %s |\n",
			backend, p.Variantless(), p.PromptTokens, fmtTok(d.TokensP50, c.TokensP50),
			fmtMs(d.P50Ms), fmtMs(d.P90Ms), fmtMs(d.P99Ms), fmtMs(c.P50Ms), fmtMs(c.P90Ms), fmtMs(c.P99Ms),
			fmtMs(st.P50Ms), fmtMs(st.P90Ms), fmtMs(st.P99Ms),
			oc.MedianDeltaMs, ost.MedianDeltaMs, 100*oc.Ratio, 100*ost.Ratio,
			oc.PairedMedianMs, oc.CILowMs, oc.CIHighMs, ost.PairedMedianMs, ost.CILowMs, ost.CIHighMs,
			fmtMs(d.TTFTP50Ms), fmtMs(st.TTFTP50Ms), cpu, fmtMs(c.ServerAssemblyP50), p.Rounds, p.SameText, p.Rounds, errs, absV, ratioV)
	}
	w("\n")
}

// Variantless names the payload as nN-variant.
func (p pairResult) Variantless() string { return fmt.Sprintf("n%d-%s", p.N, p.Variant) }

// verdicts judges the targets on the 95% intervals of the paired median
// (absolute) and of the ratio of medians: "met" when the whole interval is
// under the target for Complete and StreamComplete, "not met" when an
// interval lies wholly above it, "unresolved" when the noise of the run
// straddles it.
func verdicts(zero bool, ovs ...overhead) (abs, ratio string) {
	judge := func(lo, hi func(overhead) float64, target float64) string {
		met, not := true, false
		for _, o := range ovs {
			if hi(o) >= target {
				met = false
			}
			if lo(o) >= target {
				not = true
			}
		}
		switch {
		case not:
			return "**not met**"
		case met:
			return "met"
		}
		return "unresolved"
	}
	abs = judge(func(o overhead) float64 { return o.CILowMs }, func(o overhead) float64 { return o.CIHighMs }, targetDeltaMs)
	ratio = "n/a (0 ms backend)"
	if !zero {
		ratio = judge(func(o overhead) float64 { return o.RatioLow }, func(o overhead) float64 { return o.RatioHigh }, targetRatio)
	}
	return abs, ratio
}

func fmtMs(x float64) string {
	switch {
	case x == 0:
		return "–"
	case x < 10:
		return fmt.Sprintf("%.2f", x)
	case x < 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func fmtTok(direct, infill float64) string {
	if direct == infill {
		return fmt.Sprintf("%.0f", direct)
	}
	return fmt.Sprintf("%.0f / %.0f", direct, infill)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// floorOrder says how the floor's payloads were sent: in turns (one call
// each per round) or one block after another, as runs before turns did.
func floorOrder(fs []floorResult) string {
	for _, f := range fs {
		if f.Turns < 2 {
			return "; one payload after another, so a disturbance on the shared machine can fall on one payload's block"
		}
	}
	return "; the payloads go in turns, one call each per round, so that a disturbance falls on all of them alike"
}

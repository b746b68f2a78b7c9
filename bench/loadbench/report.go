package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

type report struct {
	Backend     string            `json:"backend"`
	BackendDesc string            `json:"backend_desc"`
	Commit      string            `json:"commit"`
	Note        string            `json:"note,omitempty"`
	Date        string            `json:"date"`
	Machine     string            `json:"machine"`
	Workload    map[string]string `json:"workload"`
	Modes       []*modeResult     `json:"modes"`
}

type modeResult struct {
	Mode         string         `json:"mode"`
	BackendSlots int            `json:"backend_slots"`
	Phases       []*phaseResult `json:"phases"`
	// ServerLog counts the server's warnings about the backend.
	ServerLog map[string]int `json:"server_log"`
	// WarmupFailures are warm-up requests that failed (and were retried).
	WarmupFailures []string `json:"warmup_failures,omitempty"`
}

type phaseResult struct {
	Name        string  `json:"name"`
	Seconds     float64 `json:"seconds"`
	LoadStart   string  `json:"load_start"`
	LoadEnd     string  `json:"load_end"`
	BusyPct     float64 `json:"machine_cpu_busy_pct"`
	ServerCPUs  float64 `json:"server_cpu_s"`
	BackendCPUs float64 `json:"backend_cpu_s"`
	HealthDownS float64 `json:"health_not_serving_s"`
	// Keystrokes are the typing sessions' requests, typed-through ones
	// included.
	Keystrokes   int           `json:"keystrokes"`
	Interactive  classResult   `json:"interactive"`
	Evaluation   classResult   `json:"evaluation"`
	TypedThrough typedResult   `json:"typed_through"`
	Pauses       int           `json:"pauses"`
	Answered     int           `json:"pauses_answered"`
	Backend      backendCounts `json:"backend"`
	// PerKeystroke is (interactive generations + probes) / keystrokes.
	PerKeystroke float64            `json:"backend_requests_per_keystroke"`
	Server       map[string]float64 `json:"server_metrics"`
}

type classResult struct {
	Sent       int            `json:"sent"`
	Codes      map[string]int `json:"codes"`
	Superseded int            `json:"superseded"`
	WithText   int            `json:"with_text"`
	TTFT       dist           `json:"ttft_ms"`
	QueueWait  dist           `json:"queue_wait_ms"`
}

type typedResult struct {
	// Sent are the keystrokes typing a completion's first characters: the
	// user's deliberate ones and keystrokes of a word that typed them by
	// chance (ByChance, reused ones only: the others cannot be told).
	Sent     int  `json:"sent"`
	ByChance int  `json:"by_chance"`
	Reused   int  `json:"reused"`
	Latency  dist `json:"latency_ms"`
}

// dist summarises a sample in ms; percentiles by nearest rank.
type dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func describe(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return round(s[max(0, min(i, len(s)-1))])
	}
	return dist{N: len(s), P50: at(50), P90: at(90), P99: at(99), Max: round(s[len(s)-1])}
}

func round(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*100) / 100
}

func summarize(o *options, name string, calls []*call, b backendCounts) *phaseResult {
	r := &phaseResult{Name: name, Backend: b}
	class := func(kind string) classResult {
		c := classResult{Codes: map[string]int{}}
		var ttft, queue []time.Duration
		for _, x := range calls {
			if x.kind != kind {
				continue
			}
			c.Sent++
			code := x.code
			if code == "Canceled" && strings.Contains(x.msg, "superseded") {
				c.Superseded++
				code = "Canceled (superseded)"
			}
			c.Codes[code]++
			if x.ttft > 0 {
				c.WithText++
				ttft = append(ttft, x.ttft)
			}
			if x.code == "OK" {
				queue = append(queue, x.queue)
			}
		}
		c.TTFT, c.QueueWait = describe(ttft), describe(queue)
		return c
	}
	// A keystroke of a word that happens to type the first characters of
	// the completion shown is typed-through too: it counts there, not
	// among the completions the backend served.
	for _, x := range calls {
		if x.kind == kindKeystroke && x.reused {
			x.kind = kindTyped
			r.TypedThrough.ByChance++
		}
	}
	r.Interactive, r.Evaluation = class(kindKeystroke), class(kindEval)
	var typed []time.Duration
	for _, x := range calls {
		switch x.kind {
		case kindTyped:
			r.TypedThrough.Sent++
			typed = append(typed, x.total)
			if x.reused {
				r.TypedThrough.Reused++
			}
		}
		switch x.kind {
		case kindKeystroke, kindTyped:
			if x.pause {
				r.Pauses++
				if x.ttft > 0 && x.ttft <= o.pause {
					r.Answered++
				}
			}
		}
	}
	r.TypedThrough.Latency = describe(typed)
	r.Keystrokes = r.Interactive.Sent + r.TypedThrough.Sent
	if r.Keystrokes > 0 {
		r.PerKeystroke = float64(b.Interactive+b.Probes) / float64(r.Keystrokes)
	}
	return r
}

func (rep *report) markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("### %s backend\n\n", map[string]string{"fake": "Paced fake", "ollama": "Real Ollama"}[rep.Backend])
	w("- Commit measured: `%s`, %s", rep.Commit, rep.Date)
	if rep.Note != "" {
		w(" (%s)", rep.Note)
	}
	w("\n- Backend: %s\n- Machine: %s\n", rep.BackendDesc, rep.Machine)
	keys := make([]string, 0, len(rep.Workload))
	for k := range rep.Workload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w("- Workload:")
	for i, k := range keys {
		sep := ";"
		if i == len(keys)-1 {
			sep = "."
		}
		w(" %s %s%s", k, rep.Workload[k], sep)
	}
	w("\n\n")
	var cols []*phaseResult
	var heads []string
	for _, m := range rep.Modes {
		for _, p := range m.Phases {
			cols = append(cols, p)
			heads = append(heads, modeName(m)+", "+p.Name)
		}
	}
	w("| | %s |\n|---|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
	row := func(name string, f func(p *phaseResult) string) {
		w("| %s |", name)
		for _, p := range cols {
			w(" %s |", f(p))
		}
		w("\n")
	}
	row("load average at start → end", func(p *phaseResult) string { return p.LoadStart + " → " + p.LoadEnd })
	row("machine CPU busy; infill-server / backend CPU", func(p *phaseResult) string {
		return fmt.Sprintf("%.0f%%; %.1f / %.1f s in %.0f s", p.BusyPct, p.ServerCPUs, p.BackendCPUs, p.Seconds)
	})
	row("keystrokes (requests), typed-through ones included", func(p *phaseResult) string { return fmt.Sprint(p.Keystrokes) })
	row("**interactive TTFT p50 / p99 / max (ms)**", func(p *phaseResult) string { return ttft(p.Interactive.TTFT) })
	row("interactive outcomes", func(p *phaseResult) string { return codes(p.Interactive) })
	row("interactive queue wait p50 / p99 (ms, served)", func(p *phaseResult) string {
		return fmt.Sprintf("%.1f / %.1f", p.Interactive.QueueWait.P50, p.Interactive.QueueWait.P99)
	})
	row("pauses with text before the next keystroke", func(p *phaseResult) string {
		return fmt.Sprintf("%d of %d (%.0f%%)", p.Answered, p.Pauses, pct(p.Answered, p.Pauses))
	})
	row("**evaluation TTFT p50 / p99 / max (ms)**", func(p *phaseResult) string { return ttft(p.Evaluation.TTFT) })
	row("evaluation outcomes", func(p *phaseResult) string {
		if p.Evaluation.Sent == 0 {
			return "–"
		}
		return codes(p.Evaluation) + fmt.Sprintf("; %.2f OK/s", float64(p.Evaluation.Codes["OK"])/p.Seconds)
	})
	row("**shed** (RESOURCE_EXHAUSTED) interactive / evaluation", func(p *phaseResult) string {
		return fmt.Sprintf("%d / %d", p.Interactive.Codes["ResourceExhausted"], p.Evaluation.Codes["ResourceExhausted"])
	})
	row("**typed-through**: reused / sent; latency p50 / p99 (ms)", func(p *phaseResult) string {
		t := p.TypedThrough
		if t.Sent == 0 {
			return "–"
		}
		return fmt.Sprintf("%d / %d (%d of them by chance); %.2f / %.2f", t.Reused, t.Sent, t.ByChance, t.Latency.P50, t.Latency.P99)
	})
	row("backend requests: interactive / probes / evaluation / other", func(p *phaseResult) string {
		b := p.Backend
		return fmt.Sprintf("%d / %d / %d / %d", b.Interactive, b.Probes, b.Evaluation, b.Other)
	})
	row("**backend requests per keystroke** (interactive + probes)", func(p *phaseResult) string { return fmt.Sprintf("%.2f", p.PerKeystroke) })
	row("most generate requests at the backend at once", func(p *phaseResult) string { return fmt.Sprint(p.Backend.MaxInFlight) })
	row("server: shed interactive / evaluation; superseded; budget cuts; typed-through hits", func(p *phaseResult) string {
		s := p.Server
		return fmt.Sprintf("%.0f / %.0f; %.0f; %.0f; %.0f", s["shed_interactive"], s["shed_evaluation"], s["superseded"], s["budget"], s["typed_through"])
	})
	row("server goroutines before → after", func(p *phaseResult) string {
		return fmt.Sprintf("%.0f → %.0f", p.Server["goroutines_before"], p.Server["goroutines_after"])
	})
	row("health not SERVING", func(p *phaseResult) string { return fmt.Sprintf("%.1f s", p.HealthDownS) })
	w("\n")
	for _, m := range rep.Modes {
		var ev []string
		for _, k := range []string{"backend down: NOT_SERVING", "backend stalled", "restarted the model's runner", "restarting the model's runner failed"} {
			if n := m.ServerLog[k]; n > 0 {
				ev = append(ev, fmt.Sprintf("%q × %d", k, n))
			}
		}
		if len(ev) == 0 {
			ev = []string{"none"}
		}
		w("Server log, %s: %s.", modeName(m), strings.Join(ev, ", "))
		if len(m.WarmupFailures) > 0 {
			w(" Warm-up requests that failed and were retried: %s.", strings.Join(m.WarmupFailures, "; "))
		}
		w("\n")
	}
	w("\n")
	w("| target | %s |\n|---|%s\n", strings.Join(modeNames(rep), " | "), strings.Repeat("---|", len(rep.Modes)))
	target := func(name string, f func(un, lo *phaseResult) string) {
		w("| %s |", name)
		for _, m := range rep.Modes {
			if len(m.Phases) < 2 {
				w(" – |")
				continue
			}
			w(" %s |", f(m.Phases[0], m.Phases[1]))
		}
		w("\n")
	}
	target("interactive TTFT p99 (loaded) < 2 × p50 (unloaded)", func(un, lo *phaseResult) string {
		if lo.Interactive.TTFT.N == 0 {
			return "**not met**: no keystroke got a first token"
		}
		return verdict(lo.Interactive.TTFT.P99 < 2*un.Interactive.TTFT.P50 && lo.Interactive.TTFT.N > 0,
			fmt.Sprintf("%.0f ms vs 2 × %.0f = %.0f ms", lo.Interactive.TTFT.P99, un.Interactive.TTFT.P50, 2*un.Interactive.TTFT.P50))
	})
	// The backend's own unloaded time, without admission in front of it
	// (admission's probes and shedding change the unloaded phase too).
	var bare *phaseResult
	for _, m := range rep.Modes {
		if m.BackendSlots == 0 && len(m.Phases) > 0 {
			bare = m.Phases[0]
		}
	}
	if bare != nil && bare.Interactive.TTFT.N > 0 {
		target("the same against the unloaded p50 without admission", func(un, lo *phaseResult) string {
			if lo.Interactive.TTFT.N == 0 {
				return "**not met**: no keystroke got a first token"
			}
			return verdict(lo.Interactive.TTFT.P99 < 2*bare.Interactive.TTFT.P50 && lo.Interactive.TTFT.N > 0,
				fmt.Sprintf("%.0f ms vs 2 × %.0f = %.0f ms", lo.Interactive.TTFT.P99, bare.Interactive.TTFT.P50, 2*bare.Interactive.TTFT.P50))
		})
	}
	target("backend requests per keystroke ≤ 1 (loaded)", func(un, lo *phaseResult) string {
		return verdict(lo.PerKeystroke <= 1, fmt.Sprintf("%.2f", lo.PerKeystroke))
	})
	target("typed-through answered < 5 ms p50 (loaded)", func(un, lo *phaseResult) string {
		t := lo.TypedThrough
		if t.Sent == 0 {
			return "**not met**: nothing to type through (no completion was shown)"
		}
		return verdict(t.Sent > 0 && t.Latency.P50 < 5, fmt.Sprintf("%.2f ms (%d of %d reused)", t.Latency.P50, t.Reused, t.Sent))
	})
	w("\n")
	return sb.String()
}

func modeNames(rep *report) []string {
	var out []string
	for _, m := range rep.Modes {
		out = append(out, modeName(m))
	}
	return out
}

func modeName(m *modeResult) string {
	if m.BackendSlots == 0 {
		return "no admission (slots 0)"
	}
	if m.Mode == "no-burst-wait" {
		return fmt.Sprintf("admission (slots %d), no burst wait", m.BackendSlots)
	}
	return fmt.Sprintf("admission (slots %d)", m.BackendSlots)
}

func verdict(ok bool, s string) string {
	if ok {
		return "met: " + s
	}
	return "**not met**: " + s
}

func ttft(d dist) string {
	if d.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f (n %d)", d.P50, d.P99, d.Max, d.N)
}

func codes(c classResult) string {
	keys := make([]string, 0, len(c.Codes))
	for k := range c.Codes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.Codes[keys[i]] > c.Codes[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.Codes[k]))
	}
	return strings.Join(parts, ", ")
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

package cli

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
)

// Chart colours. The screenshot test looks for the bar and histogram
// colours, so each is used by its chart alone.
const (
	colorPass      = "#2563eb" // pass@k bars
	colorExact     = "#93c5fd" // exact-match bars
	colorTrack     = "#eef2f7"
	colorLatency   = "#7c3aed" // latency histograms
	colorSimilar   = "#0d9488" // edit-similarity histogram
	colorReason    = "#e11d48" // failure reasons
	colorAxis      = "#94a3b8"
	colorGrid      = "#e2e8f0"
	colorText      = "#0f172a"
	colorMutedText = "#64748b"
)

// verdictColors colour the verdict stacks.
var verdictColors = map[string]string{
	string(evaluator.VerdictPassed):  "#16a34a",
	string(evaluator.VerdictFailed):  "#dc2626",
	string(evaluator.VerdictTimeout): "#f59e0b",
	string(evaluator.VerdictError):   "#6b7280",
	string(evaluator.VerdictSkipped): "#cbd5e1",
}

// svgDoc builds one inline SVG chart. Text is escaped; numbers are written
// with one decimal.
type svgDoc struct {
	b    strings.Builder
	w, h float64
}

func newSVG(w, h float64, label string) *svgDoc {
	s := &svgDoc{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		w, h, w, h, html.EscapeString(label))
	return s
}

func (s *svgDoc) rect(x, y, w, h float64, fill string, title string) {
	if w <= 0 || h <= 0 {
		return
	}
	if title == "" {
		fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, y, w, h, fill)
		return
	}
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"><title>%s</title></rect>`,
		x, y, w, h, fill, html.EscapeString(title))
}

func (s *svgDoc) line(x1, y1, x2, y2 float64, stroke string, dashed bool) {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"%s/>`, x1, y1, x2, y2, stroke, dash)
}

// text writes a label; anchor is start, middle or end.
func (s *svgDoc) text(x, y float64, anchor, fill string, size float64, bold bool, t string) {
	weight := ""
	if bold {
		weight = ` font-weight="600"`
	}
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" font-size="%.0f"%s>%s</text>`,
		x, y, anchor, fill, size, weight, html.EscapeString(t))
}

// haloText writes a bold label with a white outline, readable over bars.
func (s *svgDoc) haloText(x, y float64, anchor, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" font-size="11" font-weight="600" `+
		`stroke="#ffffff" stroke-width="3" paint-order="stroke">%s</text>`, x, y, anchor, colorText, html.EscapeString(t))
}

func (s *svgDoc) html() template.HTML {
	return template.HTML(s.b.String() + "</svg>") //nolint:gosec // every text and attribute above is escaped
}

// chartWidth is the drawing width of every chart, in CSS pixels.
const chartWidth = 880.0

// levelRank orders levels as evaluator.Levels lists them (fine to coarse,
// then the random kinds); unknown levels last.
func levelRank(l string) int {
	i := slices.Index(evaluator.Levels(), evaluator.Level(l))
	if i < 0 {
		return len(evaluator.Levels())
	}
	return i
}

// levelsOf are the groups of levels that in accepts, levels in their
// natural order (levelRank).
func levelsOf(levels []metrics.Group, in func(metrics.Group) bool) []metrics.Group {
	var ls []metrics.Group
	for _, l := range levels {
		if in(l) {
			ls = append(ls, l)
		}
	}
	slices.SortStableFunc(ls, func(x, y metrics.Group) int { return levelRank(x.Level) - levelRank(y.Level) })
	return ls
}

// benchmarkLevels are each benchmark's (benchmark, level) groups, in
// s.ByBenchmark's order, levels in their natural order.
func benchmarkLevels(s metrics.Summary) [][]metrics.Group {
	var out [][]metrics.Group
	for _, b := range s.ByBenchmark {
		out = append(out, levelsOf(s.ByLevel, func(l metrics.Group) bool { return l.Benchmark == b.Benchmark }))
	}
	return out
}

const (
	rowH      = 26.0
	headH     = 24.0
	labelW    = 200.0
	valueW    = 120.0
	topLegend = 30.0
)

// passChart draws pass@k (and exact match, thinner) per level as bars.
func passChart(s metrics.Summary, k int) template.HTML {
	groups := benchmarkLevels(s)
	h := topLegend + 24
	for _, g := range groups {
		h += headH + float64(len(g))*rowH
	}
	svg := newSVG(chartWidth, h, fmt.Sprintf("pass@%d and exact match by level", k))
	plotW := chartWidth - labelW - valueW
	// Legend.
	svg.rect(labelW, 8, 14, 10, colorPass, "")
	svg.text(labelW+20, 17, "start", colorText, 12, false, fmt.Sprintf("pass@%d", k))
	svg.rect(labelW+90, 10, 14, 6, colorExact, "")
	svg.text(labelW+110, 17, "start", colorText, 12, false, "exact match")
	y := topLegend
	// Grid at 0, 25, 50, 75, 100 %.
	top := y
	bottom := h - 24
	for i := 0; i <= 4; i++ {
		x := labelW + plotW*float64(i)/4
		svg.line(x, top, x, bottom, colorGrid, i > 0)
		svg.text(x, h-8, "middle", colorMutedText, 11, false, fmt.Sprintf("%d%%", i*25))
	}
	for _, levels := range groups {
		svg.text(8, y+16, "start", colorText, 13, true, levels[0].Benchmark)
		y += headH
		for _, l := range levels {
			svg.text(labelW-10, y+17, "end", colorText, 12, false, levelName(l.Level))
			svg.rect(labelW, y+4, plotW, 14, colorTrack, "")
			v, ok := l.PassAtK[k]
			if ok {
				svg.rect(labelW, y+4, plotW*v, 14, colorPass,
					fmt.Sprintf("%s %s: pass@%d %s over %s", l.Benchmark, l.Level, k, pct(v), plural(l.Tasks, "task")))
			}
			svg.rect(labelW, y+19, plotW*l.ExactMatch, 4, colorExact,
				fmt.Sprintf("%s %s: exact match %s", l.Benchmark, l.Level, pct(l.ExactMatch)))
			label := "no tests"
			if ok {
				label = pct(v)
			}
			svg.text(labelW+plotW+10, y+16, "start", colorText, 12, ok, label)
			svg.text(chartWidth-4, y+16, "end", colorMutedText, 11, false, fmt.Sprintf("n=%d", l.Samples))
			y += rowH
		}
	}
	return svg.html()
}

// verdictChart draws each level's verdicts as a 100% stacked bar.
func verdictChart(s metrics.Summary) template.HTML {
	groups := benchmarkLevels(s)
	h := topLegend + 8
	for _, g := range groups {
		h += headH + float64(len(g))*rowH
	}
	svg := newSVG(chartWidth, h, "verdicts by level")
	plotW := chartWidth - labelW - valueW
	x := labelW
	for _, v := range verdictOrder {
		svg.rect(x, 8, 14, 10, verdictColors[v], "")
		svg.text(x+20, 17, "start", colorText, 12, false, v)
		x += 90
	}
	y := topLegend
	for _, levels := range groups {
		svg.text(8, y+16, "start", colorText, 13, true, levels[0].Benchmark)
		y += headH
		for _, l := range levels {
			svg.text(labelW-10, y+17, "end", colorText, 12, false, levelName(l.Level))
			x := labelW
			for _, v := range verdictOrder {
				n := l.Verdicts[v]
				if n == 0 || l.Samples == 0 {
					continue
				}
				w := plotW * float64(n) / float64(l.Samples)
				svg.rect(x, y+4, w, 16, verdictColors[v], fmt.Sprintf("%s %s: %d %s", l.Benchmark, l.Level, n, v))
				x += w
			}
			svg.text(labelW+plotW+10, y+16, "start", colorMutedText, 11, false, verdictsShort(l.Verdicts))
			y += rowH
		}
	}
	return svg.html()
}

// verdictBar is a small stacked bar of a group's verdicts, for the table.
func verdictBar(v map[string]int, samples int) template.HTML {
	const w, h = 96.0, 10.0
	svg := newSVG(w, h, verdictsCell(v))
	svg.rect(0, 0, w, h, colorTrack, "")
	x := 0.0
	for _, name := range verdictOrder {
		if n := v[name]; n > 0 && samples > 0 {
			bw := w * float64(n) / float64(samples)
			svg.rect(x, 0, bw, h, verdictColors[name], fmt.Sprintf("%d %s", n, name))
			x += bw
		}
	}
	return svg.html()
}

func verdictsShort(v map[string]int) string {
	var parts []string
	for _, name := range verdictOrder {
		if n := v[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d%c", n, name[0]))
		}
	}
	return strings.Join(parts, " ")
}

// histogram is counts of values in equal bins over [0, hi), the last bin
// also holding everything above.
type histogram struct {
	counts   []int
	hi       float64
	overflow bool
}

func newHistogram(values []float64, bins int, hi float64, overflow bool) histogram {
	h := histogram{counts: make([]int, bins), hi: hi, overflow: overflow}
	for _, v := range values {
		i := int(v / hi * float64(bins))
		h.counts[max(0, min(bins-1, i))]++
	}
	return h
}

// niceStep returns a 1, 2 or 5 × 10^n step giving at most n ticks up to hi.
func niceStep(hi float64, n int) float64 {
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// drawHistogram draws h at (x0, y0) in a w×ph plot; tick labels use format.
func drawHistogram(svg *svgDoc, h histogram, x0, y0, w, ph float64, fill, what string,
	format func(float64) string, marks map[string]float64) {
	maxCount := slices.Max(h.counts)
	if maxCount == 0 {
		return
	}
	bins := len(h.counts)
	bw := w / float64(bins)
	// Horizontal grid with counts.
	cstep := niceStep(float64(maxCount), 4)
	top := math.Ceil(float64(maxCount)/cstep) * cstep
	for c := 0.0; c <= top+1e-9; c += cstep {
		y := y0 + ph - ph*c/top
		svg.line(x0, y, x0+w, y, colorGrid, c > 0)
		svg.text(x0-6, y+4, "end", colorMutedText, 11, false, fmt.Sprintf("%.0f", c))
	}
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		bh := ph * float64(c) / top
		lo := h.hi * float64(i) / float64(bins)
		hi := h.hi * float64(i+1) / float64(bins)
		rng := fmt.Sprintf("%s–%s", format(lo), format(hi))
		if h.overflow && i == bins-1 {
			rng = "≥ " + format(lo)
		}
		svg.rect(x0+float64(i)*bw+1, y0+ph-bh, bw-2, bh, fill, fmt.Sprintf("%s %s: %d samples", what, rng, c))
	}
	// Value axis.
	step := niceStep(h.hi, 5)
	for v := 0.0; v <= h.hi+1e-9; v += step {
		x := x0 + w*v/h.hi
		svg.line(x, y0+ph, x, y0+ph+4, colorAxis, false)
		svg.text(x, y0+ph+17, "middle", colorMutedText, 11, false, format(v))
	}
	if h.overflow {
		svg.text(x0+w, y0+ph+30, "end", colorMutedText, 10, false, "last bar: "+format(h.hi*float64(bins-1)/float64(bins))+" and above")
	}
	svg.line(x0, y0+ph, x0+w, y0+ph, colorAxis, false)
	names := make([]string, 0, len(marks))
	for name := range marks {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		v := marks[name]
		if v > h.hi {
			continue
		}
		x := x0 + w*v/h.hi
		svg.line(x, y0-4, x, y0+ph, colorText, true)
		label := name + " " + format(v)
		anchor, lx := "start", x+4
		if x+4+7*float64(len(label)) > x0+w { // would run off the plot: label on the left
			anchor, lx = "end", x-4
		}
		svg.haloText(lx, y0+6+float64(i)*13, anchor, label)
	}
}

// latencyChart draws histograms of time to first token and total time.
func latencyChart(results []evaluator.Result) template.HTML {
	var ttft, total []time.Duration
	for i := range results {
		if d := results[i].TTFT; d > 0 {
			ttft = append(ttft, d)
		}
		if d := results[i].Total; d > 0 {
			total = append(total, d)
		}
	}
	if len(total) == 0 && len(ttft) == 0 {
		return ""
	}
	const ph, panelH = 150.0, 230.0
	svg := newSVG(chartWidth, 2*panelH, "latency histograms")
	for i, series := range []struct {
		name string
		d    []time.Duration
	}{{"time to first token", ttft}, {"total generation time", total}} {
		y0 := float64(i) * panelH
		svg.text(8, y0+18, "start", colorText, 13, true, fmt.Sprintf("%s (%d samples)", series.name, len(series.d)))
		if len(series.d) == 0 {
			svg.text(chartWidth/2, y0+100, "middle", colorMutedText, 12, false, "not recorded")
			continue
		}
		lat := latencyOf(series.d)
		hi, overflow := float64(lat.Max), false
		if p99 := float64(quantile(series.d, 0.99)); hi > 3*p99 {
			hi, overflow = p99*1.25, true
		}
		if hi <= 0 {
			hi = float64(time.Millisecond)
		}
		step := niceStep(hi, 5)
		hi = math.Ceil(hi/step) * step
		vals := make([]float64, len(series.d))
		for j, d := range series.d {
			vals[j] = float64(d)
		}
		h := newHistogram(vals, 30, hi, overflow)
		drawHistogram(svg, h, 60, y0+40, chartWidth-80, ph, colorLatency, series.name,
			func(v float64) string { return formatLatency(time.Duration(v)) },
			map[string]float64{"p50": float64(lat.P50), "p95": float64(lat.P95)})
	}
	return svg.html()
}

// similarityChart draws the histogram of edit similarity (0–100).
func similarityChart(results []evaluator.Result) template.HTML {
	if len(results) == 0 {
		return ""
	}
	vals := make([]float64, len(results))
	sum := 0.0
	for i := range results {
		vals[i] = float64(results[i].EditSimilarity)
		sum += vals[i]
	}
	svg := newSVG(chartWidth, 210, "edit similarity histogram")
	// 10 bins of 10 points; 100 goes into the last.
	h := newHistogram(vals, 10, 100, false)
	drawHistogram(svg, h, 60, 20, chartWidth-80, 150, colorSimilar, "edit similarity",
		func(v float64) string { return fmt.Sprintf("%.0f", v) },
		map[string]float64{"mean": sum / float64(len(vals))})
	return svg.html()
}

// reasonsChart draws the commonest failure reasons as bars.
func reasonsChart(reasons []reasonCount) template.HTML {
	if len(reasons) == 0 {
		return ""
	}
	h := float64(len(reasons))*rowH + 10
	svg := newSVG(chartWidth, h, "commonest failure reasons")
	maxC := reasons[0].Count
	barW := 260.0
	for i, r := range reasons {
		y := 4 + float64(i)*rowH
		svg.rect(8, y+4, barW*float64(r.Count)/float64(maxC), 16, colorReason, fmt.Sprintf("%d samples", r.Count))
		svg.text(barW+20, y+17, "start", colorText, 12, true, fmt.Sprint(r.Count))
		reason := r.Reason
		if rs := []rune(reason); len(rs) > 90 {
			reason = string(rs[:87]) + "…"
		}
		svg.text(barW+60, y+17, "start", colorText, 12, false, reason)
	}
	return svg.html()
}

func latencyOf(d []time.Duration) metrics.Latency {
	samples := make([]metrics.Sample, len(d))
	for i, x := range d {
		samples[i] = metrics.Sample{TTFT: x, Total: x, Verdict: metrics.VerdictSkipped}
	}
	return metrics.Summarize(samples).Overall.Total
}

func quantile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}

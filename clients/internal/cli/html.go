package cli

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
)

// htmlPage is the data of the HTML report.
type htmlPage struct {
	Title      string
	Subtitle   string
	Cards      []card
	PassK      int
	PassChart  template.HTML
	Verdicts   template.HTML
	Latency    template.HTML
	Similarity template.HTML
	Reasons    template.HTML
	ReasonRows []reasonRow
	Ks         []int
	// ScoreTables are the scores by benchmark and level, then by
	// language and level (when samples name their language).
	ScoreTables []scoreTable
	VerdictKeys []verdictKey
	// Samples are the per-sample views of samples that did not pass, at
	// most maxSampleViews; Hidden counts those left out.
	Samples []sampleView
	Hidden  int
}

// reasonRow is a reason with links to its first samples.
type reasonRow struct {
	Reason string
	Count  int
	Links  []sampleLink
}

type sampleLink struct{ Anchor, Label string }

// sampleView is one sample that did not pass: what it wrote beside the
// reference, why it failed and the failing test's output.
type sampleView struct {
	Anchor, Task    string
	Sample          int
	Verdict, Color  string
	Reason          string
	Completion      string
	Reference       string
	HasReference    bool
	Test, TestWhen  string
	Report, Output  string
	Exception       string
	StdoutTail      string
	StderrTail      string
	Benchmark, Lvl  string
	ExactMatch      bool
	EditSimilarity  int
	Tests           string
	ExecTime, Limit string
}

type card struct {
	Label, Value, Note string
}

type verdictKey struct{ Name, Color string }

// scoreTable is one table of scores: its section's id and title, the
// first column's name and the rows.
type scoreTable struct {
	ID, Title, Hint, First string
	Rows                   []htmlRow
}

type htmlRow struct {
	Benchmark, Level string
	Indent, Total    bool
	Tasks, Samples   int
	Pass             []string
	Exact, Similar   string
	TTFT, P50, P95   string
	Verdicts         string
	VerdictBar       template.HTML
}

// renderHTML renders the self-contained report: inline CSS and SVG, no
// scripts, nothing fetched when it is viewed.
func renderHTML(title string, results []evaluator.Result, s metrics.Summary, ks []int) ([]byte, error) {
	o := s.Overall
	page := htmlPage{
		Title: title,
		Subtitle: fmt.Sprintf("%s of %s in %s", plural(o.Samples, "sample"), plural(o.Tasks, "task"),
			plural(len(s.ByBenchmark), "benchmark")),
		Ks: ks,
	}
	passK := 0
	if len(ks) > 0 {
		passK = ks[0]
	}
	if v, ok := o.PassAtK[passK]; ok {
		page.Cards = append(page.Cards, card{fmt.Sprintf("pass@%d", passK), pct(v),
			fmt.Sprintf("%d of %d samples passed", o.Verdicts[string(evaluator.VerdictPassed)], o.Samples)})
	} else {
		page.Cards = append(page.Cards, card{"pass rate", "—", "nothing was executed"})
	}
	page.Cards = append(page.Cards,
		card{"exact match", pct(o.ExactMatch), "stripped text equals the reference"},
		card{"edit similarity", fmt.Sprintf("%.1f", o.EditSimilarity), "mean fuzz.ratio, 0–100"})
	if o.TTFT.Count > 0 {
		note := "p95 " + formatLatency(o.TTFT.P95)
		if queued(s) {
			note += "; not counting the wait for a backend slot (p50 " + formatLatency(o.QueueWait.P50) + ")"
		}
		page.Cards = append(page.Cards, card{"first token p50", formatLatency(o.TTFT.P50), note})
	}
	if o.Total.Count > 0 {
		page.Cards = append(page.Cards, card{"completion p50", formatLatency(o.Total.P50),
			"p95 " + formatLatency(o.Total.P95)})
	}
	if passK > 0 {
		page.PassK = passK
		page.PassChart = passChart(s, passK)
	}
	page.Verdicts = verdictChart(s)
	page.Latency = latencyChart(results)
	page.Similarity = similarityChart(results)
	reasons := failureReasons(results, 8)
	page.Reasons = reasonsChart(reasons)
	views := sampleViews(results)
	for _, rc := range reasons {
		row := reasonRow{Reason: rc.Reason, Count: rc.Count}
		for _, i := range rc.Samples {
			if _, ok := views[i]; ok {
				r := &results[i]
				row.Links = append(row.Links, sampleLink{sampleAnchor(i), fmt.Sprintf("%s #%d", r.TaskID, r.Sample)})
			}
		}
		page.ReasonRows = append(page.ReasonRows, row)
	}
	for i := range results {
		if v, ok := views[i]; ok {
			page.Samples = append(page.Samples, v)
		} else if notPassed(&results[i]) {
			page.Hidden++
		}
	}
	for _, v := range verdictOrder {
		page.VerdictKeys = append(page.VerdictKeys, verdictKey{v, verdictColors[v]})
	}
	page.ScoreTables = []scoreTable{{ID: "table", Title: "Scores", First: "benchmark", Rows: htmlRows(tableRows(s), ks),
		Hint: "Verdicts as in the chart above: passed, failed, timeout, no verdict, no tests (hover for counts)."}}
	if rows := languageRows(s); rows != nil {
		page.ScoreTables = append(page.ScoreTables, scoreTable{ID: "languages", Title: "Scores by language", First: "language",
			Rows: htmlRows(rows, ks), Hint: "The same scores per source language across benchmarks, and per level within each language."})
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// htmlRows formats table rows for the report.
func htmlRows(rows []tableRow, ks []int) []htmlRow {
	var out []htmlRow
	for _, r := range rows {
		row := htmlRow{Benchmark: r.Benchmark, Level: r.Level, Indent: r.Indent, Total: r.Benchmark == "all",
			Tasks: r.G.Tasks, Samples: r.G.Samples, Exact: pct(r.G.ExactMatch),
			Similar: fmt.Sprintf("%.1f", r.G.EditSimilarity),
			TTFT:    latencyCell(r.G.TTFT, r.G.TTFT.P50), P50: latencyCell(r.G.Total, r.G.Total.P50),
			P95: latencyCell(r.G.Total, r.G.Total.P95), Verdicts: verdictsCell(r.G.Verdicts),
			VerdictBar: verdictBar(r.G.Verdicts, r.G.Samples)}
		for _, k := range ks {
			row.Pass = append(row.Pass, passCell(r.G, k))
		}
		out = append(out, row)
	}
	return out
}

// maxSampleViews bounds the per-sample views of a report: the first
// samples that did not pass, in results order.
const maxSampleViews = 500

func notPassed(r *evaluator.Result) bool {
	return r.Verdict != evaluator.VerdictPassed && r.Verdict != evaluator.VerdictSkipped
}

func sampleAnchor(i int) string { return fmt.Sprintf("sample-%d", i) }

// sampleViews makes the views of the first maxSampleViews samples that did
// not pass, by index in results.
func sampleViews(results []evaluator.Result) map[int]sampleView {
	views := map[int]sampleView{}
	for i := range results {
		r := &results[i]
		if !notPassed(r) {
			continue
		}
		if len(views) == maxSampleViews {
			break
		}
		v := sampleView{
			Anchor: sampleAnchor(i), Task: r.TaskID, Sample: r.Sample, Benchmark: r.Benchmark, Lvl: string(r.Level),
			Verdict: string(r.Verdict), Color: verdictColors[string(r.Verdict)],
			Reason:     firstNonEmpty(r.Reason, r.Error, string(r.Verdict)),
			Completion: r.Completion, Reference: r.Reference, HasReference: r.Reference != "" || r.ExactMatch,
			ExactMatch: r.ExactMatch, EditSimilarity: r.EditSimilarity, Limit: string(r.Limit),
			StdoutTail: lastLines(r.StdoutTail, 40), StderrTail: lastLines(r.StderrTail, 40),
		}
		if r.ExecDuration > 0 {
			v.ExecTime = formatLatency(r.ExecDuration)
		}
		if tc := r.Tests; tc != nil {
			v.Tests = fmt.Sprintf("%d passed, %d failed, %d errors, %d skipped", tc.Passed, tc.Failed, tc.Errors, tc.Skipped)
		}
		if f := r.Failure; f != nil {
			v.Test, v.TestWhen, v.Report, v.Output = f.Test, f.When, f.Report, f.Output
		}
		if e := r.Exception; e != nil {
			v.Exception = e.Type + ": " + e.Message
			if e.Where != "" {
				v.Exception += " (at " + e.Where + ")"
			}
		}
		views[i] = v
	}
	return views
}

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>infill evaluation — {{.Title}}</title>
<style>
  :root { color-scheme: light; }
  * { box-sizing: border-box; }
  body { margin: 0; background: #f1f5f9; color: #0f172a;
    font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
  main { max-width: 1100px; margin: 0 auto; padding: 28px 20px 48px; }
  header h1 { font-size: 22px; margin: 0 0 2px; }
  header p { margin: 0; color: #64748b; }
  .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; margin: 20px 0; }
  .card { background: #fff; border-radius: 10px; padding: 14px 16px; box-shadow: 0 1px 2px rgba(15,23,42,.08); }
  .card .label { color: #64748b; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
  .card .value { font-size: 28px; font-weight: 650; margin: 2px 0; font-variant-numeric: tabular-nums; }
  .card .note { color: #64748b; font-size: 12px; }
  section { background: #fff; border-radius: 10px; padding: 16px 20px 18px; margin: 16px 0;
    box-shadow: 0 1px 2px rgba(15,23,42,.08); }
  section h2 { font-size: 16px; margin: 0 0 4px; }
  section p.hint { margin: 0 0 10px; color: #64748b; font-size: 13px; }
  svg { display: block; width: 100%; max-width: 1000px; height: auto; font-family: inherit; }
  td.verdicts svg { width: 96px; display: inline-block; vertical-align: middle; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
  th, td { padding: 6px 7px; text-align: right; border-bottom: 1px solid #e2e8f0; white-space: nowrap; }
  th { color: #64748b; font-weight: 600; font-size: 12px; }
  th:nth-child(-n+2), td:nth-child(-n+2) { text-align: left; }
  td.verdicts, th.verdicts { text-align: left; color: #475569; font-size: 12px; }
  tr.bench td { font-weight: 600; }
  tr.level td:nth-child(2) { padding-left: 22px; }
  tr.total td { font-weight: 700; border-top: 2px solid #cbd5e1; }
  .scroll { overflow-x: auto; }
  table.reasons td { white-space: normal; text-align: left; }
  table.reasons td.count { text-align: right; width: 4em; }
  a { color: #1d4ed8; }
  article.sample { border: 1px solid #e2e8f0; border-radius: 8px; padding: 12px 14px; margin: 12px 0; scroll-margin-top: 8px; }
  article.sample:target { border: 3px solid #0891b2; }
  article.sample h3 { font-size: 14px; margin: 0 0 4px; }
  article.sample .verdict { display: inline-block; color: #fff; border-radius: 4px; padding: 0 6px; font-size: 12px; margin-right: 6px; }
  article.sample p.reason { margin: 4px 0 8px; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; color: #9f1239; white-space: pre-wrap; word-break: break-word; }
  article.sample .meta { color: #64748b; font-size: 12px; margin: 0 0 8px; }
  .pair { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
  .pair h4, article.sample h4 { font-size: 12px; color: #64748b; margin: 6px 0 2px; font-weight: 600; }
  pre { margin: 0; padding: 8px 10px; border-radius: 6px; font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace;
    white-space: pre-wrap; word-break: break-word; max-height: 360px; overflow: auto; background: #f8fafc; border: 1px solid #e2e8f0; }
  pre.completion { background: #fff1f2; border-color: #fecdd3; }
  pre.reference { background: #f0fdf4; border-color: #bbf7d0; }
  pre.report { background: #0f172a; color: #e2e8f0; border-color: #0f172a; }
  footer { color: #94a3b8; font-size: 12px; margin-top: 24px; }
</style>
</head>
<body>
<main>
<header>
  <h1>infill evaluation — {{.Title}}</h1>
  <p>{{.Subtitle}}</p>
</header>
<div class="cards">
{{- range .Cards}}
  <div class="card"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="note">{{.Note}}</div></div>
{{- end}}
</div>
{{- if .PassChart}}
<section id="pass-rate">
  <h2>Pass rate by level</h2>
  <p class="hint">Unbiased pass@{{.PassK}} per benchmark and level; the thin bar under it is exact match; n is the number of samples.</p>
  {{.PassChart}}
</section>
{{- end}}
<section id="verdicts">
  <h2>Verdicts by level</h2>
  <p class="hint">Share of samples that passed, failed their tests, timed out, reached no verdict, or had no tests to run.</p>
  {{.Verdicts}}
</section>
<section id="latency">
  <h2>Latency</h2>
  {{- if .Latency}}
  <p class="hint">Per sample, as the server measured generation (dashed: median and 95th percentile).</p>
  {{.Latency}}
  {{- else}}
  <p class="hint">No latency recorded: the completions were supplied, not generated (for example a --reference run).</p>
  {{- end}}
</section>
{{- if .Similarity}}
<section id="similarity">
  <h2>Edit similarity</h2>
  <p class="hint">How close each completion is to the reference (fuzz.ratio on stripped text, 0–100).</p>
  {{.Similarity}}
</section>
{{- end}}
{{- range .ScoreTables}}
<section id="{{.ID}}">
  <h2>{{.Title}}</h2>
  <p class="hint">{{.Hint}}</p>
  <div class="scroll">
  <table>
    <thead><tr><th>{{.First}}</th><th>level</th><th>tasks</th><th>samples</th>
    {{- range $.Ks}}<th>pass@{{.}}</th>{{end}}
    <th>exact</th><th>edit sim</th><th>TTFT p50</th><th>total p50</th><th>total p95</th><th class="verdicts">verdicts</th></tr></thead>
    <tbody>
    {{- range .Rows}}
      <tr class="{{if .Total}}total{{else if .Indent}}level{{else}}bench{{end}}"><td>{{if not .Indent}}{{.Benchmark}}{{end}}</td><td>{{.Level}}</td><td>{{.Tasks}}</td><td>{{.Samples}}</td>
      {{- range .Pass}}<td>{{.}}</td>{{end}}
      <td>{{.Exact}}</td><td>{{.Similar}}</td><td>{{.TTFT}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td class="verdicts" title="{{.Verdicts}}">{{.VerdictBar}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  </div>
</section>
{{- end}}
{{- if .Reasons}}
<section id="reasons">
  <h2>Why samples failed</h2>
  <p class="hint">The commonest reasons among samples that did not pass, by kind (the exception, the limit hit); each links to its first samples below.</p>
  {{.Reasons}}
  <table class="reasons">
    <thead><tr><th>reason</th><th>samples</th><th>for example</th></tr></thead>
    <tbody>
    {{- range .ReasonRows}}
      <tr><td>{{.Reason}}</td><td class="count">{{.Count}}</td><td>{{range $i, $l := .Links}}{{if $i}}, {{end}}<a href="#{{$l.Anchor}}">{{$l.Label}}</a>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
</section>
{{- end}}
{{- if .Samples}}
<section id="samples">
  <h2>Samples that did not pass</h2>
  <p class="hint">Each with its reason, the completion beside the reference middle, and the first failing test with its report and output{{if .Hidden}}; {{.Hidden}} more are in the results file only{{end}}.</p>
  {{- range .Samples}}
  <article class="sample" id="{{.Anchor}}">
    <h3><span class="verdict" style="background: {{.Color}}">{{.Verdict}}</span>{{.Task}} #{{.Sample}}</h3>
    <p class="meta">{{.Benchmark}}{{if .Lvl}} · {{.Lvl}}{{end}} · edit similarity {{.EditSimilarity}}{{if .ExactMatch}} · exact match{{end}}{{if .Tests}} · tests: {{.Tests}}{{end}}{{if .ExecTime}} · ran {{.ExecTime}}{{end}}{{if .Limit}} · limit: {{.Limit}}{{end}}</p>
    <p class="reason">{{.Reason}}</p>
    <div class="pair">
      <div><h4>completion</h4><pre class="completion">{{.Completion}}</pre></div>
      <div><h4>reference middle</h4>{{if .HasReference}}<pre class="reference">{{.Reference}}</pre>{{else}}<pre class="reference">(empty, or not in this results file)</pre>{{end}}</div>
    </div>
    {{- if .Test}}
    <h4>failing test: {{.Test}}{{if .TestWhen}} ({{.TestWhen}}){{end}}</h4>
    {{- if .Report}}<pre class="report">{{.Report}}</pre>{{end}}
    {{- if .Output}}<h4>its output</h4><pre>{{.Output}}</pre>{{end}}
    {{- else if .Exception}}
    <h4>exception</h4><pre class="report">{{.Exception}}</pre>
    {{- end}}
    {{- if and (not .Report) .StdoutTail}}<h4>stdout (end)</h4><pre>{{.StdoutTail}}</pre>{{end}}
    {{- if and (not .Report) .StderrTail}}<h4>stderr (end)</h4><pre>{{.StderrTail}}</pre>{{end}}
  </article>
  {{- end}}
</section>
{{- end}}
<footer>Made by infill eval report. pass@k is the unbiased estimator over n samples per task; scores are computed with evaluator/metrics, as the server computes them.</footer>
</main>
</body>
</html>
`))

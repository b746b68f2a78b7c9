package cli

import (
	"bytes"
	"fmt"
	"html/template"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
)

// htmlPage is the data of the HTML report.
type htmlPage struct {
	Title       string
	Subtitle    string
	Cards       []card
	PassK       int
	PassChart   template.HTML
	Verdicts    template.HTML
	Latency     template.HTML
	Similarity  template.HTML
	Reasons     template.HTML
	Ks          []int
	Rows        []htmlRow
	VerdictKeys []verdictKey
}

type card struct {
	Label, Value, Note string
}

type verdictKey struct{ Name, Color string }

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
		page.Cards = append(page.Cards, card{"first token p50", formatLatency(o.TTFT.P50),
			"p95 " + formatLatency(o.TTFT.P95)})
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
	page.Reasons = reasonsChart(failureReasons(results, 8))
	for _, v := range verdictOrder {
		page.VerdictKeys = append(page.VerdictKeys, verdictKey{v, verdictColors[v]})
	}
	for _, r := range tableRows(s) {
		row := htmlRow{Benchmark: r.Benchmark, Level: r.Level, Indent: r.Indent, Total: r.Benchmark == "all",
			Tasks: r.G.Tasks, Samples: r.G.Samples, Exact: pct(r.G.ExactMatch),
			Similar: fmt.Sprintf("%.1f", r.G.EditSimilarity),
			TTFT:    latencyCell(r.G.TTFT, r.G.TTFT.P50), P50: latencyCell(r.G.Total, r.G.Total.P50),
			P95: latencyCell(r.G.Total, r.G.Total.P95), Verdicts: verdictsCell(r.G.Verdicts),
			VerdictBar: verdictBar(r.G.Verdicts, r.G.Samples)}
		for _, k := range ks {
			row.Pass = append(row.Pass, passCell(r.G, k))
		}
		page.Rows = append(page.Rows, row)
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
<section id="table">
  <h2>Scores</h2>
  <p class="hint">Verdicts as in the chart above: passed, failed, timeout, no verdict, no tests (hover for counts).</p>
  <div class="scroll">
  <table>
    <thead><tr><th>benchmark</th><th>level</th><th>tasks</th><th>samples</th>
    {{- range .Ks}}<th>pass@{{.}}</th>{{end}}
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
{{- if .Reasons}}
<section id="reasons">
  <h2>Why samples failed</h2>
  <p class="hint">The commonest verdict reasons among samples that did not pass.</p>
  {{.Reasons}}
</section>
{{- end}}
<footer>Made by infill eval report. pass@k is the unbiased estimator over n samples per task; scores are computed with evaluator/metrics, as the server computes them.</footer>
</main>
</body>
</html>
`))

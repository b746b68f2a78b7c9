package cli

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

// fixedResults writes the results file of testdata/eval_report.txtar into
// dir and returns its path.
func fixedResults(t *testing.T, dir string) string {
	return resultsOf(t, dir, "testdata/eval_report.txtar")
}

// resultsOf writes the results file of a txtar case into dir.
func resultsOf(t *testing.T, dir, archive string) string {
	t.Helper()
	ar, err := txtar.ParseFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "results.jsonl" {
			p := filepath.Join(dir, "results.jsonl")
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("%s has no results.jsonl", archive)
	return ""
}

func writeReport(t *testing.T, results string) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(results), "report.html")
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"eval", "report", "--html", out, results}, Env{Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	return out
}

// TestHTMLReportSelfContained checks the page needs nothing at view time.
func TestHTMLReportSelfContained(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(writeReport(t, fixedResults(t, t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, bad := range []string{"<script", "src=", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q: it must not load anything", bad)
		}
	}
	// Links only within the page.
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("report links to %s", m[1])
		}
	}
	// The only URL is the SVG namespace, which is never fetched.
	for _, u := range regexp.MustCompile(`https?://[^"' ]+`).FindAllString(html, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("report mentions %s", u)
		}
	}
	for _, want := range []string{`id="pass-rate"`, `id="verdicts"`, `id="latency"`, `id="similarity"`, `id="table"`,
		`id="reasons"`, "62.5%", "pass@5", "p95"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestHTMLReportWithoutLatency: a reference run has no latencies; the page
// says so instead of drawing empty histograms.
func TestHTMLReportWithoutLatency(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "ref.jsonl")
	line := `{"task_id":"t%d","benchmark":"b","level":"single-line","sample":0,"completion":"x","verdict":"passed","exit_code":0,"exact_match":true,"edit_similarity":100,"ttft_ns":0,"total_ns":0,"exec_ns":1000}` + "\n"
	if err := os.WriteFile(p, []byte(fmt.Sprintf(line, 1)+fmt.Sprintf(line, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(writeReport(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "No latency recorded") || strings.Contains(string(page), "latency histograms") {
		t.Error("latency section of a run without latencies")
	}
}

// requireTool finds a program, or skips (fails under CI=true).
func requireTool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found (Debian: apt-get install %s)", strings.Join(names, " or "), names[0])
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// screenshot renders page in headless Chromium at width×height CSS pixels.
func screenshot(t *testing.T, chromium, page string, width, height int) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height),
		"file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("INFILL_KEEP_SCREENSHOT") != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(os.Getenv("INFILL_KEEP_SCREENSHOT"), data, 0o644)
	}
	return img
}

func hexColor(t *testing.T, s string) color.RGBA {
	t.Helper()
	var c color.RGBA
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
		t.Fatal(err)
	}
	c.A = 255
	return c
}

func same(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	return uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(b>>8) == want.B
}

// band is a horizontal bar found in a screenshot: consecutive rows whose
// longest run of the colour has about the same extent.
type band struct{ top, bottom, left, width int }

// bands finds bars of colour c: rows holding a run of at least minWidth
// pixels of it, grouped while consecutive.
func bands(img image.Image, c color.RGBA, minWidth int) []band {
	b := img.Bounds()
	var out []band
	prev := -2
	for y := b.Min.Y; y < b.Max.Y; y++ {
		bestL, bestW, runL, runW := 0, 0, 0, 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if same(img.At(x, y), c) {
				if runW == 0 {
					runL = x
				}
				runW++
				if runW > bestW {
					bestL, bestW = runL, runW
				}
			} else {
				runW = 0
			}
		}
		if bestW < minWidth {
			continue
		}
		if y == prev+1 && len(out) > 0 {
			last := &out[len(out)-1]
			last.bottom = y
			if bestW > last.width {
				last.left, last.width = bestL, bestW
			}
		} else {
			out = append(out, band{top: y, bottom: y, left: bestL, width: bestW})
		}
		prev = y
	}
	return out
}

func countColor(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if same(img.At(x, y), c) {
				n++
			}
		}
	}
	return n
}

// TestHTMLReportInChromium renders the report of the fixed results file in
// headless Chromium and checks, on the screenshot's pixels, that the
// charts are drawn: the pass-rate bars exist with lengths in proportion to
// the scores, and the verdict, latency, similarity and reason charts have
// their colours on screen.
func TestHTMLReportInChromium(t *testing.T) {
	t.Parallel()
	chromium := requireTool(t, "chromium", "chromium-browser")
	page := writeReport(t, fixedResults(t, t.TempDir()))
	img := screenshot(t, chromium, page, 1200, 2600)

	// Pass@1 bars, in chart order: humaneval-single-line, then mylib's
	// expression, statement, function (class has no tests: no bar).
	want := []float64{0.625, 0.70, 0.40, 0.20}
	got := bands(img, hexColor(t, colorPass), 30)
	if len(got) != len(want) {
		t.Fatalf("found %d pass-rate bars %v, want %d", len(got), got, len(want))
	}
	t.Logf("pass-rate bars: %+v", got)
	longest := 0
	for _, b := range got {
		longest = max(longest, b.width)
		if h := b.bottom - b.top + 1; h < 8 || h > 30 {
			t.Errorf("bar %v is %d px high", b, h)
		}
	}
	for i, b := range got {
		ratio := float64(b.width) / float64(longest)
		if math.Abs(ratio-want[i]/0.70) > 0.02 {
			t.Errorf("bar %d is %d px, %.3f of the longest; want %.3f", i, b.width, ratio, want[i]/0.70)
		}
		if i > 0 && (b.left != got[0].left || b.top <= got[i-1].bottom) {
			t.Errorf("bar %d %v does not start where bar 0 %v does, below the one before", i, b, got[0])
		}
	}

	for name, min := range map[string]int{
		"verdict passed":  2000,
		"verdict failed":  2000,
		"verdict timeout": 1000,
		"latency":         5000,
		"similarity":      5000,
		"failure reasons": 1000,
	} {
		c := map[string]string{
			"verdict passed": verdictColors["passed"], "verdict failed": verdictColors["failed"],
			"verdict timeout": verdictColors["timeout"], "latency": colorLatency, "similarity": colorSimilar,
			"failure reasons": colorReason,
		}[name]
		if n := countColor(img, hexColor(t, c)); n < min {
			t.Errorf("%s chart: %d pixels of %s, want at least %d", name, n, c, min)
		}
	}
}

// TestHTMLReportSamples: the reasons table links each kind of reason to
// its samples, and each sample that did not pass has its view: the reason,
// the completion beside the reference middle, the failing test with
// pytest's report.
func TestHTMLReportSamples(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(writeReport(t, resultsOf(t, t.TempDir(), "testdata/eval_report_reasons.txtar")))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	anchors := regexp.MustCompile(`<article class="sample" id="(sample-\d+)"`).FindAllStringSubmatch(html, -1)
	if len(anchors) != 5 {
		t.Fatalf("%d sample views, want the 5 samples that did not pass", len(anchors))
	}
	for _, a := range anchors {
		if !strings.Contains(html, `href="#`+a[1]+`"`) {
			t.Errorf("no link to %s from the reasons", a[1])
		}
	}
	for _, want := range []string{
		"tests/test_ops.py::test_mul: AssertionError: assert 13 == 12 at tests/test_ops.py:15 (exit status 1)",
		`<pre class="completion">result = 1</pre>`, `<pre class="reference">result = 0</pre>`,
		"failing test: tests/test_ops.py::test_mul (call)", "where 13 = mul(4, 3)",
		"collecting tests/test_stats.py: SyntaxError: &#39;[&#39; was never closed at calc/stats.py:20",
		"timed out after 3s (--sample-timeout raises it)", "limit: time",
		"<td>failed: NameError</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestHTMLReportSampleInChromium opens the report at a sample's anchor, as
// the reasons table links to it, in headless Chromium (a window tall
// enough for the whole page: headless screenshots do not scroll): that
// sample, and only it, is outlined (:target), the last one below the
// first, and each shows the completion and reference panes side by side.
func TestHTMLReportSampleInChromium(t *testing.T) {
	t.Parallel()
	chromium := requireTool(t, "chromium", "chromium-browser")
	page := writeReport(t, resultsOf(t, t.TempDir(), "testdata/eval_report_reasons.txtar"))
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<a href="#(sample-\d+)">[^<]*</a>`).FindAllStringSubmatch(string(html), -1)
	if len(m) < 2 {
		t.Fatal("fewer than two links to samples")
	}
	target, completion, reference := hexColor(t, "#0891b2"), hexColor(t, "#fff1f2"), hexColor(t, "#f0fdf4")
	const width, height = 1200, 6000

	if n := countColor(screenshot(t, chromium, page, width, height), target); n > 0 {
		t.Errorf("%d outline pixels with no sample targeted", n)
	}
	var tops []int
	for _, anchor := range []string{m[0][1], m[len(m)-1][1]} {
		img := screenshot(t, chromium, page+"#"+anchor, width, height)
		outline := bands(img, target, 600)
		// One box: its top and bottom borders.
		if len(outline) != 2 {
			t.Fatalf("#%s: outline bands %v, want one box", anchor, outline)
		}
		tops = append(tops, outline[0].top)
		var inside []band
		for _, b := range bands(img, completion, 200) {
			if b.top > outline[0].top && b.bottom < outline[1].top {
				inside = append(inside, b)
			}
		}
		refs := bands(img, reference, 200)
		if len(inside) != 1 || len(refs) == 0 {
			t.Fatalf("#%s: completion panes %v in the box, reference panes %v", anchor, inside, refs)
		}
		side := false
		for _, r := range refs {
			side = side || r.top == inside[0].top && r.left > inside[0].left+inside[0].width
		}
		if !side {
			t.Errorf("#%s: completion %v has no reference pane beside it (%v)", anchor, inside[0], refs)
		}
	}
	if tops[1] <= tops[0] {
		t.Errorf("outline of the last sample at %d, not below the first's at %d", tops[1], tops[0])
	}
}

// TestReportByLanguage checks that results naming their language get
// pass@k per language and per (language, level), in the table and the
// HTML report, and that results without one get neither.
func TestReportByLanguage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := []string{
		`{"task_id":"p1","benchmark":"mixed","level":"expression","language":"python","sample":0,"verdict":"passed"}`,
		`{"task_id":"p2","benchmark":"mixed","level":"block","language":"python","sample":0,"verdict":"failed"}`,
		`{"task_id":"g1","benchmark":"mixed","level":"expression","language":"go","sample":0,"verdict":"passed"}`,
		`{"task_id":"g2","benchmark":"mixed","level":"block","language":"go","sample":0,"verdict":"passed"}`,
	}
	results := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"eval", "report", "--k", "1", results}, Env{Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	_, byLang, ok := strings.Cut(out, "LANGUAGE")
	if !ok {
		t.Fatalf("no LANGUAGE table:\n%s", out)
	}
	for _, re := range []string{`(?m)^go\s+all\s+2\s+2\s+100\.0%`, `(?m)^python\s+all\s+2\s+2\s+50\.0%`,
		`(?m)^\s+block\s+1\s+1\s+0\.0%`, `(?m)^\s+expression\s+1\s+1\s+100\.0%`} {
		if !regexp.MustCompile(re).MatchString(byLang) {
			t.Errorf("language table lacks %s:\n%s", re, byLang)
		}
	}
	page, err := os.ReadFile(writeReport(t, results))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="languages"`) {
		t.Error("HTML report has no scores by language")
	}
	// One benchmark in one language: the language table would repeat the
	// benchmark table.
	one := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(one, []byte(strings.Join(lines[:2], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := Main(t.Context(), []string{"eval", "report", one}, Env{Stdout: &stdout, Stderr: &stderr}); code != 0 || strings.Contains(stdout.String(), "LANGUAGE") {
		t.Errorf("one benchmark, one language: exit %d, a language table:\n%s", code, stdout.String())
	}
	// Results without a language: no language table.
	plain, err := os.ReadFile(writeReport(t, fixedResults(t, t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), `id="languages"`) {
		t.Error("a report of results without languages shows scores by language")
	}
}

// TestReasonsGoBuild checks that Go samples that did not build are one
// reason, whatever the compiler said.
func TestReasonsGoBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := []string{
		`{"task_id":"g1","benchmark":"b","level":"expression","language":"go","sample":0,"verdict":"failed","reason":"build failed: a.go:3:2: undefined: x","failure":{"test":"build","when":"build","report":"a.go:3:2: undefined: x"}}`,
		`{"task_id":"g2","benchmark":"b","level":"expression","language":"go","sample":0,"verdict":"failed","reason":"build failed: b.go:9:1: syntax error","failure":{"test":"build","when":"build","report":"b.go:9:1: syntax error"}}`,
		`{"task_id":"g3","benchmark":"b","level":"expression","language":"go","sample":0,"verdict":"failed","reason":"TestA: a_test.go:5: got 1","failure":{"test":"TestA","when":"call"}}`,
	}
	results := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"eval", "report", results}, Env{Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, re := range []string{`(?m)^\s+2\s+failed: build failed\s`, `(?m)^\s+1\s+failed: TestA: a_test.go:5: got 1`} {
		if !regexp.MustCompile(re).MatchString(stdout.String()) {
			t.Errorf("reasons lack %s:\n%s", re, stdout.String())
		}
	}
}

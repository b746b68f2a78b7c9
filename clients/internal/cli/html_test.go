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
	t.Helper()
	ar, err := txtar.ParseFile("testdata/eval_report.txtar")
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
	t.Fatal("testdata/eval_report.txtar has no results.jsonl")
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
	page, err := os.ReadFile(writeReport(t, fixedResults(t, t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q: it must not load anything", bad)
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

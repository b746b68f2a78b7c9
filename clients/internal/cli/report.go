package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/metrics"
)

// reportKs are the k of pass@k a report shows when --k is not given; each
// appears only where every task has enough samples.
var reportKs = []int{1, 5, 10, 100}

type reportFlags struct {
	html  string
	ks    string
	title string
}

func newEvalReportCmd(env *Env) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report RESULTS.jsonl...",
		Short: "Score results files: a table, and an HTML page with charts",
		Long: `report reads results files written by 'infill eval run' (or the server's
RunBenchmark journals, or eval grade) and prints pass@k, exact match, edit
similarity, latency and verdicts by benchmark and by level. The numbers are
computed as the server computes them (evaluator/metrics).

--html FILE also writes a self-contained page (no scripts, no network):
headline numbers, pass rate by level, verdicts by level, latency and edit
similarity histograms, the table, and the commonest failure reasons.

pass@k appears for k = 1, 5, 10, 100 where every task has at least k
samples; --k chooses other values.`,
		Example: `  infill eval report single.jsonl
  infill eval report --html report.html single.jsonl multi.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("report needs at least one results file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(env, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.html, "html", "", "also write an HTML report to `FILE`")
	fl.StringVar(&f.ks, "k", "", "comma-separated k of pass@k (default: 1,5,10,100 where every task has enough samples)")
	fl.StringVar(&f.title, "title", "", "title of the HTML report (default: the results files' names)")
	return cmd
}

func runReport(env *Env, f *reportFlags, paths []string) error {
	ks, err := reportKsOf(f.ks)
	if err != nil {
		return err
	}
	if f.html != "" {
		if err := checkHTMLTarget(f.html, paths); err != nil {
			return usageError{err}
		}
	}
	var all []evaluator.Result
	seen := map[string]bool{}
	twice := 0
	for _, p := range paths {
		rs, err := readResultsNoting(env, p)
		if err != nil {
			return err
		}
		for i := range rs {
			key := fmt.Sprintf("%s\x00%s\x00%d", rs[i].Benchmark, rs[i].TaskID, rs[i].Sample)
			if seen[key] {
				twice++
			}
			seen[key] = true
		}
		all = append(all, rs...)
	}
	if twice > 0 {
		fmt.Fprintf(env.Stderr, "note: %s of the same benchmark, task and sample number appear more than once "+
			"(runs of different models or settings?); they are all scored, as extra samples of their tasks\n", plural(twice, "result"))
	}
	if len(all) == 0 {
		return fmt.Errorf("%s: no results", strings.Join(paths, ", "))
	}
	sum := summarize(all, ks)
	shown := ks
	if f.ks == "" {
		shown = presentKs(sum)
	}
	fmt.Fprintf(env.Stdout, "%s of %s from %s\n\n", plural(sum.Overall.Samples, "sample"),
		plural(sum.Overall.Tasks, "task"), strings.Join(paths, ", "))
	writeTable(env.Stdout, sum, shown)
	writeReasons(env.Stdout, all, 5)
	if f.html != "" {
		title := f.title
		if title == "" {
			var names []string
			for _, p := range paths {
				names = append(names, filepath.Base(p))
			}
			title = strings.Join(names, ", ")
		}
		page, err := renderHTML(title, all, sum, shown)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(f.html, page); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "wrote %s\n", f.html)
	}
	return nil
}

// checkHTMLTarget refuses an --html path that would overwrite data: one
// of the results files read, or any existing file that is not an HTML
// page (a shell glob such as --html *.jsonl names a results file).
func checkHTMLTarget(target string, inputs []string) error {
	fi, err := os.Stat(target)
	if err != nil {
		return nil // nothing there yet (a bad directory fails when written)
	}
	for _, p := range inputs {
		if pi, err := os.Stat(p); err == nil && os.SameFile(fi, pi) {
			return fmt.Errorf("--html %s is one of the results files read", target)
		}
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--html %s is not a regular file", target)
	}
	head := make([]byte, 512)
	if fh, err := os.Open(target); err == nil {
		n, _ := io.ReadFull(fh, head)
		fh.Close()
		head = head[:n]
	}
	if fi.Size() > 0 && !isHTML(head) {
		return fmt.Errorf("--html %s exists and is not an HTML page; not overwriting it", target)
	}
	return nil
}

// isHTML reports whether a file's first bytes open an HTML document.
func isHTML(head []byte) bool {
	s := strings.ToLower(strings.TrimLeft(string(head), " \t\r\n\ufeff"))
	return strings.HasPrefix(s, "<!doctype html") || strings.HasPrefix(s, "<html")
}

// readResults reads a results file without changing it, by the rules a
// resumed run reads it with (evaluator.ReadJournal): a last line cut short
// is left out and reported; any other line that is not a result is an
// error naming it.
func readResults(path string) (results []evaluator.Result, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	results, st, err := evaluator.ReadJournal(f)
	var le *evaluator.JournalLineError
	if errors.As(err, &le) {
		return nil, false, fmt.Errorf("%s:%d: not a result: %w", path, le.Line, le.Err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return results, st.Torn, nil
}

// readResultsNoting is readResults saying on stderr when the file's last
// line was left out.
func readResultsNoting(env *Env, path string) ([]evaluator.Result, error) {
	rs, torn, err := readResults(path)
	if torn {
		fmt.Fprintf(env.Stderr, "%s: its last line is incomplete (an interrupted write) and is left out\n", path)
	}
	return rs, err
}

// reportKsOf parses a report's --k: "" is reportKs.
func reportKsOf(flag string) ([]int, error) {
	if flag == "" {
		return reportKs, nil
	}
	ks, err := parseKs(flag)
	if err != nil {
		return nil, usageError{err}
	}
	return ks, nil
}

// summarize scores results with evaluator/metrics, as the server does.
func summarize(results []evaluator.Result, ks []int) metrics.Summary {
	samples := make([]metrics.Sample, len(results))
	for i := range results {
		samples[i] = results[i].MetricsSample()
	}
	return metrics.Summarize(samples, ks...)
}

// presentKs lists the k that some group reports.
func presentKs(s metrics.Summary) []int {
	var ks []int
	for _, g := range append([]metrics.Group{s.Overall}, append(s.ByBenchmark, s.ByLevel...)...) {
		for k := range g.PassAtK {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

// tableRow is one line of the scores table: a benchmark (level "all", or
// its only level), one of its levels, or everything.
type tableRow struct {
	Benchmark, Level string
	Indent           bool
	G                metrics.Group
}

// tableRows orders the groups: each benchmark, then its levels when it has
// more than one, then the overall line when there are several benchmarks.
func tableRows(s metrics.Summary) []tableRow {
	var rows []tableRow
	for i, levels := range benchmarkLevels(s) {
		b := s.ByBenchmark[i]
		if len(levels) == 1 {
			rows = append(rows, tableRow{Benchmark: b.Benchmark, Level: levelName(levels[0].Level), G: b})
			continue
		}
		rows = append(rows, tableRow{Benchmark: b.Benchmark, Level: "all", G: b})
		for _, l := range levels {
			rows = append(rows, tableRow{Benchmark: b.Benchmark, Level: levelName(l.Level), Indent: true, G: l})
		}
	}
	if len(s.ByBenchmark) > 1 {
		rows = append(rows, tableRow{Benchmark: "all", Level: "all", G: s.Overall})
	}
	return rows
}

// languageRows are the per-language rows: each language with its levels
// (pass@k per level and language), when some sample names its language
// and the table says more than the benchmark table (several benchmarks or
// several languages); nil otherwise. Samples without a language are under
// "-".
func languageRows(s metrics.Summary) []tableRow {
	named := false
	for _, g := range s.ByLanguage {
		named = named || g.Language != ""
	}
	if !named || len(s.ByBenchmark) < 2 && len(s.ByLanguage) < 2 {
		return nil
	}
	var rows []tableRow
	for _, lang := range s.ByLanguage {
		name := levelName(lang.Language)
		rows = append(rows, tableRow{Benchmark: name, Level: "all", G: lang})
		for _, l := range levelsOf(s.ByLanguageLevel, func(l metrics.Group) bool { return l.Language == lang.Language }) {
			rows = append(rows, tableRow{Benchmark: name, Level: levelName(l.Level), Indent: true, G: l})
		}
	}
	return rows
}

func levelName(l string) string {
	if l == "" {
		return "-"
	}
	return l
}

// queued says whether some generation of the run waited for a backend
// slot: then the table shows that wait beside TTFT, which excludes it.
func queued(s metrics.Summary) bool { return s.Overall.QueueWait.Max > 0 }

// writeTable prints the scores table, then the same scores by language
// when the samples name theirs.
func writeTable(w io.Writer, s metrics.Summary, ks []int) {
	writeRows(w, s, ks, "BENCHMARK", tableRows(s))
	if rows := languageRows(s); rows != nil {
		fmt.Fprintln(w)
		writeRows(w, s, ks, "LANGUAGE", rows)
	}
}

// writeRows prints rows under a header whose first column is first.
func writeRows(w io.Writer, s metrics.Summary, ks []int, first string, rows []tableRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{first, "LEVEL", "TASKS", "SAMPLES"}
	for _, k := range ks {
		head = append(head, fmt.Sprintf("PASS@%d", k))
	}
	head = append(head, "EXACT", "EDIT SIM", "TTFT P50")
	if queued(s) {
		head = append(head, "QUEUE P50")
	}
	head = append(head, "TOTAL P50", "TOTAL P95", "VERDICTS")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		bench := r.Benchmark
		level := r.Level
		if r.Indent {
			bench = ""
			level = "  " + level
		}
		cells := []string{bench, level, fmt.Sprint(r.G.Tasks), fmt.Sprint(r.G.Samples)}
		for _, k := range ks {
			cells = append(cells, passCell(r.G, k))
		}
		cells = append(cells, pct(r.G.ExactMatch), fmt.Sprintf("%.1f", r.G.EditSimilarity),
			latencyCell(r.G.TTFT, r.G.TTFT.P50))
		if queued(s) {
			cells = append(cells, latencyCell(r.G.QueueWait, r.G.QueueWait.P50))
		}
		cells = append(cells, latencyCell(r.G.Total, r.G.Total.P50),
			latencyCell(r.G.Total, r.G.Total.P95), verdictsCell(r.G.Verdicts))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

func passCell(g metrics.Group, k int) string {
	v, ok := g.PassAtK[k]
	if !ok {
		return "-"
	}
	return pct(v)
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

func latencyCell(l metrics.Latency, d time.Duration) string {
	if l.Count == 0 {
		return "-"
	}
	return formatLatency(d)
}

func formatLatency(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// verdictOrder is how verdicts are listed and coloured.
var verdictOrder = []string{
	string(evaluator.VerdictPassed), string(evaluator.VerdictFailed), string(evaluator.VerdictTimeout),
	string(evaluator.VerdictError), string(evaluator.VerdictSkipped),
}

func verdictsCell(v map[string]int) string {
	var parts []string
	for _, name := range verdictOrder {
		if n := v[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
	}
	var other []string
	for name := range v {
		if !slices.Contains(verdictOrder, name) {
			other = append(other, name)
		}
	}
	slices.Sort(other)
	for _, name := range other {
		parts = append(parts, fmt.Sprintf("%d %s", v[name], name))
	}
	return strings.Join(parts, ", ")
}

// reasonCount is how many samples did not pass for one kind of reason,
// and the first of them: its index in the results, and its task, sample
// and whole reason.
type reasonCount struct {
	Reason  string
	Count   int
	First   int
	Example string
	// Samples are the indexes of its first few samples in the results.
	Samples []int
}

// reasonExamples is how many samples a reason links to.
const reasonExamples = 3

// errorName finds the exception a reason names ("AssertionError").
var errorName = regexp.MustCompile(`\b(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Warning|Failed)\b`)

// reasonKind is what samples are grouped by: the verdict and the exception
// a reason names, or the limit or status it is about ("timed out after
// 3s"), without the detail (test, place, message) that differs between
// samples.
func reasonKind(r *evaluator.Result) string {
	why := firstNonEmpty(r.Reason, r.Error, string(r.Verdict))
	// The exception, from what the run reported rather than from the
	// reason's text (a test's name may look like one).
	exc := ""
	switch {
	case r.Exception != nil:
		exc = r.Exception.Type
	case r.Failure != nil && r.Failure.When == "build":
		// Go: the completion did not compile (or go vet's checks failed).
		exc = "build failed"
	case r.Failure != nil && r.Failure.Crash != nil:
		exc = errorName.FindString(r.Failure.Crash.Message)
		if exc == "" && strings.HasPrefix(r.Failure.Crash.Message, "assert") {
			exc = "AssertionError"
		}
	}
	switch {
	case r.Limit != "":
		why, _, _ = strings.Cut(why, " (")
	case r.Verdict == evaluator.VerdictError:
	case exc != "":
		why = exc
	case errorName.MatchString(why):
		why = errorName.FindString(why)
	}
	return string(r.Verdict) + ": " + why
}

// failureReasons counts the reasons of samples that did not pass, by kind
// (reasonKind), most frequent first (ties by reason), at most n.
func failureReasons(results []evaluator.Result, n int) []reasonCount {
	counts := map[string]*reasonCount{}
	for i := range results {
		r := &results[i]
		if r.Verdict == evaluator.VerdictPassed || r.Verdict == evaluator.VerdictSkipped {
			continue
		}
		kind := reasonKind(r)
		if c := counts[kind]; c != nil {
			c.Count++
			if len(c.Samples) < reasonExamples {
				c.Samples = append(c.Samples, i)
			}
			continue
		}
		example := fmt.Sprintf("%s #%d", r.TaskID, r.Sample)
		if full := firstNonEmpty(r.Reason, r.Error, string(r.Verdict)); string(r.Verdict)+": "+full != kind {
			example += ": " + full
		}
		counts[kind] = &reasonCount{Reason: kind, Count: 1, First: i, Samples: []int{i}, Example: example}
	}
	var out []reasonCount
	for _, c := range counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b reasonCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// writeReasons prints the n commonest reasons why samples did not pass,
// each with a task that failed for it.
func writeReasons(w io.Writer, results []evaluator.Result, n int) {
	reasons := failureReasons(results, n)
	if len(reasons) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncommonest reasons for not passing:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range reasons {
		fmt.Fprintf(tw, "  %d\t%s\t(e.g. %s)\n", r.Count, r.Reason, r.Example)
	}
	_ = tw.Flush()
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

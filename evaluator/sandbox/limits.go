package sandbox

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/infill-dev/infill/evaluator/outcome"
)

// limitPatterns recognise a limit from what the run reported, most
// specific first: Python's messages, and those of the C library, Go and
// Node for runners of other languages.
var limitPatterns = []struct {
	limit outcome.Limit
	re    *regexp.Regexp
}{
	{outcome.LimitFileSize, regexp.MustCompile(`\[Errno 27\] File too large|File size limit exceeded`)},
	{outcome.LimitOpenFiles, regexp.MustCompile(`\[Errno 24\] Too many open files`)},
	{outcome.LimitThreads, regexp.MustCompile(`can't start new thread|pthread_create failed|failed to create new OS thread`)},
	{outcome.LimitProcesses, regexp.MustCompile(`BlockingIOError: \[Errno 11\] Resource temporarily unavailable|fork: retry: Resource temporarily unavailable`)},
	{outcome.LimitMemory, regexp.MustCompile(`(^|[^\w.])MemoryError\b|\[Errno 12\] Cannot allocate memory|std::bad_alloc|runtime: out of memory|JavaScript heap out of memory`)},
}

// detectLimit says which limit a run that did not pass hit, if any: from
// its status, then from the first failure or exception it reported, then
// from its output.
func detectLimit(res *Result) outcome.Limit {
	switch res.Status {
	case StatusTimeout:
		if res.Signal != 0 {
			return outcome.LimitCPU
		}
		return outcome.LimitTime
	case StatusOutputLimit:
		return outcome.LimitOutput
	case StatusSignaled:
		if syscall.Signal(res.Signal) == syscall.SIGXFSZ {
			return outcome.LimitFileSize
		}
	}
	var texts []string
	if e := res.Exception; e != nil {
		texts = append(texts, e.Type+": "+e.Message)
	}
	if f := res.Failure; f != nil {
		if f.Crash != nil {
			texts = append(texts, f.Crash.Message)
		}
		texts = append(texts, f.Report)
	}
	texts = append(texts, res.Stderr+"\n"+res.Stdout)
	for _, t := range texts {
		for _, p := range limitPatterns {
			if p.re.MatchString(t) {
				return p.limit
			}
		}
	}
	return ""
}

// describeLimit is the configured value of limit l in a run with wall-clock
// limit timeout and CPU limit cpu: "4 GiB per process".
func (c *Config) describeLimit(l outcome.Limit, timeout time.Duration, cpuSeconds int64) string {
	switch l {
	case outcome.LimitTime:
		return FormatDuration(timeout)
	case outcome.LimitCPU:
		return fmt.Sprintf("%d s of CPU time per process", cpuSeconds)
	case outcome.LimitMemory:
		return FormatBytes(c.MemoryBytes) + " per process"
	case outcome.LimitThreads:
		return fmt.Sprintf("%d processes and threads, %s of memory per process", c.Processes, FormatBytes(c.MemoryBytes))
	case outcome.LimitProcesses:
		return fmt.Sprintf("%d processes and threads", c.Processes)
	case outcome.LimitFileSize:
		return FormatBytes(c.FileSizeBytes) + " per file"
	case outcome.LimitOpenFiles:
		return fmt.Sprintf("%d open files", c.OpenFiles)
	case outcome.LimitOutput:
		return FormatBytes(c.OutputLimitBytes) + " of output"
	}
	return ""
}

// FormatBytes writes n in the largest binary unit that keeps it whole
// where it can ("4 GiB", "1.5 GiB", "512 MiB", "100 B").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u]
}

// FormatDuration writes d briefly: "3s", "1m30s", "250ms".
func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second && d%time.Second == 0:
		return d.String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// ParseBytes parses a size with an optional binary unit: "512MiB", "4GiB",
// "2G" (K, M, G, T are powers of 1024, with or without "iB" or "B"), or a
// plain number of bytes. Written here: the units the limits take are
// few, and the libraries that parse sizes read "G" as 10^9.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift, ok := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a size such as 512MiB, 4GiB or 1048576", s)
	}
	n := v * float64(uint64(1)<<shift)
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(n), nil
}

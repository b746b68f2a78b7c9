// Command testtime says where the test suite's time goes: it runs
// `go test -count=1 -json` of the packages given (or reads such output from
// -json FILE) and prints Markdown tables of the packages and the top-level
// tests, slowest first, with the machine's load average sampled while the
// tests ran (from /proc/loadavg, every 10 s) — docs/development.md's table
// of the slowest tests is made with it.
//
//	CI=true go run ./bench/testtime ./server/... ./clients/... ./contextpack/... ./inference/... ./scripts/... ./proto/... ./internal/...
//	go run ./bench/testtime -json recorded.json -top 30
//
// A test's time is what `go test` reports for it: a parallel test's own
// running time, not the time it waited for its turn; a package's is its
// test binary's whole run. Packages run side by side (go test -p, the
// number of CPUs by default), so the packages' times add up to more than
// the wall time.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	in := flag.String("json", "", "read recorded `go test -json` output from this file instead of running the tests")
	top := flag.Int("top", 25, "top-level tests listed")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testtime [-top N] [-json FILE | [go test flags] packages...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var s *suite
	var err error
	if *in != "" {
		var f *os.File
		if f, err = os.Open(*in); err == nil {
			s, err = read(f)
			f.Close()
		}
	} else {
		s, err = runTests(flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		os.Exit(1)
	}
	s.write(os.Stdout, *top)
	if s.failed {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// result is a package's or a test's outcome.
type result struct {
	pkg, test string
	action    string // pass, fail, skip
	elapsed   float64
}

// suite is what one run of the tests said.
type suite struct {
	packages []result
	tests    []result // top-level tests only
	start    time.Time
	end      time.Time
	load     []float64 // 1-minute load averages sampled during the run
	failed   bool
}

// read collects the packages' and top-level tests' results from
// `go test -json` output.
func read(r io.Reader) (*suite, error) {
	s := &suite{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go test's own output outside test2json (a build error)
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("not go test -json output: %v: %.80q", err, line)
		}
		if !e.Time.IsZero() {
			if s.start.IsZero() || e.Time.Before(s.start) {
				s.start = e.Time
			}
			if e.Time.After(s.end) {
				s.end = e.Time
			}
		}
		if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
			continue
		}
		if e.Action == "fail" {
			s.failed = true
		}
		res := result{pkg: e.Package, test: e.Test, action: e.Action, elapsed: e.Elapsed}
		switch {
		case e.Test == "":
			s.packages = append(s.packages, res)
		case !strings.Contains(e.Test, "/"):
			s.tests = append(s.tests, res)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.packages) == 0 {
		return nil, fmt.Errorf("no package results in the input")
	}
	return s, nil
}

// runTests runs go test -count=1 -json with args, sampling the load
// average meanwhile; the output goes through read.
func runTests(args []string) (*suite, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no packages given")
	}
	cmd := exec.Command("go", append([]string{"test", "-count=1", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var load []float64
	sample := func() {
		if l, ok := loadAverage(); ok {
			mu.Lock()
			load = append(load, l)
			mu.Unlock()
		}
	}
	sample()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sample()
			case <-done:
				return
			}
		}
	}()
	s, rerr := read(out)
	werr := cmd.Wait()
	close(done)
	sample()
	if rerr != nil {
		return nil, rerr
	}
	if werr != nil {
		s.failed = true
	}
	mu.Lock()
	s.load = load
	mu.Unlock()
	return s, nil
}

// loadAverage is the 1-minute load average.
func loadAverage() (float64, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var l float64
	if _, err := fmt.Sscan(string(data), &l); err != nil {
		return 0, false
	}
	return l, true
}

// short drops the module's path from a package's.
func short(pkg string) string {
	const module = "github.com/infill-dev/infill/"
	return strings.TrimPrefix(pkg, module)
}

func (s *suite) write(w io.Writer, top int) {
	wall := s.end.Sub(s.start).Seconds()
	var sum float64
	for _, p := range s.packages {
		sum += p.elapsed
	}
	fmt.Fprintf(w, "%d packages, %d top-level tests; wall %.0f s, packages' times together %.0f s", len(s.packages), len(s.tests), wall, sum)
	if len(s.load) > 0 {
		lo, hi, mean := s.load[0], s.load[0], 0.0
		for _, l := range s.load {
			lo, hi, mean = min(lo, l), max(hi, l), mean+l
		}
		fmt.Fprintf(w, "; load average (1 min, sampled every 10 s) %.1f–%.1f, mean %.1f", lo, hi, mean/float64(len(s.load)))
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w)

	pkgs := slices.Clone(s.packages)
	slices.SortStableFunc(pkgs, func(a, b result) int { return cmp.Compare(b.elapsed, a.elapsed) })
	fmt.Fprintln(w, "| package | time | result |")
	fmt.Fprintln(w, "| --- | ---: | --- |")
	for _, p := range pkgs {
		if p.elapsed < 1 && p.action != "fail" {
			continue
		}
		fmt.Fprintf(w, "| `%s` | %.1f s | %s |\n", short(p.pkg), p.elapsed, p.action)
	}
	fmt.Fprintln(w)

	tests := slices.Clone(s.tests)
	slices.SortStableFunc(tests, func(a, b result) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if len(tests) > top {
		tests = tests[:top]
	}
	fmt.Fprintln(w, "| test | package | time | result |")
	fmt.Fprintln(w, "| --- | --- | ---: | --- |")
	for _, t := range tests {
		fmt.Fprintf(w, "| `%s` | `%s` | %.1f s | %s |\n", t.test, short(t.pkg), t.elapsed, t.action)
	}
}

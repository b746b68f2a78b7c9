package main

import (
	"strings"
	"testing"
)

// TestTables: from go test -json output, the packages and top-level tests
// slowest first (subtests folded into their test, sub-second packages left
// out unless they failed), the wall time from the first event to the last.
func TestTables(t *testing.T) {
	in := `{"Time":"2026-12-08T00:00:00Z","Action":"start","Package":"github.com/infill-dev/infill/server"}
{"Time":"2026-12-08T00:00:01Z","Action":"run","Package":"github.com/infill-dev/infill/server","Test":"TestSlow"}
{"Time":"2026-12-08T00:00:02Z","Action":"pass","Package":"github.com/infill-dev/infill/server","Test":"TestSlow/sub","Elapsed":40}
{"Time":"2026-12-08T00:00:42Z","Action":"pass","Package":"github.com/infill-dev/infill/server","Test":"TestSlow","Elapsed":41.5}
{"Time":"2026-12-08T00:00:43Z","Action":"skip","Package":"github.com/infill-dev/infill/server","Test":"TestSkipped","Elapsed":0}
{"Time":"2026-12-08T00:00:44Z","Action":"pass","Package":"github.com/infill-dev/infill/server","Test":"TestQuick","Elapsed":2.25}
{"Time":"2026-12-08T00:00:50Z","Action":"pass","Package":"github.com/infill-dev/infill/server","Elapsed":50}
go: downloading something
{"Time":"2026-12-08T00:00:30Z","Action":"fail","Package":"github.com/infill-dev/infill/inference","Test":"TestBroken","Elapsed":0.5}
{"Time":"2026-12-08T00:01:40Z","Action":"fail","Package":"github.com/infill-dev/infill/inference","Elapsed":0.6}
{"Time":"2026-12-08T00:01:40Z","Action":"pass","Package":"github.com/infill-dev/infill/internal/logctx","Elapsed":0.01}
`
	s, err := read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !s.failed {
		t.Error("a failed test, not reported as failed")
	}
	var b strings.Builder
	s.write(&b, 2)
	want := "3 packages, 4 top-level tests; wall 100 s, packages' times together 51 s.\n" +
		"\n" +
		"| package | time | result |\n" +
		"| --- | ---: | --- |\n" +
		"| `server` | 50.0 s | pass |\n" +
		"| `inference` | 0.6 s | fail |\n" +
		"\n" +
		"| test | package | time | result |\n" +
		"| --- | --- | ---: | --- |\n" +
		"| `TestSlow` | `server` | 41.5 s | pass |\n" +
		"| `TestQuick` | `server` | 2.2 s | pass |\n"
	if b.String() != want {
		t.Errorf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
	s.load = []float64{1, 3, 2}
	b.Reset()
	s.write(&b, 1)
	if !strings.Contains(b.String(), "load average (1 min, sampled every 10 s) 1.0–3.0, mean 2.0.") {
		t.Errorf("no load line:\n%s", b.String())
	}
	if _, err := read(strings.NewReader("not json\n")); err == nil {
		t.Error("input without a package's result read without an error")
	}
}

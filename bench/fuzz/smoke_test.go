package fuzz_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/bench/internal/benchtest"
)

// TestSmoke runs run.sh for 4 s on one small target (the gRPC codec's)
// and checks the report: the target's row, fuzzed without a failure, and
// the header naming the command and the commit.
func TestSmoke(t *testing.T) {
	report := filepath.Join(t.TempDir(), "REPORT.md")
	log := benchtest.Run(t, benchtest.Env(t), 5*time.Minute, "bench/fuzz/run.sh", "-t", "4s", "-o", report, "^FuzzCodecDecodesAsProto$")
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, log)
	}
	// execs: the last count go test -fuzz printed; on a loaded machine 4 s
	// may end before its first progress line, which run.sh reports as "?".
	row := regexp.MustCompile("(?m)^\\| `FuzzCodecDecodesAsProto` \\| `proto/infill/v1` \\| [0-9]+ s \\| ([0-9]+|\\?) \\| ok \\| none \\|$")
	if !row.Match(data) || !strings.Contains(string(data), "`bench/fuzz/run.sh -t 4s` at commit `") {
		t.Errorf("the report lacks the target's row or its command:\n%s", data)
	}
}

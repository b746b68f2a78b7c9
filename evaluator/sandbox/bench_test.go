package sandbox

import (
	"context"
	"testing"
)

// BenchmarkRunTrivial: `assert 1 + 1 == 2` through the whole sandbox path,
// on a warm sandbox (a prepared fresh namespace per run) and cold (bwrap,
// prlimit and python3 started per run).
func BenchmarkRunTrivial(b *testing.B) {
	for _, tc := range []struct {
		name string
		warm int
		mode Mode
	}{{"warm", 0, ModeProgram}, {"warm-humaneval", 0, ModeHumanEval}, {"cold", -1, ModeProgram}} {
		b.Run(tc.name, func(b *testing.B) {
			sb := newTestSandbox(b, Config{WarmWorkers: tc.warm})
			spec := program("assert 1 + 1 == 2\n")
			spec.Mode = tc.mode
			for b.Loop() {
				res, err := sb.Run(context.Background(), spec)
				if err != nil || !res.Passed(tc.mode) || res.Warm != (tc.warm == 0) {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

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
		mode string
	}{{"warm", 0, "program"}, {"warm-humaneval", 0, "humaneval"}, {"cold", -1, "program"}} {
		b.Run(tc.name, func(b *testing.B) {
			sb := newTestSandbox(b, Config{WarmWorkers: tc.warm})
			spec := program("assert 1 + 1 == 2\n")
			spec.Python[0] = tc.mode
			for b.Loop() {
				res, err := sb.Run(context.Background(), spec)
				if err != nil || !res.Passed() || res.Warm != (tc.warm == 0) {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

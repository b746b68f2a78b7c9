package sandbox

import (
	"context"
	"testing"
)

func BenchmarkRunTrivial(b *testing.B) {
	sb := newTestSandbox(b, Config{})
	spec := program("assert 1 + 1 == 2\n")
	for b.Loop() {
		res, err := sb.Run(context.Background(), spec)
		if err != nil || !res.Passed(ModeProgram) {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

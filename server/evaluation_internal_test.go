package server

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// TestCompletionLatencies: a generated sample's time to first token and
// total do not count its wait for a backend slot (behind the run's own
// samples), which is reported beside them.
func TestCompletionLatencies(t *testing.T) {
	tm := &infillv1.Timings{QueueWait: durationpb.New(90 * time.Second),
		TimeToFirstToken: durationpb.New(90*time.Second + 300*time.Millisecond), Total: durationpb.New(2 * time.Minute)}
	c := completionOf("x", tm)
	if c.QueueWait != 90*time.Second || c.TTFT != 300*time.Millisecond || c.Total != 30*time.Second {
		t.Errorf("got queue %v, TTFT %v, total %v", c.QueueWait, c.TTFT, c.Total)
	}
	if c := completionOf("", &infillv1.Timings{Total: durationpb.New(time.Second)}); c.TTFT != 0 || c.Total != time.Second || c.QueueWait != 0 {
		t.Errorf("no text, no wait: %+v", c)
	}
}

package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
)

// BenchmarkEditVsComplete is the pipeline's own time for an edit
// prediction and for a completion of the same request (50 files, the
// cursor file edited by one keystroke each time, as typing does), with a
// backend that answers at once, the two alternating: what the edit path
// adds in process over the completion path (the FIM build it starts from,
// the region, the edit prompt rendered and counted, the answer read back
// and diffed). Reported: the p50 of each and of the paired differences.
//
//	go test ./server/pipeline -run '^$' -bench EditVsComplete
func BenchmarkEditVsComplete(b *testing.B) {
	var files []contextpack.File
	for i := range 50 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "from pkg%d import mod%d\n\n\n", (i+1)%7, (i+3)%50)
		for f := range 12 {
			fmt.Fprintf(&sb, "def func_%d_%d(value, scale=%d):\n    total = mod%d.func_%d_%d(value) * scale\n    return total + %d\n\n\n",
				i, f, f+1, (i+3)%50, (i+3)%50, f, f)
		}
		files = append(files, contextpack.File{Path: fmt.Sprintf("pkg%d/mod%d.py", i%7, i), Content: sb.String(), HasContent: true})
	}
	cur := &files[49]
	off := strings.Index(cur.Content, "    return total + 5")
	be := &cannedBackend{out: "<|editable_region_start|>\nx\n", finish: inference.FinishStopSequence}
	p, err := New(DefaultConfig(), newEditBuilder(b, 8192), be, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	base := cur.Content
	var times [2][]float64 // complete, edit (µs)
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			kind := (k + i) % 2 // alternate which goes first
			fs := append([]contextpack.File(nil), files...)
			fs[49].Content = base[:off] + strings.Repeat("y", i%7) + base[off:] // a keystroke
			r := Request{Context: contextpack.Request{RepoName: "bench", Files: fs,
				Cursor: contextpack.Cursor{Path: cur.Path, Offset: off + i%7, Encoding: contextpack.EncodingByteOffset}},
				Generation: Generation{MaxTokens: 16}}
			start := time.Now()
			if kind == 0 {
				_, err = p.Complete(ctx, &r, Stream{})
			} else {
				_, err = p.PredictEdit(ctx, &EditRequest{Request: r, RecentEdits: []RecentEdit{{Path: cur.Path, Diff: "@@ -1 +1 @@\n-a\n+b\n"}}}, Stream{})
			}
			if err != nil {
				b.Fatal(err)
			}
			times[kind] = append(times[kind], float64(time.Since(start).Nanoseconds())/1000)
		}
	}
	p50 := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	diff := make([]float64, len(times[0]))
	for i := range diff {
		diff[i] = times[1][i] - times[0][i]
	}
	b.ReportMetric(p50(times[0]), "complete-p50-µs")
	b.ReportMetric(p50(times[1]), "edit-p50-µs")
	b.ReportMetric(p50(diff), "edit-minus-complete-p50-µs")
}

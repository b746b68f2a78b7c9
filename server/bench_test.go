package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// benchRepository is n small Python modules that call each other, the
// last one holding the cursor; every file but the cursor file goes as its
// digest, as a client sends once the server holds the content.
func benchRepository(n int) (full, digests *infillv1.CompleteRequest) {
	files := make([]*infillv1.File, n)
	for i := range files {
		var sb strings.Builder
		fmt.Fprintf(&sb, "from pkg%d import mod%d\n\n\n", (i+1)%7, (i+3)%n)
		for f := 0; f < 12; f++ {
			fmt.Fprintf(&sb, "def func_%d_%d(value, scale=%d):\n", i, f, f+1)
			fmt.Fprintf(&sb, "    total = mod%d.func_%d_%d(value) * scale\n", (i+3)%n, (i+3)%n, f)
			fmt.Fprintf(&sb, "    if total > %d:\n        return total - value\n    return total + %d\n\n\n", 10*f, f)
		}
		files[i] = &infillv1.File{Path: fmt.Sprintf("pkg%d/mod%d.py", i%7, i), Content: proto.String(sb.String())}
	}
	cur := files[n-1]
	full = &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "bench", Files: files},
		Cursor:     &infillv1.Cursor{Path: cur.GetPath(), Line: 20, Column: 4},
		Generation: &infillv1.GenerationOptions{MaxTokens: 16},
	}
	digests = proto.Clone(full).(*infillv1.CompleteRequest)
	for _, f := range digests.Repository.Files[:n-1] {
		f.Digest, f.Content = contextpack.Digest(f.GetContent()), nil
	}
	return full, digests
}

// BenchmarkCompleteDigests is one call through the real server and
// context builder over loopback gRPC, with a backend that sends 16 text
// deltas at once: infill's own cost per request when the server already
// holds the repository (client and server share the process, so allocs/op
// counts both sides). Complete and StreamComplete (which sends a start, 16
// deltas and the result) run on the same repositories. The ghz suite
// (bench/ghz) measures the same path against a direct Ollama request.
func BenchmarkCompleteDigests(b *testing.B) {
	for _, n := range []int{1, 50, 500} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprint(n)
			if stream {
				name += "/stream"
			}
			b.Run(name, func(b *testing.B) {
				client, _ := startFakeLog(b, realBuilder(b), &fakeBackend{deltas: 16}, zap.NewNop())
				full, digests := benchRepository(n)
				ctx := context.Background()
				if _, err := client.Complete(ctx, full); err != nil {
					b.Fatal(err)
				}
				call := func() error {
					_, err := client.Complete(ctx, digests)
					return err
				}
				if stream {
					sreq := infill.StreamRequest(digests)
					call = func() error {
						return drain(client.StreamComplete(ctx, sreq))
					}
				}
				b.SetBytes(int64(proto.Size(digests)))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCompleteTyping types one character per call into a 36 KB
// cursor file among 500 digests, through the real server and context
// builder over loopback gRPC: the cursor file sent as content, or as an
// edit to the text the server received last (File.edits, what the Go
// client sends), on the whole list of digests or alone on the repository
// snapshot. Compare the sub-benchmarks' ns/op in one run.
func BenchmarkCompleteTyping(b *testing.B) {
	for _, list := range []string{"digests", "snapshot"} {
		for _, edits := range []bool{false, true} {
			name := list + "/content"
			if edits {
				name = list + "/edits"
			}
			b.Run(name, func(b *testing.B) {
				client, _ := startFakeLog(b, realBuilder(b), &fakeBackend{}, zap.NewNop())
				full, digests := benchRepository(500)
				cur := len(full.Repository.Files) - 1
				text := full.Repository.Files[cur].GetContent()
				text = strings.Repeat(text, 36<<10/len(text)+1)
				full.Repository.Files[cur].Content = proto.String(text)
				ctx := context.Background()
				first, err := client.Complete(ctx, full)
				if err != nil {
					b.Fatal(err)
				}
				req := digests
				if list == "snapshot" {
					req = proto.Clone(full).(*infillv1.CompleteRequest)
					req.Repository.Base, req.Repository.Files = first.GetRepositorySnapshot(), req.Repository.Files[cur:]
					cur = 0
				}
				off := strings.Index(text, "    total") // the start of a statement
				const keys = "x = value + 1\n    "
				bytes := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					next := text[:off] + keys[i%len(keys):i%len(keys)+1] + text[off:]
					f := &infillv1.File{Path: req.Repository.Files[cur].GetPath(), Content: proto.String(next)}
					if edits {
						f = &infillv1.File{Path: f.GetPath(), Digest: contextpack.Digest(text),
							Edits: []*infillv1.Edit{infill.DiffEdit(text, next)}}
					}
					req.Repository.Files[cur] = f
					text, off = next, off+1
					lines := strings.Split(text[:off], "\n")
					req.Cursor = &infillv1.Cursor{Path: f.GetPath(), Line: uint32(len(lines) - 1), Column: uint32(len(lines[len(lines)-1]))}
					bytes += proto.Size(req)
					b.StartTimer()
					if _, err := client.Complete(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(bytes)/float64(b.N), "req-bytes/op")
			})
		}
	}
}

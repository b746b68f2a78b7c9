package server_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
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
// (scripts/ghz) measures the same path against a direct Ollama request.
func BenchmarkCompleteDigests(b *testing.B) {
	tok, err := tokenizer.Qwen25()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 50, 500} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprint(n)
			if stream {
				name += "/stream"
			}
			b.Run(name, func(b *testing.B) {
				builder, err := contextpack.NewBuilder(contextpack.DefaultConfig(), tok, zap.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				defer builder.Close()
				client, _ := startFakeLog(b, builder, &fakeBackend{deltas: 16}, zap.NewNop())
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
						st, err := client.StreamComplete(ctx, sreq)
						if err != nil {
							return err
						}
						for {
							if _, err := st.Recv(); err == io.EOF {
								return nil
							} else if err != nil {
								return err
							}
						}
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

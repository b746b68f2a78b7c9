package infill

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// BenchmarkClientTyping is the client's side of one keystroke when the
// caller passes its whole repository with content on every call, as the
// command-line tool and a plugin do: 500 files of 5 KB and a 36 KB cursor
// file, one character typed per call, against a server that answers at
// once and names a snapshot. With the default Config the client sends the
// keystroke as an edit on that snapshot; what it costs is finding out that
// nothing else changed.
func BenchmarkClientTyping(b *testing.B) {
	srv := &fakeServer{unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return &infillv1.CompleteResponse{RepositorySnapshot: "snap"}, nil
	}}
	c, _ := newTestClient(b, srv, Config{})
	files := make([]*infillv1.File, 500)
	for i := range files {
		body := strings.Repeat(fmt.Sprintf("def f_%d(x):\n    return x * %d\n\n", i, i), 5<<10/30)
		files[i] = &infillv1.File{Path: fmt.Sprintf("pkg%d/m%d.py", i%7, i), Content: proto.String(body)}
	}
	cur := len(files) - 1
	text := strings.Repeat("def g(value):\n    total = value + 1\n    return total\n\n", 36<<10/50)
	off := strings.Index(text, "    total")
	req := &infillv1.CompleteRequest{Repository: &infillv1.Repository{Name: "bench", Files: files}}
	ctx := context.Background()
	// The first call sends every file (the server has no snapshot yet): not
	// the keystroke measured, and made before the loop so that the check
	// below holds however few iterations run (-benchtime 1x).
	req.Cursor = &infillv1.Cursor{Path: "pkg/cursor.py", Offset: uint64(off),
		Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET}
	files[cur] = &infillv1.File{Path: "pkg/cursor.py", Content: proto.String(text)}
	if _, err := c.Complete(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		text = text[:off] + "xy"[i%2:i%2+1] + text[off:]
		off++
		files[cur] = &infillv1.File{Path: "pkg/cursor.py", Content: proto.String(text)}
		req.Cursor = &infillv1.Cursor{Path: "pkg/cursor.py", Offset: uint64(off),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET}
		if _, err := c.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(srv.Requests()); n < 2 || len(srv.Requests()[n-1].GetFiles()) != 1 {
		b.Fatalf("the last call sent %d files; want the cursor file alone", len(srv.Requests()[n-1].GetFiles()))
	}
}

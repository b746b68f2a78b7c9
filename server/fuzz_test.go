package server_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// fuzzPaths are the paths a fuzzed repository draws from: languages with
// and without a grammar, nesting, and names validation must refuse.
var fuzzPaths = []string{"main.py", "pkg/util.go", "src/app.ts", "lib.rs", "a.c", "inc/a.h", "README",
	"x.java", "../escape.py", "/abs.py", "", "dir/", "a//b.js", "we\x00ird.py"}

// FuzzComplete sends the real server and context builder requests made
// from fuzzed text, positions, edits and options, on one server (so that
// the store, snapshots and memos carry over between inputs, as in
// production). A request either completes, with a candidate, or fails
// with a code a client can act on: never Internal or Unknown (a panic
// recovered, or an error nobody classified). Streams end the same way.
// The seeds run with the tests; `go test -fuzz FuzzComplete ./server`
// explores further.
func FuzzComplete(f *testing.F) {
	f.Add("def f(x):\n    return x\n", "import os\n", uint8(0), uint8(1), uint32(1), uint32(4), uint8(0),
		uint64(0), uint64(0), "", false, uint32(0), uint8(0), false)
	// An edit to the text the first seed sent.
	f.Add("def f(x):\n    return x\n", "", uint8(0), uint8(1), uint32(1), uint32(4), uint8(2),
		uint64(4), uint64(5), "é", true, uint32(0), uint8(2), true)
	f.Add("x = 'é😀'\n", "y = 1", uint8(0), uint8(2), uint32(0), uint32(7), uint8(3),
		uint64(6), uint64(1), "\n", false, uint32(0), uint8(3), true)
	f.Add("", "", uint8(8), uint8(9), uint32(99), uint32(99), uint8(4),
		uint64(1<<40), uint64(3), "", true, uint32(1), uint8(2), false)
	f.Add("int main(void) { return 0; }\n", "#ifndef A_H\n#define A_H\nint f(void);\n#endif\n", uint8(4), uint8(5),
		uint32(0), uint32(17), uint8(1), uint64(17), uint64(24), "{", false, uint32(0), uint8(4), false)

	client, _ := startFakeLog(f, realBuilder(f), &fakeBackend{deltas: 3}, zap.NewNop())
	f.Fuzz(func(t *testing.T, a, b string, pa, pb uint8, line, col uint32, enc uint8,
		start, end uint64, text string, digest bool, budget uint32, mode uint8, stream bool) {
		// Protobuf strings are UTF-8: the client cannot send anything else.
		a, b, text = strings.ToValidUTF8(a, "\uFFFD"), strings.ToValidUTF8(b, "\uFFFD"), strings.ToValidUTF8(text, "\uFFFD")
		pathA, pathB := fuzzPaths[int(pa)%len(fuzzPaths)], fuzzPaths[int(pb)%len(fuzzPaths)]
		files := []*infillv1.File{{Path: pathA, Content: proto.String(a)}, {Path: pathB, Content: proto.String(b)}}
		req := &infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: "fuzz", Files: files},
			Cursor: &infillv1.Cursor{Path: pathA, Line: line, Column: col, Offset: start,
				Encoding: infillv1.PositionEncoding(enc % 6)},
			Generation:  &infillv1.GenerationOptions{MaxTokens: 4},
			TokenBudget: budget,
		}
		switch mode % 5 {
		case 1: // the second file as a digest, which the server may hold from an earlier input
			files[1] = &infillv1.File{Path: pathB, Digest: contextpack.Digest(b)}
		case 2: // the cursor file as an edit to a text the server may hold
			files[0] = &infillv1.File{Path: pathA, Digest: contextpack.Digest(a),
				Edits: []*infillv1.Edit{{Start: start, End: end, Text: text}}}
		case 3: // a latency budget, maybe spent already
			req.LatencyBudget = &durationpb.Duration{Seconds: int64(end%3) - 1, Nanos: int32(start % 2e9)}
		case 4: // a single file, no repository name: file-level FIM
			req.Repository = &infillv1.Repository{Files: files[:1]}
		}
		if digest {
			// Send the same list on the base of the last snapshot of this
			// repository, if the server has one.
			if resp, err := client.Complete(context.Background(), proto.Clone(req).(*infillv1.CompleteRequest)); err == nil {
				req.Repository.Base = resp.GetRepositorySnapshot()
				req.Repository.Files = req.Repository.Files[:1]
				req.Repository.Removed = []string{pathB}
			}
		}
		if !stream {
			resp, err := client.Complete(context.Background(), req)
			checkFuzzResult(t, resp, err)
			return
		}
		st, err := client.StreamComplete(context.Background(), infill.StreamRequest(req))
		if err != nil {
			t.Fatalf("StreamComplete: %v", err)
		}
		var done *infillv1.CompleteResponse
		for {
			m, err := st.Recv()
			if err == io.EOF {
				if done == nil {
					t.Fatal("stream ended without a final response")
				}
				checkFuzzResult(t, done, nil)
				return
			}
			if err != nil {
				checkFuzzResult(t, nil, err)
				return
			}
			if d := m.GetDone(); d != nil {
				done = d
			}
		}
	})
}

func checkFuzzResult(t *testing.T, resp *infillv1.CompleteResponse, err error) {
	t.Helper()
	if err == nil {
		if len(resp.GetCandidates()) == 0 {
			t.Fatal("success without a candidate")
		}
		return
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition:
	default:
		t.Fatalf("code %v (%q): want a completion, INVALID_ARGUMENT or FAILED_PRECONDITION", st.Code(), st.Message())
	}
	if st.Message() == "" || !utf8.ValidString(st.Message()) {
		t.Fatalf("unclear message %q", st.Message())
	}
}

package infill_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// promptServer is infill-server with the real contextpack Builder
// (servertest.StartLocal) in front of a backend that records each prompt
// and answers at once. Its intercept
// is a client interceptor: it records what each call carried, and can
// refuse the next call with edits as a server that no longer holds their
// text does.
type promptServer struct {
	addr string

	mu       sync.Mutex
	prompts  []string
	sent     []*infillv1.Repository
	evictNow bool // refuse the next call that carries edits
}

func (s *promptServer) Ping(context.Context) error            { return nil }
func (s *promptServer) Model(string) string                   { return "m" }
func (s *promptServer) ContextTokens(string) int              { return 4096 }
func (s *promptServer) MaxTokens(n int) int                   { return max(n, 16) }
func (s *promptServer) CheckOptions(*inference.Request) error { return nil }
func (s *promptServer) Generate(_ context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	s.mu.Lock()
	s.prompts = append(s.prompts, req.Prompt)
	s.mu.Unlock()
	if err := d(0, "x"); err != nil {
		return nil, err
	}
	return &inference.Result{Model: "m", Candidates: []inference.Candidate{{Text: "x", Finish: inference.FinishStop, Tokens: 1}}}, nil
}

func (s *promptServer) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	repo := req.(*infillv1.CompleteRequest).GetRepository()
	s.mu.Lock()
	s.sent = append(s.sent, proto.Clone(repo).(*infillv1.Repository))
	var evict []string
	for _, f := range repo.GetFiles() {
		if len(f.GetEdits()) > 0 && s.evictNow {
			evict = append(evict, f.GetPath())
		}
	}
	if len(evict) > 0 {
		s.evictNow = false
	}
	s.mu.Unlock()
	if len(evict) > 0 {
		var vs []*errdetails.PreconditionFailure_Violation
		for _, p := range evict {
			vs = append(vs, &errdetails.PreconditionFailure_Violation{Type: infill.MissingContentType, Subject: p})
		}
		st, _ := status.New(codes.FailedPrecondition, "content not held").WithDetails(&errdetails.PreconditionFailure{Violations: vs})
		return st.Err()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func startPromptServer(t *testing.T) *promptServer {
	t.Helper()
	ps := &promptServer{}
	ps.addr = servertest.StartLocal(t, ps).Addr
	return ps
}

// startPair starts two prompt servers: c talks to srv in mode (through
// srv's interceptor when intercept), w to ref sending everything whole,
// the reference prompts.
func startPair(t *testing.T, mode infill.Transfer, intercept bool) (srv, ref *promptServer, c, w *infill.Client) {
	t.Helper()
	srv, ref = startPromptServer(t), startPromptServer(t)
	cfg := infill.Config{Transfer: mode}
	if intercept {
		cfg.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(srv.intercept)}
	}
	var err error
	if c, err = infill.Dial(srv.addr, cfg, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if w, err = infill.Dial(ref.addr, infill.Config{Transfer: infill.TransferWhole}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return srv, ref, c, w
}

// Typing in the cursor file sends each keystroke as an edit to the text
// the server holds, in both digest modes; the server builds the prompt it
// builds from the content. When the server no longer holds the text, the
// client sends the content and goes on with edits.
func TestTypingSendsEdits(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]infill.Transfer{"deltas": infill.TransferDeltas, "digests": infill.TransferDigests} {
		t.Run(name, func(t *testing.T) {
			edited, whole, c, w := startPair(t, mode, true)

			body := strings.Repeat("def f(x):\n    return x + 1\n\n", 60)
			content := "import math\n\n" + body
			off := len("import math\n")
			keys := []string{"p", "i", " ", "=", " ", "é", "\b", "3", ".", "1", "4", "\n"}
			for step, k := range keys {
				if step == 8 {
					edited.mu.Lock()
					edited.evictNow = true
					edited.mu.Unlock()
				}
				if k == "\b" {
					content = content[:off-len("é")] + content[off:]
					off -= len("é")
				} else {
					content = content[:off] + k + content[off:]
					off += len(k)
				}
				req := &infillv1.CompleteRequest{
					Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{
						{Path: "geo/circle.py", Content: proto.String(content)},
						{Path: "geo/util.py", Content: proto.String(body)},
					}},
					Cursor:     &infillv1.Cursor{Path: "geo/circle.py", Offset: uint64(off), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
					Generation: &infillv1.GenerationOptions{MaxTokens: 4},
				}
				if _, err := c.Complete(t.Context(), req); err != nil {
					t.Fatalf("key %d: %v", step, err)
				}
				if _, err := w.Complete(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			edited.mu.Lock()
			defer edited.mu.Unlock()
			whole.mu.Lock()
			defer whole.mu.Unlock()
			if len(edited.prompts) != len(keys) {
				t.Fatalf("%d prompts for %d keys", len(edited.prompts), len(keys))
			}
			for i := range keys {
				if edited.prompts[i] != whole.prompts[i] {
					t.Fatalf("key %d: the prompt from edits differs from the content's:\n%q\n%q", i, edited.prompts[i], whole.prompts[i])
				}
			}
			// What each call carried for the cursor file: content first,
			// edits after, content again where the server asked for it.
			var shapes []string
			for _, repo := range edited.sent {
				for _, f := range repo.GetFiles() {
					if f.GetPath() != "geo/circle.py" {
						continue
					}
					switch {
					case f.Content != nil:
						shapes = append(shapes, "content")
					case len(f.GetEdits()) == 1 && len(f.GetEdits()[0].GetText()) <= len("é"):
						shapes = append(shapes, "edit")
					case len(f.GetEdits()) == 0 && f.GetDigest() != "":
						shapes = append(shapes, "digest")
					default:
						shapes = append(shapes, fmt.Sprintf("other %v", f))
					}
				}
			}
			// The backspace (key 6) goes back to the text of key 4: a digest.
			// Key 8's edit is refused, and its content resent.
			want := "content " + strings.Repeat("edit ", 5) + "digest edit edit content " + strings.Repeat("edit ", 3)
			if got := strings.Join(shapes, " ") + " "; got != want {
				t.Fatalf("cursor file sent as\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// Edits a caller builds itself (DiffEdit on the text it sent before) reach
// the server in every transfer mode, and so does going back to that text:
// the client cannot know the text edits make, so no snapshot's file
// matches them. Under TransferDeltas they used to be dropped as unchanged.
func TestCallerEditsAreSent(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]infill.Transfer{"deltas": infill.TransferDeltas, "digests": infill.TransferDigests,
		"whole": infill.TransferWhole} {
		t.Run(name, func(t *testing.T) {
			srv, ref, c, w := startPair(t, mode, false)
			body := strings.Repeat("def g(y):\n    return y * 2\n\n", 40)
			c0 := "import os\n\n" + body
			c1 := "import os\nimport sys\n\n" + body
			c2 := "import os\nimport re\n\n" + body
			req := func(f *infillv1.File) *infillv1.CompleteRequest {
				return &infillv1.CompleteRequest{
					Repository: &infillv1.Repository{Name: "r", Files: []*infillv1.File{f,
						{Path: "util.py", Content: proto.String(body)}}},
					Cursor:     &infillv1.Cursor{Path: "main.py", Line: 3},
					Generation: &infillv1.GenerationOptions{MaxTokens: 4},
				}
			}
			content := func(s string) *infillv1.File { return &infillv1.File{Path: "main.py", Content: proto.String(s)} }
			edit := func(from, to string) *infillv1.File {
				return &infillv1.File{Path: "main.py", Digest: infill.Digest(from), Edits: []*infillv1.Edit{infill.DiffEdit(from, to)}}
			}
			steps := []struct {
				sent *infillv1.File
				text string
			}{
				{content(c0), c0},
				{edit(c0, c1), c1},
				{edit(c0, c2), c2}, // from the same base again, to another text
				{content(c0), c0},  // back to the text the snapshot knew
			}
			for i, s := range steps {
				if _, err := c.Complete(t.Context(), req(s.sent)); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if _, err := w.Complete(t.Context(), req(content(s.text))); err != nil {
					t.Fatal(err)
				}
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			ref.mu.Lock()
			defer ref.mu.Unlock()
			for i := range steps {
				if srv.prompts[i] != ref.prompts[i] {
					t.Fatalf("step %d: the prompt differs from the one for the text sent whole", i)
				}
			}
		})
	}
}

package infill_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
	"google.golang.org/protobuf/proto"
)

// The tests below run against the real server and the real Ollama backend
// with the tiny random-weight model: they assert properties of the output,
// never its text.

const circle = `import math


def area(r):
    """Area of a circle of radius r."""
    return math.pi * r ** 2


def circumference(r):
    return 
`

func e2eRequest() *infillv1.CompleteRequest {
	return &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{
			{Path: "geo/circle.py", Content: proto.String(circle)},
			{Path: "geo/__init__.py", Content: proto.String(strings.Repeat("# geometry helpers\n", 8))},
		}},
		Cursor:     infill.Position{Line: 10, Column: 12}.Cursor("geo/circle.py", infillv1.PositionEncoding_POSITION_ENCODING_UTF32),
		Generation: &infillv1.GenerationOptions{MaxTokens: 8},
	}
}

func TestEndToEndStreamAndComplete(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	c, err := infill.Dial(srv.Addr, infill.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var kinds []string
	var text string
	var done *infillv1.CompleteResponse
	for ev, err := range c.Stream(t.Context(), infill.StreamRequest(e2eRequest())) {
		if err != nil {
			t.Fatal(infill.FormatError(err))
		}
		switch e := ev.GetEvent().(type) {
		case *infillv1.StreamCompleteResponse_Start:
			kinds = append(kinds, "start")
		case *infillv1.StreamCompleteResponse_Delta:
			kinds = append(kinds, "delta")
			text += e.Delta.GetText()
		case *infillv1.StreamCompleteResponse_Done:
			kinds = append(kinds, "done")
			done = e.Done
		}
	}
	if len(kinds) < 2 || kinds[0] != "start" || kinds[len(kinds)-1] != "done" {
		t.Fatalf("events %v; want start, deltas, done", kinds)
	}
	if got := done.GetCandidates()[0].GetText(); got != text {
		t.Errorf("streamed text %q differs from the final candidate %q", text, got)
	}
	if done.GetUsage().GetCompletionTokens() == 0 || done.GetModel() != srv.Model {
		t.Errorf("usage %v, model %q", done.GetUsage(), done.GetModel())
	}

	resp, err := c.Complete(t.Context(), e2eRequest())
	if err != nil {
		t.Fatal(infill.FormatError(err))
	}
	if len(resp.GetCandidates()) != 1 || resp.GetUsage().GetCompletionTokens() == 0 {
		t.Errorf("unary response %v", resp)
	}
}

func TestEndToEndErrors(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	c, err := infill.Dial(srv.Addr, infill.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := e2eRequest()
	req.Cursor.Line = 98
	_, err = c.Complete(t.Context(), req)
	if line := infill.FormatError(err); status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(line, "INVALID_ARGUMENT: ") {
		t.Errorf("bad cursor: %q; want INVALID_ARGUMENT", line)
	}
	req = e2eRequest()
	req.Model = "no-such-model:1b"
	_, err = c.Complete(t.Context(), req)
	if code := status.Code(err); code != codes.NotFound && code != codes.FailedPrecondition {
		t.Errorf("unknown model: %v; want NOT_FOUND or FAILED_PRECONDITION", err)
	}
}

// TestEndToEndDigests sends the same repository twice with digests on: the
// second call sends digests and, whatever the server holds, succeeds; when
// the server lacks content it answers FAILED_PRECONDITION once and the
// client resends.
func TestEndToEndDigests(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	var mu sync.Mutex
	var calls []codes.Code
	var shapes []string
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		digests := 0
		for _, f := range req.(*infillv1.CompleteRequest).GetRepository().GetFiles() {
			if f.GetDigest() != "" {
				digests++
			}
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, status.Code(err))
		shapes = append(shapes, map[bool]string{true: "digests", false: "content"}[digests > 0])
		return err
	}
	c, err := infill.Dial(srv.Addr, infill.Config{Transfer: infill.TransferDigests,
		DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(record)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		if _, err := c.Complete(t.Context(), e2eRequest()); err != nil {
			t.Fatalf("call %d: %s", i+1, infill.FormatError(err))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("RPCs: %v %v", calls, shapes)
	if len(calls) < 2 || calls[0] != codes.OK || shapes[0] != "content" || shapes[1] != "digests" {
		t.Fatalf("RPCs %v %v; want content first, then digests", calls, shapes)
	}
	switch len(calls) {
	case 2: // the server held the content
	case 3:
		if calls[1] != codes.FailedPrecondition || shapes[2] != "content" {
			t.Errorf("RPCs %v %v; want FAILED_PRECONDITION then a resend with content", calls, shapes)
		}
	default:
		t.Errorf("%d RPCs for two calls", len(calls))
	}
}

func TestEndToEndBreakStopsStream(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	c, err := infill.Dial(srv.Addr, infill.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := infill.StreamRequest(e2eRequest())
	req.Generation = &infillv1.GenerationOptions{MaxTokens: 2000}
	got := 0
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(infill.FormatError(err))
		}
		if ev.GetDelta() != nil {
			got++
			break
		}
		if ev.GetDone() != nil {
			t.Skip("the model stopped before a delta arrived")
		}
	}
	// The next call is served at once rather than behind a 2000-token
	// generation that nobody reads.
	short := e2eRequest()
	short.Generation = &infillv1.GenerationOptions{MaxTokens: 1}
	if _, err := c.Complete(t.Context(), short); err != nil {
		t.Fatal(infill.FormatError(err))
	}
	if got != 1 {
		t.Errorf("got %d deltas before break", got)
	}
}

// With Snapshots, the real server names the file list and the client's
// later calls send only what changed on it; an edit then costs one file.
func TestEndToEndSnapshots(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	var mu sync.Mutex
	var sent []*infillv1.Repository
	var snaps []string
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, req.(*infillv1.CompleteRequest).GetRepository())
		snaps = append(snaps, reply.(*infillv1.CompleteResponse).GetRepositorySnapshot())
		return err
	}
	c, err := infill.Dial(srv.Addr, infill.Config{DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(record)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := e2eRequest()
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(infill.FormatError(err))
	}
	req.Repository.Files[0].Content = proto.String(circle + "\n# edited\n")
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(infill.FormatError(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || !strings.HasPrefix(snaps[0], "snap:") || snaps[1] == "" || snaps[1] == snaps[0] {
		t.Fatalf("calls %d, snapshots %q; want two calls, each naming its own list", len(sent), snaps)
	}
	if sent[0].GetBase() != "" || len(sent[0].GetFiles()) != 2 {
		t.Errorf("first call: base %q, %d files; want the whole list", sent[0].GetBase(), len(sent[0].GetFiles()))
	}
	if sent[1].GetBase() != snaps[0] || len(sent[1].GetFiles()) != 1 || sent[1].GetFiles()[0].GetPath() != "geo/circle.py" {
		t.Errorf("second call: base %q, files %v; want the edited file alone on the first snapshot", sent[1].GetBase(), sent[1].GetFiles())
	}
}

// An edit prediction through the client library, the real server and the
// real Ollama: Instinct's prompt unary, Zeta's streamed. The backend
// evaluates the tokens infill planned; the answer is an edit inside the
// editable region (whose range holds the cursor, in the request's UTF-16
// columns; Position is 1-based) or no edit with a reason, the output as it came; a format the
// API does not know is INVALID_ARGUMENT naming the field.
func TestEndToEndPredictEdit(t *testing.T) {
	srv := servertest.Start(t)
	c, err := infill.Dial(srv.Addr, infill.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cr := e2eRequest()
	req := &infillv1.PredictEditRequest{Repository: cr.Repository,
		Cursor:      infill.Position{Line: 10, Column: 11}.Cursor("geo/circle.py", infillv1.PositionEncoding_POSITION_ENCODING_UTF16),
		RecentEdits: []*infillv1.RecentEdit{{Path: "geo/circle.py", Diff: "@@ -9,2 +9,2 @@\n-def perimeter(r):\n+def circumference(r):\n"}},
		Generation:  &infillv1.GenerationOptions{MaxTokens: 12},
		Format:      infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_INSTINCT, SessionId: "e2e"}
	check := func(resp *infillv1.PredictEditResponse, want infillv1.EditPromptFormat) {
		t.Helper()
		r := resp.GetEditableRegion()
		if resp.GetFormat() != want || r.GetStartLine() > 9 || r.GetEndLine() < 9 || r.GetStartOffset() > r.GetEndOffset() {
			t.Fatalf("format %v, region %v", resp.GetFormat(), r)
		}
		if u := resp.GetUsage(); u.GetPromptTokens() != u.GetPlannedPromptTokens() || u.GetCompletionTokens() < 1 {
			t.Errorf("usage %v", u)
		}
		if e := resp.GetEdit(); e != nil {
			if e.GetRange().GetStartOffset() < r.GetStartOffset() || e.GetRange().GetEndOffset() > r.GetEndOffset() || resp.GetNoEditReason() != "" {
				t.Errorf("edit %v outside the region %v (reason %q)", e, r, resp.GetNoEditReason())
			}
		} else if resp.GetNoEditReason() == "" {
			t.Error("no edit and no reason")
		}
	}
	resp, err := c.PredictEdit(t.Context(), req)
	if err != nil {
		t.Fatal(infill.FormatError(err))
	}
	check(resp, infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_INSTINCT)

	sreq := infill.StreamPredictRequest(req)
	sreq.Format = infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_UNSPECIFIED // the server's default: Zeta
	var text string
	var done *infillv1.PredictEditResponse
	for ev, err := range c.StreamPredictEdit(t.Context(), sreq) {
		if err != nil {
			t.Fatal(infill.FormatError(err))
		}
		text += ev.GetDelta().GetText()
		if ev.GetDone() != nil {
			done = ev.GetDone()
		}
	}
	check(done, infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_ZETA)
	if done.GetRawOutput() != text {
		t.Errorf("streamed %q, raw output %q", text, done.GetRawOutput())
	}

	req.Format = 9
	_, err = c.PredictEdit(t.Context(), req)
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "format") {
		t.Fatalf("unknown format: %v", err)
	}
}

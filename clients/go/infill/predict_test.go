package infill

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

func predictRequest() *infillv1.PredictEditRequest {
	return &infillv1.PredictEditRequest{
		Repository: &infillv1.Repository{Name: "r", Files: []*infillv1.File{
			{Path: "a.py", Content: proto.String(strings.Repeat("x = 1\n", 40))},
			{Path: "b.py", Content: proto.String(strings.Repeat("y = 2\n", 40))}}},
		Cursor:      &infillv1.Cursor{Path: "a.py", Line: 1},
		RecentEdits: []*infillv1.RecentEdit{{Path: "a.py", Diff: "@@ -1 +1 @@\n-x = 0\n+x = 1\n"}},
		SessionId:   "s",
	}
}

// PredictEdit goes through the client's call machinery: UNAVAILABLE is
// retried, the server's snapshot is the next call's base (the repository
// sent as a delta), and the recent edits travel unchanged.
func TestPredictEditRetriesAndSendsDeltas(t *testing.T) {
	f := &fakeServer{predict: func(attempt int, req *infillv1.PredictEditRequest) (*infillv1.PredictEditResponse, error) {
		if attempt == 1 {
			return nil, status.Error(codes.Unavailable, "backend restarting")
		}
		if len(req.GetRecentEdits()) != 1 || req.GetClientId() != "me" {
			t.Errorf("attempt %d: recent edits %v, client id %q", attempt, req.GetRecentEdits(), req.GetClientId())
		}
		return &infillv1.PredictEditResponse{NoEditReason: "kept", RepositorySnapshot: "snap:" + strings.Repeat("0", 64)}, nil
	}}
	c, sleeps := newTestClient(t, f, Config{ClientID: "me"})
	for i := 0; i < 2; i++ {
		resp, err := c.PredictEdit(context.Background(), predictRequest())
		if err != nil || resp.GetNoEditReason() != "kept" {
			t.Fatalf("call %d: %v %v", i, resp, err)
		}
	}
	if f.Attempts() != 3 || len(*sleeps) != 1 {
		t.Fatalf("%d attempts, %d backoffs", f.Attempts(), len(*sleeps))
	}
	reqs := f.Requests()
	if last := reqs[2]; last.GetBase() == "" || len(last.GetFiles()) != 0 {
		t.Errorf("the second call sent base %q and %d files; want the snapshot and no unchanged file", last.GetBase(), len(last.GetFiles()))
	}
}

// StreamPredictEdit yields the start with the first delta, the deltas and
// the final response; UNAVAILABLE before the first delta is retried.
func TestStreamPredictEdit(t *testing.T) {
	f := &fakeServer{streamPredict: func(attempt int, req *infillv1.StreamPredictEditRequest, st grpc.ServerStreamingServer[infillv1.StreamPredictEditResponse]) error {
		if attempt == 1 {
			return status.Error(codes.Unavailable, "down")
		}
		for _, m := range []*infillv1.StreamPredictEditResponse{
			{Event: &infillv1.StreamPredictEditResponse_Start{Start: &infillv1.StreamStart{Model: "m"}}},
			{Event: &infillv1.StreamPredictEditResponse_Delta{Delta: &infillv1.TextDelta{Text: "ab"}}},
			{Event: &infillv1.StreamPredictEditResponse_Delta{Delta: &infillv1.TextDelta{Text: "c"}}},
			{Event: &infillv1.StreamPredictEditResponse_Done{Done: &infillv1.PredictEditResponse{RawOutput: "abc",
				Edit: &infillv1.PredictedEdit{Path: "a.py", Text: "z"}}}},
		} {
			if err := st.Send(m); err != nil {
				return err
			}
		}
		return nil
	}}
	c, _ := newTestClient(t, f, Config{})
	var starts int
	var text string
	var done *infillv1.PredictEditResponse
	for ev, err := range c.StreamPredictEdit(context.Background(), StreamPredictRequest(predictRequest())) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.GetStart() != nil:
			starts++
		case ev.GetDelta() != nil:
			text += ev.GetDelta().GetText()
		case ev.GetDone() != nil:
			done = ev.GetDone()
		}
	}
	if starts != 1 || text != "abc" || done.GetRawOutput() != "abc" || done.GetEdit().GetText() != "z" || f.Attempts() != 2 {
		t.Fatalf("starts %d, text %q, done %v, attempts %d", starts, text, done, f.Attempts())
	}
	// The streaming twin carries every field of the request.
	r := predictRequest()
	r.Format, r.TokenBudget, r.Model = infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_ZETA, 99, "m"
	s := StreamPredictRequest(r)
	if s.GetFormat() != r.GetFormat() || s.GetTokenBudget() != 99 || s.GetModel() != "m" || len(s.GetRecentEdits()) != 1 || s.GetSessionId() != "s" {
		t.Fatalf("StreamPredictRequest lost fields: %v", s)
	}
}

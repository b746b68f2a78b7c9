package server_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// manifestBuilder builds a prompt whose manifest has one source that went
// into the prompt and one that was left out.
type manifestBuilder struct{}

func (manifestBuilder) Build(context.Context, contextpack.Request) (*contextpack.Prompt, error) {
	return &contextpack.Prompt{Text: "p", Tokens: 100, Manifest: contextpack.Manifest{
		TokenBudget: 4096, GenerationTokens: 16, PromptTokens: 100,
		Sources: []contextpack.Source{
			{Kind: contextpack.SourcePrefix, Path: "a.py", Tokens: 90, Included: true, Reason: "cursor file"},
			{Kind: contextpack.SourceSimilar, Path: "b.py", StartLine: 3, EndLine: 9, Tokens: 40, Reason: "dropped: needs 40 tokens, 10 left"},
		}}}, nil
}

func sourcePaths(m *infillv1.ContextManifest) []string {
	var out []string
	for _, s := range m.GetSources() {
		out = append(out, s.GetPath())
	}
	return out
}

// The manifest lists what went into the prompt unless the request asks for
// every candidate (FULL) or none (NONE); figures are always there. A
// stream lists sources once, in its start.
func TestContextDetail(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, manifestBuilder{}, &fakeBackend{promptEval: 100})
	for _, tc := range []struct {
		detail infillv1.ContextDetail
		want   []string
	}{
		{infillv1.ContextDetail_CONTEXT_DETAIL_UNSPECIFIED, []string{"a.py"}},
		{infillv1.ContextDetail_CONTEXT_DETAIL_INCLUDED, []string{"a.py"}},
		{infillv1.ContextDetail_CONTEXT_DETAIL_FULL, []string{"a.py", "b.py"}},
		{infillv1.ContextDetail_CONTEXT_DETAIL_NONE, nil},
	} {
		req := request(8)
		req.ContextDetail = tc.detail
		resp, err := client.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		m := resp.GetContext()
		if got := sourcePaths(m); !slices.Equal(got, tc.want) {
			t.Errorf("Complete, %v: sources %v, want %v", tc.detail, got, tc.want)
		}
		if m.GetPromptTokens() != 100 || m.GetTokenBudget() != 4096 || m.GetGenerationTokens() != 16 {
			t.Errorf("Complete, %v: figures missing: %v", tc.detail, m)
		}

		startMsg, doneMsg := streamEnds(t, client, streamRequest(req))
		start, done := startMsg.GetContext(), doneMsg.GetContext()
		if got := sourcePaths(start); !slices.Equal(got, tc.want) {
			t.Errorf("StreamComplete start, %v: sources %v, want %v", tc.detail, got, tc.want)
		}
		if done == nil || len(done.GetSources()) != 0 || done.GetPromptTokens() != 100 {
			t.Errorf("StreamComplete done, %v: manifest %v, want figures and no sources", tc.detail, done)
		}
	}

	req := request(8)
	req.ContextDetail = 42
	_, err := client.Complete(context.Background(), req)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "context_detail") {
		t.Errorf("unknown context_detail: %v, want INVALID_ARGUMENT naming the field", err)
	}
}

// streamEnds runs a StreamComplete to its end and returns its start and
// final messages; any error fails the test.
func streamEnds(t *testing.T, client infillv1.CompletionServiceClient, req *infillv1.StreamCompleteRequest) (*infillv1.StreamStart, *infillv1.CompleteResponse) {
	t.Helper()
	st, err := client.StreamComplete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var start *infillv1.StreamStart
	var done *infillv1.CompleteResponse
	for {
		ev, err := st.Recv()
		if err == io.EOF {
			return start, done
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if s := ev.GetStart(); s != nil {
			start = s
		}
		if d := ev.GetDone(); d != nil {
			done = d
		}
	}
}

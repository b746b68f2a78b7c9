package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

type recordingBackend struct{ got inference.Request }

func (b *recordingBackend) Model(n string) string    { return "m" }
func (b *recordingBackend) ContextTokens(string) int { return 4096 }
func (b *recordingBackend) MaxTokens(n int) int {
	if n <= 0 {
		return 16
	}
	return n
}
func (b *recordingBackend) CheckOptions(*inference.Request) error { return nil }
func (b *recordingBackend) Generate(_ context.Context, req inference.Request, _ inference.DeltaFunc) (*inference.Result, error) {
	b.got = req
	return &inference.Result{Model: "m", Candidates: []inference.Candidate{{Finish: inference.FinishLength}}}, nil
}

type recordingBuilder struct{ got contextpack.Request }

func (b *recordingBuilder) Build(_ context.Context, req contextpack.Request) (*contextpack.Prompt, error) {
	b.got = req
	return &contextpack.Prompt{Text: "p", Tokens: 3}, nil
}

// The llama.cpp server's stop conditions and warm-up reach the backend; a
// warm-up reserves one token of the context for generation, not the default.
func TestGenerationReachesBackend(t *testing.T) {
	be, bu := &recordingBackend{}, &recordingBuilder{}
	p, err := pipeline.New(pipeline.DefaultConfig(), bu, be, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &pipeline.Request{
		Context: contextpack.Request{Files: []contextpack.File{{Path: "a.py", Content: "x", HasContent: true}},
			Cursor: contextpack.Cursor{Path: "a.py"}},
		Generation: pipeline.Generation{MaxTokens: 64, Candidates: 3, MinIndent: 4, LineBudget: 250 * time.Millisecond, WarmOnly: true},
	}
	res, err := p.Complete(context.Background(), req, pipeline.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	g := be.got
	if !g.WarmOnly || g.MinIndent != 4 || g.LineBudget != 250*time.Millisecond || g.MaxTokens != 1 || g.Candidates != 1 {
		t.Fatalf("backend request %+v", g)
	}
	if bu.got.MaxNewTokens != 1 || res.CompletionTokens != 0 {
		t.Fatalf("builder reserved %d new tokens; result %+v", bu.got.MaxNewTokens, res)
	}
}

package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
)

// TestPredictEditRealOllama sends the golden cases' prompts (the requests
// of testdata/edit, whose prompts TestEditPromptGoldens checks) to the
// real Ollama serving the tiny model: the backend evaluates exactly the
// tokens infill counted, the output streams as it comes, and what is read
// back is an edit inside the region or no edit with its reason (the tiny
// model's text is gibberish: properties only). Then an edit prediction
// cancelled by its caller and one superseded by the session's next end
// with their errors, and a spent latency budget gives no edit with the
// partial output.
func TestPredictEditRealOllama(t *testing.T) {
	b := ollamatest.Start(t)
	cfg := inference.DefaultConfig()
	cfg.URL, cfg.DefaultModel, cfg.ContextTokens = b.URL, b.Model, 4096
	o, err := inference.NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(DefaultConfig(), newEditBuilder(t, 4096), o, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	paths, _ := filepath.Glob("testdata/edit/*.txtar")
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			r := loadEditCase(t, path).req
			r.Model = "" // the tiny model; the format stays the case's (or the default)
			r.Generation.MaxTokens = 24
			var streamed strings.Builder
			res, err := p.PredictEdit(ctx, r, Stream{OnDelta: func(_ int, s string) error { streamed.WriteString(s); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if res.PromptTokens != res.PlannedPromptTokens {
				t.Errorf("Ollama evaluated %d prompt tokens, infill planned %d", res.PromptTokens, res.PlannedPromptTokens)
			}
			c := res.Candidates[0]
			if c.Text != streamed.String() || c.Finish == 0 || c.Tokens < 1 || c.Tokens > 24 {
				t.Errorf("candidate %+v, streamed %q", c, streamed.String())
			}
			checkEdit(t, res)
		})
	}

	base := func() *EditRequest {
		r := loadEditCase(t, "testdata/edit/zeta-python.txtar").req
		r.Model, r.ClientID, r.SessionID = "", "c", "s"
		r.Generation.MaxTokens = 400
		return r
	}
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		_, err := p.PredictEdit(cctx, base(), Stream{OnDelta: func(int, string) error { cancel(); return nil }})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled at the first text: %v", err)
		}
	})
	t.Run("superseded", func(t *testing.T) {
		first := make(chan error, 1)
		started := make(chan struct{})
		go func() {
			once := false
			_, err := p.PredictEdit(ctx, base(), Stream{OnDelta: func(int, string) error {
				if !once {
					once = true
					close(started)
				}
				return nil
			}})
			first <- err
		}()
		<-started
		r := base()
		r.Generation.MaxTokens = 8
		res, err := p.PredictEdit(ctx, r, Stream{})
		if err != nil {
			t.Fatal(err)
		}
		checkEdit(t, res)
		if err := <-first; !errors.Is(err, ErrSuperseded) {
			t.Fatalf("the first of the session: %v, want superseded", err)
		}
	})
	t.Run("budget", func(t *testing.T) {
		r := base()
		r.SessionID = ""
		budget := p.cfg.Admission.BurstWait / 1000 // spent before the first token
		r.LatencyBudget = &budget
		res, err := p.PredictEdit(ctx, r, Stream{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Edit != nil || res.Candidates[0].Finish != inference.FinishBudget || !strings.Contains(res.NoEditReason, "latency budget") {
			t.Fatalf("budget: edit %+v, finish %v, reason %q", res.Edit, res.Candidates[0].Finish, res.NoEditReason)
		}
	})
}

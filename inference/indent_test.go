package inference

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The cases follow llama.cpp server's n_indent rule (process_token in
// tools/server/server-context.cpp): lines after the first need min leading
// spaces or tabs; the text is cut after the short line's indentation.
func TestIndentStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		min    int
		pieces []string
		want   string
		hit    bool
	}{
		{"off", 0, []string{"a\nb\n"}, "a\nb\n", false},
		{"first line unchecked", 4, []string{"x = 1"}, "x = 1", false},
		{"deep enough", 4, []string{"x = 1\n    y = 2\n\t\t\t\tz"}, "x = 1\n    y = 2\n\t\t\t\tz", false},
		{"dedent cuts", 4, []string{"x = 1\n    y = 2\nreturn y\n"}, "x = 1\n    y = 2\n", true},
		{"keeps short indentation", 4, []string{"x = 1\n  y = 2\n"}, "x = 1\n  ", true},
		{"blank line cuts", 2, []string{"x = 1\n\n  y"}, "x = 1\n", true},
		{"split over pieces", 4, []string{"x", " = 1\n ", " ", " ", "y"}, "x = 1\n   ", true},
		{"tabs count", 2, []string{"a\n\t\tb\n\tc"}, "a\n\t\tb\n\t", true},
		{"line still indenting", 4, []string{"a\n   "}, "a\n   ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := indentStop{min: tc.min}
			var got strings.Builder
			hit := false
			for _, p := range tc.pieces {
				keep, h := d.feed(p)
				got.WriteString(p[:keep])
				if h {
					hit = true
					break
				}
			}
			if got.String() != tc.want || hit != tc.hit {
				t.Fatalf("got %q hit=%v, want %q hit=%v", got.String(), hit, tc.want, tc.hit)
			}
		})
	}
}

func TestGenerateMinIndent(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	s := &scripted{serve: func(w http.ResponseWriter, r *http.Request, b map[string]any) {
		for _, tk := range []string{"total += x", "\n", "    ", "return", " total", "\n"} {
			chunk(w, map[string]any{"response": tk, "done": false})
		}
		slow(gone)(w, r, b)
	}}
	o := newTestOllama(t, s)
	var streamed strings.Builder
	res, err := o.Generate(context.Background(), Request{Prompt: "p", MinIndent: 8},
		func(_ int, text string) error { streamed.WriteString(text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	c := res.Candidates[0]
	if c.Text != "total += x\n    " || c.Finish != FinishStopSequence || streamed.String() != c.Text {
		t.Fatalf("candidate %+v, streamed %q", c, streamed.String())
	}
	<-gone // generation was stopped at the backend, not left running
}

func TestGenerateLineBudget(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	s := &scripted{serve: func(w http.ResponseWriter, r *http.Request, b map[string]any) {
		// The first line arrives slowly: the budget passes inside it, yet
		// the line is completed; the next newline ends generation.
		for _, tk := range []string{"a", "b", "c", "\n", "d", "\n", "e"} {
			chunk(w, map[string]any{"response": tk, "done": false})
			time.Sleep(15 * time.Millisecond)
		}
		slow(gone)(w, r, b)
	}}
	o := newTestOllama(t, s)
	res, err := o.Generate(context.Background(), Request{Prompt: "p", LineBudget: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "abc\n" || c.Finish != FinishBudget {
		t.Fatalf("candidate %+v", c)
	}
	<-gone

	// A budget that does not pass changes nothing.
	o = newTestOllama(t, &scripted{serve: tokens("a", "\n", "b")})
	res, err = o.Generate(context.Background(), Request{Prompt: "p", LineBudget: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Text != "a\nb" || c.Finish != FinishStop {
		t.Fatalf("candidate %+v", c)
	}
}

func TestGenerateWarmOnly(t *testing.T) {
	t.Parallel()
	s := &scripted{serve: tokens("x")}
	o := newTestOllama(t, s)
	res, err := o.Generate(context.Background(), Request{Prompt: "p", PromptTokens: 5, WarmOnly: true, MaxTokens: 64, Candidates: 3},
		func(int, string) error { t.Error("a warm-up streamed text"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 || res.Candidates[0] != (Candidate{Finish: FinishLength}) || res.PromptEvalTokens != 7 {
		t.Fatalf("result %+v", res)
	}
	if len(s.reqs) != 1 || s.reqs[0]["options"].(map[string]any)["num_predict"] != 1.0 {
		t.Fatalf("backend requests %v: want one with num_predict 1", s.reqs)
	}
}

func TestCheckOptionsStopConditions(t *testing.T) {
	t.Parallel()
	o := newTestOllama(t, &scripted{serve: tokens()})
	for _, r := range []Request{{MinIndent: -1}, {LineBudget: -time.Second}} {
		if err := o.CheckOptions(&r); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

package pipeline

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"go.uber.org/zap/zaptest"
)

var update = flag.Bool("update", false, "rewrite the want.* sections of testdata/edit/*.txtar")

// cursorMark marks the cursor in a case's cursor file.
const cursorMark = "<CURSOR>"

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen is the real Qwen2.5 tokenizer, loaded once.
func qwen(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	qwenOnce.Do(func() { qwenTok, qwenErr = tokenizer.Qwen25() })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

// newEditBuilder is a real context builder with the Qwen2.5 tokenizer.
func newEditBuilder(t testing.TB, ctxTokens int) *contextpack.Builder {
	t.Helper()
	cfg := contextpack.DefaultConfig()
	cfg.ContextTokens = ctxTokens
	b, err := contextpack.NewBuilder(cfg, qwen(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// cannedBackend records the prompt and answers with a fixed output.
type cannedBackend struct {
	out    string
	finish inference.FinishReason
	mu     sync.Mutex
	got    inference.Request
}

func (b *cannedBackend) Model(n string) string {
	if n == "" {
		return "infill-tiny"
	}
	return n
}
func (b *cannedBackend) ContextTokens(string) int              { return 8192 }
func (b *cannedBackend) MaxTokens(n int) int                   { return max(n, 16) }
func (b *cannedBackend) CheckOptions(*inference.Request) error { return nil }
func (b *cannedBackend) Generate(_ context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	b.mu.Lock()
	b.got = req
	b.mu.Unlock()
	if b.out != "" {
		if err := d(0, b.out); err != nil {
			return nil, err
		}
	}
	return &inference.Result{Model: req.Model, PromptEvalTokens: req.PromptTokens,
		Candidates: []inference.Candidate{{Text: b.out, Finish: b.finish, Tokens: 7}}}, nil
}

// editCase is a testdata/edit case: options, files (one holds the cursor
// mark), recent edits, a crafted model output and the goldens.
type editCase struct {
	path    string
	archive *txtar.Archive
	opts    map[string]string
	req     *EditRequest
	output  string
	finish  inference.FinishReason
}

var finishNames = map[string]inference.FinishReason{
	"stop": inference.FinishStop, "stop_sequence": inference.FinishStopSequence,
	"length": inference.FinishLength, "budget": inference.FinishBudget,
}

func loadEditCase(t *testing.T, path string) *editCase {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &editCase{path: path, archive: a, opts: map[string]string{}, req: &EditRequest{}, finish: inference.FinishStopSequence}
	r := c.req
	for _, f := range a.Files {
		kind, name, _ := strings.Cut(f.Name, " ")
		switch kind {
		case "case":
			for _, line := range strings.Split(strings.TrimSpace(string(f.Data)), "\n") {
				k, v, _ := strings.Cut(line, ":")
				c.opts[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		case "file":
			text := string(f.Data)
			if i := strings.Index(text, cursorMark); i >= 0 {
				text = text[:i] + text[i+len(cursorMark):]
				r.Context.Cursor = contextpack.Cursor{Path: name, Offset: i, Encoding: contextpack.EncodingByteOffset}
			}
			r.Context.Files = append(r.Context.Files, contextpack.File{Path: name, Content: text, HasContent: true})
		case "edit":
			r.RecentEdits = append(r.RecentEdits, RecentEdit{Path: name, Diff: string(f.Data)})
		case "output":
			c.output = strings.TrimSuffix(string(f.Data), "\n")
		}
	}
	r.Context.RepoName = c.opts["repo"]
	if v := c.opts["format"]; v != "" {
		if r.Format, err = ParseEditFormat(v); err != nil {
			t.Fatal(err)
		}
	}
	r.Model = c.opts["model"]
	r.TokenBudget, _ = strconv.Atoi(c.opts["budget"])
	r.Generation.MaxTokens, _ = strconv.Atoi(c.opts["max_tokens"])
	if v := c.opts["finish"]; v != "" {
		c.finish = finishNames[v]
	}
	return c
}

// golden compares got with the case's section name, or rewrites it.
func (c *editCase) golden(t *testing.T, name, got string) {
	t.Helper()
	for i, f := range c.archive.Files {
		if f.Name == name {
			if *update {
				c.archive.Files[i].Data = []byte(got)
				return
			}
			if string(f.Data) != got {
				t.Errorf("%s differs (go test ./server/pipeline -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s", name, t.Name(), got, f.Data)
			}
			return
		}
	}
	if !*update {
		t.Errorf("no %s section (go test -update adds it)", name)
		return
	}
	c.archive.Files = append(c.archive.Files, txtar.File{Name: name, Data: []byte(got)})
}

func (c *editCase) save(t *testing.T) {
	if *update {
		if err := os.WriteFile(c.path, txtar.Format(c.archive), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// describeEdit is an EditResult in words, for the goldens.
func describeEdit(res *EditResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s\nregion: %q\n", res.Format, res.File[res.Region.Start:res.Region.End])
	if res.Edit != nil {
		e := res.Edit
		fmt.Fprintf(&b, "edit: %s [%d, %d) %q -> %q\n", e.Path, e.Start, e.End, res.File[e.Start:e.End], e.Text)
	} else {
		fmt.Fprintf(&b, "no edit: %s\n", res.NoEditReason)
	}
	fmt.Fprintf(&b, "prompt tokens: %d\n", res.PlannedPromptTokens)
	for _, s := range res.Manifest.Sources {
		fmt.Fprintf(&b, "source: %s %s %d-%d included=%v %s\n", s.Kind, s.Path, s.StartLine, s.EndLine, s.Included, s.Reason)
	}
	for _, w := range res.Manifest.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// TestEditPromptGoldens renders each case's prompt with the real context
// builder and tokenizer, checks it against its golden and its count
// against the tokenizer, answers it with the case's crafted output and
// checks what is read back.
func TestEditPromptGoldens(t *testing.T) {
	paths, _ := filepath.Glob("testdata/edit/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no cases")
	}
	tok := qwen(t)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			c := loadEditCase(t, path)
			be := &cannedBackend{out: c.output, finish: c.finish}
			p, err := New(DefaultConfig(), newEditBuilder(t, 8192), be, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var streamed strings.Builder
			res, err := p.PredictEdit(context.Background(), c.req, Stream{OnDelta: func(_ int, s string) error {
				streamed.WriteString(s)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			prompt := be.got.Prompt
			if n := tok.CountWithSpecial(prompt); n != res.PlannedPromptTokens || n != be.got.PromptTokens {
				t.Errorf("prompt counted %d, planned %d, sent as %d", n, res.PlannedPromptTokens, be.got.PromptTokens)
			}
			budget := c.req.TokenBudget
			if budget == 0 {
				budget = 8192
			}
			if res.PlannedPromptTokens+be.got.MaxTokens > budget {
				t.Errorf("prompt %d + %d to generate > budget %d", res.PlannedPromptTokens, be.got.MaxTokens, budget)
			}
			if streamed.String() != res.Candidates[0].Text {
				t.Errorf("streamed %q, result %q", streamed.String(), res.Candidates[0].Text)
			}
			checkEdit(t, res)
			c.golden(t, "want.prompt", prompt)
			c.golden(t, "want.result", describeEdit(res))
			c.save(t)
		})
	}
}

// checkEdit holds the properties every edit has: it lies in the region,
// replaces what it replaces by something else, and is smallest (its text
// and what it replaces share neither first nor last character).
func checkEdit(t *testing.T, res *EditResult) {
	t.Helper()
	e := res.Edit
	if e == nil {
		if res.NoEditReason == "" {
			t.Error("no edit and no reason")
		}
		return
	}
	if res.NoEditReason != "" {
		t.Errorf("an edit with a no-edit reason %q", res.NoEditReason)
	}
	if e.Start < res.Region.Start || e.End > res.Region.End || e.Start > e.End || e.Path != res.Path {
		t.Fatalf("edit %s [%d, %d) outside the region [%d, %d) of %s", e.Path, e.Start, e.End, res.Region.Start, res.Region.End, res.Path)
	}
	old := res.File[e.Start:e.End]
	if old == e.Text {
		t.Errorf("edit replaces %q by itself", old)
	}
	if old != "" && e.Text != "" && (old[0] == e.Text[0] || old[len(old)-1] == e.Text[len(e.Text)-1]) {
		t.Errorf("edit %q -> %q is not the smallest", old, e.Text)
	}
}

// Bad edit requests are refused naming the field.
func TestPredictEditValidates(t *testing.T) {
	p, err := New(DefaultConfig(), newEditBuilder(t, 4096), &cannedBackend{}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base := func() *EditRequest {
		return &EditRequest{Request: *req("x = 1\n")}
	}
	for _, tc := range []struct {
		field string
		mut   func(r *EditRequest)
	}{
		{"generation.candidates", func(r *EditRequest) { r.Generation.Candidates = 2 }},
		{"format", func(r *EditRequest) { r.Format = 7 }},
		{"recent_edits[0].path", func(r *EditRequest) { r.RecentEdits = []RecentEdit{{Diff: "@@"}} }},
		{"recent_edits[0].diff", func(r *EditRequest) { r.RecentEdits = []RecentEdit{{Path: "a", Diff: "\xc3("}} }},
		{"recent_edits[0].diff", func(r *EditRequest) {
			r.RecentEdits = []RecentEdit{{Path: "a", Diff: strings.Repeat("x", 65<<10)}}
		}},
		{"recent_edits", func(r *EditRequest) { r.RecentEdits = make([]RecentEdit, 65) }},
		{"region", func(r *EditRequest) { r.Region = &Span{Start: 3, End: 1} }},
		{"region", func(r *EditRequest) { r.Region = &Span{Start: 0, End: 2} }}, // the cursor is at 6
		{"repository.files", func(r *EditRequest) { r.Context.Files = nil }},
	} {
		r := base()
		tc.mut(r)
		_, err := p.PredictEdit(context.Background(), r, Stream{})
		c := Classify(err)
		if c.Kind != KindInvalidArgument || c.Field != tc.field {
			t.Errorf("%s: %v (kind %v field %q)", tc.field, err, c.Kind, c.Field)
		}
	}
	// A builder that cannot count prompts cannot predict edits.
	q, err := New(DefaultConfig(), textBuilder{}, &cannedBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.PredictEdit(context.Background(), base(), Stream{}); err != ErrNoEditPrediction {
		t.Errorf("textBuilder: %v", err)
	}
}

func TestEditFormatForModel(t *testing.T) {
	for model, want := range map[string]EditFormat{
		"zeta": EditFormatZeta, "hf.co/bartowski/zed-industries_zeta-GGUF:Q4_K_M": EditFormatZeta,
		"nate/instinct:latest": EditFormatInstinct, "Instinct": EditFormatInstinct,
		"qwen2.5-coder:7b-base": EditFormatUnspecified, "zetacorp/coder": EditFormatUnspecified,
	} {
		if got := EditFormatForModel(model); got != want {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
	if f, err := ParseEditFormat("Instinct"); err != nil || f != EditFormatInstinct {
		t.Errorf("ParseEditFormat: %v %v", f, err)
	}
	if _, err := ParseEditFormat("zeta2"); err == nil {
		t.Error("zeta2 parsed")
	}
}

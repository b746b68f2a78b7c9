package lsp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/servertest"
)

// rewriter is a backend that answers a Zeta prompt as a Zeta model would,
// with the editable region rewritten by rewrite (which gets the region
// with the cursor marker): the case of an edit the tiny model's random
// text cannot produce. It keeps the prompts.
type rewriter struct {
	mu      sync.Mutex
	rewrite func(region string) string
	prompts []string
}

func (r *rewriter) Ping(context.Context) error            { return nil }
func (r *rewriter) Model(string) string                   { return "zeta" }
func (r *rewriter) ContextTokens(string) int              { return 8192 }
func (r *rewriter) MaxTokens(n int) int                   { return max(n, 16) }
func (r *rewriter) CheckOptions(*inference.Request) error { return nil }
func (r *rewriter) Generate(_ context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	r.mu.Lock()
	r.prompts = append(r.prompts, req.Prompt)
	rewrite := r.rewrite
	r.mu.Unlock()
	const start, end = "<|editable_region_start|>\n", "\n<|editable_region_end|>"
	_, rest, _ := strings.Cut(req.Prompt, start)
	region, _, _ := strings.Cut(rest, end)
	out := start + strings.ReplaceAll(rewrite(region), "<|user_cursor_is_here|>", "")
	if err := d(0, out); err != nil {
		return nil, err
	}
	return &inference.Result{Model: "zeta", Candidates: []inference.Candidate{{Text: out, Finish: inference.FinishStopSequence, Tokens: 9}}}, nil
}

func (r *rewriter) set(f func(string) string) {
	r.mu.Lock()
	r.rewrite = f
	r.mu.Unlock()
}

func (r *rewriter) lastPrompt() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prompts[len(r.prompts)-1]
}

// The editor's edits become the recent edits of the next prediction (a
// diff of what was typed, in the prompt); infill/predictEdit answers an
// edit away from the cursor as a TextEdit in the editor's UTF-16
// positions; an inline completion with editPrediction on shows an edit at
// the cursor as its item and an edit elsewhere as nothing.
func TestPredictEditInEditor(t *testing.T) {
	root := writeRepo(t, map[string]string{"geo/util.py": utilPy, "geo/main.py": mainPy})
	be := &rewriter{}
	srv := servertest.StartLocal(t, be)
	c, err := infill.Dial(srv.Addr, infill.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := startEditor(t, c, Config{})
	e.initialize(map[string]any{"rootUri": "file://" + root, "initializationOptions": map[string]any{"editPrediction": true}})
	uri := "file://" + root + "/geo/main.py"
	e.open(uri, "python", mainPy)
	// The user renames area's parameter: line 3, "def area(r):" -> "def area(radius):".
	e.change(uri, 2, 3, 10, 3, 10, "adius")

	// An edit away from the cursor: the model finishes the rename on the
	// next lines.
	be.set(func(region string) string { return strings.Replace(region, "helper(r)", "helper(radius)", 1) })
	m := e.call(methodPredictEdit, position(uri, 4, 23)) // after `x = `, line 4 (UTF-16: the emoji counts 2)
	if m.Error != nil {
		t.Fatal(m.Error)
	}
	var res predictEditResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Edit == nil || res.AtCursor || res.Edit.NewText != "adius" || res.Edit.Range.Start.Line != 5 ||
		res.Edit.Range.Start.Character != 19 || res.Edit.Range.End != res.Edit.Range.Start || res.EditableRange == nil {
		t.Fatalf("predictEdit %s", m.Result)
	}
	prompt := be.lastPrompt()
	if !strings.Contains(prompt, "User edited geo/main.py:\n```diff\n@@ -1,6 +1,6 @@") || !strings.Contains(prompt, "-def area(r):\n+def area(radius):\n") {
		t.Errorf("the prompt lacks the rename as a recent edit:\n%s", prompt)
	}
	if items := inlineItems(t, e.call(methodInlineCompletion, position(uri, 4, 23))); len(items) != 0 {
		t.Errorf("inline items %+v for an edit away from the cursor", items)
	}

	// An edit at the cursor: an inline item from the cursor.
	be.set(func(region string) string {
		return strings.Replace(region, "<|user_cursor_is_here|>", "radius * 2<|user_cursor_is_here|>", 1)
	})
	items := inlineItems(t, e.call(methodInlineCompletion, position(uri, 4, 23)))
	if len(items) != 1 || items[0].InsertText != "radius * 2" || items[0].Range == nil || items[0].Range.Start.Line != 4 ||
		items[0].Range.Start.Character != 23 {
		t.Fatalf("inline items %+v, want \"radius * 2\" at 4:23", items)
	}
	// No edit: the region as it was.
	be.set(func(region string) string { return region })
	m = e.call(methodPredictEdit, position(uri, 4, 23))
	if err := json.Unmarshal(m.Result, &res); err != nil || res.Edit != nil || !strings.Contains(res.NoEditReason, "kept") {
		t.Fatalf("no edit: %s", m.Result)
	}
	if err := e.shutdown(); err != nil {
		t.Fatal(err)
	}
}

// The history groups keystrokes as a person's edits: changes close in
// time and place are one edit; a change far away, after a pause or in
// another document starts the next; only the last maxEdits are kept, and
// only those of the request's repository are sent.
func TestEditHistoryGroups(t *testing.T) {
	var h editHistory
	r1, r2 := &repo{}, &repo{}
	now := time.Unix(1000, 0)
	doc := func(uri string, r *repo, text string) *document {
		return &document{uri: uri, repo: r, rel: strings.TrimPrefix(uri, "file:///"), text: text}
	}
	lines := strings.Repeat("line\n", 40)
	a := doc("file:///a.py", r1, lines)
	type step struct {
		d       *document
		newText string
		after   time.Duration
	}
	for _, s := range []step{
		{a, "x" + lines, 0},                           // line 0
		{a, "xy" + lines, 100 * time.Millisecond},     // same place: the same edit
		{a, "xy" + lines + "end\n", time.Second},      // line 40: another edit
		{a, "xy" + lines + "end!\n", 3 * time.Second}, // a pause: another
		{doc("file:///b.py", r2, "b\n"), "bb\n", 0},   // another document and repository
		{doc("file:///c.py", r1, "c\n"), "cc\n", 0},   // another document
	} {
		now = now.Add(s.after)
		old := s.d.text
		s.d.text = s.newText
		h.changed(s.d, old, now)
	}
	got := h.recent(r1)
	var paths []string
	for _, e := range got {
		paths = append(paths, e.GetPath())
	}
	if strings.Join(paths, " ") != "a.py a.py a.py c.py" || !strings.Contains(got[0].GetDiff(), "-line\n+xyline\n") ||
		!strings.Contains(got[3].GetDiff(), "-c\n+cc\n") {
		t.Fatalf("recent edits %v", got)
	}
	if b := h.recent(r2); len(b) != 1 || b[0].GetPath() != "b.py" {
		t.Fatalf("the other repository's %v", b)
	}
	for i := 0; i < 2*maxEdits; i++ {
		d := doc("file:///many.py", r1, "")
		now = now.Add(2 * editGroupGap)
		h.changed(d, strings.Repeat("v\n", i), now)
	}
	if n := len(h.recent(r1)); n > maxEdits+1 {
		t.Fatalf("%d edits kept", n)
	}
}

package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// PredictEdit makes fakePipe an edit predictor: it records the request and
// answers with the text of its deltas inserted at the cursor.
func (f *fakePipe) PredictEdit(ctx context.Context, req *pipeline.EditRequest, st pipeline.Stream) (*pipeline.EditResult, error) {
	f.mu.Lock()
	f.gotEdits = append(f.gotEdits, req)
	f.mu.Unlock()
	c := req.Context
	var file string
	for _, fl := range c.Files {
		if fl.Path == c.Cursor.Path {
			file = fl.Content
		}
	}
	text := strings.Join(f.deltas, "")
	res := &pipeline.EditResult{Result: pipeline.Result{Model: "qwen-test", PromptTokens: 300, PlannedPromptTokens: 300,
		CompletionTokens: 7, Total: 250 * time.Millisecond, TimeToFirstToken: 50 * time.Millisecond, PromptEval: 40 * time.Millisecond,
		Candidates: []inference.Candidate{{Text: "<raw model output>", Finish: inference.FinishStopSequence, Tokens: 7}}},
		Format: req.Format, Region: *req.Region, Path: c.Cursor.Path, File: file}
	if text != "" {
		res.Edit = &pipeline.PredictedEdit{Path: c.Cursor.Path, Span: pipeline.Span{Start: c.Cursor.Offset, End: c.Cursor.Offset}, Text: text}
	} else {
		res.NoEditReason = "the model kept the editable region as it was"
	}
	return res, ctx.Err()
}

func (f *fakePipe) editRequests() []*pipeline.EditRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pipeline.EditRequest(nil), f.gotEdits...)
}

// describeEdit is an edit request in words, for the goldens.
func describeEdit(r *pipeline.EditRequest) []byte {
	var b strings.Builder
	c := r.Context
	fmt.Fprintf(&b, "format: %s partial: %v region: [%d, %d) cursor: %d\n", r.Format, r.Partial, r.Region.Start, r.Region.End, c.Cursor.Offset)
	for _, e := range r.RecentEdits {
		fmt.Fprintf(&b, "--- recent edit %s\n%s\n", e.Path, e.Diff)
	}
	b.Write(describe(&r.Request))
	return []byte(b.String())
}

var (
	zedID      = regexp.MustCompile(`"id":"cmpl-[0-9a-f]+"`)
	zedCreated = regexp.MustCompile(`"created":[0-9]+`)
)

// zetaRule reads an answer as Zed does (crates/zeta_prompt zeta1
// clean_zeta1_model_output at 95586ff0, and zeta1.rs parse_edits): the
// cursor marker removed, the text after the start marker (and its newline)
// up to the end marker (and the newline before it), or the end.
func zetaRule(answer string) string {
	s := strings.ReplaceAll(answer, "<|user_cursor_is_here|>", "")
	if _, after, ok := strings.Cut(s, "<|editable_region_start|>"); ok {
		s = strings.TrimPrefix(after, "\n")
	}
	if before, _, ok := strings.Cut(s, "<|editable_region_end|>"); ok {
		s = strings.TrimSuffix(before, "\n")
	}
	return s
}

// TestZedRecordedBodies replays the bodies Zed's edit-prediction providers
// send (testdata/zed, SOURCES.md): Zeta prompts become edit predictions
// with Zed's own region, cursor and history, answered in the shape Zed
// reads (the region with the edit made); fill-in-the-middle prompts are
// completions.
func TestZedRecordedBodies(t *testing.T) {
	paths, _ := filepath.Glob("testdata/zed/*.json")
	if len(paths) != 4 {
		t.Fatalf("%d recorded bodies", len(paths))
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			pipe := &fakePipe{deltas: []string{"2 * math", ".pi * r"}}
			url := startFake(t, pipe)
			endpoint := "/api/generate"
			if strings.HasPrefix(name, "openai") {
				endpoint = "/v1/completions"
			}
			resp := do(t, http.MethodPost, url+endpoint, readFile(t, path))
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			var text string
			if endpoint == "/api/generate" {
				var r struct{ Response string }
				if err := json.Unmarshal(resp.body, &r); err != nil {
					t.Fatalf("%v: %s", err, resp.body)
				}
				text = r.Response
			} else {
				var r struct{ Choices []struct{ Text string } }
				if err := json.Unmarshal(resp.body, &r); err != nil || len(r.Choices) != 1 {
					t.Fatalf("%v: %s", err, resp.body)
				}
				text = r.Choices[0].Text
			}
			var got []byte
			if strings.Contains(name, "zeta") {
				edits := pipe.editRequests()
				if len(edits) != 1 || len(pipe.requests()) != 0 {
					t.Fatalf("%d edit predictions, %d completions", len(edits), len(pipe.requests()))
				}
				e := edits[0]
				got = describeEdit(e)
				var file string
				for _, f := range e.Context.Files {
					if f.Path == e.Context.Cursor.Path {
						file = f.Content
					}
				}
				// Zed diffs what it reads against its region: the region
				// with the edit made.
				cur := e.Context.Cursor.Offset
				want := file[e.Region.Start:cur] + "2 * math.pi * r" + file[cur:e.Region.End]
				if zetaRule(text) != want {
					t.Errorf("Zed reads %q, want %q", zetaRule(text), want)
				}
				if len(e.RecentEdits) != 2 || e.Format != pipeline.EditFormatZeta || e.Partial || e.Generation.Stop != nil {
					t.Errorf("edit request %+v", e)
				}
			} else {
				reqs := pipe.requests()
				if len(reqs) != 1 || text != "2 * math.pi * r" {
					t.Fatalf("%d completions, text %q", len(reqs), text)
				}
				got = describe(reqs[0])
			}
			body := createdAt.ReplaceAll(resp.body, []byte(`"created_at":"<time>"`))
			body = zedCreated.ReplaceAll(zedID.ReplaceAll(body, []byte(`"id":"cmpl-ID"`)), []byte(`"created":0`))
			checkGolden(t, filepath.Join("testdata/zed", name+".golden"),
				txtar.File{Name: "pipeline", Data: got}, txtar.File{Name: "response", Data: body})
		})
	}
}

// A Zeta prompt parsed back: malformed ones are not Zeta's (and go the
// fill-in-the-middle way, where they are refused as plain generation); a
// Zed excerpt that does not start the file is partial; no edit answers
// the region unchanged.
func TestZetaPromptEdgeCases(t *testing.T) {
	body := string(readFile(t, "testdata/zed/ollama-zeta.json"))
	pipe := &fakePipe{}
	url := startFake(t, pipe)
	for _, tc := range []struct {
		name   string
		mut    func(string) string
		status int
	}{
		{"no cursor", func(s string) string { return strings.Replace(s, "<|user_cursor_is_here|>", "", 1) }, 400},
		{"two regions", func(s string) string {
			return strings.Replace(s, "<|editable_region_start|>", "<|editable_region_start|><|editable_region_start|>", 1)
		}, 400},
		{"no response header", func(s string) string { return strings.Replace(s, `### Response:\n`, "", 1) }, 400},
		{"partial", func(s string) string { return strings.Replace(s, `<|start_of_file|>\n`, "", 1) }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, http.MethodPost, url+"/api/generate", []byte(tc.mut(body)))
			if resp.status != tc.status {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
		})
	}
	edits := pipe.editRequests()
	if len(edits) != 1 || !edits[0].Partial {
		t.Fatalf("edit requests %+v", edits)
	}
	// No edit: the answer is the region as it was, which Zed reads as no
	// change.
	resp := do(t, http.MethodPost, url+"/v1/completions", readFile(t, "testdata/zed/openai-zeta.json"))
	var r struct{ Choices []struct{ Text string } }
	if err := json.Unmarshal(resp.body, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("%v: %s", err, resp.body)
	}
	e := pipe.editRequests()[1]
	file := e.Context.Files[0].Content
	if got := zetaRule(r.Choices[0].Text); got != file[e.Region.Start:e.Region.End] {
		t.Errorf("no edit answered %q", got)
	}
}

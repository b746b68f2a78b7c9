package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/servertest"
)

// continueRule reads an /api/generate stream the way Continue's ollama
// provider does (core/llm/llms/Ollama.ts at d0a3c0b, _streamFim): the body
// is split at newlines, text after the last newline is dropped, each
// non-blank line is JSON; a line with "response" gives text, one with
// "error" throws.
func continueRule(t *testing.T, body []byte) string {
	t.Helper()
	lines := strings.Split(string(body), "\n")
	if tail := lines[len(lines)-1]; tail != "" {
		t.Errorf("Continue drops the last line, which has no newline: %q", tail)
	}
	var text strings.Builder
	for _, line := range lines[:len(lines)-1] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var j map[string]any
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("Continue: Error parsing Ollama response: %v %s", err, line)
		}
		if r, ok := j["response"]; ok {
			text.WriteString(r.(string))
		} else if e, ok := j["error"]; ok {
			t.Fatalf("Continue throws: %v", e)
		}
	}
	return text.String()
}

// twinnyRule reads a stream the way Twinny does (src/extension/llm.ts and
// utils.ts getFimDataFromProvider at 193d14c, v3.23.31): lines split at
// newlines (the rest flushed at the end), an optional "data:" prefix
// dropped, data.response appended; a line that is not JSON is skipped.
func twinnyRule(t *testing.T, body []byte) string {
	t.Helper()
	var text strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		if after, ok := strings.CutPrefix(line, "data:"); ok {
			line = after
		}
		var j struct {
			Response *string `json:"response"`
		}
		if json.Unmarshal([]byte(line), &j) != nil || j.Response == nil {
			continue
		}
		text.WriteString(*j.Response)
	}
	return text.String()
}

var createdAt = regexp.MustCompile(`"created_at":"[^"]*"`)

func TestOllamaRecordedBodies(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/ollama/*.json")
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		if name == "continue-show" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			pipe := &fakePipe{deltas: []string{"2 * math", ".pi * r\n"}}
			url := startFake(t, pipe)
			resp := do(t, http.MethodPost, url+"/api/generate", readFile(t, path))
			if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("status %d %s: %s", resp.status, resp.header.Get("Content-Type"), resp.body)
			}
			reqs := pipe.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d pipeline calls", len(reqs))
			}
			checkGolden(t, filepath.Join("testdata/ollama", name+".golden"),
				txtar.File{Name: "pipeline", Data: describe(reqs[0])},
				txtar.File{Name: "response", Data: createdAt.ReplaceAll(resp.body, []byte(`"created_at":"<time>"`))})
			rule := continueRule
			if strings.HasPrefix(name, "twinny") {
				rule = twinnyRule
			}
			if got := rule(t, resp.body); got != "2 * math.pi * r\n" {
				t.Errorf("text %q", got)
			}
			// Whatever the plugin's template, infill sees the same cursor:
			// the text around it is the file's, and the file is named when
			// the plugin named it.
			c := reqs[0].Context
			var cursor string
			for _, f := range c.Files {
				if f.Path == c.Cursor.Path {
					cursor = f.Content[:c.Cursor.Offset]
				}
			}
			// (Twinny's repository-level prompt is trimmed, its last space too.)
			if !strings.HasPrefix(cursor, "import math\n") || !strings.HasSuffix(strings.TrimRight(cursor, " "), "def circumference(r):\n    return") {
				t.Errorf("prefix %q", cursor)
			}
			if name != "continue-fim-no-snippets" && name != "twinny-codeqwen" && !strings.HasSuffix(c.Cursor.Path, "circle.py") {
				t.Errorf("cursor file %q", c.Cursor.Path)
			}
		})
	}
}

func TestOllamaNotStreamed(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{deltas: []string{"a", "b"}, finish: inference.FinishLength}
	url := startFake(t, pipe)
	resp := do(t, http.MethodPost, url+"/api/generate", []byte(`{"model":"m","prompt":"x = ","suffix":"\n","stream":false,"options":{"num_predict":0,"temperature":0.5,"seed":7,"top_k":0}}`))
	var r api.GenerateResponse
	if err := json.Unmarshal(resp.body, &r); err != nil || resp.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%v: %s", err, resp.body)
	}
	if r.Response != "ab" || !r.Done || r.DoneReason != "length" || r.EvalCount != 2 || r.PromptEvalCount != 120 || r.Model != "m" {
		t.Fatalf("response %+v", r)
	}
	g := pipe.requests()[0].Generation
	if g.MaxTokens != 0 || *g.Temperature != 0.5 || *g.Seed != 7 || g.TopK != nil || pipe.requests()[0].Model != "m" {
		t.Fatalf("generation %+v (num_predict 0 is Ollama's no limit: the server's default)", g)
	}
}

func TestOllamaDiscovery(t *testing.T) {
	t.Parallel()
	url := startFake(t, &fakePipe{})
	// Continue's listModels and Twinny's fetchModels read models[].name.
	var tags struct {
		Models []struct{ Name string } `json:"models"`
	}
	if resp := do(t, http.MethodGet, url+"/api/tags", nil); json.Unmarshal(resp.body, &tags) != nil ||
		len(tags.Models) != 1 || tags.Models[0].Name != "qwen2.5-coder:1.5b-base" {
		t.Fatalf("/api/tags: %s", resp.body)
	}
	if resp := do(t, http.MethodGet, url+"/api/version", nil); string(resp.body) != "{\"version\":\"0.24.0\"}\n" {
		t.Fatalf("/api/version: %s", resp.body)
	}
	// Continue's ensureModelInfo: FIM when the template mentions .Suffix,
	// num_ctx from the parameters lines.
	resp := do(t, http.MethodPost, url+"/api/show", readFile(t, "testdata/ollama/continue-show.json"))
	var show struct {
		Template     string   `json:"template"`
		Parameters   string   `json:"parameters"`
		Capabilities []string `json:"capabilities"`
	}
	if resp.status != http.StatusOK || json.Unmarshal(resp.body, &show) != nil || !strings.Contains(show.Template, ".Suffix") {
		t.Fatalf("/api/show: %d %s", resp.status, resp.body)
	}
	numCtx := 0
	for _, line := range strings.Split(show.Parameters, "\n") {
		if m := regexp.MustCompile(`^(\S+)\s+((?:".*")|\S+)$`).FindStringSubmatch(line); m != nil && m[1] == "num_ctx" {
			numCtx, _ = strconv.Atoi(m[2])
		}
	}
	if numCtx != 8192 || strings.Join(show.Capabilities, ",") != "completion,insert" {
		t.Fatalf("/api/show: num_ctx %d, capabilities %v", numCtx, show.Capabilities)
	}
	if resp := do(t, http.MethodPost, url+"/api/show", []byte(`{"model":"llama3:8b"}`)); resp.status != http.StatusNotFound ||
		!bytes.HasPrefix(resp.body, []byte(`{"error":"model 'llama3:8b' not found`)) {
		t.Fatalf("/api/show of another model: %d %s", resp.status, resp.body)
	}
}

func TestOllamaBadInput(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{}
	url := startFake(t, pipe)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		says                     string
	}{
		{"malformed JSON", http.MethodPost, "/api/generate", `{"prompt":`, 400, "malformed JSON"},
		{"wrong option type", http.MethodPost, "/api/generate", `{"prompt":"a","suffix":"b","options":{"num_predict":"x"}}`, 400, "num_predict"},
		{"too large", http.MethodPost, "/api/generate", `{"prompt":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "limit"},
		{"wrong method", http.MethodGet, "/api/generate", ``, 405, "not allowed"},
		{"plain generation", http.MethodPost, "/api/generate", `{"model":"m","prompt":"Why is the sky blue?"}`, 400, "fill-in-the-middle only"},
		{"chat", http.MethodPost, "/api/chat", `{"model":"m","messages":[]}`, 501, "send chat"},
		{"embeddings", http.MethodPost, "/api/embed", `{"model":"m","input":"x"}`, 501, "embedding"},
		{"show malformed", http.MethodPost, "/api/show", `[`, 400, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, tc.method, url+tc.path, []byte(tc.body))
			var e struct {
				Error string `json:"error"`
			}
			if resp.status != tc.status || json.Unmarshal(resp.body, &e) != nil || !strings.Contains(e.Error, tc.says) {
				t.Fatalf("got %d %s, want %d with an Ollama error saying %q", resp.status, resp.body, tc.status, tc.says)
			}
		})
	}
	if n := len(pipe.requests()); n != 0 {
		t.Fatalf("%d bad requests reached the pipeline", n)
	}
	// Unknown fields and the options infill ignores are accepted.
	resp := do(t, http.MethodPost, url+"/api/generate", []byte(`{"prompt":"a","suffix":"b","images":["x"],"keep_alive":"5m","context":[1,2],"options":{"num_ctx":9,"mirostat":1},"zzz":{}}`))
	if resp.status != http.StatusOK {
		t.Fatalf("unknown fields: %d %s", resp.status, resp.body)
	}
	// An empty prompt loads the model, as Ollama answers it.
	resp = do(t, http.MethodPost, url+"/api/generate", []byte(`{"model":"m"}`))
	if !bytes.Contains(resp.body, []byte(`"done":true,"done_reason":"load"`)) {
		t.Fatalf("empty prompt: %s", resp.body)
	}
}

// An error after the first text arrives as Ollama sends it: a line with
// "error", which Continue throws.
func TestOllamaStreamError(t *testing.T) {
	t.Parallel()
	url := startFake(t, &fakePipe{deltas: []string{"x"}, err: inference.ErrUnavailable})
	resp := do(t, http.MethodPost, url+"/api/generate", []byte(`{"prompt":"a","suffix":"b"}`))
	lines := strings.Split(strings.TrimSuffix(string(resp.body), "\n"), "\n")
	if resp.status != http.StatusOK || len(lines) != 2 || !strings.HasPrefix(lines[1], `{"error":"backend unavailable`) {
		t.Fatalf("%d %q", resp.status, lines)
	}
}

func FuzzOllamaGenerate(f *testing.F) {
	paths, _ := filepath.Glob("testdata/ollama/*.json")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"prompt":"<|fim_prefix|><|fim_suffix|>"}`))
	f.Add([]byte(`{"prompt":"[SUFFIX][PREFIX]<|file_sep|>\n<|repo_name|>"}`))
	f.Add([]byte(`{"prompt":"<|repo_name|>r\n<|file_sep|>a b\n// File: x\n// Content: \n y<|file_sep|>"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		url := startFake(t, &fakePipe{deltas: []string{"x"}})
		if resp := do(t, http.MethodPost, url+"/api/generate", body); resp.status >= 500 {
			t.Fatalf("%d for %q: %s", resp.status, body, resp.body)
		}
	})
}

// TestOllamaEndToEnd drives /api/* against the real server and the real
// Ollama with Ollama's own Go client (github.com/ollama/ollama/api, a
// client nobody here wrote) and with the recorded plugin bodies.
func TestOllamaEndToEnd(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	base, _ := url.Parse("http://" + srv.HTTPAddr)
	client := api.NewClient(base, http.DefaultClient)
	ctx := context.Background()

	t.Run("discovery", func(t *testing.T) {
		v, err := client.Version(ctx)
		if err != nil || v != "0.24.0" {
			t.Fatalf("version %q, %v", v, err)
		}
		list, err := client.List(ctx)
		if err != nil || len(list.Models) != 1 || list.Models[0].Name != srv.Model {
			t.Fatalf("list %+v, %v", list, err)
		}
		show, err := client.Show(ctx, &api.ShowRequest{Model: srv.Model})
		if err != nil || !strings.Contains(show.Template, ".Suffix") || len(show.Capabilities) != 2 {
			t.Fatalf("show %+v, %v", show, err)
		}
	})

	prefix := "import math\n\n\ndef area(r):\n    return "
	t.Run("api client, streamed", func(t *testing.T) {
		var parts []string
		var final api.GenerateResponse
		err := client.Generate(ctx, &api.GenerateRequest{Model: srv.Model, Prompt: prefix, Suffix: "\n",
			Options: map[string]any{"num_predict": 12}}, func(r api.GenerateResponse) error {
			if r.Done {
				final = r
			} else {
				parts = append(parts, r.Response)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !final.Done || final.EvalCount < 1 || final.PromptEvalCount < 10 || final.TotalDuration <= 0 || final.Response != "" {
			t.Fatalf("final message %+v", final)
		}
		if final.DoneReason == "length" && (len(parts) == 0 || final.EvalCount != 12) {
			t.Fatalf("%d parts, %d tokens for a length-limited generation", len(parts), final.EvalCount)
		}
	})

	t.Run("api client, not streamed", func(t *testing.T) {
		no := false
		calls := 0
		var got api.GenerateResponse
		err := client.Generate(ctx, &api.GenerateRequest{Model: srv.Model, Prompt: prefix, Suffix: "\n", Stream: &no,
			Options: map[string]any{"num_predict": 12}}, func(r api.GenerateResponse) error { calls++; got = r; return nil })
		if err != nil || calls != 1 || !got.Done || got.EvalCount < 1 || (got.DoneReason == "length" && got.Response == "") {
			t.Fatalf("%d calls, %+v, %v", calls, got, err)
		}
	})

	t.Run("api client, errors", func(t *testing.T) {
		err := client.Generate(ctx, &api.GenerateRequest{Model: "no-such-model", Prompt: prefix, Suffix: "\n"},
			func(api.GenerateResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !strings.Contains(se.ErrorMessage, "no-such-model") {
			t.Fatalf("unknown model: %v", err)
		}
		err = client.Generate(ctx, &api.GenerateRequest{Model: srv.Model, Prompt: "Why is the sky blue?"},
			func(api.GenerateResponse) error { return nil })
		if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain generation: %v", err)
		}
	})

	t.Run("recorded bodies", func(t *testing.T) {
		paths, _ := filepath.Glob("testdata/ollama/*.json")
		for _, path := range paths {
			name := strings.TrimSuffix(filepath.Base(path), ".json")
			if name == "continue-show" {
				continue
			}
			var m map[string]any
			_ = json.Unmarshal(readFile(t, path), &m)
			m["model"] = srv.Model // the name the user picks from /api/tags
			m["options"].(map[string]any)["num_predict"] = 16
			b, _ := json.Marshal(m)
			resp := do(t, http.MethodPost, "http://"+srv.HTTPAddr+"/api/generate", b)
			if resp.status != http.StatusOK {
				t.Fatalf("%s: %d %s", name, resp.status, resp.body)
			}
			rule := continueRule
			if strings.HasPrefix(name, "twinny") {
				rule = twinnyRule
			}
			rule(t, resp.body)
			lines := strings.Split(strings.TrimSpace(string(resp.body)), "\n")
			var final api.GenerateResponse
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil || !final.Done || final.PromptEvalCount < 10 {
				t.Fatalf("%s: last line %s", name, lines[len(lines)-1])
			}
		}
	})
}

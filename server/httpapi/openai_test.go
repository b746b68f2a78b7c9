package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"
	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// scriptBackend is the real Ollama backend's option checks and limits
// with a scripted Generate: it records each request (the prompt infill
// built) and answers with fixed deltas, which the real tiny model cannot
// (its text is random), so that responses can be golden files. Cases the
// real backend cannot produce on demand (failing mid-stream) are scripted
// too; the same surfaces run against the real Ollama in v1_e2e_test.go.
type scriptBackend struct {
	*inference.Ollama
	deltas []string
	finish inference.FinishReason
	// failAt, when >= 0, fails generation with ErrIncomplete after that
	// many deltas.
	failAt int

	mu   sync.Mutex
	reqs []inference.Request
}

// completionText is what scriptBackend generates: it holds "data:", which
// Twinny's parser would cut at if it were not escaped.
var completionText = []string{"(outer ** 2 - inner ** 2) * math.pi", "  # data: radii", "\n"}

func newScriptBackend(t *testing.T) *scriptBackend {
	t.Helper()
	cfg := inference.DefaultConfig()
	cfg.ContextTokens = 4096
	o, err := inference.NewOllama(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return &scriptBackend{Ollama: o, deltas: completionText, finish: inference.FinishStop, failAt: -1}
}

func (b *scriptBackend) Generate(ctx context.Context, req inference.Request, onDelta inference.DeltaFunc) (*inference.Result, error) {
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	res := &inference.Result{Model: b.Model(req.Model), PromptEvalTokens: req.PromptTokens}
	for i := range max(req.Candidates, 1) {
		var text strings.Builder
		for k, d := range b.deltas {
			if k == b.failAt {
				return nil, fmt.Errorf("%w: scripted failure", inference.ErrIncomplete)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := onDelta(i, d); err != nil {
				return nil, err
			}
			text.WriteString(d)
		}
		res.Candidates = append(res.Candidates, inference.Candidate{Index: i, Text: text.String(), Finish: b.finish, Tokens: len(b.deltas)})
	}
	return res, nil
}

func (b *scriptBackend) requests() []inference.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]inference.Request(nil), b.reqs...)
}

// newV1Server serves the HTTP surfaces with the real pipeline and
// contextpack Builder (Qwen2.5 tokenizer) in front of backend.
func newV1Server(t *testing.T, backend *scriptBackend, mutate func(*Config)) *httptest.Server {
	t.Helper()
	return newV1ServerGuarded(t, backend, mutate, nil)
}

// newV1ServerGuarded is newV1Server with the bearer token checks of guard
// (nil: none).
func newV1ServerGuarded(t *testing.T, backend *scriptBackend, mutate func(*Config), guard Guard) *httptest.Server {
	t.Helper()
	log := zaptest.NewLogger(t)
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	ccfg := contextpack.DefaultConfig()
	ccfg.ContextTokens = 4096
	builder, err := contextpack.NewBuilder(ccfg, tok, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(builder.Close)
	pipe, err := pipeline.New(pipeline.DefaultConfig(), builder, backend, log)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DefaultModel, cfg.ContextTokens, cfg.Version = backend.Model(""), 4096, "test"
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := New(cfg, pipe, nil, guard, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to the server and returns the response with its body
// read.
func post(t *testing.T, srv *httptest.Server, path, body string) (*http.Response, []byte) {
	t.Helper()
	return do(t, srv, http.MethodPost, path, body)
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return send(t, context.Background(), method, srv.URL+path, body)
}

// send sends a JSON body and returns the response with its body read.
func send(t *testing.T, ctx context.Context, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return sendRequest(t, req)
}

// sendRequest sends req and returns the response with its body read.
func sendRequest(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// pluginCase is a request body recorded from a plugin's source
// (testdata/openai, testdata/tabby): its comment names the plugin, its
// version and the source files, and "client: NAME" picks the rule that
// plugin parses the response with (clientRules).
type pluginCase struct {
	path   string
	ar     *txtar.Archive
	client string
	body   string
}

func loadPluginCases(t *testing.T) []pluginCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []pluginCase
	for _, p := range paths {
		if d := filepath.Base(filepath.Dir(p)); d != "openai" && d != "tabby" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := pluginCase{path: p, ar: txtar.Parse(data)}
		for _, line := range strings.Split(string(c.ar.Comment), "\n") {
			if v, ok := strings.CutPrefix(line, "client:"); ok {
				c.client = strings.TrimSpace(v)
			}
		}
		for _, f := range c.ar.Files {
			if f.Name == "request.json" {
				c.body = string(f.Data)
			}
		}
		if c.body == "" || clientRules[c.client] == nil {
			t.Fatalf("%s: needs a request.json section and a known client: line (have %q)", p, c.client)
		}
		cases = append(cases, c)
	}
	if len(cases) < 5 {
		t.Fatalf("found %d plugin cases, want the recorded ones", len(cases))
	}
	return cases
}

// clientRules parse a response the way each plugin does, returning the
// completion text it would show.
var clientRules = map[string]func(t fataler, resp *http.Response, body []byte) string{
	// Continue: @continuedev/fetch streamSse (split at "\n"; "data: [DONE]"
	// ends; a "data:" line is JSON, and one with "error" throws) and
	// OpenAI._legacystreamComplete, which yields value.choices?.[0]?.text.
	"continue": func(t fataler, resp *http.Response, body []byte) string {
		if resp.StatusCode != 200 {
			t.Fatalf("Continue throws on status %d", resp.StatusCode)
		}
		var out strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "data:[DONE]") || strings.HasPrefix(line, "data: [DONE]") {
				break
			}
			js, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				if js, ok = strings.CutPrefix(line, "data:"); !ok {
					continue
				}
			}
			var v struct {
				Error   any `json:"error"`
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(js), &v); err != nil {
				t.Fatalf("Continue: Malformed JSON sent from server: %s", js)
			}
			if v.Error != nil {
				t.Fatalf("Continue: Error streaming response: %v", v.Error)
			}
			if len(v.Choices) > 0 {
				out.WriteString(v.Choices[0].Text)
			}
		}
		return out.String()
	},
	// Twinny (providers lmstudio/deepseek): llm.ts splits the stream at
	// "\n" and safeParseJsonResponse takes JSON.parse(line.split("data:")[1])
	// (unparsable lines are dropped); getFimDataFromProvider's default
	// branch reads choices[0].text.
	"twinny": func(t fataler, resp *http.Response, body []byte) string {
		if resp.StatusCode != 200 {
			t.Fatalf("Twinny: Server responded with status code: %d", resp.StatusCode)
		}
		var out strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			js := line
			if strings.HasPrefix(line, "data:") {
				js = strings.Split(line, "data:")[1]
			}
			var v struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(js), &v) != nil || len(v.Choices) == 0 {
				continue
			}
			out.WriteString(v.Choices[0].Text)
		}
		return out.String()
	},
	// llama.vscode (use_openai_endpoint): the openai npm client's
	// completions.create with stream false; content is rsp.choices[0].text.
	"llama.vscode": func(t fataler, resp *http.Response, body []byte) string {
		var v struct {
			Choices []struct {
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Model string `json:"model"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil || len(v.Choices) == 0 {
			t.Fatalf("llama.vscode: status %d, body %s", resp.StatusCode, body)
		}
		return v.Choices[0].Text
	},
	// tabby-agent: fetchCompletion throws unless response.ok;
	// createCompletionResultItemFromResponse reads choices[0]?.text ?? ""
	// with id as the completion id and choices[0]?.index as its index.
	"tabby-agent": func(t fataler, resp *http.Response, body []byte) string {
		var v struct {
			ID      string `json:"id"`
			Choices []struct {
				Index *int    `json:"index"`
				Text  *string `json:"text"`
			} `json:"choices"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("tabby-agent: status %d, body %s", resp.StatusCode, body)
		}
		if v.ID == "" || len(v.Choices) != 1 || v.Choices[0].Index == nil || v.Choices[0].Text == nil {
			t.Fatalf("tabby-agent reads id, choices[0].index and choices[0].text; got %s", body)
		}
		return *v.Choices[0].Text
	},
}

var (
	idPattern      = regexp.MustCompile(`"id":"cmpl-[0-9a-f]+"`)
	createdPattern = regexp.MustCompile(`"created":[0-9]+`)
)

// normalize replaces what differs between runs (ids, times).
func normalize(b []byte) string {
	s := idPattern.ReplaceAllString(string(b), `"id":"cmpl-ID"`)
	return createdPattern.ReplaceAllString(s, `"created":0`)
}

// TestPluginRequests sends each request body recorded from a plugin's
// source through the real pipeline, checks that the plugin's own parsing
// rule reads back the whole completion, and compares the response and the
// prompt infill built with the golden want.response and want.prompt (run
// with -update to rewrite them, and review the diff).
func TestPluginRequests(t *testing.T) {
	t.Parallel()
	for _, c := range loadPluginCases(t) {
		name := strings.TrimSuffix(filepath.ToSlash(c.path)[len("testdata/"):], ".txtar")
		t.Run(name, func(t *testing.T) {
			backend := newScriptBackend(t)
			srv := newV1Server(t, backend, nil)
			resp, body := post(t, srv, "/v1/completions", c.body)
			text := clientRules[c.client](t, resp, body)
			if want := strings.Join(completionText, ""); text != want {
				t.Errorf("%s reads %q, want the whole completion %q\nbody:\n%s", c.client, text, want, body)
			}
			reqs := backend.requests()
			if len(reqs) != 1 {
				t.Fatalf("backend got %d requests, want 1", len(reqs))
			}
			got := map[string]string{
				"want.response": fmt.Sprintf("status: %d\ncontent-type: %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), normalize(body)),
				"want.prompt":   reqs[0].Prompt + "\n",
			}
			checkGolden(t, c.path, c.ar, got)
		})
	}
}

// checkGolden compares (or with -update rewrites) the want.* sections of
// the archive at path.
func checkGolden(t *testing.T, path string, ar *txtar.Archive, got map[string]string) {
	t.Helper()
	names := []string{"want.response", "want.prompt"}
	if *update {
		var files []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want.") {
				files = append(files, f)
			}
		}
		for _, n := range names {
			files = append(files, txtar.File{Name: n, Data: []byte(got[n])})
		}
		ar.Files = files
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, n := range names {
		var want []byte
		found := false
		for _, f := range ar.Files {
			if f.Name == n {
				want, found = f.Data, true
			}
		}
		if !found {
			t.Errorf("%s: %s missing; run go test ./server/httpapi -run TestPluginRequests -update", path, n)
			continue
		}
		if !bytes.Equal(want, []byte(got[n])) {
			t.Errorf("%s: %s differs (run with -update and review the diff):\n--- got ---\n%s\n--- want ---\n%s", path, n, got[n], want)
		}
	}
}

// sseEvents returns the data of each server-sent event in body.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		out = append(out, data)
	}
	return out
}

// TestOpenAIStreamShape checks a stream with two candidates and usage:
// text chunks carry their candidate's index and a null finish_reason, each
// candidate ends with a finish_reason chunk, the usage chunk has no
// choices, and [DONE] comes last.
func TestOpenAIStreamShape(t *testing.T) {
	t.Parallel()
	backend := newScriptBackend(t)
	backend.finish = inference.FinishBudget
	srv := newV1Server(t, backend, nil)
	resp, body := post(t, srv, "/v1/completions",
		`{"model":"","prompt":"def f(x):\n    return ","suffix":"\n","n":2,"stream":true,"stream_options":{"include_usage":true}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	events := sseEvents(t, body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
	}
	texts := map[int]string{}
	finish := map[int]string{}
	var usage *openAIUsage
	ids := map[string]bool{}
	for _, e := range events[:len(events)-1] {
		var c openAICompletion
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		ids[c.ID] = true
		if c.Object != "text_completion" || c.Model != backend.Model("") || c.Created == 0 {
			t.Errorf("chunk %q: want object text_completion, the model and created", e)
		}
		if c.Usage != nil {
			usage = c.Usage
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has choices: %q", e)
			}
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %q: want one choice", e)
		}
		ch := c.Choices[0]
		if ch.FinishReason != nil {
			finish[ch.Index] = *ch.FinishReason
			continue
		}
		if _, done := finish[ch.Index]; done {
			t.Errorf("text after candidate %d finished", ch.Index)
		}
		texts[ch.Index] += ch.Text
	}
	want := strings.Join(completionText, "")
	for i := range 2 {
		if texts[i] != want || finish[i] != "length" {
			t.Errorf("candidate %d: text %q finish %q, want %q and length (a latency budget is length)", i, texts[i], finish[i], want)
		}
	}
	if len(ids) != 1 {
		t.Errorf("chunks carry %d ids, want one", len(ids))
	}
	if usage == nil || usage.CompletionTokens != 2*len(completionText) || usage.PromptTokens < 1 ||
		usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens {
		t.Errorf("usage %+v", usage)
	}
	if id := resp.Header.Get("X-Request-Id"); !ids["cmpl-"+id] {
		t.Errorf("completion id %v is not cmpl-<X-Request-Id %s>", ids, id)
	}
}

// TestOpenAINonStream checks the plain response and what reaches the
// backend: options, n, stop as a string, the max_tokens cap, the seed drawn
// for sampling without one.
func TestOpenAINonStream(t *testing.T) {
	t.Parallel()
	backend := newScriptBackend(t)
	backend.finish = inference.FinishLength
	srv := newV1Server(t, backend, nil)
	resp, body := post(t, srv, "/v1/completions",
		`{"model":"m2","prompt":["x = "],"suffix":"","max_tokens":4096,"temperature":0.7,"top_p":0.9,"n":3,"stop":"\n\n","echo":false,"logprobs":null,"best_of":1,"user":"u"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var c openAICompletion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "text_completion" || c.Model != "m2" || len(c.Choices) != 3 || !strings.HasPrefix(c.ID, "cmpl-") {
		t.Fatalf("response %s", body)
	}
	for i, ch := range c.Choices {
		if ch.Index != i || ch.Text != strings.Join(completionText, "") || ch.FinishReason == nil || *ch.FinishReason != "length" {
			t.Errorf("choice %d: %+v", i, ch)
		}
	}
	if !strings.Contains(string(body), `"logprobs":null`) {
		t.Errorf("logprobs must be null: %s", body)
	}
	r := backend.requests()[0]
	if r.Model != "m2" || r.MaxTokens != 1024 || r.Candidates != 3 || len(r.Stop) != 1 || r.Stop[0] != "\n\n" ||
		r.Temperature == nil || *r.Temperature != 0.7 || r.TopP == nil || *r.TopP != 0.9 || r.Seed == nil {
		t.Errorf("backend request %+v: want model m2, max_tokens capped at 1024 (a quarter of 4096), 3 candidates, the stop, options and a drawn seed", r)
	}
	// Greedy without a seed stays on the backend's default seed; a given
	// seed is kept.
	post(t, srv, "/v1/completions", `{"prompt":"x","max_tokens":-1}`)
	post(t, srv, "/v1/completions", `{"prompt":"x","temperature":1,"seed":7}`)
	rs := backend.requests()
	if rs[1].Seed != nil || rs[1].MaxTokens != 128 {
		t.Errorf("greedy request: seed %v, max tokens %d; want none and the default 128 (max_tokens -1)", rs[1].Seed, rs[1].MaxTokens)
	}
	if rs[2].Seed == nil || *rs[2].Seed != 7 {
		t.Errorf("seed %v, want 7", rs[2].Seed)
	}
}

// TestOpenAIStreamErrors: an error before any text keeps its HTTP status;
// one after text is an error event, without [DONE], that Continue raises.
func TestOpenAIStreamErrors(t *testing.T) {
	t.Parallel()
	backend := newScriptBackend(t)
	srv := newV1Server(t, backend, nil)

	backend.failAt = 0
	resp, body := post(t, srv, "/v1/completions", `{"prompt":"x","stream":true}`)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"type":"unavailable_error"`) {
		t.Errorf("failure before text: status %d %s, want 503 with an OpenAI error body", resp.StatusCode, body)
	}

	backend.failAt = 1
	resp, body = post(t, srv, "/v1/completions", `{"prompt":"x","stream":true}`)
	events := sseEvents(t, body)
	last := events[len(events)-1]
	if resp.StatusCode != 200 || len(events) != 2 || !strings.Contains(last, `"error":{"message":`) || !strings.Contains(last, `"type":"unavailable_error"`) {
		t.Fatalf("failure after text: status %d, events %q", resp.StatusCode, events)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "Error streaming response") {
			t.Errorf("Continue's rule did not raise the error event: %v", p)
		}
	}()
	clientRules["continue"](panicT{}, resp, body)
}

// fataler is what a client rule needs of a test.
type fataler interface {
	Fatalf(format string, args ...any)
}

// panicT turns Fatalf into a panic, to observe a rule that fails.
type panicT struct{}

func (panicT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// TestOpenAIBadInput: every bad request gets its status and an OpenAI
// error body naming the field where there is one, and reaches no backend.
func TestOpenAIBadInput(t *testing.T) {
	t.Parallel()
	backend := newScriptBackend(t)
	srv := newV1Server(t, backend, func(c *Config) { c.MaxBodyBytes = 4 << 10 })
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"malformed JSON", "POST", "/v1/completions", `{"prompt": "x"`, 400, ""},
		{"not an object", "POST", "/v1/completions", `[1,2]`, 400, ""},
		{"empty body", "POST", "/v1/completions", ``, 400, ""},
		{"too large", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 5<<10) + `"}`, 413, ""},
		{"no prompt", "POST", "/v1/completions", `{"model":"m"}`, 400, "prompt"},
		{"token prompt", "POST", "/v1/completions", `{"prompt":[1,2,3]}`, 400, "prompt"},
		{"two prompts", "POST", "/v1/completions", `{"prompt":["a","b"]}`, 400, "prompt"},
		{"stop number", "POST", "/v1/completions", `{"prompt":"a","stop":5}`, 400, "stop"},
		{"empty stop", "POST", "/v1/completions", `{"prompt":"a","stop":[""]}`, 400, "generation.stop[0]"},
		{"max_tokens type", "POST", "/v1/completions", `{"prompt":"a","max_tokens":"many"}`, 400, "max_tokens"},
		{"negative max_tokens", "POST", "/v1/completions", `{"prompt":"a","max_tokens":-5}`, 400, "max_tokens"},
		{"n zero", "POST", "/v1/completions", `{"prompt":"a","n":0}`, 400, "n"},
		{"n too many", "POST", "/v1/completions", `{"prompt":"a","n":100}`, 400, "generation.candidates"},
		{"temperature", "POST", "/v1/completions", `{"prompt":"a","temperature":5}`, 400, "generation.temperature"},
		{"top_p", "POST", "/v1/completions", `{"prompt":"a","top_p":0}`, 400, "generation.top_p"},
		{"tabby next edit", "POST", "/v1/completions", `{"segments":{"prefix":"a"},"mode":"next_edit_suggestion"}`, 400, "mode"},
		{"tabby segments type", "POST", "/v1/completions", `{"segments":"a"}`, 400, "segments"},
		{"wrong method", "GET", "/v1/completions", ``, 405, ""},
		{"wrong method models", "POST", "/v1/models", `{}`, 405, ""},
		{"unknown path", "POST", "/v1/chat/completions", `{}`, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, srv, tc.method, tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			var e struct {
				Error *struct {
					Message *string `json:"message"`
					Type    *string `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil {
				t.Fatalf("want an OpenAI error body, got %s", body)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Errorf("param %v, want %q: %s", e.Error.Param, tc.param, body)
			}
		})
	}
	if n := len(backend.requests()); n != 0 {
		t.Errorf("%d bad requests reached the backend", n)
	}
	// Unknown fields are ignored.
	resp, body := post(t, srv, "/v1/completions", `{"prompt":"a","frequency_penalty":1,"logit_bias":{"50256":-100},"whatever":[{}]}`)
	if resp.StatusCode != 200 {
		t.Errorf("unknown fields: status %d %s", resp.StatusCode, body)
	}
}

// TestOpenAIModels checks /v1/models against OpenAI's list shape.
func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	backend := newScriptBackend(t)
	srv := newV1Server(t, backend, nil)
	resp, body := do(t, srv, "GET", "/v1/models", "")
	var v struct {
		Object string `json:"object"`
		Data   []struct {
			ID            string `json:"id"`
			Object        string `json:"object"`
			Created       int64  `json:"created"`
			OwnedBy       string `json:"owned_by"`
			ContextLength int    `json:"context_length"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil || v.Object != "list" || len(v.Data) != 1 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	m := v.Data[0]
	if m.ID != backend.Model("") || m.Object != "model" || m.Created == 0 || m.OwnedBy == "" || m.ContextLength != 4096 {
		t.Errorf("model %+v", m)
	}
}

func TestSplitFIMPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prompt string
		ok           bool
		want         fimParts
	}{
		{"plain Qwen", "<|fim_prefix|>def f():\n    <|fim_suffix|>\n<|fim_middle|>", true,
			fimParts{prefix: "def f():\n    ", suffix: "\n"}},
		{"Continue multifile",
			"<|repo_name|>geo\n<|file_sep|>a/b.py\nx = 1\n<|file_sep|>c.py\ny = 2\n<|file_sep|>geo/cur.py\n<|fim_prefix|>p<|fim_suffix|>s<|fim_middle|>", true,
			fimParts{prefix: "p", suffix: "s", path: "geo/cur.py", repo: "geo",
				extra: []snippet{{Path: "a/b.py", Text: "x = 1"}, {Path: "c.py", Text: "y = 2"}}}},
		{"StarCoder", "<fim_prefix>a<fim_suffix>b<fim_middle>", true, fimParts{prefix: "a", suffix: "b"}},
		{"llama.vscode context", "Context:\n\nsome chunk<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", true,
			fimParts{prefix: "a", suffix: "b", extra: []snippet{{Text: "Context:\n\nsome chunk"}}}},
		{"Twinny file context", "<|file_sep|># other file text\n\n<|file_sep|>\n# Language: Python (python) \n<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", true,
			fimParts{prefix: "a", suffix: "b", extra: []snippet{{Text: "# other file text"}, {Text: "\n# Language: Python (python) "}}}},
		{"markers in code, no middle at end", "s = '<|fim_prefix|>' + x + '<|fim_suffix|><|fim_middle|>'\n", false, fimParts{}},
		{"middle only", "abc<|fim_middle|>", false, fimParts{}},
		{"plain text", "def f(x):\n    return ", false, fimParts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := splitFIMPrompt(tc.prompt)
			if ok != tc.ok || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("got %#v, %v\nwant %#v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSuffixFieldWins: with a suffix field the prompt is the prefix, even
// when it looks like a rendered FIM prompt (a source file about FIM).
func TestSuffixFieldWins(t *testing.T) {
	t.Parallel()
	b := v1Body{Prompt: json.RawMessage(`"<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"`), Suffix: new(string)}
	f, err := b.openAIRequest(4096)
	if err != nil || f.Prefix != "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>" || f.Suffix != "" {
		t.Fatalf("%+v %v", f, err)
	}
}

// FuzzV1Completions: no body makes the surface fail with a 5xx or panic
// (the handler's recovery would turn a panic into a 500); the seeds are
// the recorded plugin bodies.
func FuzzV1Completions(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"a","suffix":"b","stream":true,"n":2}`,
		`{"segments":{"prefix":"a","declarations":[{"filepath":"file:///x.py","body":"y"}]}}`,
		`{"prompt":"<|repo_name|>r\n<|file_sep|>a\nb\n<|file_sep|>c\n<|fim_prefix|>d<|fim_suffix|>e<|fim_middle|>"}`,
	} {
		f.Add(s)
	}
	if paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.txtar")); len(paths) > 0 {
		for _, p := range paths {
			data, _ := os.ReadFile(p)
			for _, file := range txtar.Parse(data).Files {
				if file.Name == "request.json" {
					f.Add(string(file.Data))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, body string) {
		srv := newV1Server(t, newScriptBackend(t), nil)
		resp, out := post(t, srv, "/v1/completions", body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, out)
		}
	})
}

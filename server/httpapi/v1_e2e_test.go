package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/httpapi"
	"github.com/infill-dev/infill/server/servertest"
)

// The /v1 surfaces end to end: the real infill server (servertest) in
// front of the real Ollama serving the tiny random-weight model, whose text
// is random, so the tests check properties, never text.

// The cursor sits after "return " in circumference (the file of the gRPC
// end-to-end tests, on which the tiny model generates at length).
const (
	pyPrefix = "import math\n\n\ndef area(r):\n    \"\"\"Area of a circle of radius r.\"\"\"\n    return math.pi * r ** 2\n\n\ndef circumference(r):\n    return "
	pySuffix = "\n"
)

// postJSON posts body, as JSON, to the server's path.
func postJSON(t *testing.T, ctx context.Context, addr, path string, body any) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return httpapi.Send(t, ctx, http.MethodPost, "http://"+addr+path, string(b))
}

type completion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Text         string  `json:"text"`
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error any `json:"error"`
}

// readStream reads an OpenAI event stream: the text of each candidate, its
// finish reason, and the usage chunk if any. It fails unless the stream
// ends with [DONE] and holds no error event.
func readStream(t *testing.T, body []byte) (text map[int]string, finish map[int]string, usage *completion) {
	t.Helper()
	text, finish = map[int]string{}, map[int]string{}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n\n")
	if lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", lines[len(lines)-1])
	}
	for _, l := range lines[:len(lines)-1] {
		var c completion
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &c); err != nil || c.Error != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		if c.Usage != nil {
			usage = &c
		}
		for _, ch := range c.Choices {
			text[ch.Index] += ch.Text
			if ch.FinishReason != nil {
				finish[ch.Index] = *ch.FinishReason
			}
		}
	}
	return text, finish, usage
}

func validFinish(s string) bool { return s == "stop" || s == "length" }

// TestV1EndToEnd runs the /v1 surfaces against one real server and
// backend (each start costs a model load): every request body recorded
// from a plugin (the model renamed to the test backend's, max_tokens
// lowered to keep the run short), streamed or not as the plugin sends it,
// read by that plugin's rule; the same completion both ways in each
// dialect; the official OpenAI Go client; a cancelled stream.
func TestV1EndToEnd(t *testing.T) {
	t.Parallel()
	// Tabby's bodies name no max_tokens: the server's default, lowered.
	srv := servertest.StartWith(t, servertest.Options{Config: func(c *server.Config) { c.Inference.DefaultMaxTokens = 24 }})
	ctx := context.Background()
	for _, c := range httpapi.PluginCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			var body map[string]any
			if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
				t.Fatal(err)
			}
			if _, ok := body["model"]; ok {
				body["model"] = srv.Model
			}
			if _, ok := body["max_tokens"]; ok {
				body["max_tokens"] = 32
			}
			resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", body)
			read := httpapi.ReadAsPlugin(t, c.Client, resp, out)
			var want string
			if stream, _ := body["stream"].(bool); stream {
				text, finish, _ := readStream(t, out)
				if len(text) != 1 || !validFinish(finish[0]) {
					t.Errorf("stream: text %v, finish %v", text, finish)
				}
				want = text[0]
			} else {
				var v completion
				if err := json.Unmarshal(out, &v); err != nil || len(v.Choices) != 1 || !strings.HasPrefix(v.ID, "cmpl-") {
					t.Fatalf("response %s (%v)", out, err)
				}
				want = v.Choices[0].Text
			}
			if read != want {
				t.Errorf("%s reads %q of the completion %q", c.Client, read, want)
			}
		})
	}

	// The same greedy completion, streamed and not, in each dialect.
	t.Run("openai stream equals non-stream", func(t *testing.T) {
		req := map[string]any{"model": srv.Model, "prompt": pyPrefix, "suffix": pySuffix, "max_tokens": 24}
		resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", req)
		var whole completion
		if err := json.Unmarshal(out, &whole); err != nil || resp.StatusCode != 200 || len(whole.Choices) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		ch, u := whole.Choices[0], whole.Usage
		if whole.Model != srv.Model || ch.FinishReason == nil || !validFinish(*ch.FinishReason) || u == nil || u.PromptTokens < 1 ||
			u.CompletionTokens > 24 || u.TotalTokens != u.PromptTokens+u.CompletionTokens ||
			(*ch.FinishReason == "length") != (u.CompletionTokens == 24) {
			t.Errorf("response %s", out)
		}
		req["stream"], req["stream_options"] = true, map[string]any{"include_usage": true}
		resp, out = postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", req)
		text, finish, usage := readStream(t, out)
		if resp.StatusCode != 200 || text[0] != ch.Text || finish[0] != *ch.FinishReason {
			t.Errorf("stream %q %q differs from the response %q %q", text[0], finish[0], ch.Text, *ch.FinishReason)
		}
		if usage == nil || usage.Usage.CompletionTokens != u.CompletionTokens || len(usage.Choices) != 0 {
			t.Errorf("usage chunk %+v, want completion tokens %d", usage, u.CompletionTokens)
		}
	})
	t.Run("tabby", func(t *testing.T) {
		req := map[string]any{"language": "python", "segments": map[string]any{"prefix": pyPrefix, "suffix": pySuffix,
			"filepath": "geo/circle.py", "git_url": "https://github.com/infill-dev/geometry.git",
			"declarations": []any{map[string]any{"filepath": "geo/consts.py", "body": "TAU = 2 * math.pi"}}}}
		var texts []string
		for range 2 {
			resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", req)
			texts = append(texts, httpapi.ReadAsPlugin(t, "tabby-agent", resp, out))
		}
		if texts[0] != texts[1] {
			t.Errorf("greedy Tabby completions differ: %q, %q", texts[0], texts[1])
		}
		resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/events", map[string]any{"type": "view", "completion_id": "cmpl-x", "choice_index": 0})
		if resp.StatusCode != 200 {
			t.Errorf("event: %d %s", resp.StatusCode, out)
		}
	})
	t.Run("openai-go client", func(t *testing.T) { testOpenAIGoClient(t, srv) })
	t.Run("cancel stops generation", func(t *testing.T) { testCancelStopsGeneration(t, srv) })
}

// testOpenAIGoClient drives /v1/completions with the official OpenAI Go
// client (github.com/openai/openai-go/v3): fill-in-the-middle with suffix,
// not streamed and streamed (greedy, so both give the same text), usage in
// the stream, and an error the client decodes.
func testOpenAIGoClient(t *testing.T, srv *servertest.Server) {
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL("http://"+srv.HTTPAddr+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	params := openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel(srv.Model),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(pyPrefix)},
		Suffix:    openai.String(pySuffix),
		MaxTokens: openai.Int(24),
	}
	c, err := client.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Model != srv.Model || !strings.HasPrefix(c.ID, "cmpl-") || c.Created == 0 ||
		c.Object != "text_completion" || !validFinish(string(c.Choices[0].FinishReason)) ||
		c.Usage.PromptTokens < 1 || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
		t.Fatalf("completion %s", c.RawJSON())
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		for _, choice := range ch.Choices {
			text.WriteString(choice.Text)
			if choice.FinishReason != "" {
				finish = string(choice.FinishReason)
			}
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if text.String() != c.Choices[0].Text || finish != string(c.Choices[0].FinishReason) || usage.CompletionTokens != c.Usage.CompletionTokens {
		t.Errorf("stream %q (%s, usage %+v) differs from the completion %q (%s, usage %+v)",
			text.String(), finish, usage, c.Choices[0].Text, c.Choices[0].FinishReason, c.Usage)
	}

	params.Temperature = openai.Float(5)
	_, err = client.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "generation.temperature" || apiErr.Message == "" {
		t.Errorf("temperature 5: %v, want a 400 *openai.Error naming generation.temperature", err)
	}
}

// testCancelStopsGeneration shows that a client closing a stream
// stops generation at the backend: Ollama serves one request at a time
// here, so if the cancelled long generation went on, the next request
// would wait behind it (as TestCancelStopsGeneration in package server
// shows for gRPC). Two durations from the same run are compared.
func testCancelStopsGeneration(t *testing.T, srv *servertest.Server) {
	const long = 240
	req := func(n int, stream bool) map[string]any {
		return map[string]any{"model": srv.Model, "prompt": pyPrefix, "suffix": pySuffix, "max_tokens": n, "stream": stream}
	}
	begin := time.Now()
	_, out := postJSON(t, context.Background(), srv.HTTPAddr, "/v1/completions", req(long, false))
	fullTime := time.Since(begin)
	var full completion
	if err := json.Unmarshal(out, &full); err != nil || full.Usage == nil {
		t.Fatalf("%s %v", out, err)
	}
	if n := full.Usage.CompletionTokens; n < long/2 {
		t.Fatalf("baseline generated only %d tokens; the test needs a long generation", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(req(long, true))
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+srv.HTTPAddr+"/v1/completions", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before any text: %v", err)
		}
		if strings.HasPrefix(line, "data: {") && !strings.Contains(line, `"text":""`) {
			break
		}
	}
	cancel()
	resp.Body.Close()

	begin = time.Now()
	if resp, out := postJSON(t, context.Background(), srv.HTTPAddr, "/v1/completions", req(1, false)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	next := time.Since(begin)
	t.Logf("uncancelled %d-token generation: %v; next request after a cancel: %v", full.Usage.CompletionTokens, fullTime, next)
	if next > fullTime/2 {
		t.Fatalf("the request after a cancel took %v, more than half of a whole long generation (%v): generation was not stopped", next, fullTime)
	}
}

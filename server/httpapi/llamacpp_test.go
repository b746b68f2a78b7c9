package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/httpapi"
	"github.com/infill-dev/infill/server/servertest"
)

// llamaVimRule reads an /infill answer the way llama.vim does
// (autoload/llama.vim at a1c8e6e, s:fim_on_response and s:fim_render): a
// body that does not start with "{" or lacks `"content":"` (no space: the
// plugin matches it with a regular expression before decoding) is dropped;
// then content, tokens_cached and the flattened timings are read, the
// *_ms and *_per_second ones through str2float(), which Neovim 0.7 refuses
// for a JSON float (checked against the real editor in
// TestNeovimReadsLlamaVimAnswers).
func llamaVimRule(t *testing.T, body []byte) string {
	t.Helper()
	if !regexp.MustCompile(`^\s*\{`).Match(body) || !regexp.MustCompile(`"content"\s*:"`).Match(body) {
		t.Fatalf("llama.vim would drop this answer (no `\"content\":\"`): %s", body)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("llama.vim: json_decode fails: %v", err)
	}
	for k, v := range m {
		if !strings.HasPrefix(k, "timings/") {
			continue
		}
		if n, ok := v.(json.Number); !ok || strings.ContainsAny(string(n), ".eE") {
			t.Errorf("llama.vim reads %s = %v with str2float: Neovim 0.7 needs a whole number or a string", k, v)
		}
	}
	content, ok := m["content"].(string)
	if !ok {
		t.Fatalf("llama.vim: content is %T", m["content"])
	}
	return content
}

// llamaVSCodeRule reads an /infill answer the way llama.vscode does (v0.0.63,
// src/completion.ts getComplFromContent and src/statusbar.ts showInfo): an
// object with content is one completion, an array (n_cmpl) several; the
// status bar reads generation_settings.n_ctx (a TypeError without the
// object) and calls toFixed on the timings (numbers only).
func llamaVSCodeRule(t *testing.T, body []byte) []string {
	t.Helper()
	var one map[string]any
	if json.Unmarshal(body, &one) == nil {
		if _, ok := one["content"]; ok {
			gs, ok := one["generation_settings"].(map[string]any)
			if !ok {
				t.Fatalf("llama.vscode: data.generation_settings.n_ctx throws: no generation_settings in %s", body)
			}
			if _, ok := gs["n_ctx"].(float64); !ok {
				t.Errorf("llama.vscode: generation_settings.n_ctx is %T", gs["n_ctx"])
			}
			tm, _ := one["timings"].(map[string]any)
			for _, k := range []string{"prompt_ms", "prompt_per_second", "predicted_ms", "predicted_per_second"} {
				if _, ok := tm[k].(float64); !ok {
					t.Errorf("llama.vscode: timings.%s.toFixed fails: %v", k, tm[k])
				}
			}
			s, _ := one["content"].(string)
			return []string{s}
		}
	}
	var many []map[string]any
	if err := json.Unmarshal(body, &many); err != nil {
		t.Fatalf("llama.vscode: neither an object with content nor an array: %s", body)
	}
	var out []string
	for _, c := range many {
		s, _ := c["content"].(string)
		out = append(out, s)
	}
	return out
}

// sseEvents splits a server-sent event stream into its events' fields and
// data, failing on anything llama.cpp would not send.
func sseEvents(t *testing.T, body []byte) (fields []string, data []map[string]any) {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		field, payload, ok := strings.Cut(ev, ": ")
		if !ok || strings.Contains(payload, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		fields, data = append(fields, field), append(data, m)
	}
	return fields, data
}

func TestLlamaCppRecordedBodies(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/llamacpp/*.json")
	if len(paths) < 6 {
		t.Fatalf("found %d recorded bodies", len(paths))
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			pipe := &fakePipe{deltas: []string{"2 * math", ".pi * r\n"}}
			url := startFake(t, pipe)
			body := readFile(t, path)
			warmup := bytes.Contains(body, []byte(`"n_predict":0`))
			if warmup {
				// A warm-up carries no cursor: it warms the prompt of the
				// last completion's cursor with its new context.
				if resp := do(t, http.MethodPost, url+"/infill", body); resp.status != http.StatusOK || len(pipe.requests()) != 0 {
					t.Fatalf("a warm-up before any completion: %d %s, %d pipeline calls", resp.status, resp.body, len(pipe.requests()))
				}
				do(t, http.MethodPost, url+"/infill", readFile(t, "testdata/llamacpp/llama.vim-fim.json"))
			}
			resp := do(t, http.MethodPost, url+"/infill", body)
			if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Fatalf("status %d %s: %s", resp.status, resp.header.Get("Content-Type"), resp.body)
			}
			reqs := pipe.requests()
			if warmup {
				reqs = reqs[1:]
			}
			if len(reqs) != 1 {
				t.Fatalf("%d pipeline calls", len(reqs))
			}
			checkGolden(t, filepath.Join("testdata/llamacpp", name+".golden"),
				txtar.File{Name: "pipeline", Data: describe(reqs[0])},
				txtar.File{Name: "response", Data: resp.body})
			warm := reqs[0].Generation.WarmOnly
			switch {
			case strings.HasPrefix(name, "llama.vim") && warm:
				if string(resp.body) != "{}\n" { // response_fields [""]: nothing asked for
					t.Errorf("warm-up answer %s", resp.body)
				}
			case strings.HasPrefix(name, "llama.vim"):
				if got := llamaVimRule(t, resp.body); got != "2 * math.pi * r\n" {
					t.Errorf("content %q", got)
				}
			case strings.HasPrefix(name, "llama.vscode"):
				got := llamaVSCodeRule(t, resp.body)
				want := "2 * math.pi * r\n"
				if warm {
					want = ""
				}
				if len(got) != 1 || got[0] != want {
					t.Errorf("completions %q", got)
				}
			}
		})
	}
}

// llama.vscode asks for n_cmpl completions; they differ only when sampling,
// and then come back as an array.
func TestLlamaCppNCompletions(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{deltas: []string{"x"}}
	url := startFake(t, pipe)
	var body map[string]any
	_ = json.Unmarshal(readFile(t, "testdata/llamacpp/llama.vscode-fim.json"), &body)
	body["temperature"] = 0.7
	b, _ := json.Marshal(body)
	resp := do(t, http.MethodPost, url+"/infill", b)
	if got := llamaVSCodeRule(t, resp.body); len(got) != 3 || got[2] != "x" {
		t.Fatalf("completions %q from %s", got, resp.body)
	}
	if c := pipe.requests()[0].Generation.Candidates; c != 3 {
		t.Fatalf("asked the pipeline for %d candidates", c)
	}
}

func TestLlamaCppStream(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{deltas: []string{"2 * math", ".pi * r\n"}, finish: inference.FinishBudget}
	url := startFake(t, pipe)
	var body map[string]any
	_ = json.Unmarshal(readFile(t, "testdata/llamacpp/llama.vim-fim.json"), &body)
	body["stream"] = true
	b, _ := json.Marshal(body)
	resp := do(t, http.MethodPost, url+"/infill", b)
	if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s: %s", resp.status, resp.header.Get("Content-Type"), resp.body)
	}
	checkGolden(t, "testdata/llamacpp/stream.golden", txtar.File{Name: "response", Data: resp.body})
	fields, events := sseEvents(t, resp.body)
	var text strings.Builder
	for i, ev := range events {
		last := i == len(events)-1
		// The final event holds response_fields only (llama.vim's list has
		// no "stop"), as llama.cpp filters it.
		if fields[i] != "data" || (!last && ev["stop"] != false) {
			t.Fatalf("event %d: %s %v", i, fields[i], ev)
		}
		if !last {
			text.WriteString(ev["content"].(string))
		}
	}
	if text.String() != "2 * math.pi * r\n" {
		t.Fatalf("streamed %q", text.String())
	}
	final := events[len(events)-1]
	if final["content"] != "" || final["timings/predicted_n"] != 2.0 {
		t.Fatalf("final event %v", final)
	}
}

// Errors in the stream's middle arrive as llama.cpp sends them: an
// "error:" event after the text already sent.
func TestLlamaCppStreamError(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{deltas: []string{"x"}, err: inference.ErrUnavailable}
	url := startFake(t, pipe)
	resp := do(t, http.MethodPost, url+"/infill", []byte(`{"input_prefix":"a","input_suffix":"b","stream":true}`))
	fields, events := sseEvents(t, resp.body)
	if resp.status != http.StatusOK || len(fields) != 2 || fields[1] != "error" || events[1]["code"] != 503.0 {
		t.Fatalf("%d %q %v", resp.status, fields, events)
	}
}

func TestLlamaCppProbes(t *testing.T) {
	t.Parallel()
	url := startFake(t, &fakePipe{})
	resp := do(t, http.MethodGet, url+"/health", nil)
	if resp.status != http.StatusOK || string(resp.body) != "{\"status\":\"ok\"}\n" {
		t.Fatalf("/health: %d %s", resp.status, resp.body)
	}
	resp = do(t, http.MethodGet, url+"/props", nil)
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.Unmarshal(resp.body, &props); err != nil || props.Settings.NCtx != 8192 {
		t.Fatalf("/props: %s", resp.body)
	}
}

// TestHealthFollowsBackend: the health checks answer 503 in their
// surface's error style while the backend does not serve (llama.vscode and
// tabby-agent show the server as unreachable), and 200 once it does.
func TestHealthFollowsBackend(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	url := startFake(t, &fakePipe{}, httpapi.WithHealth(func() error {
		if down.Load() {
			return errors.New("NOT_SERVING")
		}
		return nil
	}))
	resp := do(t, http.MethodGet, url+"/health", nil)
	var llama struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if resp.status != http.StatusServiceUnavailable || json.Unmarshal(resp.body, &llama) != nil ||
		llama.Error.Code != 503 || llama.Error.Type != "unavailable_error" || !strings.Contains(llama.Error.Message, "backend unavailable") {
		t.Errorf("/health with the backend down: %d %s", resp.status, resp.body)
	}
	resp = do(t, http.MethodGet, url+"/v1/health", nil)
	var openai struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if resp.status != http.StatusServiceUnavailable || json.Unmarshal(resp.body, &openai) != nil || openai.Error.Type != "unavailable_error" {
		t.Errorf("/v1/health with the backend down: %d %s", resp.status, resp.body)
	}
	down.Store(false)
	for _, path := range []string{"/health", "/v1/health"} {
		if resp := do(t, http.MethodGet, url+path, nil); resp.status != http.StatusOK {
			t.Errorf("%s with the backend up: %d %s", path, resp.status, resp.body)
		}
	}
}

// Bad input gets llama.cpp's error body with the right status; nothing
// reaches the pipeline.
func TestLlamaCppBadInput(t *testing.T) {
	t.Parallel()
	pipe := &fakePipe{}
	url := startFake(t, pipe)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed JSON", http.MethodPost, "/infill", `{"input_prefix": "a",`, 400},
		{"empty body", http.MethodPost, "/infill", ``, 400},
		{"wrong type", http.MethodPost, "/infill", `{"n_predict":"many"}`, 400},
		{"extra item not an object", http.MethodPost, "/infill", `{"input_extra":["x"]}`, 400},
		{"too large", http.MethodPost, "/infill", `{"input_prefix":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
		{"wrong method", http.MethodGet, "/infill", ``, 405},
		{"wrong method on health", http.MethodPost, "/health", `{}`, 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, tc.method, url+tc.path, []byte(tc.body))
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if resp.status != tc.status || json.Unmarshal(resp.body, &e) != nil || e.Error.Code != tc.status || e.Error.Message == "" {
				t.Fatalf("got %d %s, want %d with a llama.cpp error body", resp.status, resp.body, tc.status)
			}
		})
	}
	if n := len(pipe.requests()); n != 0 {
		t.Fatalf("%d bad requests reached the pipeline", n)
	}
	// Unknown fields are ignored (plugins send many).
	resp := do(t, http.MethodPost, url+"/infill", []byte(`{"input_prefix":"a","lora":[{"id":0,"scale":0.5}],"no_such_field":{"x":[1]}}`))
	if resp.status != http.StatusOK {
		t.Fatalf("unknown fields: %d %s", resp.status, resp.body)
	}
	// A domain error is mapped by the one table and written in this style.
	pipe.err = &inference.OptionError{Field: "temperature", Reason: "9 outside [0, 2]"}
	resp = do(t, http.MethodPost, url+"/infill", []byte(`{"input_prefix":"a","temperature":9}`))
	if resp.status != http.StatusBadRequest || !bytes.Contains(resp.body, []byte(`"type":"invalid_request_error"`)) {
		t.Fatalf("option error: %d %s", resp.status, resp.body)
	}
}

func FuzzInfill(f *testing.F) {
	paths, _ := filepath.Glob("testdata/llamacpp/*.json")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"n_predict":-5,"n_indent":-3,"t_max_predict_ms":-1,"top_k":-1,"seed":-1,"temperature":-1,"response_fields":["a/b/c","",null]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		url := startFake(t, &fakePipe{deltas: []string{"x\n", "y"}})
		if resp := do(t, http.MethodPost, url+"/infill", body); resp.status >= 500 {
			t.Fatalf("%d for %q: %s", resp.status, body, resp.body)
		}
	})
}

// TestNeovimReadsLlamaVimAnswers runs llama.vim's reading of the answer in
// the real editor: Neovim 0.7 (Debian 12's) refuses str2float() on a JSON
// float, which llama.vim calls on the flattened timings, and then shows no
// completion at all. The script repeats llama.vim's steps; it is not
// llama.vim's code.
func TestNeovimReadsLlamaVimAnswers(t *testing.T) {
	t.Parallel()
	nvim, err := exec.LookPath("nvim")
	servertest.Require(t, err, "Neovim (apt install neovim)")
	pipe := &fakePipe{deltas: []string{"    return 2 * math.pi * r\n"}}
	url := startFake(t, pipe)
	dir := t.TempDir()
	answer := filepath.Join(dir, "answer.json")
	_ = os.WriteFile(answer, do(t, http.MethodPost, url+"/infill", readFile(t, "testdata/llamacpp/llama.vim-fim.json")).body, 0o644)
	out := runLlamaVimRead(t, nvim, answer)
	if len(out) < 3 || out[0] != "ok" || !strings.HasPrefix(out[1], "p: 120 (40.00 ms") || out[2] != "    return 2 * math.pi * r" {
		t.Fatalf("Neovim read: %q", out)
	}
	// The harness would catch the trap: a float there fails in Neovim 0.7.
	if strings.Contains(nvimVersion(t, nvim), "v0.7.") {
		_ = os.WriteFile(answer, []byte(`{"content":"x","timings/prompt_ms":40.5}`), 0o644)
		if out := runLlamaVimRead(t, nvim, answer); out[0] != "error" || !strings.Contains(out[1], "E806") {
			t.Fatalf("Neovim 0.7 read a float: %q", out)
		}
	}
}

const llamaVimRead = `
let s:raw = join(readfile($ANSWER, 'b'), "\n")
try
  if s:raw !~# '^\s*{' || s:raw !~# '\v"content"\s*:"'
    throw 'dropped: no "content":" in the answer'
  endif
  let s:r = json_decode(s:raw)
  let s:content = split(get(s:r, 'content', ''), "\n", 1)
  let s:n_prompt = get(s:r, 'timings/prompt_n', 0)
  let s:t_prompt = str2float(get(s:r, 'timings/prompt_ms', '1.0'))
  let s:s_prompt = str2float(get(s:r, 'timings/prompt_per_second', '0.0'))
  let s:n_predict = get(s:r, 'timings/predicted_n', 0)
  let s:t_predict = str2float(get(s:r, 'timings/predicted_ms', '1.0'))
  let s:s_predict = str2float(get(s:r, 'timings/predicted_per_second', '0.0'))
  let s:info = printf('p: %d (%.2f ms, %.2f t/s) | g: %d (%.2f ms, %.2f t/s) | c: %d', s:n_prompt, s:t_prompt, s:s_prompt, s:n_predict, s:t_predict, s:s_predict, get(s:r, 'tokens_cached', 0))
  call writefile(['ok', s:info] + s:content, $OUT)
catch
  call writefile(['error', v:exception], $OUT)
endtry
qa!
`

func runLlamaVimRead(t *testing.T, nvim, answer string) []string {
	t.Helper()
	dir := filepath.Dir(answer)
	script, out := filepath.Join(dir, "read.vim"), filepath.Join(dir, "out.txt")
	_ = os.WriteFile(script, []byte(llamaVimRead), 0o644)
	_ = os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-S", script)
	cmd.Env = append(os.Environ(), "ANSWER="+answer, "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v: %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func nvimVersion(t *testing.T, nvim string) string {
	b, err := exec.Command(nvim, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// TestLlamaCppEndToEnd drives /infill with the recorded plugin bodies
// against the real server and the real Ollama (tiny random model: the tests
// check properties of the text, never the text).
func TestLlamaCppEndToEnd(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	url := "http://" + srv.HTTPAddr
	body := func(name string, change map[string]any) []byte {
		var m map[string]any
		if err := json.Unmarshal(readFile(t, "testdata/llamacpp/"+name+".json"), &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range change {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	post := func(b []byte) response {
		t.Helper()
		resp := do(t, http.MethodPost, url+"/infill", b)
		if resp.status != http.StatusOK {
			t.Fatalf("status %d: %s", resp.status, resp.body)
		}
		return resp
	}

	t.Run("recorded bodies", func(t *testing.T) {
		for _, name := range []string{"llama.vim-ring-warmup", "llama.vim-fim", "llama.vim-fim-speculative", "llama.vim-fim-blank-line", "llama.vscode-prepare", "llama.vscode-fim"} {
			// As recorded, but with a short n_predict: the tiny model's
			// text proves nothing, and CI time counts.
			resp := post(body(name, map[string]any{"n_predict": min(recordedNPredict(t, name), 24)}))
			switch {
			case name == "llama.vim-ring-warmup":
				if string(resp.body) != "{}\n" {
					t.Errorf("%s: %s", name, resp.body)
				}
			case strings.HasPrefix(name, "llama.vim"):
				llamaVimRule(t, resp.body)
			case name == "llama.vscode-prepare":
				var m map[string]any
				_ = json.Unmarshal(resp.body, &m)
				// It follows llama.vim's fim requests: it warms the last cursor's prompt.
				if m["content"] != "" || m["tokens_predicted"] != 0.0 || m["tokens_evaluated"].(float64) < 30 {
					t.Errorf("%s: %s", name, resp.body)
				}
			default:
				if got := llamaVSCodeRule(t, resp.body); len(got) != 1 {
					t.Errorf("%s: %q", name, got)
				}
			}
		}
	})

	t.Run("stream matches non-stream", func(t *testing.T) {
		// Greedy decoding: the same request streamed and not gives the same text.
		plain := body("llama.vscode-fim", map[string]any{"n_predict": 24, "t_max_predict_ms": 0, "n_indent": 0})
		want := llamaVSCodeRule(t, post(plain).body)[0]
		resp := post(body("llama.vscode-fim", map[string]any{"n_predict": 24, "t_max_predict_ms": 0, "n_indent": 0, "stream": true}))
		fields, events := sseEvents(t, resp.body)
		var got strings.Builder
		for i, ev := range events[:len(events)-1] {
			if fields[i] != "data" || ev["stop"] != false {
				t.Fatalf("event %d: %v", i, ev)
			}
			got.WriteString(ev["content"].(string))
		}
		final := events[len(events)-1]
		if got.String() != want || final["stop"] != true || final["tokens_predicted"].(float64) < 1 {
			t.Fatalf("streamed %q, want %q; final %v", got.String(), want, final)
		}
	})

	t.Run("t_max_predict_ms returns partial text at a line end", func(t *testing.T) {
		const n = 160
		full := llamaVSCodeRule(t, post(body("llama.vscode-fim", map[string]any{"n_predict": n, "t_max_predict_ms": 0, "n_indent": 0})).body)[0]
		var m map[string]any
		_ = json.Unmarshal(post(body("llama.vscode-fim", map[string]any{"n_predict": n, "t_max_predict_ms": 1, "n_indent": 0})).body, &m)
		part := m["content"].(string)
		first, _, hasNL := strings.Cut(full, "\n")
		if !hasNL { // greedy decoding: the same every run
			t.Fatalf("the tiny model wrote no newline in %d tokens for this prompt; the budget only stops at one: change the prompt", n)
		}
		if part != first+"\n" || m["stop_type"] != "limit" || m["tokens_predicted"].(float64) >= n {
			t.Fatalf("budget answer %q (%v, %v tokens); the full text's first line is %q", part, m["stop_type"], m["tokens_predicted"], first)
		}
	})

	t.Run("n_indent", func(t *testing.T) {
		for _, indent := range []int{2, 4, 8} {
			var m map[string]any
			_ = json.Unmarshal(post(body("llama.vscode-fim", map[string]any{"n_predict": 96, "t_max_predict_ms": 0, "n_indent": indent})).body, &m)
			lines := strings.Split(m["content"].(string), "\n")
			for i, l := range lines[1:] {
				lead := len(l) - len(strings.TrimLeft(l, " \t"))
				last := i == len(lines)-2
				if lead < indent && !(last && strings.TrimSpace(l) == "") {
					t.Fatalf("n_indent %d: line %d %q is indented %d: %q", indent, i+1, l, lead, m["content"])
				}
			}
		}
	})

	t.Run("n_predict 0 warms the prompt cache", func(t *testing.T) {
		// The same completion twice over, each with cross-file context the
		// backend has not seen: once right after the plugin's warm-up with
		// that context, once cold. Ollama reports prompt_eval_count for the
		// whole prompt either way; its prompt evaluation time shows what
		// the cache saved.
		promptMS := func(name string, warm bool) (ms float64, tokens int) {
			cursor := map[string]any{"input_prefix": "from shapes_" + name + " import " + name + "_step_7\n\n\ndef use(values):\n",
				"prompt": "    return " + name + "_step_", "input_suffix": "\n", "n_predict": 1, "n_cmpl": 1, "n_indent": 0, "t_max_predict_ms": 0}
			post(body("llama.vscode-fim", cursor)) // the last cursor, with the old context
			change := map[string]any{}
			for k, v := range cursor {
				change[k] = v
			}
			change["input_extra"] = []map[string]any{{"filename": "shapes_" + name + ".py", "text": bigSource(name)}}
			if warm {
				post(body("llama.vim-ring-warmup", map[string]any{"input_extra": change["input_extra"]}))
			}
			var m map[string]any
			_ = json.Unmarshal(post(body("llama.vscode-fim", change)).body, &m)
			return m["timings"].(map[string]any)["prompt_ms"].(float64), int(m["tokens_evaluated"].(float64))
		}
		cold, coldN := promptMS("alpha", false)
		warmed, warmN := promptMS("beta", true)
		t.Logf("prompt evaluation: %.1f ms for %d tokens cold, %.1f ms for %d tokens after a warm-up", cold, coldN, warmed, warmN)
		if coldN < 500 || warmN < 500 {
			t.Fatalf("the new context did not reach the prompt (%d and %d tokens)", coldN, warmN)
		}
		if warmed > cold/2 {
			t.Fatalf("a warmed prompt took %.1f ms to evaluate, a cold one %.1f ms: the warm-up did not fill the cache", warmed, cold)
		}
	})

	t.Run("errors", func(t *testing.T) {
		resp := do(t, http.MethodPost, url+"/infill", body("llama.vim-fim", map[string]any{"temperature": 7}))
		if resp.status != http.StatusBadRequest || !bytes.Contains(resp.body, []byte("temperature")) {
			t.Fatalf("%d %s", resp.status, resp.body)
		}
	})
}

func recordedNPredict(t *testing.T, name string) int {
	var m struct {
		NPredict int `json:"n_predict"`
	}
	_ = json.Unmarshal(readFile(t, "testdata/llamacpp/"+name+".json"), &m)
	return m.NPredict
}

// bigSource is a Python file of some 750 tokens, different for each name.
func bigSource(name string) string {
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "def %s_step_%d(values, scale):\n    total = sum(v * scale for v in values)\n    return total - %d\n\n\n", name, i, i)
	}
	return b.String()
}

// TestCancelMidStream shows, on both surfaces, that a client that goes away
// mid-stream stops the backend: Ollama serves one request at a time here,
// so a request right after the cancel would otherwise wait behind the long
// generation. The check compares durations from one run.
func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	url := "http://" + srv.HTTPAddr
	const long = 200
	infillBody := func(n int, stream bool) []byte {
		b, _ := json.Marshal(map[string]any{"input_prefix": "import math\n\n\ndef area(r):\n    return ",
			"input_suffix": "\n", "n_predict": n, "stream": stream})
		return b
	}
	begin := time.Now()
	var m map[string]any
	_ = json.Unmarshal(do(t, http.MethodPost, url+"/infill", infillBody(long, false)).body, &m)
	full := time.Since(begin)
	if n := m["tokens_predicted"].(float64); n < long/2 {
		t.Fatalf("baseline generated only %v tokens; the test needs a long generation", n)
	}
	for _, tc := range []struct {
		name, path string
		body       []byte
	}{
		{"llama.cpp", "/infill", infillBody(long, true)},
		{"ollama", "/api/generate", []byte(fmt.Sprintf(`{"prompt":"import math\n\n\ndef area(r):\n    return ","suffix":"\n","options":{"num_predict":%d}}`, long))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+tc.path, bytes.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the first piece of text
				t.Fatal(err)
			}
			cancel()
			resp.Body.Close()
			begin := time.Now()
			if r := do(t, http.MethodPost, url+"/infill", infillBody(1, false)); r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			next := time.Since(begin)
			t.Logf("uncancelled %d-token generation: %v; next request after a cancel: %v", long, full, next)
			if next > full/2 {
				t.Fatalf("the request after a cancel took %v, more than half of a whole long generation (%v): generation went on", next, full)
			}
		})
	}
}

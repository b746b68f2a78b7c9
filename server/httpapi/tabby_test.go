package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTabbyAgentStart walks what tabby-agent does on connecting
// (src/http/tabbyApiClient.ts connect): GET /v1/health (POST when GET is
// 405), which must be 200 with "model" set for completions to be offered;
// then GET /v1beta/server_setting, whose disable_client_side_telemetry
// turns the agent's usage reports off; later POST /v1/events.
func TestTabbyAgentStart(t *testing.T) {
	backend := newScriptBackend(t)
	srv := newV1Server(t, backend, nil)
	for _, method := range []string{"GET", "POST"} {
		resp, body := do(t, srv, method, "/v1/health", "")
		var h struct {
			Model       string   `json:"model"`
			ChatModel   *string  `json:"chat_model"`
			Webserver   *bool    `json:"webserver"`
			Device      string   `json:"device"`
			Arch        string   `json:"arch"`
			CPUCount    int      `json:"cpu_count"`
			CUDADevices []string `json:"cuda_devices"`
			Version     struct {
				GitDescribe string `json:"git_describe"`
				GitSHA      string `json:"git_sha"`
			} `json:"version"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &h) != nil {
			t.Fatalf("%s /v1/health: %d %s", method, resp.StatusCode, body)
		}
		if h.Model != backend.Model("") || h.Device == "" || h.Arch == "" || h.CPUCount < 1 || h.CUDADevices == nil {
			t.Errorf("health %s", body)
		}
		if h.ChatModel != nil || h.Webserver != nil {
			t.Errorf("chat_model and webserver must be absent (no chat): %s", body)
		}
		// The agent fetches server_setting unless semver.coerce of
		// git_describe is below 0.9.0; coerce finds no version in a string
		// without digits.
		if strings.ContainsAny(h.Version.GitDescribe, "0123456789") || h.Version.GitSHA != "test" {
			t.Errorf("version %+v: git_describe must hold no digits, git_sha the version", h.Version)
		}
	}
	resp, body := do(t, srv, "GET", "/v1beta/server_setting", "")
	if resp.StatusCode != 200 || string(body) != "{\"disable_client_side_telemetry\":true}\n" {
		t.Errorf("server_setting: %d %s", resp.StatusCode, body)
	}
	// codeCompletion/index.ts postEvent: view, select (with ?select_kind=line), dismiss.
	for _, ev := range []string{
		`{"type":"view","completion_id":"cmpl-1","choice_index":0,"view_id":"view-1"}`,
		`{"type":"select","completion_id":"cmpl-1","choice_index":0,"view_id":"view-1","elapsed":812}`,
		`{"type":"dismiss","completion_id":"cmpl-1","choice_index":0,"elapsed":300}`,
	} {
		if resp, body := post(t, srv, "/v1/events?select_kind=line", ev); resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("event %s: %d %q", ev, resp.StatusCode, body)
		}
	}
	for path, status := range map[string]int{"/v1/events": 400, "/v1/health": 405, "/v1beta/server_setting": 405} {
		method := "POST"
		if path == "/v1/health" {
			method = "PUT"
		}
		if resp, body := do(t, srv, method, path, "{"); resp.StatusCode != status || !strings.Contains(string(body), `"error":{`) {
			t.Errorf("%s %s: %d %s, want %d with an error body", method, path, resp.StatusCode, body, status)
		}
	}
	if n := len(backend.requests()); n != 0 {
		t.Errorf("%d backend requests; none expected", n)
	}
}

// TestTabbyRequest checks what a Tabby body becomes: paths from file URIs,
// the repository name from git_url, the snippets of all three lists (empty
// ones dropped), the language, and a seed drawn when sampling.
func TestTabbyRequest(t *testing.T) {
	var b v1Body
	err := json.Unmarshal([]byte(`{"language":"typescript","mode":"standard","temperature":0.8,"user":"u","debug_options":{"raw_prompt":"x"},
		"segments":{"prefix":"let a = ","suffix":null,"filepath":"file:///home/u/p/src/a.ts","git_url":"git@github.com:o/proj.git/",
		"declarations":[{"filepath":"file:///home/u/p/node_modules/x/index.d.ts","body":"export declare function x(): number;"}],
		"relevant_snippets_from_changed_files":[{"filepath":"src/b.ts","body":"  ","score":0.5}],
		"relevant_snippets_from_recently_opened_files":[{"filepath":"src/c.ts","body":"const c = 1;","score":1}],
		"clipboard":"copied"}}`), &b)
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.tabbyRequest()
	if err != nil {
		t.Fatal(err)
	}
	if f.Prefix != "let a = " || f.Suffix != "" || f.Path != "/home/u/p/src/a.ts" || f.RepoName != "proj" || f.Language != "typescript" {
		t.Errorf("request %+v", f)
	}
	want := []snippet{{Path: "/home/u/p/node_modules/x/index.d.ts", Text: "export declare function x(): number;"}, {Path: "src/c.ts", Text: "const c = 1;"}}
	if len(f.Extra) != 2 || f.Extra[0] != want[0] || f.Extra[1] != want[1] {
		t.Errorf("extra %+v, want %+v", f.Extra, want)
	}
	if f.Generation.Temperature == nil || *f.Generation.Temperature != 0.8 || f.Generation.Seed == nil {
		t.Errorf("generation %+v: want temperature 0.8 and a drawn seed", f.Generation)
	}
	for in, want := range map[string]string{
		"https://github.com/TabbyML/tabby.git": "tabby", "https://gitlab.com/g/sub/repo": "repo",
		"ssh://git@host:22/x/y.git": "y", "": "",
	} {
		if got := repoNameOf(in); got != want {
			t.Errorf("repoNameOf(%q) = %q, want %q", in, got, want)
		}
	}
}

package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/server/auth"
)

// TestTabbyAgentStart walks what tabby-agent does on connecting
// (src/http/tabbyApiClient.ts connect): GET /v1/health (POST when GET is
// 405), which must be 200 with "model" set for completions to be offered;
// then GET /v1beta/server_setting, whose disable_client_side_telemetry
// turns the agent's usage reports off; later POST /v1/events.
func TestTabbyAgentStart(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// tabbyAgent is what tabby-agent 1.9.0-dev (TabbyML/tabby@21b29048,
// clients/tabby-agent/src/http/tabbyApiClient.ts) does when it connects
// with token (its [server] token setting; "" sends no Authorization):
// healthCheck GETs /v1/health (POST when GET is 405); a response that is
// not ok is an HttpError, and isUnauthorizedError (status 401) makes the
// status "unauthorized", any other failure "noConnection"; an ok answer
// makes it "ready", and only then updateServerProvidedConfig GETs
// /v1beta/server_setting and applies disable_client_side_telemetry.
type tabbyAgent struct {
	status       string // noConnection, unauthorized or ready
	model        string // the health answer's model: completions offered when set
	telemetryOff bool
}

func connectTabbyAgent(t *testing.T, srv *httptest.Server, token string) tabbyAgent {
	t.Helper()
	get := func(method, path string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return sendRequest(t, req)
	}
	var a tabbyAgent
	resp, body := get("GET", "/v1/health")
	if resp.StatusCode == http.StatusMethodNotAllowed {
		resp, body = get("POST", "/v1/health")
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		a.status = "unauthorized"
		return a
	case resp.StatusCode/100 != 2:
		a.status = "noConnection"
		return a
	}
	var h struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("health answer %s: %v", body, err)
	}
	a.status, a.model = "ready", h.Model
	resp, body = get("GET", "/v1beta/server_setting")
	var ss struct {
		DisableClientSideTelemetry bool `json:"disable_client_side_telemetry"`
	}
	if resp.StatusCode/100 == 2 && json.Unmarshal(body, &ss) == nil {
		a.telemetryOff = ss.DisableClientSideTelemetry
	}
	return a
}

// TestTabbyAgentWithTokens: with tokens on, tabby-agent with no token, a
// wrong one, an expired one or another scope's does not connect: a 401
// on /v1/health shows the user "unauthorized" (before, health answered
// 200 and the agent showed "ready" while every completion failed 401); with
// a good token it is ready and turns its telemetry off. Health takes
// nothing from the token's limits, and /v1beta/server_setting answers
// telemetry off whatever the token.
func TestTabbyAgentWithTokens(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	tok := map[string]string{}
	var lines []string
	for name, rest := range map[string]string{
		"editor": "complete rate=0.001 burst=1", "harness": "evaluate", "old": "complete expires=2020-01-01",
	} {
		tok[name] = auth.NewToken()
		lines = append(lines, auth.Line(tok[name], name, nil, time.Time{})+" "+rest)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := auth.New(auth.Config{TokenFile: file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	backend := newScriptBackend(t)
	srv := newV1ServerGuarded(t, backend, nil, guard)

	for name, token := range map[string]string{
		"no token": "", "a wrong token": auth.NewToken(), "an expired token": tok["old"],
	} {
		if a := connectTabbyAgent(t, srv, token); a.status != "unauthorized" {
			t.Errorf("agent with %s: %+v, want unauthorized", name, a)
		}
	}
	// A token without the complete scope is refused too, as any call (403:
	// the agent says it cannot connect, with the server's message).
	if a := connectTabbyAgent(t, srv, tok["harness"]); a.status != "noConnection" {
		t.Errorf("agent with an evaluate-only token: %+v, want noConnection", a)
	}
	for range 3 { // more than the token's burst of 1
		if a := connectTabbyAgent(t, srv, tok["editor"]); a.status != "ready" || a.model != backend.Model("") || !a.telemetryOff {
			t.Fatalf("agent with the editor's token: %+v, want ready with the model and telemetry off", a)
		}
	}
	// The settings answer, and the 401 is in Tabby's (OpenAI's) error style
	// with the header that names the scheme.
	for _, token := range []string{"", auth.NewToken()} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1beta/server_setting", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, body := sendRequest(t, req); resp.StatusCode != 200 || string(body) != "{\"disable_client_side_telemetry\":true}\n" {
			t.Errorf("server_setting with token %.10q: %d %s", token, resp.StatusCode, body)
		}
	}
	resp, body := do(t, srv, "GET", "/v1/health", "")
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Type != "authentication_error" || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("/v1/health without a token: %d %s (WWW-Authenticate %q)", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
	// The editor token's one request of its burst is still there.
	req, _ := http.NewRequest("POST", srv.URL+"/v1/completions",
		strings.NewReader(`{"language":"python","segments":{"prefix":"def f():\n    return ","suffix":"\n"}}`))
	req.Header.Set("Authorization", "Bearer "+tok["editor"])
	if resp, body := sendRequest(t, req); resp.StatusCode != 200 {
		t.Errorf("completion after the health checks: %d %s, want 200 (health took from the burst)", resp.StatusCode, body)
	}
}

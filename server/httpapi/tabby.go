package httpapi

import (
	"net/http"
	"net/url"
	"runtime"
	"strings"

	"github.com/infill-dev/infill/server/pipeline"
	"go.uber.org/zap"
)

// The Tabby-compatible surface, for Tabby's plugins (VS Code, JetBrains,
// Vim/Neovim, Eclipse), which all talk through tabby-agent:
//
//   - POST /v1/completions with "segments" (v1Completions hands such a body
//     here): prefix and suffix; filepath becomes the cursor file's path
//     (a workspace file when the server reads one); git_url names the
//     repository in the prompt; declarations,
//     relevant_snippets_from_changed_files and
//     relevant_snippets_from_recently_opened_files become snippets ranked
//     with infill's own context (their score is ignored: infill ranks);
//     language, temperature and seed are honoured. clipboard (which
//     Tabby's own server does not use either), user and debug_options are
//     ignored; mode "next_edit_suggestion" is refused (400: infill fills
//     in the middle). The answer is {id, choices: [{index, text}]}, which
//     the agent reads as choices[0].text with id as the completion id.
//   - GET (or POST, as Tabby 0.2 servers had it) /v1/health: the agent
//     connects when it answers 200 and offers completions when "model" is
//     set; chat_model and webserver are left out, so the plugins say chat
//     is not available rather than failing.
//   - GET /v1beta/server_setting, which the agent fetches after connecting:
//     disable_client_side_telemetry is true, so the agent sends no usage
//     data to Tabby's cloud on infill's behalf.
//   - POST /v1/events (view, select, dismiss): accepted and dropped.
//
// Tokens: without --auth-tokens the agent's Authorization header (its
// token setting) is ignored. With them, /v1/health needs a valid token
// with the complete scope (not counted against its limits), so the agent
// reads a missing or wrong token as "unauthorized" when it connects, as
// with Tabby's own server; /v1beta/server_setting answers whatever the
// token, so that nothing leaves the user's machine by default.

// tabbySegments is Tabby's CompletionRequest.segments.
type tabbySegments struct {
	Prefix       string         `json:"prefix"`
	Suffix       string         `json:"suffix"`
	Filepath     string         `json:"filepath"`
	GitURL       string         `json:"git_url"`
	Declarations []tabbySnippet `json:"declarations"`
	Changed      []tabbySnippet `json:"relevant_snippets_from_changed_files"`
	Opened       []tabbySnippet `json:"relevant_snippets_from_recently_opened_files"`
}

// tabbySnippet is a Declaration or a Snippet (whose score is not read).
type tabbySnippet struct {
	Filepath string `json:"filepath"`
	Body     string `json:"body"`
}

func (h *Handler) registerTabby() {
	health := h.tabbyHealth()
	h.route("/v1/health", dialectTabby, map[string]http.HandlerFunc{http.MethodGet: health, http.MethodPost: health})
	h.route("/v1beta/server_setting", dialectTabby, map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"disable_client_side_telemetry": true})
	}})
	h.route("/v1/events", dialectTabby, map[string]http.HandlerFunc{http.MethodPost: h.tabbyEvent})
}

// tabbyComplete serves a Tabby completion request.
func (h *Handler) tabbyComplete(w http.ResponseWriter, r *http.Request, b *v1Body) {
	f, err := b.tabbyRequest()
	if err != nil {
		writeError(w, r, dialectTabby, err)
		return
	}
	res, err := h.complete(r.Context(), f, "tabby", pipeline.Stream{})
	if err != nil {
		writeError(w, r, dialectTabby, err)
		return
	}
	type choice struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
	}
	out := struct {
		ID      string   `json:"id"`
		Choices []choice `json:"choices"`
	}{ID: completionID(r)}
	for _, c := range res.Candidates {
		out.Choices = append(out.Choices, choice{Index: c.Index, Text: c.Text})
	}
	writeJSON(w, http.StatusOK, out)
}

// tabbyRequest turns a Tabby body into a fimRequest.
func (b *v1Body) tabbyRequest() (*fimRequest, error) {
	switch b.Mode {
	case "", "standard":
	default:
		return nil, badRequest("mode", "mode %q is not supported: infill completes in standard mode only", b.Mode)
	}
	s := b.Segments
	f := &fimRequest{
		Prefix:   s.Prefix,
		Suffix:   s.Suffix,
		Path:     uriPath(s.Filepath),
		Language: b.Language,
		RepoName: repoNameOf(s.GitURL),
	}
	for _, list := range [][]tabbySnippet{s.Declarations, s.Changed, s.Opened} {
		for _, sn := range list {
			if strings.TrimSpace(sn.Body) != "" {
				f.Extra = append(f.Extra, snippet{Path: uriPath(sn.Filepath), Text: sn.Body})
			}
		}
	}
	f.Generation = pipeline.Generation{Temperature: b.Temperature, Seed: b.Seed}
	drawSeed(&f.Generation)
	return f, nil
}

// uriPath turns the file URIs the agent sends for files outside the
// workspace (file:///usr/lib/...) into paths; other paths pass unchanged.
func uriPath(p string) string {
	if !strings.HasPrefix(p, "file:") {
		return p
	}
	u, err := url.Parse(p)
	if err != nil || u.Path == "" {
		return p
	}
	return u.Path
}

// repoNameOf names a repository after its remote URL
// (https://github.com/o/name.git, git@github.com:o/name.git → "name").
func repoNameOf(gitURL string) string {
	s := strings.TrimRight(strings.TrimSpace(gitURL), "/")
	s = strings.TrimSuffix(s, ".git")
	if i := strings.LastIndexAny(s, "/:"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// tabbyHealth serves /v1/health with the fields of Tabby's HealthState
// that the agent and plugins read. version.git_describe is "infill", not
// a number: the agent skips /v1beta/server_setting (and so keeps its
// telemetry on) for servers whose version reads below 0.9.0; infill's
// version goes in git_sha.
func (h *Handler) tabbyHealth() http.HandlerFunc {
	type version struct {
		BuildDate      string `json:"build_date"`
		BuildTimestamp string `json:"build_timestamp"`
		GitSHA         string `json:"git_sha"`
		GitDescribe    string `json:"git_describe"`
	}
	body := struct {
		Model       string   `json:"model"`
		Device      string   `json:"device"`
		Arch        string   `json:"arch"`
		CPUInfo     string   `json:"cpu_info"`
		CPUCount    int      `json:"cpu_count"`
		CUDADevices []string `json:"cuda_devices"`
		Version     version  `json:"version"`
	}{
		Model: h.cfg.DefaultModel,
		// The model runs in the backend (Ollama), which picks the device.
		Device:      "remote",
		Arch:        runtime.GOARCH,
		CPUCount:    runtime.NumCPU(),
		CUDADevices: []string{},
		Version:     version{GitSHA: h.cfg.Version, GitDescribe: "infill"},
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h.backendDown(); err != nil {
			writeError(w, r, dialectTabby, err)
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// tabbyEvent accepts a completion event (view, select, dismiss) and drops
// it; malformed JSON is still a 400.
func (h *Handler) tabbyEvent(w http.ResponseWriter, r *http.Request) {
	var ev struct {
		Type string `json:"type"`
	}
	if err := decodeJSON(r, &ev); err != nil {
		writeError(w, r, dialectTabby, err)
		return
	}
	h.log.Debug("tabby event dropped", zap.String("type", ev.Type), zap.String("request_id", pipeline.RequestID(r.Context())))
	w.WriteHeader(http.StatusOK)
}

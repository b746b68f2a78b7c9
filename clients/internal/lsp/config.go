package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/infill-dev/infill/clients/go/infill"
)

// Settings are what the editor may change: through initializationOptions
// at start and its workspace settings (workspace/didChangeConfiguration,
// or the workspace/configuration section "infill") later; see
// settings.go for how the two combine. Each JSON field present replaces
// the value below it; null puts back the server's default. The same
// object nested under "infill" is accepted too, as editors send their
// settings by section; null, {} and [] are no settings.
type Settings struct {
	// Model on the backend; "" is the server's default.
	Model string `json:"model"`
	// MaxTokens to generate; 0 is the server's default.
	MaxTokens uint32 `json:"maxTokens"`
	// Temperature; nil is the server's default.
	Temperature *float32 `json:"temperature"`
	// Stop strings, on top of the model's own.
	Stop []string `json:"stop"`
	// LatencyBudgetMs: past it the server returns what it generated so far
	// (0: no budget).
	LatencyBudgetMs uint32 `json:"latencyBudgetMs"`
	// Candidates per request; each is an item of the answer (0: one).
	Candidates uint32 `json:"candidates"`
	// DebounceMs waits this long before asking the server, so that a newer
	// request for the same document replaces this one for free (0: none;
	// editors already debounce).
	DebounceMs uint32 `json:"debounceMs"`
	// EditPrediction answers textDocument/inlineCompletion with the
	// server's edit prediction when the edit is at the cursor
	// (predict.go); infill/predictEdit answers edits anywhere either way.
	EditPrediction bool `json:"editPrediction"`
	// EditFormat is the edit model's prompt format, "zeta" or "instinct";
	// "": by the model's name, else the server's --edit-format.
	EditFormat string `json:"editFormat"`
}

var settingNames = []string{"model", "maxTokens", "temperature", "stop", "latencyBudgetMs", "candidates", "debounceMs",
	"editPrediction", "editFormat"}

// maxCandidates bounds Settings.Candidates (the server's default cap).
const maxCandidates = 8

// Validate reports settings that cannot work.
func (s Settings) Validate() error {
	if s.Temperature != nil && (math.IsNaN(float64(*s.Temperature)) || *s.Temperature < 0 || *s.Temperature > 2) {
		return fmt.Errorf("temperature %g: want 0 to 2", *s.Temperature)
	}
	if s.Candidates > maxCandidates {
		return fmt.Errorf("candidates %d: at most %d", s.Candidates, maxCandidates)
	}
	if slices.Contains(s.Stop, "") {
		return errors.New("stop: an empty stop string")
	}
	if _, ok := editFormats[s.EditFormat]; !ok {
		return fmt.Errorf("editFormat %q: want zeta, instinct or empty", s.EditFormat)
	}
	return nil
}

// apply returns s changed by the JSON object raw (see Settings), and the
// names of fields it does not know. On an error s is returned unchanged.
// No settings (null, {}, []) return s.
func (s Settings) apply(raw json.RawMessage) (Settings, []string, error) {
	if noSettings(raw) {
		return s, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return s, nil, fmt.Errorf("settings must be a JSON object: %w", err)
	}
	if section, ok := fields["infill"]; ok {
		return s.apply(section)
	}
	var unknown []string
	for name := range fields {
		if !slices.Contains(settingNames, name) {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	out := s
	out.Stop = slices.Clone(s.Stop)
	if err := json.Unmarshal(raw, &out); err != nil {
		return s, unknown, fmt.Errorf("settings: %w", err)
	}
	// null puts a field back to its default.
	for _, name := range settingNames {
		if v, ok := fields[name]; ok && bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			switch name {
			case "model":
				out.Model = ""
			case "maxTokens":
				out.MaxTokens = 0
			case "latencyBudgetMs":
				out.LatencyBudgetMs = 0
			case "candidates":
				out.Candidates = 0
			case "debounceMs":
				out.DebounceMs = 0
			case "editPrediction":
				out.EditPrediction = false
			case "editFormat":
				out.EditFormat = ""
			}
		}
	}
	if err := out.Validate(); err != nil {
		return s, unknown, err
	}
	return out, unknown, nil
}

// Config configures the language server.
type Config struct {
	// Settings are the defaults the editor's settings change.
	Settings Settings
	// Timeout bounds one completion call (0: none). A latency budget
	// (Settings.LatencyBudgetMs) returns partial text instead.
	Timeout time.Duration
	// Load bounds what is read of a repository (the command-line tool's
	// rules; zero values are its defaults).
	Load infill.LoadOptions
	// Server is the infill server's address, for messages to the user.
	Server string
	// Version is reported to the editor in serverInfo.
	Version string
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %v must not be negative", c.Timeout)
	}
	if c.Load.MaxFileBytes < 0 || c.Load.MaxTotalBytes < 0 || c.Load.MaxFiles < 0 {
		return errors.New("load limits must not be negative")
	}
	return c.Settings.Validate()
}

// DialOptions are the gRPC options a language server's client should
// add (infill.Config.DialOptions): reconnect within about two seconds
// of the server coming back, where gRPC's default backoff grows to two
// minutes, which an editor would see as completions that never return.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
		MinConnectTimeout: 5 * time.Second,
	})}
}

package lsp

import (
	"encoding/json"
	"testing"
	"time"
)

// quiet is how long a test waits for messages that must not come (a
// settings loop sends hundreds in this time); the assertions hold
// however long it is.
const quiet = 200 * time.Millisecond

// settingsProbe asks for a completion until the request's max_tokens
// and candidates are what settings should make them.
func settingsProbe(t *testing.T, e *editor, rec *recorder, maxTokens, candidates uint32, when string) {
	t.Helper()
	for range 200 {
		e.call(methodInlineCompletion, position("untitled:a", 0, 4))
		g := rec.lastSent().GetGeneration()
		if g.GetMaxTokens() == maxTokens && g.GetCandidates() == candidates {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	g := rec.lastSent().GetGeneration()
	t.Fatalf("%s: max_tokens %d, candidates %d; want %d, %d", when, g.GetMaxTokens(), g.GetCandidates(), maxTokens, candidates)
}

// waitRequests waits until the server sent n requests of method, then
// for quiet, and fails if it sent more.
func waitRequests(t *testing.T, e *editor, method string, n int, when string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for e.requestsOf(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %s requests within %v; want %d", when, e.requestsOf(method), method, waitFor, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(quiet)
	if got := e.requestsOf(method); got != n {
		t.Fatalf("%s: %d %s requests; want %d", when, got, method, n)
	}
}

// Whatever the editor answers to workspace/configuration (no section:
// null, [null], {}, [{}], [], an error; or real settings, flat or under
// "infill"), the server asks exactly once after initialized and once per
// didChangeConfiguration without settings, never in answer to its own
// pull. No settings mean the defaults (the flags with
// initializationOptions over them); settings take effect and replace
// the workspace settings before them.
func TestSettingsPullBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer string // "" : the editor answers MethodNotFound
		tokens uint32 // max_tokens the answer makes
		keep   bool   // a failed pull keeps the settings there are
	}{
		{"null", "null", 7, false},
		{"[null]", "[null]", 7, false},
		{"{}", "{}", 7, false},
		{"[{}]", "[{}]", 7, false},
		{"[]", "[]", 7, false},
		{"[[]]", "[[]]", 7, false},
		{"error", "", 7, true},
		{"flat", `[{"maxTokens": 11}]`, 11, false},
		{"nested", `[{"infill": {"maxTokens": 11}}]`, 11, false},
		{"bare object", `{"maxTokens": 11}`, 11, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := startRecorder(t)
			e := startEditor(t, rec.client, Config{Settings: Settings{MaxTokens: 7}})
			if c.answer != "" {
				e.mu.Lock()
				e.replies[methodConfiguration] = json.RawMessage(c.answer)
				e.mu.Unlock()
			}
			e.initialize(map[string]any{
				"capabilities":          map[string]any{"workspace": map[string]any{"configuration": true}},
				"initializationOptions": map[string]any{"candidates": 2},
			})
			e.open("untitled:a", "python", "x = ")
			waitRequests(t, e, methodConfiguration, 1, "after initialized")
			settingsProbe(t, e, rec, c.tokens, 2, "after the first pull")

			// Pushed settings apply without a pull.
			e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"infill": map[string]any{"maxTokens": 5}}})
			settingsProbe(t, e, rec, 5, 2, "after pushed settings")
			if n := e.requestsOf(methodConfiguration); n != 1 {
				t.Fatalf("pushed settings made %d pulls in all; want 1", n)
			}
			// Each notification without settings pulls once, and the
			// answer replaces the pushed settings.
			for i, settings := range []any{nil, map[string]any{}, []any{}} {
				e.notify(methodDidChangeConfig, map[string]any{"settings": settings})
				waitRequests(t, e, methodConfiguration, 2+i, "after didChangeConfiguration without settings")
				if !c.keep {
					settingsProbe(t, e, rec, c.tokens, 2, "after a pull")
				}
				e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"maxTokens": 5}})
				settingsProbe(t, e, rec, 5, 2, "after pushed settings")
			}
			if len(e.notesOf(methodShowMessage)) != 0 {
				t.Errorf("messages shown: %v", e.notesOf(methodShowMessage))
			}
			if err := e.shutdown(); err != nil {
				t.Error(err)
			}
			if n := e.requestsOf(methodConfiguration); n != 4 {
				t.Errorf("%d pulls in all; want 4", n)
			}
		})
	}
}

// A client without workspace/configuration is never asked; its
// didChangeConfiguration without settings means the defaults.
func TestSettingsWithoutPull(t *testing.T) {
	t.Parallel()
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{Settings: Settings{MaxTokens: 7}})
	e.initialize(map[string]any{"initializationOptions": map[string]any{"candidates": 2}})
	e.open("untitled:a", "python", "x = ")
	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"maxTokens": 5, "candidates": 3}})
	settingsProbe(t, e, rec, 5, 3, "after pushed settings")
	e.notify(methodDidChangeConfig, map[string]any{"settings": nil})
	settingsProbe(t, e, rec, 7, 2, "after settings: null")
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
	if n := e.requestsOf(methodConfiguration); n != 0 {
		t.Errorf("%d pulls from a client that cannot answer them", n)
	}
}

// Signals that come while a pull is in flight make one more pull after
// it, not one each; the answer to the older pull is dropped, so settings
// pushed while it was in flight are not overwritten by older ones.
func TestSettingsPullInFlight(t *testing.T) {
	t.Parallel()
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{Settings: Settings{MaxTokens: 7}})
	release := make(chan any)
	answers := 0
	e.mu.Lock()
	e.replies[methodConfiguration] = func(message) any {
		e.mu.Lock()
		answers++
		first := answers == 1
		e.mu.Unlock()
		if first {
			return <-release
		}
		return []any{map[string]any{"maxTokens": 12}}
	}
	e.mu.Unlock()
	e.initialize(map[string]any{"capabilities": map[string]any{"workspace": map[string]any{"configuration": true}}})
	e.open("untitled:a", "python", "x = ")
	waitRequests(t, e, methodConfiguration, 1, "after initialized")

	e.notify(methodDidChangeConfig, map[string]any{"settings": map[string]any{"maxTokens": 5}})
	settingsProbe(t, e, rec, 5, 0, "settings pushed while a pull is in flight")
	for range 3 {
		e.notify(methodDidChangeConfig, map[string]any{"settings": nil})
	}
	waitRequests(t, e, methodConfiguration, 1, "signals while a pull is in flight")
	release <- []any{map[string]any{"maxTokens": 11}} // older than the push: dropped
	waitRequests(t, e, methodConfiguration, 2, "after the pull in flight")
	settingsProbe(t, e, rec, 12, 0, "after the second pull")
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
	if n := e.requestsOf(methodConfiguration); n != 2 {
		t.Errorf("%d pulls; want 2", n)
	}
}

// A completion asked while the settings pull after initialized is out
// waits for its answer and has the settings it brings, so the first
// completion of a session has the editor's settings; one asked of an
// editor that never answers goes ahead (after settingsWait) with the
// settings there are.
func TestCompletionWaitsForPulledSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		answer bool
		tokens uint32
	}{{"answered", true, 12}, {"never answered", false, 7}} {
		t.Run(c.name, func(t *testing.T) {
			rec := startRecorder(t)
			e := startEditor(t, rec.client, Config{Settings: Settings{MaxTokens: 7}})
			never := make(chan struct{})
			defer close(never)
			e.mu.Lock()
			e.replies[methodConfiguration] = func(message) any {
				if !c.answer {
					<-never
					return nil
				}
				time.Sleep(quiet) // the completion request comes first
				return []any{map[string]any{"maxTokens": 12}}
			}
			e.mu.Unlock()
			e.initialize(map[string]any{"capabilities": map[string]any{"workspace": map[string]any{"configuration": true}}})
			e.open("untitled:a", "python", "x = ")
			e.call(methodInlineCompletion, position("untitled:a", 0, 4))
			if got := rec.lastSent().GetGeneration().GetMaxTokens(); got != c.tokens {
				t.Errorf("max_tokens %d; want %d", got, c.tokens)
			}
			// Once the pull is answered or the wait is over, a completion
			// goes ahead at once with the settings there are.
			e.call(methodInlineCompletion, position("untitled:a", 0, 4))
			if got := rec.lastSent().GetGeneration().GetMaxTokens(); got != c.tokens {
				t.Errorf("the next completion: max_tokens %d; want %d", got, c.tokens)
			}
			if n := e.requestsOf(methodConfiguration); n != 1 {
				t.Errorf("%d pulls; want 1", n)
			}
			if err := e.shutdown(); err != nil {
				t.Error(err)
			}
		})
	}
}

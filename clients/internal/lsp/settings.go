package lsp

import (
	"bytes"
	"encoding/json"
	"time"

	protocol "github.com/tliron/glsp/protocol_3_16"
	"go.uber.org/zap"
)

// The session's settings are layers, each over the one before: the
// flags (Config.Settings), the editor's initializationOptions (s.base),
// and the editor's workspace settings (s.settings = s.base with them
// applied). The workspace settings arrive whole, pushed in
// workspace/didChangeConfiguration or pulled with workspace/configuration,
// and each arrival replaces the one before: a setting the user removed
// goes back to its initializationOptions or flag value, and null, {} or
// [] (what editors answer for a section they do not have) means none.
//
// Pulls are bounded: one after initialized and one per
// didChangeConfiguration that carries no settings (the LSP's "pull"
// signal, settings: null; {} and [] too, which some clients send); an
// answer never causes another pull, a signal while a pull is in flight
// makes one more pull after it (not one per signal), and an answer older
// than the latest settings the editor sent is dropped.
//
// A completion asked while pulls are in flight waits for their answers,
// for at most settingsWait from the first of them, and then takes the
// settings there are: the first completion after start has the editor's
// settings, and an editor that never answers delays completions only
// within that time.

// settingsWait bounds how long completions wait for pulled settings.
const settingsWait = time.Second

// pullState is the session's workspace/configuration call; s.mu guards it.
type pullState struct {
	gen      uint64 // counts the editor's settings signals; a pull's answer must be as new
	inFlight bool
	again    bool // a signal came while a pull was in flight
	count    int  // pulls asked, for the log
	// settled closes when no pull is in flight (nil: none is); completions
	// wait for it until waitUntil.
	settled   chan struct{}
	waitUntil time.Time
}

// settleLocked ends the completions' wait. s.mu is held.
func (s *session) settleLocked() {
	if s.pull.settled != nil {
		close(s.pull.settled)
		s.pull.settled = nil
	}
}

// didChangeConfiguration takes the editor's pushed settings, or pulls
// them where the notification carries none and the client can answer.
func (s *session) didChangeConfiguration(raw json.RawMessage) {
	s.mu.Lock()
	s.pull.gen++ // a pull in flight now answers for older settings
	if noSettings(raw) && s.caps.Workspace != nil && s.caps.Workspace.Configuration {
		s.pullSettingsLocked()
		s.mu.Unlock()
		return
	}
	unknown, err := s.useSettingsLocked(raw)
	s.mu.Unlock()
	s.reportSettings("workspace/didChangeConfiguration", unknown, err)
}

// pullSettingsLocked asks the client for the "infill" section, unless a
// pull is in flight: then one more follows it. s.mu is held.
func (s *session) pullSettingsLocked() {
	if s.pull.inFlight {
		s.pull.again = true
		return
	}
	gen, conn := s.pull.gen, s.conn
	s.pull.count++
	s.log.Debug("asking the editor for settings (workspace/configuration)", zap.Int("pull", s.pull.count))
	if s.pull.settled == nil {
		s.pull.settled = make(chan struct{})
		s.pull.waitUntil = time.Now().Add(settingsWait)
	}
	s.pull.inFlight = s.goLocked(func() {
		var out json.RawMessage
		callErr := conn.Call(s.ctx, methodConfiguration, configurationParams{Items: []configurationItem{{Section: "infill"}}}, &out)
		s.mu.Lock()
		s.pull.inFlight = false
		current := gen == s.pull.gen
		if s.pull.again {
			s.pull.again = false
			s.pullSettingsLocked()
		}
		var unknown []string
		var err error
		if callErr == nil && current {
			unknown, err = s.useSettingsLocked(firstItem(out))
		}
		if !s.pull.inFlight {
			s.settleLocked()
		}
		s.mu.Unlock()
		switch {
		case callErr != nil:
			s.log.Debug("workspace/configuration not answered", zap.Error(callErr))
		case !current:
			s.log.Debug("workspace/configuration answer dropped: the editor sent newer settings")
		default:
			s.reportSettings("workspace/configuration", unknown, err)
		}
	})
	if !s.pull.inFlight {
		s.settleLocked()
	}
}

// useSettingsLocked makes raw the workspace settings; on an error the
// settings stay as they were. s.mu is held.
func (s *session) useSettingsLocked(raw json.RawMessage) ([]string, error) {
	settings, unknown, err := s.base.apply(raw)
	if err == nil {
		s.settings = settings
	}
	return unknown, err
}

// reportSettings logs the outcome of new settings from source, and shows
// the user settings that cannot work.
func (s *session) reportSettings(source string, unknown []string, err error) {
	if len(unknown) > 0 {
		s.log.Warn("unknown settings ignored", zap.String("from", source), zap.Strings("names", unknown))
	}
	if err != nil {
		s.showOnce("settings:"+err.Error(), protocol.MessageTypeWarning, "infill: settings not applied: "+err.Error())
		return
	}
	s.mu.Lock()
	st := s.settings
	s.mu.Unlock()
	s.log.Info("settings", zap.String("from", source), zap.Any("settings", st))
}

// firstItem is the first item of a workspace/configuration answer. A
// client that answers with a bare value instead of an array (null, {})
// is taken at its word.
func firstItem(out json.RawMessage) json.RawMessage {
	var items []json.RawMessage
	if err := json.Unmarshal(out, &items); err != nil || items == nil {
		return out
	}
	if len(items) == 0 {
		return nil
	}
	return items[0]
}

// noSettings reports a didChangeConfiguration that carries no settings.
func noSettings(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null" || isEmptyContainer(raw)
}

// isEmptyContainer reports {} or [] (with any space inside).
func isEmptyContainer(raw json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

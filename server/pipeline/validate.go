package pipeline

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack"
)

// validate checks the shape of a request; the domain packages check the
// meaning (cursor inside the file, options in range). Fields are named as in
// the gRPC API (infill.v1.CompleteRequest), the canonical form of a request.
func (p *Pipeline) validate(req *Request) error {
	if err := checkText(req); err != nil {
		return err
	}
	c := &req.Context
	switch {
	case len(c.Files) == 0 && c.Base == "":
		return Invalid("repository.files", "at least one file (the one with the cursor) is required")
	case len(c.Files) > p.cfg.MaxFiles:
		return Invalid("repository.files", fmt.Sprintf("%d files exceed the limit of %d", len(c.Files), p.cfg.MaxFiles))
	case c.Cursor.Path == "":
		return Invalid("cursor.path", "required")
	case req.LatencyBudget != nil && *req.LatencyBudget < 0:
		return Invalid("latency_budget", "must be a valid, non-negative duration")
	case req.TokenBudget < 0:
		return Invalid("token_budget", "must not be negative")
	case len(req.ClientID) > p.cfg.MaxIDBytes:
		return Invalid("client_id", fmt.Sprintf("%d bytes, more than %d", len(req.ClientID), p.cfg.MaxIDBytes))
	case len(req.SessionID) > p.cfg.MaxIDBytes:
		return Invalid("session_id", fmt.Sprintf("%d bytes, more than %d", len(req.SessionID), p.cfg.MaxIDBytes))
	}
	for i, f := range c.Files {
		switch {
		case !f.HasContent && f.Digest == "":
			return Invalid(fmt.Sprintf("repository.files[%d]", i), "needs content or digest")
		case f.HasContent && f.Digest != "":
			return Invalid(fmt.Sprintf("repository.files[%d]", i), "has both content and digest; send one")
		case f.HasContent && len(f.Edits) > 0:
			return Invalid(fmt.Sprintf("repository.files[%d]", i), "has both content and edits; edits apply to a digest")
		}
	}
	return nil
}

// Invalid is the error for a request field that is wrong.
func Invalid(field, reason string) error {
	return &contextpack.ArgumentError{Field: field, Reason: reason}
}

// checkText checks that every string of req is UTF-8: a string that is not
// would otherwise reach the prompt, the logs, and responses that then fail
// to encode. TestInvalidUTF8 (package server) sets each string field of the
// gRPC requests in turn, so a new one must be added here.
func checkText(req *Request) error {
	c := &req.Context
	for _, t := range [...]struct{ field, s string }{
		{"repository.name", c.RepoName}, {"repository.base", c.Base},
		{"cursor.path", c.Cursor.Path}, {"model", req.Model},
		{"client_id", req.ClientID}, {"session_id", req.SessionID},
	} {
		if !utf8.ValidString(t.s) {
			return notText(t.field, t.s)
		}
	}
	for i, f := range c.Files {
		field := func(name string) string { return "repository.files[" + strconv.Itoa(i) + "]." + name }
		for _, t := range [...]struct{ name, s string }{
			{"path", f.Path}, {"content", f.Content}, {"digest", f.Digest}, {"language", f.Language},
		} {
			if !utf8.ValidString(t.s) {
				return notText(field(t.name), t.s)
			}
		}
		for k, e := range f.Edits {
			if !utf8.ValidString(e.Text) {
				return notText(field("edits["+strconv.Itoa(k)+"].text"), e.Text)
			}
		}
	}
	for i, p := range c.Removed {
		if !utf8.ValidString(p) {
			return notText("repository.removed["+strconv.Itoa(i)+"]", p)
		}
	}
	for i, p := range req.Generation.Stop {
		if !utf8.ValidString(p) {
			return notText("generation.stop["+strconv.Itoa(i)+"]", p)
		}
	}
	return nil
}

// notText is the error for field, whose value s is not UTF-8.
func notText(field, s string) error {
	return Invalid(field, fmt.Sprintf("not valid UTF-8 (at byte %d); strings must be UTF-8", invalidAt(s)))
}

// invalidAt returns the offset of the first byte of s that does not
// begin a valid UTF-8 sequence.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}

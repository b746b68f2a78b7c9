package pipeline

import (
	"container/list"
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
)

// ErrSuperseded is the cause of a call cancelled because a newer request of
// the same session arrived (latest wins).
var ErrSuperseded = errors.New("superseded by a newer request of the same session")

// sessions tracks, per (client id, session id), the call in flight (a newer
// one cancels it) and the completion last served (for typed-through
// reuse).
type sessions struct {
	mu    sync.Mutex
	calls map[string]*sessionCall
	typed map[string]*list.Element // of *typedEntry, most recent first
	order list.List
	max   int
}

type sessionCall struct {
	cancel context.CancelCauseFunc
}

// typedEntry is a completion served to a session: the cursor file it was
// for and its text.
type typedEntry struct {
	key        string
	model      string
	cursor     contextpack.CursorText
	completion string
	finish     inference.FinishReason
}

func newSessions(max int) *sessions {
	return &sessions{calls: map[string]*sessionCall{}, typed: map[string]*list.Element{}, max: max}
}

// sessionKey identifies a session; "" when the request names none. A
// session's edit predictions are a session of their own: an edit
// prediction and a completion of one editor buffer do not supersede each
// other.
func sessionKey(req *Request) string {
	if req.SessionID == "" {
		return ""
	}
	if req.prompt != nil {
		return req.ClientID + "\x00" + req.SessionID + "\x00edit"
	}
	return req.ClientID + "\x00" + req.SessionID
}

// begin registers a call of session key, cancelling the one before it with
// ErrSuperseded; burst says there was one (the user typed on before it
// was answered). The returned func ends the registration.
func (s *sessions) begin(ctx context.Context, key string) (_ context.Context, end func(), burst bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &sessionCall{cancel: cancel}
	s.mu.Lock()
	if prev := s.calls[key]; prev != nil {
		prev.cancel(ErrSuperseded)
		burst = true
	}
	s.calls[key] = c
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		if s.calls[key] == c {
			delete(s.calls, key)
		}
		s.mu.Unlock()
		cancel(context.Canceled)
	}, burst
}

// typedThrough returns what is left of the session's last completion when
// cur extends that completion's cursor by its first characters (same file,
// same text after the cursor, same model); otherwise it forgets the entry.
func (s *sessions) typedThrough(key, model string, cur contextpack.CursorText) (*typedEntry, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.typed[key]
	if el == nil {
		return nil, "", false
	}
	e := el.Value.(*typedEntry)
	typed := cur.Offset - e.cursor.Offset
	if e.model == model && e.cursor.Path == cur.Path && typed > 0 && typed < len(e.completion) &&
		cur.Suffix() == e.cursor.Suffix() &&
		strings.HasPrefix(cur.Prefix(), e.cursor.Prefix()) &&
		cur.Prefix()[e.cursor.Offset:] == e.completion[:typed] {
		s.order.MoveToFront(el)
		return e, e.completion[typed:], true
	}
	s.order.Remove(el)
	delete(s.typed, key)
	return nil, "", false
}

// remember keeps a session's last completion, forgetting the least recent
// session's beyond the bound.
func (s *sessions) remember(e *typedEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.typed[e.key]; el != nil {
		el.Value = e
		s.order.MoveToFront(el)
		return
	}
	s.typed[e.key] = s.order.PushFront(e)
	for s.order.Len() > s.max {
		old := s.order.Back()
		s.order.Remove(old)
		delete(s.typed, old.Value.(*typedEntry).key)
	}
}

// forget drops a session's last completion.
func (s *sessions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.typed[key]; el != nil {
		s.order.Remove(el)
		delete(s.typed, key)
	}
}

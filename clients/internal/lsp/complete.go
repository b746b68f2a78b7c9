package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// clientID fills CompleteRequest.client_id.
const clientID = "infill-lsp"

type completionKind int

const (
	kindCompletion completionKind = iota // textDocument/completion
	kindInline                           // textDocument/inlineCompletion
	kindPredict                          // infill/predictEdit (predict.go)
)

// Why a completion's context ended early.
var (
	errSuperseded = errors.New("superseded by a newer request for the document")
	errCancelled  = errors.New("cancelled by the editor")
)

// call is a completion in flight.
type call struct {
	id     jsonrpc2.ID
	uri    string
	cancel context.CancelCauseFunc
}

// job is what a completion needs, taken when its request arrived.
type job struct {
	kind     completionKind
	uri      string
	text     string // the document's text then
	off      int    // the cursor's byte offset in text
	repo     *repo
	rel      string
	lang     string
	enc      string
	session  string
	settings Settings
	// settled, when not nil, closes once pulled settings arrive; until
	// settledBy the completion waits for them (settings.go).
	settled   <-chan struct{}
	settledBy time.Time
}

// startCompletion checks the request against the document as it is now,
// cancels the document's older completion (the newest request wins) and
// runs the new one in a goroutine that answers it.
func (s *session) startCompletion(id jsonrpc2.ID, kind completionKind, p protocol.TextDocumentPositionParams) (any, *jsonrpc2.Error) {
	uri := p.TextDocument.URI
	s.mu.Lock()
	d := s.ws.docs[uri]
	if d == nil {
		s.mu.Unlock()
		return nil, rpcError(jsonrpc2.CodeInvalidParams, "invalid params: document %s is not open (textDocument/didOpen first)", uri)
	}
	off, err := offsetOf(d.text, p.Position, s.enc)
	if err != nil {
		s.mu.Unlock()
		return nil, invalidParams(err)
	}
	j := &job{kind: kind, uri: uri, text: d.text, off: off, repo: d.repo, rel: d.rel, lang: d.lang, enc: s.enc,
		session: s.sessionOf(uri), settings: s.settings}
	// Only a completion asked within the wait bounds waits: past it (an
	// editor that never answers) completions take no timer and no second
	// lock for settings that are not coming.
	if s.pull.settled != nil && time.Now().Before(s.pull.waitUntil) {
		j.settled, j.settledBy = s.pull.settled, s.pull.waitUntil
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	c := &call{id: id, uri: uri, cancel: cancel}
	if prev := s.latest[uri]; prev != nil {
		prev.cancel(errSuperseded)
	}
	forget := func() {
		if s.inflight[id] == c {
			delete(s.inflight, id)
		}
		if s.latest[uri] == c {
			delete(s.latest, uri)
		}
		cancel(nil)
	}
	s.latest[uri] = c
	s.inflight[id] = c
	started := s.goLocked(func() {
		result, rerr := s.complete(ctx, j)
		s.mu.Lock()
		forget()
		s.mu.Unlock()
		s.reply(id, result, rerr)
	})
	if !started {
		forget()
	}
	s.mu.Unlock()
	if !started {
		return nil, rpcError(codeRequestCancelled, "the server is closing")
	}
	return pending, nil
}

// sessionOf is the CompleteRequest.session_id of a document: the
// server takes a session as one editor buffer's keystrokes (a new request
// cancels the session's older one there too, and typing the start of
// the last completion is answered from it), so each document is its own.
func (s *session) sessionOf(uri string) string {
	sum := sha256.Sum256([]byte(uri))
	return s.id + "-" + hex.EncodeToString(sum[:8])
}

// cancel handles $/cancelRequest.
func (s *session) cancel(id jsonrpc2.ID) {
	s.mu.Lock()
	c := s.inflight[id]
	s.mu.Unlock()
	if c != nil {
		c.cancel(errCancelled)
	}
}

// complete asks the server and builds the answer.
func (s *session) complete(ctx context.Context, j *job) (any, *jsonrpc2.Error) {
	if j.settled != nil {
		t := time.NewTimer(time.Until(j.settledBy))
		select {
		case <-j.settled:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return s.ended(ctx, j)
		}
		t.Stop()
		s.mu.Lock()
		j.settings = s.settings
		s.mu.Unlock()
	}
	if d := time.Duration(j.settings.DebounceMs) * time.Millisecond; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return s.ended(ctx, j)
		}
	}
	select {
	case <-j.repo.ready:
	case <-ctx.Done():
		return s.ended(ctx, j)
	}
	if j.predicts() {
		return s.predict(ctx, j)
	}
	req := s.buildRequest(j)
	start := time.Now()
	resp, ended, rerr := callServer(s, ctx, j, func(ctx context.Context) (*infillv1.CompleteResponse, error) {
		return s.c.Complete(ctx, req)
	})
	if ended != nil || rerr != nil {
		return ended, rerr
	}
	s.log.Debug("completion", zap.String("path", j.rel), zap.Int("offset", j.off),
		zap.Duration("took", time.Since(start)), zap.String("request_id", resp.GetRequestId()))
	return answer(j, resp.GetCandidates()), nil
}

// callServer makes a call to the infill server for j with the session's
// timeout. On success it returns the response (and clears the messages
// shown, as every success does); otherwise the answer j gets instead:
// the call's context ended (ended), or the server's error (failed).
func callServer[R any](s *session, ctx context.Context, j *job, call func(context.Context) (R, error)) (R, any, *jsonrpc2.Error) {
	var zero R
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.Timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
	}
	resp, err := call(callCtx)
	cancel()
	if ctx.Err() != nil {
		a, rerr := s.ended(ctx, j)
		return zero, a, rerr
	}
	if err != nil {
		a, rerr := s.failed(j, err)
		return zero, a, rerr
	}
	s.mu.Lock()
	clear(s.shown)
	s.mu.Unlock()
	return resp, nil, nil
}

// request builds the CompleteRequest: the repository's files as they are
// now, with the cursor document's text as it was when the request came.
func (s *session) buildRequest(j *job) *infillv1.CompleteRequest {
	s.mu.Lock()
	files := j.repo.snapshot()
	name := j.repo.name
	s.mu.Unlock()
	i, found := slices.BinarySearchFunc(files, j.rel, func(f *infillv1.File, p string) int { return strings.Compare(f.GetPath(), p) })
	if !found || files[i].GetContent() != j.text {
		// The document changed (or closed) since: send the text the
		// position is in.
		f := &infillv1.File{Path: j.rel, Content: proto.String(j.text), Language: j.lang}
		files = slices.Clone(files)
		if found {
			files[i] = f
		} else {
			files = slices.Insert(files, i, f)
		}
	}
	st := j.settings
	req := &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: name, Files: files},
		// The byte offset: the line breaks LSP counts ("\r" alone too) are
		// then no matter for the server.
		Cursor:        &infillv1.Cursor{Path: j.rel, Offset: uint64(j.off), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Model:         st.Model,
		ClientId:      clientID,
		SessionId:     j.session,
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
	}
	if st.MaxTokens > 0 || st.Temperature != nil || len(st.Stop) > 0 || st.Candidates > 1 {
		req.Generation = &infillv1.GenerationOptions{MaxTokens: st.MaxTokens, Temperature: st.Temperature, Stop: st.Stop}
		if st.Candidates > 1 {
			req.Generation.Candidates = st.Candidates
		}
	}
	if st.LatencyBudgetMs > 0 {
		req.LatencyBudget = durationpb.New(time.Duration(st.LatencyBudgetMs) * time.Millisecond)
	}
	return req
}

// ended answers a completion whose context ended: superseded by a newer
// request (an empty answer: the editor asked again already), cancelled
// by the editor, or the connection closing.
func (s *session) ended(ctx context.Context, j *job) (any, *jsonrpc2.Error) {
	if errors.Is(context.Cause(ctx), errSuperseded) {
		return noEdit(j, errSuperseded.Error()), nil
	}
	return nil, rpcError(codeRequestCancelled, "request cancelled")
}

// failed maps the server's error: UNAVAILABLE (the server or its backend
// cannot be reached) is an empty answer and one message until a
// completion succeeds again; other errors are the request's error, and
// one message per kind.
func (s *session) failed(j *job, err error) (any, *jsonrpc2.Error) {
	code := status.Code(err)
	line := infill.FormatError(err)
	switch code {
	case codes.Unavailable:
		where := "the infill server"
		if s.cfg.Server != "" {
			where += " at " + s.cfg.Server
		}
		s.showOnce("UNAVAILABLE", protocol.MessageTypeWarning,
			fmt.Sprintf("infill: no completions: %s is unavailable (%s). They resume when it is back.", where, line))
		return noEdit(j, "the infill server is unavailable"), nil
	case codes.DeadlineExceeded:
		return nil, rpcError(codeRequestFailed, "infill: no answer within the timeout (%s)", line)
	}
	s.showOnce(infill.CodeName(code)+":"+line, protocol.MessageTypeError, "infill: "+line)
	return nil, rpcError(codeRequestFailed, "infill: %s", line)
}

// empty is the answer without items.
func empty(kind completionKind) any {
	if kind == kindInline {
		return inlineCompletionList{Items: []inlineCompletionItem{}}
	}
	return protocol.CompletionList{IsIncomplete: true, Items: []protocol.CompletionItem{}}
}

// answer turns the candidates into the editor's items, the first
// candidate first; empty and repeated texts are dropped.
func answer(j *job, cands []*infillv1.Candidate) any {
	cands = slices.Clone(cands)
	slices.SortStableFunc(cands, func(a, b *infillv1.Candidate) int { return int(a.GetIndex()) - int(b.GetIndex()) })
	var texts []string
	for _, c := range cands {
		if t := c.GetText(); t != "" && !slices.Contains(texts, t) {
			texts = append(texts, t)
		}
	}
	pos := positionOf(j.text, j.off, j.enc)
	lineEnd, _ := nextLine(j.text, j.off, strings.IndexByte(j.text, '\r') >= 0)
	rest := j.text[j.off:lineEnd]
	wordStart := j.off
	for wordStart > 0 {
		r, n := utf8.DecodeLastRuneInString(j.text[:wordStart])
		if !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			break
		}
		wordStart -= n
	}
	word := j.text[wordStart:j.off]
	ls := lineStartOf(j.text, j.off)
	wordPos := protocol.Position{Line: pos.Line, Character: columnOf(j.text[ls:lineEnd], wordStart-ls, j.enc)}

	if j.kind == kindInline {
		out := inlineCompletionList{Items: []inlineCompletionItem{}}
		for _, t := range texts {
			end := endOver(j, pos, rest, t, lineEnd)
			out.Items = append(out.Items, inlineCompletionItem{InsertText: t, Range: &protocol.Range{Start: pos, End: end}})
		}
		return out
	}
	out := protocol.CompletionList{IsIncomplete: true, Items: []protocol.CompletionItem{}}
	kind := protocol.CompletionItemKindText
	format := protocol.InsertTextFormatPlainText
	for i, t := range texts {
		end := endOver(j, pos, rest, t, lineEnd)
		newText := word + t
		sortText := fmt.Sprintf("%02d", i)
		item := protocol.CompletionItem{
			Label:            label(newText),
			Kind:             &kind,
			Detail:           proto.String("infill"),
			FilterText:       &newText,
			SortText:         &sortText,
			InsertTextFormat: &format,
			TextEdit:         protocol.TextEdit{Range: protocol.Range{Start: wordPos, End: end}, NewText: newText},
		}
		if strings.Contains(t, "\n") {
			item.Documentation = protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: "```" + j.lang + "\n" + newText + "\n```"}
		}
		if i == 0 {
			pre := true
			item.Preselect = &pre
		}
		out.Items = append(out.Items, item)
	}
	return out
}

// lineStartOf returns the start of the line holding byte offset off.
func lineStartOf(text string, off int) int {
	return strings.LastIndexAny(text[:off], "\r\n") + 1
}

// endOver is where an item's range ends: at the cursor, or at the line's
// end when a one-line completion ends with the rest of the line (the
// model wrote the closing characters again: they are replaced, not
// doubled).
func endOver(j *job, pos protocol.Position, rest, text string, lineEnd int) protocol.Position {
	r := strings.TrimRight(rest, " \t")
	if r == "" || strings.ContainsAny(text, "\r\n") || !strings.HasSuffix(text, r) {
		return pos
	}
	ls := lineStartOf(j.text, j.off)
	return protocol.Position{Line: pos.Line, Character: columnOf(j.text[ls:lineEnd], lineEnd-ls, j.enc)}
}

// label is an item's label: its first line that is not blank (after a
// "⏎" when blank lines come first), shortened, and "…" when more lines
// follow.
func label(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	i := 0
	for i < len(lines)-1 && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	first := lines[i]
	if i > 0 {
		first = "⏎ " + strings.TrimSpace(first)
	}
	const maxRunes = 60
	if utf8.RuneCountInString(first) > maxRunes {
		return string([]rune(first)[:maxRunes]) + "…"
	}
	if i < len(lines)-1 {
		first += " …"
	}
	return first
}

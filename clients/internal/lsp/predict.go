package lsp

import (
	"context"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// Edit predictions (docs/edit-prediction.md): the server's PredictEdit
// with the session's edit history (history.go). Two ways in:
//
//   - textDocument/inlineCompletion, with the setting editPrediction on:
//     an edit at the cursor (on the cursor's line, starting at or before
//     it, replacing what it starts with by text that begins with what
//     lies between its start and the cursor) is the item, as ghost text;
//     any other edit, and no edit, answer no items.
//   - infill/predictEdit (this server's method; the parameters of a
//     textDocument/inlineCompletion): the edit wherever it is, as a
//     TextEdit, or none and why (predictEditResult). editors/nvim-edit.lua
//     shows it in Neovim and applies it on a key.

// methodPredictEdit is infill's own method for edits anywhere.
const methodPredictEdit = "infill/predictEdit"

// EditPredictor asks the infill server for edit predictions;
// *infill.Client is one. A Completer that is not one answers no edits.
type EditPredictor interface {
	PredictEdit(ctx context.Context, req *infillv1.PredictEditRequest, opts ...grpc.CallOption) (*infillv1.PredictEditResponse, error)
}

// predictEditResult is infill/predictEdit's answer.
type predictEditResult struct {
	URI string `json:"uri"`
	// Edit is the predicted edit of the document; null when there is none.
	Edit *protocol.TextEdit `json:"edit"`
	// NoEditReason says why there is no edit.
	NoEditReason string `json:"noEditReason,omitempty"`
	// EditableRange is the region the model was asked to rewrite.
	EditableRange *protocol.Range `json:"editableRange,omitempty"`
	// AtCursor says the edit is one textDocument/inlineCompletion shows.
	AtCursor bool `json:"atCursor"`
}

// predicts reports whether j is answered by an edit prediction.
func (j *job) predicts() bool {
	return j.kind == kindPredict || j.kind == kindInline && j.settings.EditPrediction
}

var editFormats = map[string]infillv1.EditPromptFormat{
	"":         infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_UNSPECIFIED,
	"zeta":     infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_ZETA,
	"instinct": infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_INSTINCT,
}

// predict asks the server for the next edit and answers j with it. The
// completion settings that would cut a rewrite short (maxTokens, stop)
// do not apply; model, temperature and the latency budget do.
func (s *session) predict(ctx context.Context, j *job) (any, *jsonrpc2.Error) {
	ep, ok := s.c.(EditPredictor)
	if !ok {
		return noEdit(j, "this client cannot ask for edit predictions"), nil
	}
	creq := s.buildRequest(j)
	s.mu.Lock()
	edits := s.history.recent(j.repo)
	s.mu.Unlock()
	st := j.settings
	req := &infillv1.PredictEditRequest{Repository: creq.Repository, Cursor: creq.Cursor, RecentEdits: edits,
		Model: st.Model, Format: editFormats[st.EditFormat], ClientId: clientID, SessionId: j.session,
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE}
	if st.Temperature != nil {
		req.Generation = &infillv1.GenerationOptions{Temperature: st.Temperature}
	}
	if st.LatencyBudgetMs > 0 {
		req.LatencyBudget = durationpb.New(time.Duration(st.LatencyBudgetMs) * time.Millisecond)
	}
	start := time.Now()
	resp, ended, rerr := callServer(s, ctx, j, func(ctx context.Context) (*infillv1.PredictEditResponse, error) {
		return ep.PredictEdit(ctx, req)
	})
	if ended != nil || rerr != nil {
		return ended, rerr
	}
	s.log.Debug("edit prediction", zap.String("path", j.rel), zap.Int("offset", j.off), zap.Int("recent_edits", len(edits)),
		zap.Bool("edit", resp.GetEdit() != nil), zap.Duration("took", time.Since(start)), zap.String("request_id", resp.GetRequestId()))
	return predictAnswer(j, resp), nil
}

// predictAnswer is the answer to j from the server's prediction: for
// infill/predictEdit the edit in the document's positions, for an inline
// completion the edit at the cursor as its item.
func predictAnswer(j *job, resp *infillv1.PredictEditResponse) any {
	out := predictEditResult{URI: j.uri, NoEditReason: resp.GetNoEditReason()}
	if r := resp.GetEditableRegion(); r != nil && r.GetEndOffset() <= uint64(len(j.text)) {
		rg := protocol.Range{Start: positionOf(j.text, int(r.GetStartOffset()), j.enc), End: positionOf(j.text, int(r.GetEndOffset()), j.enc)}
		out.EditableRange = &rg
	}
	e := resp.GetEdit()
	start, end := int(e.GetRange().GetStartOffset()), int(e.GetRange().GetEndOffset())
	switch {
	case e == nil:
	case end > len(j.text) || start > end || e.GetPath() != j.rel:
		// Not this text: the document changed under the request.
		e, out.NoEditReason = nil, "the edit is not for the document's text as it was asked"
	default:
		out.Edit = &protocol.TextEdit{Range: protocol.Range{Start: positionOf(j.text, start, j.enc), End: positionOf(j.text, end, j.enc)},
			NewText: e.GetText()}
		out.AtCursor = atCursor(j, start, end, e.GetText())
	}
	if j.kind == kindPredict {
		return out
	}
	list := inlineCompletionList{Items: []inlineCompletionItem{}}
	if out.AtCursor {
		list.Items = append(list.Items, inlineCompletionItem{InsertText: out.Edit.NewText, Range: &out.Edit.Range})
	}
	return list
}

// atCursor reports whether replacing [start, end) of j's text with text
// is an edit at the cursor: on the cursor's line (LSP's inline items
// replace a range on one line), from at or before the cursor to at or
// after it, with text beginning as the line does up to the cursor (what
// the user typed), so that the editor shows the rest as ghost text.
func atCursor(j *job, start, end int, text string) bool {
	if start > j.off || end < j.off || strings.ContainsAny(j.text[start:end], "\r\n") {
		return false
	}
	return strings.HasPrefix(text, j.text[start:j.off])
}

// noEdit answers j with no edit and the reason.
func noEdit(j *job, reason string) any {
	if j.kind == kindPredict {
		return predictEditResult{URI: j.uri, NoEditReason: reason}
	}
	return empty(j.kind)
}

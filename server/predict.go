package server

import (
	"context"
	"fmt"

	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/pipeline"
	"google.golang.org/protobuf/types/known/durationpb"
)

// predictRequest is what PredictEditRequest and StreamPredictEditRequest
// share: a completion request's fields, the recent edits and the format.
type predictRequest interface {
	completionRequest
	GetRecentEdits() []*infillv1.RecentEdit
	GetFormat() infillv1.EditPromptFormat
}

var editFormats = map[infillv1.EditPromptFormat]pipeline.EditFormat{
	infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_UNSPECIFIED: pipeline.EditFormatUnspecified,
	infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_ZETA:        pipeline.EditFormatZeta,
	infillv1.EditPromptFormat_EDIT_PROMPT_FORMAT_INSTINCT:    pipeline.EditFormatInstinct,
}

func (c *completionService) PredictEdit(ctx context.Context, req *infillv1.PredictEditRequest) (*infillv1.PredictEditResponse, error) {
	resp, err := c.s.predictEdit(ctx, req, nil)
	return resp, toStatus(ctx, c.s.log, err)
}

func (c *completionService) StreamPredictEdit(req *infillv1.StreamPredictEditRequest, stream infillv1.CompletionService_StreamPredictEditServer) error {
	ctx := stream.Context()
	resp, err := c.s.predictEdit(ctx, req, stream)
	if err != nil {
		return toStatus(ctx, c.s.log, err)
	}
	return stream.Send(&infillv1.StreamPredictEditResponse{Event: &infillv1.StreamPredictEditResponse_Done{Done: resp}})
}

// predictEdit decodes req, runs it through the pipeline and encodes the
// result; with a stream it sends the start and the model's output as it
// comes.
func (s *Server) predictEdit(ctx context.Context, req predictRequest, stream infillv1.CompletionService_StreamPredictEditServer) (*infillv1.PredictEditResponse, error) {
	ereq, err := decodePredictEdit(req)
	if err != nil {
		return nil, err
	}
	detail := req.GetContextDetail()
	var st pipeline.Stream
	if stream != nil {
		startDetail := detail
		st.OnStart = func(b pipeline.Start) error {
			return stream.Send(&infillv1.StreamPredictEditResponse{Event: &infillv1.StreamPredictEditResponse_Start{Start: &infillv1.StreamStart{
				Model: b.Model, Context: toManifest(b.Manifest, startDetail), RequestId: b.RequestID,
				ContextAssembly: durationpb.New(b.Assembly), RepositorySnapshot: b.Snapshot,
			}}})
		}
		st.OnDelta = func(i int, text string) error {
			return stream.Send(&infillv1.StreamPredictEditResponse{Event: &infillv1.StreamPredictEditResponse_Delta{
				Delta: &infillv1.TextDelta{CandidateIndex: uint32(i), Text: text}}})
		}
		detail = infillv1.ContextDetail_CONTEXT_DETAIL_NONE
	}
	if len(ereq.RecentEdits) == 0 {
		ereq.RecentEdits = s.workspaceEdits(ereq)
	}
	res, err := s.pipe.PredictEdit(ctx, ereq, st)
	if err != nil {
		return nil, err
	}
	return toPredictResponse(res, ereq.Context.Cursor.Encoding, detail), nil
}

// workspaceEdits is the server's own history for a request that brings
// none: the recent changes on disk of the workspace (--workspace) that
// holds the cursor's file and whose name the repository has (the same
// repository, then), with their paths there.
func (s *Server) workspaceEdits(req *pipeline.EditRequest) []pipeline.RecentEdit {
	if s.deps.Workspaces == nil {
		return nil
	}
	w, _, err := s.deps.Workspaces.Resolve(req.Context.Cursor.Path)
	if err != nil || w == nil || w.Name() != req.Context.RepoName {
		return nil
	}
	var out []pipeline.RecentEdit
	for _, e := range w.RecentEdits() {
		out = append(out, pipeline.RecentEdit(e))
	}
	return out
}

// decodePredictEdit is decodeCompletion with the recent edits and the
// format.
func decodePredictEdit(req predictRequest) (*pipeline.EditRequest, error) {
	format, ok := editFormats[req.GetFormat()]
	if !ok {
		return nil, invalid("format", fmt.Sprintf("unknown value %d", req.GetFormat()))
	}
	preq, err := decodeCompletion(req)
	if err != nil {
		return nil, err
	}
	ereq := &pipeline.EditRequest{Request: *preq, Format: format}
	for i, e := range req.GetRecentEdits() {
		re := pipeline.RecentEdit{Path: e.GetPath(), Diff: e.GetDiff()}
		if ts := e.GetTime(); ts != nil {
			if ts.CheckValid() != nil {
				return nil, invalid(fmt.Sprintf("recent_edits[%d].time", i), "not a valid timestamp")
			}
			re.Time = ts.AsTime()
		}
		ereq.RecentEdits = append(ereq.RecentEdits, re)
	}
	return ereq, nil
}

// toPredictResponse encodes an edit prediction; ranges are in the
// request cursor's encoding (UTF-8 columns for byte offsets).
func toPredictResponse(res *pipeline.EditResult, enc contextpack.Encoding, detail infillv1.ContextDetail) *infillv1.PredictEditResponse {
	c := toResponse(&res.Result, detail)
	out := &infillv1.PredictEditResponse{
		NoEditReason:       res.NoEditReason,
		EditableRegion:     textRange(res.File, res.Region, enc),
		Format:             infillv1.EditPromptFormat(res.Format),
		Usage:              c.Usage,
		Timings:            c.Timings,
		Model:              c.Model,
		Context:            c.Context,
		RequestId:          c.RequestId,
		RepositorySnapshot: c.RepositorySnapshot,
	}
	if cs := res.Candidates; len(cs) > 0 {
		out.RawOutput, out.FinishReason = cs[0].Text, finishReasons[cs[0].Finish]
	}
	if e := res.Edit; e != nil {
		out.Edit = &infillv1.PredictedEdit{Path: e.Path, Range: textRange(res.File, e.Span, enc), Text: e.Text}
	}
	return out
}

// textRange is span of text as the API gives ranges: lines and columns in
// enc and byte offsets.
func textRange(text string, span pipeline.Span, enc contextpack.Encoding) *infillv1.TextRange {
	sl, sc := contextpack.Position(text, span.Start, enc)
	el, ec := contextpack.Position(text, span.End, enc)
	return &infillv1.TextRange{StartLine: uint32(sl), StartColumn: uint32(sc), EndLine: uint32(el), EndColumn: uint32(ec),
		StartOffset: uint64(span.Start), EndOffset: uint64(span.End)}
}

package server

import (
	"context"

	"github.com/infill-dev/infill/evaluator"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/pipeline"
	"google.golang.org/protobuf/proto"
)

// predictEdit makes the completion of a next-edit task (Task.NextEdit)
// through the edit-prediction path, as PredictEdit serves an editor: the
// workspace's file (prefix + region + suffix) as the repository with the
// task's context files, the cursor, the recent edits, the prompt in the
// model's format (its name, else the server's --edit-format). The task's
// region is the editable region (the builder placed it by the format's
// rule, internal/editregion) with the format's excerpt around it. The
// completion is the region with the predicted edit made, or unchanged when
// the model predicts no edit.
func (p *pipelineCompleter) predictEdit(ctx context.Context, t evaluator.Task, opts *infillv1.GenerationOptions) (evaluator.Completion, error) {
	n := t.NextEdit
	path := t.Path
	if path == "" {
		path = "main.py"
	}
	files := []*infillv1.File{{Path: path, Language: t.Language, Content: proto.String(n.File(&t))}}
	for _, c := range t.Context {
		if c.Path != path {
			files = append(files, &infillv1.File{Path: c.Path, Content: proto.String(c.Content)})
		}
	}
	req := &infillv1.PredictEditRequest{
		Repository: &infillv1.Repository{Name: t.RepoName, Files: files},
		Cursor: &infillv1.Cursor{Path: path, Offset: uint64(n.Cursor),
			Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation:    opts,
		Model:         p.gen.model,
		ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
		RequestClass:  infillv1.RequestClass_REQUEST_CLASS_EVALUATION,
	}
	for _, e := range n.RecentEdits {
		req.RecentEdits = append(req.RecentEdits, &infillv1.RecentEdit{Path: e.Path, Diff: e.Diff})
	}
	ereq, err := decodePredictEdit(req)
	if err != nil {
		return evaluator.Completion{}, err
	}
	region := pipeline.Span{Start: len(t.Prefix), End: len(t.Prefix) + len(n.Region)}
	ereq.Region, ereq.FormatWindow = &region, true
	res, err := p.s.pipe.PredictEdit(ctx, ereq, pipeline.Stream{})
	if err != nil {
		return evaluator.Completion{}, err
	}
	text := n.Region
	if e := res.Edit; e != nil {
		text = res.File[region.Start:e.Start] + e.Text + res.File[e.End:region.End]
	}
	return completionOf(text, toResponse(&res.Result, infillv1.ContextDetail_CONTEXT_DETAIL_NONE).Timings), nil
}

package server

import (
	"context"
	"fmt"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/pipeline"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PromptBuilder assembles prompts (contextpack.Builder).
type PromptBuilder = pipeline.Builder

// Backend generates completions (inference.Ollama) and answers health
// probes.
type Backend interface {
	Pinger
	pipeline.Backend
}

type completionService struct {
	infillv1.UnimplementedCompletionServiceServer
	s *Server
}

// completionRequest is what CompleteRequest and StreamCompleteRequest share.
type completionRequest interface {
	GetRepository() *infillv1.Repository
	GetCursor() *infillv1.Cursor
	GetGeneration() *infillv1.GenerationOptions
	GetTokenBudget() uint32
	GetModel() string
	GetClientId() string
	GetSessionId() string
	GetLatencyBudget() *durationpb.Duration
	GetContextDetail() infillv1.ContextDetail
	GetRequestClass() infillv1.RequestClass
}

func (c *completionService) Complete(ctx context.Context, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	resp, err := c.s.complete(ctx, req, nil)
	return resp, toStatus(ctx, c.s.log, err)
}

func (c *completionService) StreamComplete(req *infillv1.StreamCompleteRequest, stream infillv1.CompletionService_StreamCompleteServer) error {
	ctx := stream.Context()
	resp, err := c.s.complete(ctx, req, stream)
	if err != nil {
		return toStatus(ctx, c.s.log, err)
	}
	return stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Done{Done: resp}})
}

// complete decodes req, runs it through the pipeline and encodes the
// result; with a stream it sends the start and text deltas as they come.
func (s *Server) complete(ctx context.Context, req completionRequest, stream infillv1.CompletionService_StreamCompleteServer) (*infillv1.CompleteResponse, error) {
	preq, err := decodeCompletion(req)
	if err != nil {
		return nil, err
	}
	detail := req.GetContextDetail()
	var st pipeline.Stream
	if stream != nil {
		startDetail := detail
		st.OnStart = func(b pipeline.Start) error {
			return stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Start{Start: &infillv1.StreamStart{
				Model: b.Model, Context: toManifest(b.Manifest, startDetail), RequestId: b.RequestID,
				ContextAssembly: durationpb.New(b.Assembly), RepositorySnapshot: b.Snapshot,
			}}})
		}
		st.OnDelta = func(i int, text string) error {
			return stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Delta{
				Delta: &infillv1.TextDelta{CandidateIndex: uint32(i), Text: text}}})
		}
		// The start listed the sources; the final response does not repeat them.
		detail = infillv1.ContextDetail_CONTEXT_DETAIL_NONE
	}
	res, err := s.pipe.Complete(ctx, preq, st)
	if err != nil {
		return nil, err
	}
	return toResponse(res, detail), nil
}

// toResponse encodes a pipeline result with the sources detail asks for.
func toResponse(res *pipeline.Result, detail infillv1.ContextDetail) *infillv1.CompleteResponse {
	return &infillv1.CompleteResponse{
		Candidates: toCandidates(res.Candidates),
		Usage: &infillv1.Usage{
			PromptTokens:        uint32(res.PromptTokens),
			CompletionTokens:    uint32(res.CompletionTokens),
			PlannedPromptTokens: uint32(res.PlannedPromptTokens),
			CachedPromptTokens:  uint32(res.CachedPromptTokens),
		},
		Timings: &infillv1.Timings{
			ContextAssembly:  durationpb.New(res.Assembly),
			TimeToFirstToken: durationpb.New(res.TimeToFirstToken),
			Total:            durationpb.New(res.Total),
			PromptEval:       durationpb.New(res.PromptEval),
			QueueWait:        durationpb.New(res.QueueWait),
		},
		Model:              res.Model,
		Context:            toManifest(res.Manifest, detail),
		RequestId:          res.RequestID,
		RepositorySnapshot: res.Snapshot,
		Reused:             res.Reused,
	}
}

// decodeCompletion checks what only the wire form can get wrong (missing
// messages, unknown enum values, offsets beyond an int) and converts req
// for the pipeline, which validates the rest.
func decodeCompletion(req completionRequest) (*pipeline.Request, error) {
	repo, cur := req.GetRepository(), req.GetCursor()
	switch {
	case repo == nil:
		return nil, invalid("repository.files", "at least one file (the one with the cursor) is required")
	case cur == nil:
		return nil, invalid("cursor", "required")
	case req.GetLatencyBudget() != nil && (req.GetLatencyBudget().CheckValid() != nil || req.GetLatencyBudget().AsDuration() < 0):
		return nil, invalid("latency_budget", "must be a valid, non-negative duration")
	case infillv1.ContextDetail_name[int32(req.GetContextDetail())] == "":
		return nil, invalid("context_detail", fmt.Sprintf("unknown value %d", req.GetContextDetail()))
	case infillv1.RequestClass_name[int32(req.GetRequestClass())] == "":
		return nil, invalid("request_class", fmt.Sprintf("unknown value %d", req.GetRequestClass()))
	case infillv1.PositionEncoding_name[int32(cur.GetEncoding())] == "":
		return nil, invalid("cursor.encoding", fmt.Sprintf("unknown value %d", cur.GetEncoding()))
	case cur.GetOffset() > maxOffset:
		return nil, invalid("cursor.offset", fmt.Sprintf("%d is past the end of any text", cur.GetOffset()))
	}
	for i, f := range repo.GetFiles() {
		for k, e := range f.GetEdits() {
			if e.GetStart() > maxOffset || e.GetEnd() > maxOffset {
				return nil, invalid(fmt.Sprintf("repository.files[%d].edits[%d]", i, k),
					fmt.Sprintf("range [%d, %d) is past the end of any text", e.GetStart(), e.GetEnd()))
			}
		}
	}
	gen := req.GetGeneration()
	preq := &pipeline.Request{
		Context:     toContextRequest(req),
		TokenBudget: int(req.GetTokenBudget()),
		Generation: pipeline.Generation{
			MaxTokens:  int(gen.GetMaxTokens()),
			Stop:       gen.GetStop(),
			Candidates: int(gen.GetCandidates()),
		},
		Model:     req.GetModel(),
		ClientID:  req.GetClientId(),
		SessionID: req.GetSessionId(),
		Surface:   "grpc",
	}
	if gen != nil { // optional fields: presence matters, so no getters
		preq.Generation.Temperature, preq.Generation.TopP, preq.Generation.Seed = gen.Temperature, gen.TopP, gen.Seed
		if gen.TopK != nil {
			k := int(*gen.TopK)
			preq.Generation.TopK = &k
		}
	}
	if req.GetRequestClass() == infillv1.RequestClass_REQUEST_CLASS_EVALUATION {
		preq.Class = pipeline.Evaluation
	}
	if lb := req.GetLatencyBudget(); lb != nil {
		d := lb.AsDuration()
		preq.LatencyBudget = &d
	}
	return preq, nil
}

// maxOffset bounds byte offsets from a request, which contextpack takes as
// ints: no text comes near it (a message is at most MaxRecvMsgBytes).
const maxOffset = 1 << 62

func invalid(field, reason string) error {
	return toStatus(context.Background(), nil, pipeline.Invalid(field, reason))
}

func toContextRequest(req completionRequest) contextpack.Request {
	repo, cur := req.GetRepository(), req.GetCursor()
	files := ContextFiles(repo.GetFiles())
	enc := contextpack.EncodingUTF16
	switch cur.GetEncoding() {
	case infillv1.PositionEncoding_POSITION_ENCODING_UTF8:
		enc = contextpack.EncodingUTF8
	case infillv1.PositionEncoding_POSITION_ENCODING_UTF32:
		enc = contextpack.EncodingUTF32
	case infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET:
		enc = contextpack.EncodingByteOffset
	case infillv1.PositionEncoding_POSITION_ENCODING_UNSPECIFIED, infillv1.PositionEncoding_POSITION_ENCODING_UTF16:
	default:
		enc = contextpack.Encoding(-1) // rejected by contextpack as unknown
	}
	return contextpack.Request{
		RepoName: repo.GetName(),
		Files:    files,
		Base:     repo.GetBase(),
		Removed:  repo.GetRemoved(),
		Cursor: contextpack.Cursor{Path: cur.GetPath(), Line: int(cur.GetLine()), Column: int(cur.GetColumn()),
			Offset: int(min(cur.GetOffset(), maxOffset)), Encoding: enc},
	}
}

// ContextFiles converts a request's files for contextpack.
func ContextFiles(fs []*infillv1.File) []contextpack.File {
	files := make([]contextpack.File, len(fs))
	for i, f := range fs {
		files[i] = contextpack.File{Path: f.GetPath(), Language: f.GetLanguage(), Digest: f.GetDigest(),
			Content: f.GetContent(), HasContent: f.Content != nil}
		if es := f.GetEdits(); len(es) > 0 {
			files[i].Edits = make([]contextpack.Edit, len(es))
			for k, e := range es {
				files[i].Edits[k] = contextpack.Edit{Start: int(min(e.GetStart(), maxOffset)), End: int(min(e.GetEnd(), maxOffset)), Text: e.GetText()}
			}
		}
	}
	return files
}

var sourceKinds = map[contextpack.SourceKind]infillv1.SourceKind{
	contextpack.SourcePrefix:      infillv1.SourceKind_SOURCE_KIND_PREFIX,
	contextpack.SourceSuffix:      infillv1.SourceKind_SOURCE_KIND_SUFFIX,
	contextpack.SourceImport:      infillv1.SourceKind_SOURCE_KIND_IMPORT,
	contextpack.SourceDefinition:  infillv1.SourceKind_SOURCE_KIND_DEFINITION,
	contextpack.SourceSimilar:     infillv1.SourceKind_SOURCE_KIND_SIMILAR,
	contextpack.SourceScopeHeader: infillv1.SourceKind_SOURCE_KIND_SCOPE_HEADER,
}

// toManifest converts m with the sources detail asks for.
func toManifest(m contextpack.Manifest, detail infillv1.ContextDetail) *infillv1.ContextManifest {
	out := &infillv1.ContextManifest{
		TokenBudget:      uint32(m.TokenBudget),
		GenerationTokens: uint32(m.GenerationTokens),
		PromptTokens:     uint32(m.PromptTokens),
		Warnings:         append([]string(nil), m.Warnings...),
	}
	for _, src := range m.Sources {
		switch detail {
		case infillv1.ContextDetail_CONTEXT_DETAIL_FULL:
		case infillv1.ContextDetail_CONTEXT_DETAIL_NONE:
			return out
		default: // UNSPECIFIED and INCLUDED
			if !src.Included {
				continue
			}
		}
		out.Sources = append(out.Sources, &infillv1.ContextSource{
			Kind: sourceKinds[src.Kind], Path: src.Path,
			StartLine: uint32(src.StartLine), EndLine: uint32(src.EndLine),
			Tokens: uint32(src.Tokens), Included: src.Included, Reason: src.Reason, Score: src.Score,
		})
	}
	return out
}

var finishReasons = map[inference.FinishReason]infillv1.FinishReason{
	inference.FinishStop:         infillv1.FinishReason_FINISH_REASON_STOP,
	inference.FinishLength:       infillv1.FinishReason_FINISH_REASON_LENGTH,
	inference.FinishStopSequence: infillv1.FinishReason_FINISH_REASON_STOP_SEQUENCE,
	inference.FinishBudget:       infillv1.FinishReason_FINISH_REASON_BUDGET,
}

func toCandidates(cs []inference.Candidate) []*infillv1.Candidate {
	out := make([]*infillv1.Candidate, len(cs))
	for i, c := range cs {
		out[i] = &infillv1.Candidate{Index: uint32(c.Index), Text: c.Text,
			FinishReason: finishReasons[c.Finish], CompletionTokens: uint32(c.Tokens)}
	}
	return out
}

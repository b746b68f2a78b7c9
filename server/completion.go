package server

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PromptBuilder assembles prompts (contextpack.Builder).
type PromptBuilder interface {
	Build(ctx context.Context, req contextpack.Request) (*contextpack.Prompt, error)
}

// Backend generates completions (inference.Ollama).
type Backend interface {
	Pinger
	Generate(ctx context.Context, req inference.Request, onDelta inference.DeltaFunc) (*inference.Result, error)
	Model(name string) string
	ContextTokens(model string) int
	MaxTokens(n int) int
	// CheckOptions reports generation options out of range
	// (*inference.OptionError) before any work is done for a request.
	CheckOptions(req *inference.Request) error
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
}

func (c *completionService) Complete(ctx context.Context, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	resp, err := c.s.complete(ctx, req, nil)
	return resp, toStatus(c.s.log, err)
}

func (c *completionService) StreamComplete(req *infillv1.StreamCompleteRequest, stream infillv1.CompletionService_StreamCompleteServer) error {
	ctx := stream.Context()
	resp, err := c.s.complete(ctx, req, stream)
	if err != nil {
		return toStatus(c.s.log, err)
	}
	return stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Done{Done: resp}})
}

// complete runs one completion; with a stream it sends the start and text
// deltas as they come.
func (s *Server) complete(ctx context.Context, req completionRequest, stream infillv1.CompletionService_StreamCompleteServer) (*infillv1.CompleteResponse, error) {
	start := time.Now()
	if err := s.validate(req); err != nil {
		return nil, err
	}
	model := s.deps.Backend.Model(req.GetModel())
	gen := req.GetGeneration()
	ireq := inference.Request{
		Model:      model,
		MaxTokens:  int(gen.GetMaxTokens()),
		Stop:       gen.GetStop(),
		Candidates: int(gen.GetCandidates()),
	}
	if gen != nil { // optional fields: presence matters, so no getters
		ireq.Temperature, ireq.TopP, ireq.Seed = gen.Temperature, gen.TopP, gen.Seed
	}
	if err := s.deps.Backend.CheckOptions(&ireq); err != nil {
		return nil, err
	}
	maxTokens := s.deps.Backend.MaxTokens(ireq.MaxTokens)
	budget := s.deps.Backend.ContextTokens(model)
	if b := int(req.GetTokenBudget()); b > 0 && b < budget {
		budget = b
	}
	creq := toContextRequest(req)
	creq.TokenBudget, creq.MaxNewTokens = budget, maxTokens
	prompt, err := s.deps.Builder.Build(ctx, creq)
	if err != nil {
		return nil, err
	}
	assembly := time.Since(start)
	id := requestID(ctx)
	s.log.Debug("prompt", zap.String("request_id", id), zap.Int("tokens", prompt.Tokens), zap.String("text", prompt.Text))
	manifest := toManifest(prompt.Manifest, req.GetContextDetail())

	if stream != nil {
		if err := stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Start{Start: &infillv1.StreamStart{
			Model: model, Context: manifest, RequestId: id, ContextAssembly: durationpb.New(assembly),
			RepositorySnapshot: prompt.Snapshot,
		}}}); err != nil {
			return nil, err
		}
		// The start listed the sources; the final response does not repeat them.
		manifest = toManifest(prompt.Manifest, infillv1.ContextDetail_CONTEXT_DETAIL_NONE)
	}
	var ttft time.Duration
	onDelta := func(i int, text string) error {
		if ttft == 0 {
			ttft = time.Since(start)
		}
		if stream == nil {
			return nil
		}
		return stream.Send(&infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Delta{
			Delta: &infillv1.TextDelta{CandidateIndex: uint32(i), Text: text}}})
	}
	ireq.Prompt, ireq.PromptTokens, ireq.MaxTokens = prompt.Text, prompt.Tokens, maxTokens
	if lb := req.GetLatencyBudget(); lb != nil {
		if ireq.Budget = lb.AsDuration() - assembly; ireq.Budget <= 0 {
			ireq.Budget = time.Nanosecond // spent already: return what there is
		}
	}
	res, err := s.deps.Backend.Generate(ctx, ireq, onDelta)
	if err != nil {
		return nil, err
	}
	// Ollama v0.24.0 reports the whole prompt in prompt_eval_count, also
	// when its KV cache served most of it (measured: 1,604 tokens both cold
	// and warm), so the count can be checked against the plan.
	if prompt.Manifest.CheckEvaluated(res.PromptEvalTokens) {
		manifest.Warnings = prompt.Manifest.Warnings
	}
	return &infillv1.CompleteResponse{
		Candidates: toCandidates(res.Candidates),
		Usage: &infillv1.Usage{
			PromptTokens:        uint32(res.PromptEvalTokens),
			CompletionTokens:    uint32(res.CompletionTokens()),
			PlannedPromptTokens: uint32(prompt.Tokens),
		},
		Timings: &infillv1.Timings{
			ContextAssembly:  durationpb.New(assembly),
			TimeToFirstToken: durationpb.New(ttft),
			Total:            durationpb.New(time.Since(start)),
			PromptEval:       durationpb.New(res.PromptEval),
		},
		Model:              res.Model,
		Context:            manifest,
		RequestId:          id,
		RepositorySnapshot: prompt.Snapshot,
	}, nil
}

// validate checks the shape of a request; the domain packages check the
// meaning (cursor inside the file, options in range).
// maxIDBytes bounds client_id and session_id, which every call logs.
const maxIDBytes = 256

func (s *Server) validate(req completionRequest) error {
	if err := checkText(req); err != nil {
		return err
	}
	repo, cur := req.GetRepository(), req.GetCursor()
	switch {
	case repo == nil || len(repo.GetFiles()) == 0 && repo.GetBase() == "":
		return invalid("repository.files", "at least one file (the one with the cursor) is required")
	case len(repo.GetFiles()) > s.cfg.MaxFiles:
		return invalid("repository.files", fmt.Sprintf("%d files exceed the limit of %d", len(repo.GetFiles()), s.cfg.MaxFiles))
	case cur == nil:
		return invalid("cursor", "required")
	case req.GetLatencyBudget() != nil && (req.GetLatencyBudget().CheckValid() != nil || req.GetLatencyBudget().AsDuration() < 0):
		return invalid("latency_budget", "must be a valid, non-negative duration")
	case infillv1.ContextDetail_name[int32(req.GetContextDetail())] == "":
		return invalid("context_detail", fmt.Sprintf("unknown value %d", req.GetContextDetail()))
	case infillv1.PositionEncoding_name[int32(cur.GetEncoding())] == "":
		return invalid("cursor.encoding", fmt.Sprintf("unknown value %d", cur.GetEncoding()))
	case len(req.GetClientId()) > maxIDBytes:
		return invalid("client_id", fmt.Sprintf("%d bytes, more than %d", len(req.GetClientId()), maxIDBytes))
	case len(req.GetSessionId()) > maxIDBytes:
		return invalid("session_id", fmt.Sprintf("%d bytes, more than %d", len(req.GetSessionId()), maxIDBytes))
	}
	for i, f := range repo.GetFiles() {
		switch {
		case f.Content == nil && f.GetDigest() == "":
			return invalid(fmt.Sprintf("repository.files[%d]", i), "needs content or digest")
		case f.Content != nil && f.GetDigest() != "":
			return invalid(fmt.Sprintf("repository.files[%d]", i), "has both content and digest; send one")
		case f.Content != nil && len(f.GetEdits()) > 0:
			return invalid(fmt.Sprintf("repository.files[%d]", i), "has both content and edits; edits apply to a digest")
		}
		for k, e := range f.GetEdits() {
			if e.GetStart() > maxOffset || e.GetEnd() > maxOffset {
				return invalid(fmt.Sprintf("repository.files[%d].edits[%d]", i, k),
					fmt.Sprintf("range [%d, %d) is past the end of any text", e.GetStart(), e.GetEnd()))
			}
		}
	}
	if cur.GetOffset() > maxOffset {
		return invalid("cursor.offset", fmt.Sprintf("%d is past the end of any text", cur.GetOffset()))
	}
	return nil
}

// maxOffset bounds byte offsets from a request, which contextpack takes as
// ints: no text comes near it (a message is at most MaxRecvMsgBytes).
const maxOffset = 1 << 62

// checkText checks that every string of req is UTF-8, as proto3 strings
// must be. infillv1.Codec decodes the completion requests without the
// check proto.Unmarshal makes (which gRPC answers INTERNAL, naming no
// field); a string that is not UTF-8 would otherwise reach the prompt, the
// logs, and responses that then fail to encode. TestInvalidUTF8 sets each
// string field of both requests in turn, so a new one must be added here.
func checkText(req completionRequest) error {
	repo, cur, gen := req.GetRepository(), req.GetCursor(), req.GetGeneration()
	for _, t := range [...]struct{ field, s string }{
		{"repository.name", repo.GetName()}, {"repository.base", repo.GetBase()},
		{"cursor.path", cur.GetPath()}, {"model", req.GetModel()},
		{"client_id", req.GetClientId()}, {"session_id", req.GetSessionId()},
	} {
		if !utf8.ValidString(t.s) {
			return notText(t.field, t.s)
		}
	}
	for i, f := range repo.GetFiles() {
		field := func(name string) string { return "repository.files[" + strconv.Itoa(i) + "]." + name }
		for _, t := range [...]struct{ name, s string }{
			{"path", f.GetPath()}, {"content", f.GetContent()}, {"digest", f.GetDigest()}, {"language", f.GetLanguage()},
		} {
			if !utf8.ValidString(t.s) {
				return notText(field(t.name), t.s)
			}
		}
		for k, e := range f.GetEdits() {
			if !utf8.ValidString(e.GetText()) {
				return notText(field("edits["+strconv.Itoa(k)+"].text"), e.GetText())
			}
		}
	}
	for i, p := range repo.GetRemoved() {
		if !utf8.ValidString(p) {
			return notText("repository.removed["+strconv.Itoa(i)+"]", p)
		}
	}
	for i, p := range gen.GetStop() {
		if !utf8.ValidString(p) {
			return notText("generation.stop["+strconv.Itoa(i)+"]", p)
		}
	}
	return nil
}

// notText is the error for field, whose value s is not UTF-8.
func notText(field, s string) error {
	return invalid(field, fmt.Sprintf("not valid UTF-8 (at byte %d); proto3 strings must be UTF-8", invalidAt(s)))
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

func invalid(field, reason string) error {
	return toStatus(nil, &contextpack.ArgumentError{Field: field, Reason: reason})
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

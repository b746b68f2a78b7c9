package contextpack

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack/internal/assemble"
	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/internal/logctx"
)

// assemblyParams are the assembly's parameters from cfg.
func assemblyParams(cfg Config, c *assemble.Counter, neutral func(string) string) assemble.Params {
	return assemble.Params{
		MinPromptTokens:     cfg.MinPromptTokens,
		LocalShare:          cfg.LocalShare,
		SuffixShare:         cfg.SuffixShare,
		ImportShare:         cfg.ImportShare,
		ContextQuantum:      cfg.ContextQuantum,
		PrefixQuantumLines:  cfg.PrefixQuantumLines,
		QueryLines:          cfg.QueryLines,
		MaxCandidates:       cfg.MaxCandidates,
		MaxSnippetsPerFile:  cfg.MaxSnippetsPerFile,
		MaxSnippetTokens:    cfg.MaxSnippetTokens,
		MaxImportFileTokens: cfg.MaxImportFileTokens,
		SimilarTailLines:    cfg.SimilarTailLines,
		Weights: assemble.Weights{RRFK: cfg.RRFK, Definition: cfg.DefinitionWeight, Similar: cfg.SimilarWeight,
			Imports: cfg.ImportWeight, File: cfg.FileWeight, OffTopic: cfg.OffTopicWeight},
		Diversity: cfg.Diversity,
		Counter:   c,
		Neutral:   neutral,
	}
}

// promptIn returns the prompt for req from r (locked), whose index holds
// the request's files; t is the cursor file's. The record's memos stand in
// front of the assembly: a prompt already built for the same inputs is
// copied (memo), and a context selection made for the same inputs is
// reused (a keystroke on the same line).
func (b *Builder) promptIn(ctx context.Context, r *index.Repository[*record], t *index.File, req *Request, c cursorBudget, strategy Strategy) (*Prompt, bool, error) {
	rec, view := r.Record, r.Index.View()
	key := promptKey{cursor: t, analysis: t.Analysis, text: t.Text(), version: view.Version(), offset: c.off, budget: c.budget,
		promptBudget: c.promptBudget, maxNew: req.MaxNewTokens, strategy: strategy}
	if p := rec.prompts.get(key); p != nil {
		return p, true, nil
	}
	as := assemble.New(assemble.Input{RepoName: req.RepoName, RequestFiles: len(req.Files), Cursor: t, Offset: c.off,
		TokenBudget: c.budget, PromptBudget: c.promptBudget, MaxNewTokens: req.MaxNewTokens,
		Strategy: asmStrategies[strategy]}, &b.params, view, rec)
	if k, ok := as.SelectionKey(); ok {
		if s := rec.selection.get(k); s != nil {
			as.UseSelection(s)
		} else {
			as.Select()
			rec.selection.put(k, as.Selection())
		}
	} else {
		as.Select()
	}
	res, err := as.Finish()
	if err != nil {
		var ob *assemble.OverBudgetError
		if errors.As(err, &ob) {
			b.log.Error("contextpack: prompt over budget", append([]zap.Field{zap.Int("tokens", ob.Tokens),
				zap.Int("budget", ob.Budget)}, logctx.Fields(ctx)...)...)
			return nil, false, fmt.Errorf("%w: %v", ErrBudget, err)
		}
		return nil, false, err
	}
	p := promptOf(res, t.Path, c.off)
	rec.prompts.put(key, p)
	return p, false, nil
}

// asmStrategies translates the public strategies.
var asmStrategies = map[Strategy]assemble.Strategy{
	StrategyFused: assemble.StrategyFused, StrategyNone: assemble.StrategyNone, StrategyExecRepoBench: assemble.StrategyExecRepoBench, StrategyJaccard: assemble.StrategyJaccard,
	StrategyImportsOnly: assemble.StrategyImportsOnly, StrategyDefinitionsOnly: assemble.StrategyDefinitionsOnly, StrategySimilarOnly: assemble.StrategySimilarOnly,
}

// sourceKinds translates the assembly's source kinds.
var sourceKinds = [...]SourceKind{
	assemble.SourcePrefix: SourcePrefix, assemble.SourceSuffix: SourceSuffix, assemble.SourceImport: SourceImport,
	assemble.SourceDefinition: SourceDefinition, assemble.SourceSimilar: SourceSimilar, assemble.SourceScopeHeader: SourceScopeHeader,
}

// promptOf is the public prompt of an assembly's result; path and off
// are the cursor file's.
func promptOf(res *assemble.Result, path string, off int) *Prompt {
	m := Manifest{TokenBudget: res.TokenBudget, GenerationTokens: res.GenerationTokens, PromptTokens: res.Tokens,
		ContextBudget: res.ContextBudget, ContextTokens: res.ContextTokens, Warnings: res.Warnings,
		Sources: make([]Source, len(res.Sources))}
	for i, s := range res.Sources {
		m.Sources[i] = Source{Kind: sourceKinds[s.Kind], Path: s.Path, StartLine: s.StartLine, EndLine: s.EndLine,
			Tokens: s.Tokens, Included: s.Included, Reason: s.Reason, Score: s.Score}
	}
	var context []ContextSnippet
	if len(res.Context) > 0 {
		context = make([]ContextSnippet, len(res.Context))
		for i, c := range res.Context {
			context[i] = ContextSnippet(c)
		}
	}
	return &Prompt{Text: res.Text, Tokens: res.Tokens, Manifest: m, Context: context,
		Cursor: CursorText{Path: path, Text: res.CursorText, Offset: off}}
}

// CountPrompt returns the exact token count of a finished raw prompt, as
// Ollama reads one: each literal added token (tokenizer.FindSpecial) is one
// control token, and the text between them, which must hold user text
// only as neutralised, is counted by segments through the Builder's
// cache. It is how a caller that renders a prompt of its own from a
// Prompt's parts (Context, Cursor) counts what it rendered.
func (b *Builder) CountPrompt(text string) int {
	n := 0
	for text != "" {
		at, l := tokenizer.FindSpecial(text)
		if at < 0 {
			return n + b.params.Counter.Rendered(text)
		}
		n += b.params.Counter.Rendered(text[:at]) + 1
		text = text[at+l:]
	}
	return n
}

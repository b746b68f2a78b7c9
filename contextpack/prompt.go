package contextpack

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/internal/logctx"
)

// assemblyParams are the assembly's parameters from cfg.
func assemblyParams(cfg Config, c *counter, neutral func(string) string) asmParams {
	return asmParams{
		minPromptTokens:     cfg.MinPromptTokens,
		localShare:          cfg.LocalShare,
		suffixShare:         cfg.SuffixShare,
		importShare:         cfg.ImportShare,
		contextQuantum:      cfg.ContextQuantum,
		prefixQuantumLines:  cfg.PrefixQuantumLines,
		queryLines:          cfg.QueryLines,
		maxCandidates:       cfg.MaxCandidates,
		maxSnippetsPerFile:  cfg.MaxSnippetsPerFile,
		maxSnippetTokens:    cfg.MaxSnippetTokens,
		maxImportFileTokens: cfg.MaxImportFileTokens,
		weights: asmWeights{rrfK: cfg.RRFK, definition: cfg.DefinitionWeight, similar: cfg.SimilarWeight,
			imports: cfg.ImportWeight, file: cfg.FileWeight},
		diversity: cfg.Diversity,
		counter:   c,
		neutral:   neutral,
	}
}

// promptIn returns the prompt for req from r (locked), whose index holds
// the request's files; t is the cursor file's. The record's memos stand in
// front of the assembly: a prompt already built for the same inputs is
// copied (memo), and a context selection made for the same inputs is
// reused (a keystroke on the same line).
func (b *Builder) promptIn(ctx context.Context, r *index.Repository[*record], t *index.File, req *Request, c cursorBudget, strategy Strategy) (*Prompt, bool, error) {
	rec, view := r.Record, r.Index.View()
	key := promptKey{t: t, an: t.Analysis, text: t.Text(), version: view.Version(), off: c.off, budget: c.budget,
		promptBudget: c.promptBudget, maxNew: req.MaxNewTokens, strategy: strategy}
	if p := rec.prompts.get(key); p != nil {
		return p, true, nil
	}
	as := newAssembly(asmInput{repoName: req.RepoName, requestFiles: len(req.Files), cursor: t, offset: c.off,
		tokenBudget: c.budget, promptBudget: c.promptBudget, maxNewTokens: req.MaxNewTokens,
		strategy: asmStrategies[strategy]}, &b.params, view, rec)
	if k, ok := as.selectionKey(); ok {
		if s := rec.selection.get(k); s != nil {
			as.useSelection(s)
		} else {
			as.selectContext()
			rec.selection.put(k, as.selection())
		}
	} else {
		as.selectContext()
	}
	res, err := as.finish()
	if err != nil {
		var ob *overBudgetError
		if errors.As(err, &ob) {
			b.log.Error("contextpack: prompt over budget", append([]zap.Field{zap.Int("tokens", ob.tokens),
				zap.Int("budget", ob.budget)}, logctx.Fields(ctx)...)...)
			return nil, false, fmt.Errorf("%w: %v", ErrBudget, err)
		}
		return nil, false, err
	}
	p := promptOf(res, t.Path, c.off)
	rec.prompts.put(key, p)
	return p, false, nil
}

// asmStrategies translates the public strategies.
var asmStrategies = map[Strategy]asmStrategy{
	StrategyFused: asmFused, StrategyNone: asmNone, StrategyExecRepoBench: asmExecRepoBench, StrategyJaccard: asmJaccard,
	StrategyImportsOnly: asmImportsOnly, StrategyDefinitionsOnly: asmDefinitionsOnly, StrategySimilarOnly: asmSimilarOnly,
}

// sourceKinds translates the assembly's source kinds.
var sourceKinds = [...]SourceKind{
	srcKindPrefix: SourcePrefix, srcKindSuffix: SourceSuffix, srcKindImport: SourceImport,
	srcKindDefinition: SourceDefinition, srcKindSimilar: SourceSimilar, srcKindScopeHeader: SourceScopeHeader,
}

// promptOf is the public prompt of an assembly's result; path and off
// are the cursor file's.
func promptOf(res *asmResult, path string, off int) *Prompt {
	m := Manifest{TokenBudget: res.tokenBudget, GenerationTokens: res.generationTokens, PromptTokens: res.tokens,
		ContextBudget: res.contextBudget, ContextTokens: res.contextTokens, Warnings: res.warnings,
		Sources: make([]Source, len(res.sources))}
	for i, s := range res.sources {
		m.Sources[i] = Source{Kind: sourceKinds[s.kind], Path: s.path, StartLine: s.startLine, EndLine: s.endLine,
			Tokens: s.tokens, Included: s.included, Reason: s.reason, Score: s.score}
	}
	return &Prompt{Text: res.text, Tokens: res.tokens, Manifest: m,
		Cursor: CursorText{Path: path, Text: res.cursorText, Offset: off}}
}

package contextpack

import (
	"context"
	"fmt"
)

// Strategy selects how context is chosen. Build uses StrategyFused; the
// others are baselines and ablations for the quality tool
// (contextpack/cmd/cpquality). All share the cursor-file window, the budget
// split and the prompt format, so they differ only in what context they
// pick.
type Strategy int

const (
	// StrategyFused is infill's assembler: imported files in a stable tier,
	// then definitions, similar windows and imports fused by reciprocal
	// rank.
	StrategyFused Strategy = iota
	// StrategyNone is the file-level prompt: prefix and suffix only.
	StrategyNone
	// StrategyExecRepoBench ranks whole files by import hits plus BM25
	// similarity to the cursor file (normalised), packs them most relevant
	// first, cutting the first that does not fit at a line boundary, and
	// puts the most relevant next to the cursor file.
	StrategyExecRepoBench
	// StrategyJaccard takes from each other file its window most similar
	// (Jaccard over identifiers) to the 20 lines before the cursor, best
	// first (Copilot's neighbouring-tab snippets).
	StrategyJaccard
	// StrategyImportsOnly, StrategyDefinitionsOnly and StrategySimilarOnly
	// are the fused assembler with one source.
	StrategyImportsOnly
	StrategyDefinitionsOnly
	StrategySimilarOnly
)

var strategyNames = map[Strategy]string{
	StrategyFused: "fused", StrategyNone: "none", StrategyExecRepoBench: "execrepobench",
	StrategyJaccard: "jaccard", StrategyImportsOnly: "imports", StrategyDefinitionsOnly: "definitions",
	StrategySimilarOnly: "similar",
}

func (s Strategy) String() string {
	if n, ok := strategyNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ParseStrategy returns the strategy named by String.
func ParseStrategy(name string) (Strategy, error) {
	for s, n := range strategyNames {
		if n == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("contextpack: unknown strategy %q", name)
}

// BuildStrategy is Build with another way of choosing context.
func (b *Builder) BuildStrategy(ctx context.Context, req Request, s Strategy) (*Prompt, error) {
	if _, ok := strategyNames[s]; !ok {
		return nil, &ArgumentError{Field: "strategy", Reason: fmt.Sprintf("unknown strategy %d", int(s))}
	}
	return b.build(ctx, req, s)
}

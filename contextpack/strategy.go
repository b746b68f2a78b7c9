package contextpack

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// fileTerms is the file's identifier frequencies (for whole-file BM25).
func (a *analysis) fileTerms() []termTF {
	a.ftOnce.Do(func() {
		m := map[term]int{}
		scanIdents(a.content, a.lang, func(id string, _ int) bool {
			m[hashIdent(id)]++
			a.ftLen++
			return true
		})
		a.ft = make([]termTF, 0, len(m))
		for t, n := range m {
			a.ft = append(a.ft, termTF{t, uint16(min(n, 65535))})
		}
		slices.SortFunc(a.ft, func(x, y termTF) int { return int(x.t) - int(y.t) })
	})
	return a.ft
}

func (a *analysis) fileLen() int {
	a.fileTerms()
	return a.ftLen
}

// fileDocFreq is the number of files that contain each term, built on
// first use and kept current by add/remove afterwards.
func (r *repoIndex) fileDocFreq() map[term]int32 {
	if r.fileDF == nil {
		r.fileDF = map[term]int32{}
		for _, sl := range r.slots {
			if sl != nil {
				r.fileDFAdd(sl.an, 1)
			}
		}
	}
	return r.fileDF
}

func (r *repoIndex) fileDFAdd(a *analysis, d int32) {
	for _, x := range a.fileTerms() {
		r.fileDF[x.t] += d
		if r.fileDF[x.t] <= 0 {
			delete(r.fileDF, x.t)
		}
	}
}

type fileTermsCache struct {
	ftOnce sync.Once
	ft     []termTF
	ftLen  int
}

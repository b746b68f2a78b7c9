package contextpack

import (
	"fmt"
	"runtime"
	"time"
)

// Config configures a Builder. Start from DefaultConfig; the defaults of
// the budget split were chosen with the quality tool
// (bench/contextpack/README.md, "How the defaults were chosen").
type Config struct {
	// ContextTokens is the model's context window as sent to the backend
	// (num_ctx). Prompt plus generation never exceed it.
	ContextTokens int
	// MinPromptTokens is the smallest prompt worth sending; a budget that
	// leaves less is ErrBudget.
	MinPromptTokens int

	// LocalShare is the share of the prompt budget for the cursor file
	// when the whole file does not fit it; the rest is cross-file context.
	// A file that fits leaves everything it does not use to context.
	LocalShare float64
	// SuffixShare is the suffix's share of the local budget when both the
	// prefix and the suffix need more than they can get.
	SuffixShare float64
	// ImportShare is the share of the cross-file budget reserved for the
	// stable tier (files the cursor file imports), which comes first in the
	// prompt and does not change while the cursor moves.
	ImportShare float64
	// ContextQuantum rounds the cross-file budget down to a multiple of
	// this many tokens, so that typing in a file that fits whole does not
	// change the context on every keystroke (backend prompt cache).
	ContextQuantum int
	// PrefixQuantumLines rounds the first line of a cut prefix up to a
	// multiple of this many lines, for the same reason.
	PrefixQuantumLines int

	// WindowLines and WindowStride shape the sliding windows that the
	// lexical similarity index scores.
	WindowLines, WindowStride int
	// SimilarTailLines is how many lines after a similar window of another
	// file are shown with it: the window matches the code before the
	// cursor, and what follows it is the best guess at what follows the
	// cursor (in sibling and generated files, the very code to be written).
	// 0 shows the matched window alone.
	SimilarTailLines int
	// QueryLines bounds the lines around the cursor used to query
	// definitions and similar windows when the enclosing function is
	// longer (or there is none).
	QueryLines int
	// MaxCandidates bounds the ranked list each source contributes.
	MaxCandidates int
	// MaxSnippetsPerFile caps the cursor-dependent snippets from one file.
	MaxSnippetsPerFile int
	// MaxSnippetTokens is the largest definition shown whole; longer ones
	// are shown as their header and an outline of their members.
	MaxSnippetTokens int
	// MaxImportFileTokens is the largest imported file shown whole; larger
	// ones are shown as an outline of their definitions.
	MaxImportFileTokens int
	// RRFK is the k of reciprocal rank fusion, score = Σ w/(k+rank).
	RRFK float64
	// DefinitionWeight, SimilarWeight and ImportWeight are the w of each
	// source in the fusion.
	DefinitionWeight, SimilarWeight, ImportWeight float64
	// FileWeight weighs a file-level signal in the fusion: files ranked by
	// the summed similarity of their windows to the code around the cursor.
	FileWeight float64
	// OffTopicWeight multiplies the fused score of context from a test
	// file for a cursor outside tests, and from a prose file (README,
	// Markdown, text) for a cursor in code: demoted, not banned (a test
	// can be the only user of an API).
	OffTopicWeight float64
	// Diversity is the exponent of maximal-marginal-relevance packing: a
	// candidate's fused score is multiplied by the share of its
	// identifiers that the prompt does not show yet to this power; 0 packs
	// in plain fused order.
	Diversity float64

	// MaxParseBytes: larger files are treated as plain text. This is the
	// bound that keeps parsing cheap: it is decided before parsing, so the
	// same files give the same prompt on an idle and on a busy machine.
	MaxParseBytes int
	// ParseTimeout bounds one tree-sitter parse in wall-clock time; a file
	// that takes longer is treated as plain text. It guards against a
	// runaway parse, not against ordinary cost: the default is far above
	// the parse of any file within MaxParseBytes (tree-sitter with tag
	// extraction runs at 0.7-3 MB/s on one core, so 512 KiB takes at most
	// about 0.75 s) even at a load of ten times that, because a cutoff that
	// a busy machine reaches and an idle one does not gives one input two
	// prompts (and costs the backend's prompt cache).
	ParseTimeout time.Duration
	// Workers bounds parallel file analyses (parsing, indexing).
	Workers int
	// EditTrees is how many syntax trees of recently edited files are kept
	// (C memory, about 10-20× the file size each) so that their next
	// versions parse incrementally, with, while a file has a syntax error,
	// the tags of its segments; 0 disables it (every version is then
	// analysed from scratch, with the same result).
	EditTrees int

	// CacheBytes caps the memory of the content store, the per-file
	// analyses and the per-repository indexes together (least recently
	// used first out). They take about 4 times the source size (85 MB for
	// the 20.6 MB benchmark repository), so the default 512 MiB holds about
	// six such repositories, ~125 MB of source. Not included: the segment
	// count cache (CountCacheSegments, a few tens of MB at most) and the
	// syntax trees kept for EditTrees (at most 16 files of ≤ 256 KiB).
	CacheBytes int64
	// MaxRepositories bounds how many repository indexes are kept.
	MaxRepositories int
	// CountCacheSegments bounds the cache of segment token counts (it
	// holds up to twice this many segments).
	CountCacheSegments int
	// Snapshots is how many recent file lists (Prompt.Snapshot, for
	// Request.Base) are kept, least recently used first out; each is a
	// path, digest and language per file (about 100 bytes per file). 0
	// turns snapshots off.
	Snapshots int
	// MaxFiles bounds a request's file list, counted after a base
	// snapshot is expanded: chaining bases must not grow a list past what
	// one request may send.
	MaxFiles int
}

// DefaultConfig returns the defaults: an 8,192-token context.
func DefaultConfig() Config {
	return Config{
		ContextTokens:       8192,
		MinPromptTokens:     16,
		LocalShare:          0.6,
		SuffixShare:         0.25,
		ImportShare:         0.2,
		ContextQuantum:      64,
		PrefixQuantumLines:  16,
		WindowLines:         20,
		WindowStride:        10,
		SimilarTailLines:    10,
		QueryLines:          40,
		MaxCandidates:       40,
		MaxSnippetsPerFile:  3,
		MaxSnippetTokens:    384,
		MaxImportFileTokens: 1024,
		RRFK:                60,
		DefinitionWeight:    3,
		SimilarWeight:       4,
		ImportWeight:        1,
		FileWeight:          0,
		OffTopicWeight:      0.5,
		MaxParseBytes:       512 << 10,
		ParseTimeout:        20 * time.Second,
		Workers:             runtime.GOMAXPROCS(0),
		EditTrees:           16,
		Snapshots:           64,
		MaxFiles:            20000,
		CacheBytes:          512 << 20,
		MaxRepositories:     8,
		CountCacheSegments:  1 << 17,
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.ContextTokens < 64 {
		return fmt.Errorf("contextpack: ContextTokens %d < 64", c.ContextTokens)
	}
	if c.MinPromptTokens < 4 || c.MinPromptTokens >= c.ContextTokens {
		return fmt.Errorf("contextpack: MinPromptTokens %d out of range [4, %d)", c.MinPromptTokens, c.ContextTokens)
	}
	share := func(name string, v float64, lo float64) error {
		if !(v >= lo && v <= 1) {
			return fmt.Errorf("contextpack: %s %v out of range [%v, 1]", name, v, lo)
		}
		return nil
	}
	if err := share("LocalShare", c.LocalShare, 0.05); err != nil {
		return err
	}
	if err := share("SuffixShare", c.SuffixShare, 0); err != nil {
		return err
	}
	if err := share("ImportShare", c.ImportShare, 0); err != nil {
		return err
	}
	positive := []struct {
		name string
		v    int
	}{
		{"ContextQuantum", c.ContextQuantum}, {"PrefixQuantumLines", c.PrefixQuantumLines},
		{"WindowLines", c.WindowLines}, {"WindowStride", c.WindowStride}, {"QueryLines", c.QueryLines},
		{"MaxCandidates", c.MaxCandidates}, {"MaxSnippetsPerFile", c.MaxSnippetsPerFile},
		{"MaxSnippetTokens", c.MaxSnippetTokens}, {"MaxImportFileTokens", c.MaxImportFileTokens},
		{"MaxParseBytes", c.MaxParseBytes}, {"Workers", c.Workers}, {"MaxRepositories", c.MaxRepositories},
		{"CountCacheSegments", c.CountCacheSegments},
	}
	for _, p := range positive {
		if p.v < 1 {
			return fmt.Errorf("contextpack: %s %d must be >= 1", p.name, p.v)
		}
	}
	if c.MaxFiles < 1 {
		return fmt.Errorf("contextpack: MaxFiles %d must be >= 1", c.MaxFiles)
	}
	if c.Snapshots < 0 {
		return fmt.Errorf("contextpack: Snapshots %d must be >= 0", c.Snapshots)
	}
	if c.SimilarTailLines < 0 || c.SimilarTailLines > 10*c.WindowLines {
		return fmt.Errorf("contextpack: SimilarTailLines %d out of range [0, %d]", c.SimilarTailLines, 10*c.WindowLines)
	}
	if c.EditTrees < 0 {
		return fmt.Errorf("contextpack: EditTrees %d must be >= 0", c.EditTrees)
	}
	if c.WindowStride > c.WindowLines {
		return fmt.Errorf("contextpack: WindowStride %d > WindowLines %d", c.WindowStride, c.WindowLines)
	}
	if !(c.RRFK > 0) {
		return fmt.Errorf("contextpack: RRFK %v must be > 0", c.RRFK)
	}
	if !(c.Diversity >= 0 && c.Diversity <= 10) {
		return fmt.Errorf("contextpack: Diversity %v out of range [0, 10]", c.Diversity)
	}
	if !(c.OffTopicWeight >= 0 && c.OffTopicWeight <= 1) {
		return fmt.Errorf("contextpack: OffTopicWeight %v out of range [0, 1]", c.OffTopicWeight)
	}
	for _, w := range []float64{c.DefinitionWeight, c.SimilarWeight, c.ImportWeight, c.FileWeight} {
		if !(w >= 0 && w <= 100) {
			return fmt.Errorf("contextpack: source weight %v out of range [0, 100]", w)
		}
	}
	if c.ParseTimeout <= 0 {
		return fmt.Errorf("contextpack: ParseTimeout %v must be > 0", c.ParseTimeout)
	}
	if c.CacheBytes < 1<<20 {
		return fmt.Errorf("contextpack: CacheBytes %d < 1 MiB", c.CacheBytes)
	}
	return nil
}

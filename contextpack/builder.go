package contextpack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
)

// Qwen2.5-Coder control tokens used in prompts.
const (
	FIMPrefix = "<|fim_prefix|>"
	FIMSuffix = "<|fim_suffix|>"
	FIMMiddle = "<|fim_middle|>"
	RepoName  = "<|repo_name|>"
	FileSep   = "<|file_sep|>"
)

// Tokenizer counts tokens exactly as the model does and makes user text
// safe to embed in a raw prompt.
type Tokenizer interface {
	// Count returns the number of tokens of text encoded as ordinary text.
	Count(text string) int
	// Neutralize rewrites literal special-token text (e.g. "<|endoftext|>")
	// so that the backend cannot read it as a control token.
	Neutralize(text string) string
}

// Config configures a Builder.
type Config struct {
	// ContextTokens is the model's context window as sent to the backend
	// (num_ctx). Prompt plus generation never exceed it.
	ContextTokens int
	// MinPromptTokens is the smallest prompt worth sending; a budget that
	// leaves less is ErrBudget.
	MinPromptTokens int
}

// DefaultConfig returns the defaults: an 8,192-token context.
func DefaultConfig() Config {
	return Config{ContextTokens: 8192, MinPromptTokens: 16}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.ContextTokens < 64 {
		return fmt.Errorf("contextpack: ContextTokens %d < 64", c.ContextTokens)
	}
	if c.MinPromptTokens < 4 || c.MinPromptTokens >= c.ContextTokens {
		return fmt.Errorf("contextpack: MinPromptTokens %d out of range [4, %d)", c.MinPromptTokens, c.ContextTokens)
	}
	return nil
}

// Builder builds prompts. It is safe for concurrent use.
type Builder struct {
	cfg Config
	tok Tokenizer
	log *zap.Logger
}

// NewBuilder returns a Builder; log may be nil.
func NewBuilder(cfg Config, tok Tokenizer, log *zap.Logger) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, errors.New("contextpack: nil Tokenizer")
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Builder{cfg: cfg, tok: tok, log: log}, nil
}

// Budget returns the total token budget for a request: the request's own,
// capped by the model context.
func (b *Builder) Budget(req Request) int {
	if req.TokenBudget <= 0 || req.TokenBudget > b.cfg.ContextTokens {
		return b.cfg.ContextTokens
	}
	return req.TokenBudget
}

// Build renders a file-level fill-in-the-middle prompt for the cursor file:
// prefix and suffix cut at line boundaries (prefix from the left, suffix from
// the right) so that prompt plus MaxNewTokens fit the budget.
func (b *Builder) Build(ctx context.Context, req Request) (*Prompt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	target, err := b.resolveFiles(req)
	if err != nil {
		return nil, err
	}
	off, err := ByteOffset(target.Content, req.Cursor)
	if err != nil {
		return nil, err
	}
	budget := b.Budget(req)
	if req.MaxNewTokens < 0 {
		return nil, &ArgumentError{Field: "generation.max_tokens", Reason: "must be >= 0"}
	}
	promptBudget := budget - req.MaxNewTokens
	if promptBudget < b.cfg.MinPromptTokens {
		return nil, fmt.Errorf("%w: budget %d leaves %d prompt tokens after %d for generation (need at least %d)",
			ErrBudget, budget, promptBudget, req.MaxNewTokens, b.cfg.MinPromptTokens)
	}
	const specials = 3 // fim_prefix, fim_suffix, fim_middle
	prefix := b.tok.Neutralize(target.Content[:off])
	suffix := b.tok.Neutralize(target.Content[off:])
	pre, suf := b.fit(prefix, suffix, promptBudget-specials)

	var sb strings.Builder
	sb.Grow(len(pre.text) + len(suf.text) + 64)
	sb.WriteString(FIMPrefix)
	sb.WriteString(pre.text)
	sb.WriteString(FIMSuffix)
	sb.WriteString(suf.text)
	sb.WriteString(FIMMiddle)
	// Special tokens split pre-tokenization, so the segments count
	// independently and the sum is exact.
	tokens := specials + pre.tokens + suf.tokens
	m := Manifest{
		TokenBudget:      budget,
		GenerationTokens: req.MaxNewTokens,
		PromptTokens:     tokens,
		Sources: []Source{
			pre.source(SourcePrefix, target.Path, target.Content[:off]),
			suf.source(SourceSuffix, target.Path, target.Content[:off]),
		},
	}
	return &Prompt{Text: sb.String(), Tokens: tokens, Manifest: m}, nil
}

// resolveFiles checks the file list and returns the cursor file.
func (b *Builder) resolveFiles(req Request) (File, error) {
	if req.Cursor.Path == "" {
		return File{}, &ArgumentError{Field: "cursor.path", Reason: "empty"}
	}
	seen := make(map[string]bool, len(req.Files))
	var missing []string
	var target *File
	for i := range req.Files {
		f := &req.Files[i]
		if f.Path == "" {
			return File{}, &ArgumentError{Field: fmt.Sprintf("repository.files[%d].path", i), Reason: "empty"}
		}
		if seen[f.Path] {
			return File{}, &ArgumentError{Field: fmt.Sprintf("repository.files[%d].path", i),
				Reason: fmt.Sprintf("duplicate path %q", f.Path)}
		}
		seen[f.Path] = true
		if !f.HasContent {
			// No content store yet: every digest is unknown.
			missing = append(missing, f.Path)
		}
		if f.Path == req.Cursor.Path {
			target = f
		}
	}
	if target == nil {
		return File{}, &ArgumentError{Field: "cursor.path",
			Reason: fmt.Sprintf("file %q is not in repository.files", req.Cursor.Path)}
	}
	if len(missing) > 0 {
		return File{}, &MissingContentError{Paths: missing}
	}
	return *target, nil
}

// piece is a cut prefix or suffix.
type piece struct {
	text          string
	tokens        int
	droppedTokens int
	droppedLines  int
}

func (p piece) source(kind SourceKind, path, before string) Source {
	s := Source{Kind: kind, Path: path, Tokens: p.tokens, Included: true, Reason: "cursor file"}
	if p.droppedLines > 0 {
		s.Reason = fmt.Sprintf("cursor file, %d line(s) (%d tokens) cut to fit the budget", p.droppedLines, p.droppedTokens)
	}
	// Line range of the kept text.
	curLine := strings.Count(before, "\n") + 1
	kept := strings.Count(p.text, "\n")
	if kind == SourcePrefix {
		s.StartLine, s.EndLine = curLine-kept, curLine
	} else {
		s.StartLine, s.EndLine = curLine, curLine+kept
	}
	return s
}

// fit cuts prefix (from the left) and suffix (from the right) at line
// boundaries so that their tokens sum to at most avail. The prefix gets
// three quarters of a tight budget, or more when the suffix needs less.
func (b *Builder) fit(prefix, suffix string, avail int) (piece, piece) {
	pt, st := b.tok.Count(prefix), b.tok.Count(suffix)
	if pt+st <= avail {
		return piece{text: prefix, tokens: pt}, piece{text: suffix, tokens: st}
	}
	sufShare := avail / 4
	if st < sufShare {
		sufShare = st
	}
	preShare := avail - sufShare
	if pt < preShare {
		preShare = pt
		sufShare = avail - pt
	}
	return b.cut(prefix, pt, preShare, true), b.cut(suffix, st, sufShare, false)
}

// cut keeps whole lines of s nearest the cursor (the end of s when
// fromLeft, its start otherwise) within limit tokens. The partial line at
// the cursor is kept whole or not at all.
func (b *Builder) cut(s string, total, limit int, fromLeft bool) piece {
	if total <= limit {
		return piece{text: s, tokens: total}
	}
	lines := strings.SplitAfter(s, "\n")
	kept, used := 0, 0
	for kept < len(lines) {
		var ln string
		if fromLeft {
			ln = lines[len(lines)-1-kept]
		} else {
			ln = lines[kept]
		}
		n := b.tok.Count(ln)
		if used+n > limit {
			break
		}
		used += n
		kept++
	}
	var text string
	if fromLeft {
		text = strings.Join(lines[len(lines)-kept:], "")
	} else {
		text = strings.Join(lines[:kept], "")
	}
	// Per-line counts may differ from the joined count at line joins; count
	// the result exactly and drop lines until it fits.
	n := b.tok.Count(text)
	for n > limit && text != "" {
		if fromLeft {
			i := strings.IndexByte(text, '\n')
			if i < 0 {
				text = ""
			} else {
				text = text[i+1:]
			}
		} else {
			i := strings.LastIndexByte(strings.TrimSuffix(text, "\n"), '\n')
			text = text[:i+1]
		}
		n = b.tok.Count(text)
	}
	return piece{text: text, tokens: n, droppedTokens: total - n,
		droppedLines: strings.Count(s, "\n") - strings.Count(text, "\n")}
}

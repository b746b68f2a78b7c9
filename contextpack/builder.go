package contextpack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack/internal/assemble"
	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/internal/logctx"
)

// Qwen2.5-Coder control tokens used in prompts.
const (
	FIMPrefix = assemble.FIMPrefix
	FIMSuffix = assemble.FIMSuffix
	FIMMiddle = assemble.FIMMiddle
	RepoName  = assemble.RepoName
	FileSep   = assemble.FileSep
)

// Tokenizer counts tokens exactly as the model does (*tokenizer.Tokenizer
// from contextpack/tokenizer in production).
type Tokenizer interface {
	// Count returns the number of tokens of text encoded as ordinary text.
	Count(text string) int
}

// Neutralizer is optionally implemented by a Tokenizer: Neutralize
// rewrites literal special-token text (e.g. "<|endoftext|>") so that the
// backend cannot read it as a control token. Without it the Builder uses
// tokenizer.Neutralize (Qwen2.5's added tokens).
type Neutralizer interface {
	Neutralize(text string) string
}

// Builder builds prompts. It is safe for concurrent use. It keeps the
// content store and repository indexes between requests, so one Builder
// should serve a whole process; Close frees its C memory.
type Builder struct {
	cfg            Config
	log            *zap.Logger
	grammars       *syntax.Grammars
	store          *index.Store[*record]
	params         assemble.Params // the assembly's, made from cfg
	analyzeOptions syntax.Options
	snaps          *snapshots // nil: snapshots off
	lists          *listMemo
	views          views
	counts         counts
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
	neutral := tokenizer.Neutralize
	if n, ok := tok.(Neutralizer); ok {
		neutral = n.Neutralize
	}
	var snaps *snapshots
	if cfg.Snapshots > 0 {
		snaps = newSnapshots(cfg.Snapshots)
	}
	return &Builder{
		snaps:    snaps,
		lists:    newListMemo(maxSnapshotFiles),
		views:    views{last: map[string]string{}},
		cfg:      cfg,
		log:      log,
		grammars: syntax.NewGrammars(cfg.Workers),
		store:    index.NewStore[*record](cfg.CacheBytes, cfg.MaxRepositories, log),
		params:   assemblyParams(cfg, assemble.NewCounter(tok, neutral, cfg.CountCacheSegments, cfg.ContextTokens), neutral),
		analyzeOptions: syntax.Options{
			MaxParseBytes:  cfg.MaxParseBytes,
			ParseTimeoutUS: int(cfg.ParseTimeout.Microseconds()),
			WindowLines:    cfg.WindowLines,
			WindowStride:   cfg.WindowStride,
			Trees:          syntax.NewTreeCache(cfg.EditTrees),
		},
	}, nil
}

// Close frees the parsers and queries (C memory) once running builds have
// finished with them. Builds after Close fail.
func (b *Builder) Close() {
	b.grammars.Close()
	b.analyzeOptions.Trees.Close()
}

// Budget returns the total token budget for a request: the request's own,
// capped by the model context.
func (b *Builder) Budget(req Request) int {
	if req.TokenBudget <= 0 || req.TokenBudget > b.cfg.ContextTokens {
		return b.cfg.ContextTokens
	}
	return req.TokenBudget
}

// Digest returns the content digest clients send in File.Digest.
func Digest(content string) string {
	h := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Build renders the prompt for req: the cursor file's prefix and suffix
// (cut at line boundaries, enclosing scope headers kept) and cross-file
// context from imports, definitions of the symbols near the cursor and
// similar code, in Qwen2.5-Coder's repository-level format, within the
// budget. A request with a single file and no repository name gets the
// file-level fill-in-the-middle format.
func (b *Builder) Build(ctx context.Context, req Request) (*Prompt, error) {
	return b.build(ctx, req, StrategyFused)
}

func (b *Builder) build(ctx context.Context, req Request, strategy Strategy) (_ *Prompt, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.grammars.IsClosed() {
		return nil, syntax.ErrClosed
	}
	if req.MaxNewTokens < 0 {
		return nil, &ArgumentError{Field: "generation.max_tokens", Reason: "must be >= 0"}
	}
	sent := req.Files
	lookups := 0
	for i := range sent {
		if !sent[i].HasContent && sent[i].Digest != "" {
			lookups++
		}
	}
	var memo bool
	defer func(base bool) { b.counts.record(lookups, base, memo, err) }(req.Base != "")
	if req.Files, err = b.applyEdits(req.Files); err != nil {
		return nil, err
	}
	all, err := b.expand(req)
	if err != nil {
		return nil, err
	}
	req.Files = all
	req.Base, req.Removed = "", nil
	prev := b.lists.get(req.RepoName)
	ti, digests, same, err := b.checkFiles(req, prev)
	if err != nil {
		return nil, err
	}
	// A list applyEdits or expand made is this call's; the caller's is not.
	mine := len(sent) == 0 || len(req.Files) == 0 || &req.Files[0] != &sent[0]
	req.Files = b.own(req.Files, mine, digests, prev, same)
	req.RepoName, req.Cursor.Path = strings.Clone(req.RepoName), req.Files[ti].Path
	list := nextList(prev, same, req.Files, digests, b.snaps != nil)
	if list != prev {
		b.lists.put(req.RepoName, list)
	}
	var p *Prompt
	var ok bool
	changed := 0
	edited := false
	if list == prev {
		p, memo, ok, err = b.buildListed(ctx, &req, list, strategy)
		if !ok && err == nil {
			// The cursor moved to another line: the index needs its view.
			p, memo, changed, ok, err = b.buildEdited(ctx, &req, ti, digests, list, list, strategy)
			edited = ok
		}
	} else if same {
		p, memo, changed, ok, err = b.buildEdited(ctx, &req, ti, digests, list, prev, strategy)
		edited = ok
	}
	if !ok {
		p, memo, changed, err = b.buildResolved(ctx, &req, ti, digests, list, strategy)
	}
	if err != nil {
		return nil, err
	}
	if b.snaps != nil {
		// Name the list only when it is held: a base that is never held
		// would cost the client a refused call every time.
		if b.snaps.put(list.id, req.Files, digests) {
			p.Snapshot = list.id
		}
	}
	logctx.Debug(ctx, b.log, "contextpack: prompt built", zap.String("repo", req.RepoName), zap.String("path", req.Cursor.Path),
		zap.Int("files", len(req.Files)), zap.Int("changed", changed), zap.Int("tokens", p.Tokens),
		zap.Bool("listed", ok && !edited), zap.Bool("edited", edited), zap.Bool("memo", memo))
	return p, nil
}

// buildListed builds the prompt when the repository's index was last
// updated from list itself: every file's content is then held (pinned by
// the index), analysed and indexed, so the request needs no store lookups,
// analyses or index update, only its cursor. ok is false when the index
// holds another list.
func (b *Builder) buildListed(ctx context.Context, req *Request, list *fileList, strategy Strategy) (p *Prompt, memo, ok bool, err error) {
	b.inRepo(ctx, req.RepoName, func(r *index.Repository[*record]) {
		if ok = r.Record.listed == list; !ok {
			return
		}
		t := r.Index.File(req.Cursor.Path)
		var c cursorBudget
		if c, err = b.cursorBudget(t.Text().Text, req); err == nil {
			v := r.Index.Viewing()
			if ok = (v == nil || v == t) && t.HoldsViewFor(c.off); !ok {
				return // another line: the update makes its view
			}
			p, memo, err = b.promptIn(ctx, r, t, req, c, strategy)
		}
	})
	return p, memo, ok, err
}

// buildEdited builds the prompt when the request's list differs from
// prev, the list the repository's index was last updated from, only in the
// digests of a few files (an edit, a keystroke): it resolves and analyses
// those and the cursor file, and updates the index for them alone. ok is
// false when it cannot tell that the rest is what the index holds (another
// list there, content missing, an analysis error): the whole path then
// decides, so that errors are the same.
func (b *Builder) buildEdited(ctx context.Context, req *Request, ti int, digests []string, list, prev *fileList,
	strategy Strategy) (p *Prompt, memo bool, changed int, ok bool, err error) {
	idx := list.edits // made from prev: the files whose digests changed
	if !slices.Contains(idx, ti) {
		idx = append(idx[:len(idx):len(idx)], ti)
	}
	if len(idx) > b.cfg.EditTrees {
		return nil, false, 0, false, nil
	}
	ds := make([]string, len(idx))
	contents := make([]string, len(idx))
	has := make([]bool, len(idx))
	files := make([]index.RequestFile, len(idx))
	cur := 0
	for k, i := range idx {
		f := &req.Files[i]
		ds[k], contents[k], has[k] = digests[i], f.Content, f.HasContent
		if i == ti {
			cur = k
		}
	}
	es, missing := b.store.Resolve(ds, contents, has)
	if len(missing) > 0 {
		return nil, false, 0, false, nil
	}
	defer b.store.Unpin(es, logctx.Fields(ctx))
	for k, i := range idx {
		files[k] = index.RequestFile{Path: req.Files[i].Path, Lang: list.ids[i], Indexed: es[k]}
	}
	c, cerr := b.cursorBudget(es[cur].Text, req)
	if cerr == nil {
		defer b.useView(ctx, req.RepoName, &files[cur], c.off)()
		if err := b.analyzeAll(ctx, req.RepoName, files); err != nil {
			if ctx.Err() != nil {
				return nil, false, 0, true, ctx.Err()
			}
			return nil, false, 0, false, nil
		}
	}

	b.inRepo(ctx, req.RepoName, func(r *index.Repository[*record]) {
		// The index must hold no view but the cursor file's: an earlier
		// cursor file's goes back to its text on the whole path.
		v := r.Index.Viewing()
		if ok = r.Record.listed == prev && (v == nil || v.Path == files[cur].Path); !ok {
			return
		}
		if err = cerr; err == nil {
			changed = b.reindex(r, files, false, list)
			p, memo, err = b.promptIn(ctx, r, r.Index.File(files[cur].Path), req, c, strategy)
		}
	})
	return p, memo, changed, ok, err
}

// buildResolved builds the prompt from the store: it resolves the digests
// (content not held is a *MissingContentError), analyses what has no
// analysis yet and brings the repository's index up to list.
func (b *Builder) buildResolved(ctx context.Context, req *Request, ti int, digests []string, list *fileList,
	strategy Strategy) (p *Prompt, memo bool, changed int, err error) {
	contents := make([]string, len(req.Files))
	has := make([]bool, len(req.Files))
	for i := range req.Files {
		contents[i], has[i] = req.Files[i].Content, req.Files[i].HasContent
	}
	es, missing := b.store.Resolve(digests, contents, has)
	if len(missing) > 0 {
		return nil, false, 0, missingContent(req.Files, missing)
	}
	defer b.store.Unpin(es, logctx.Fields(ctx))
	c, err := b.cursorBudget(es[ti].Text, req)
	if err != nil {
		return nil, false, 0, err
	}
	files := make([]index.RequestFile, len(req.Files))
	for i := range req.Files {
		files[i] = index.RequestFile{Path: req.Files[i].Path, Lang: list.ids[i], Indexed: es[i]}
	}
	defer b.useView(ctx, req.RepoName, &files[ti], c.off)()
	if err := b.analyzeAll(ctx, req.RepoName, files); err != nil {
		return nil, false, 0, err
	}

	b.inRepo(ctx, req.RepoName, func(r *index.Repository[*record]) {
		changed = b.reindex(r, files, true, list)
		p, memo, err = b.promptIn(ctx, r, r.Index.File(files[ti].Path), req, c, strategy)
	})
	return p, memo, changed, err
}

// inRepo runs fn with the repository (its index and record) locked and
// kept from eviction, then accounts their new size.
func (b *Builder) inRepo(ctx context.Context, name string, fn func(r *index.Repository[*record])) {
	fields := logctx.Fields(ctx)
	r := b.store.Acquire(name, newRecord, fields)
	r.Lock()
	defer func() {
		size := r.Index.MemBytes() + r.Record.bytes()
		r.Unlock()
		b.store.Release(r, size, fields)
	}()
	fn(r)
}

// reindex brings r's index (locked) to list: from files, the whole list,
// or only the files that changed since the list the index holds. It moves
// the store's pins with it.
func (b *Builder) reindex(r *index.Repository[*record], files []index.RequestFile, whole bool, list *fileList) int {
	add, drop, changed := r.Index.Update(files, whole)
	r.Record.listed = list
	b.store.Repin(add, drop)
	return changed
}

// cursorBudget is where a request's cursor is in its file and what budget
// it has.
type cursorBudget struct {
	off, budget, promptBudget int
}

func (b *Builder) cursorBudget(content string, req *Request) (cursorBudget, error) {
	off, err := ByteOffset(content, req.Cursor)
	if err != nil {
		return cursorBudget{}, err
	}
	budget := b.Budget(*req)
	promptBudget := budget - req.MaxNewTokens
	if promptBudget < b.cfg.MinPromptTokens {
		return cursorBudget{}, fmt.Errorf("%w: budget %d leaves %d prompt tokens after %d for generation (need at least %d)",
			ErrBudget, budget, promptBudget, req.MaxNewTokens, b.cfg.MinPromptTokens)
	}
	return cursorBudget{off, budget, promptBudget}, nil
}

// checkFiles validates paths and computes digests of sent content; it
// returns the cursor file's index and whether the paths and languages are
// prev's (a list checked before, whose paths need no second check).
func (b *Builder) checkFiles(req Request, prev *fileList) (int, []string, bool, error) {
	if req.Cursor.Path == "" {
		return 0, nil, false, &ArgumentError{Field: "cursor.path", Reason: "empty"}
	}
	if strings.ContainsAny(req.RepoName, "\r\n") {
		return 0, nil, false, &ArgumentError{Field: "repository.name", Reason: "contains a line break"}
	}
	same := prev.samePaths(req.Files)
	var seen map[string]bool
	if !same {
		seen = make(map[string]bool, len(req.Files))
	}
	ti := -1
	for i := range req.Files {
		f := &req.Files[i]
		if same {
			if !f.HasContent && f.Digest == "" {
				return 0, nil, false, neither(i, f)
			}
		} else if err := checkFile(i, f, seen); err != nil {
			return 0, nil, false, err
		}
		if f.Path == req.Cursor.Path {
			ti = i
		}
	}
	if ti < 0 {
		return 0, nil, false, &ArgumentError{Field: "cursor.path",
			Reason: fmt.Sprintf("file %q is not in repository.files", req.Cursor.Path)}
	}
	digests := make([]string, len(req.Files))
	var sent []int
	total := 0
	for i := range req.Files {
		if req.Files[i].HasContent {
			sent = append(sent, i)
			total += len(req.Files[i].Content)
		} else {
			digests[i] = req.Files[i].Digest
		}
	}
	var mu sync.Mutex
	var bad error
	hash := func(k int) {
		i := sent[k]
		f := &req.Files[i]
		d := Digest(f.Content)
		digests[i] = d
		if f.Digest != "" && f.Digest != d {
			mu.Lock()
			if bad == nil {
				bad = &ArgumentError{Field: fileField(i) + ".digest",
					Reason: fmt.Sprintf("%q does not match the content of %q (%s)", f.Digest, f.Path, d)}
			}
			mu.Unlock()
		}
	}
	if total < 1<<20 {
		for k := range sent {
			hash(k)
		}
	} else {
		b.parallel(len(sent), hash)
	}
	if bad != nil {
		return 0, nil, false, bad
	}
	return ti, digests, same, nil
}

// own returns files with every string the Builder may keep past this call
// made its own, and makes digests' strings its own too: equal strings it
// holds already (the previous list's paths, languages and digests, the
// store's texts, texts applyEdits made) where there are some, else copies.
// Everything the Builder keeps comes from these, so a caller may pass
// strings that share a larger buffer, as the server's decoder does
// (infillv1.Codec): a kept path or text must not keep a whole request
// alive. files holds no edits here (applyEdits turned them into content).
// It is changed in place when mine (a list this call made), else copied.
func (b *Builder) own(files []File, mine bool, digests []string, prev *fileList, same bool) []File {
	out := files
	if !mine {
		out = make([]File, len(files))
	}
	for i := range files {
		f := files[i]
		o := File{HasContent: f.HasContent, ownText: f.ownText}
		if same {
			o.Path, o.Language = prev.paths[i], prev.langs[i]
		} else {
			o.Path, o.Language = strings.Clone(f.Path), strings.Clone(f.Language)
		}
		switch {
		case same && digests[i] == prev.digests[i]:
			digests[i] = prev.digests[i]
		case !f.HasContent:
			digests[i] = strings.Clone(digests[i])
		} // else checkFiles computed the digest
		if f.Digest != "" {
			o.Digest = digests[i]
		}
		if f.HasContent && !f.ownText {
			if t, ok := b.store.Text(digests[i]); ok {
				o.Content = t
			} else {
				o.Content = strings.Clone(f.Content)
			}
			o.ownText = true
		} else {
			o.Content = f.Content
		}
		out[i] = o
	}
	return out
}

// checkFile checks request file i (f) and records its path in seen: a
// path that is not empty, has no line break and was not seen, and content
// or a digest.
func checkFile(i int, f *File, seen map[string]bool) error {
	switch {
	case f.Path == "":
		return &ArgumentError{Field: fileField(i) + ".path", Reason: "empty"}
	case strings.ContainsAny(f.Path, "\r\n"):
		return &ArgumentError{Field: fileField(i) + ".path", Reason: fmt.Sprintf("%q contains a line break", f.Path)}
	case seen[f.Path]:
		return &ArgumentError{Field: fileField(i) + ".path", Reason: fmt.Sprintf("duplicate path %q", f.Path)}
	case !f.HasContent && f.Digest == "":
		return neither(i, f)
	case f.Digest != "" && !validID(f.Digest, "sha256:"):
		return badDigest(i, f.Digest)
	}
	seen[f.Path] = true
	return nil
}

// missingContent is the error for files (indexes into files) sent as
// digests the store does not hold: a *MissingContentError, unless one of
// them is not a digest at all, which no resend would mend (an
// *ArgumentError on the first such).
func missingContent(files []File, missing []int) error {
	paths := make([]string, len(missing))
	for i, m := range missing {
		if d := files[m].Digest; !validID(d, "sha256:") {
			return badDigest(m, d) // checkFile's check, where a repeated list skipped it
		}
		paths[i] = files[m].Path
	}
	return &MissingContentError{Paths: paths}
}

func badDigest(i int, d string) error {
	return &ArgumentError{Field: fileField(i) + ".digest", Reason: fmt.Sprintf(
		"%.80q is not \"sha256:\" and 64 lowercase hex digits", d)}
}

// validID reports whether id is prefix and 64 lowercase hex digits, the
// form of Digest and of snapshot IDs.
func validID(id, prefix string) bool {
	h, ok := strings.CutPrefix(id, prefix)
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func neither(i int, f *File) error {
	return &ArgumentError{Field: fileField(i), Reason: fmt.Sprintf("file %q has neither content nor digest", f.Path)}
}

// fileField names repository.files[i] in errors.
func fileField(i int) string { return "repository.files[" + strconv.Itoa(i) + "]" }

// parallel runs fn(0..n-1) on up to cfg.Workers goroutines.
func (b *Builder) parallel(n int, fn func(i int)) {
	w := min(b.cfg.Workers, n)
	if w <= 1 || n < 64 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// maxTreeBytes bounds the files whose syntax trees are kept for
// incremental parsing (a tree takes roughly ten times its file's size).
const maxTreeBytes = 256 << 10

// analysisFor returns e's analysis in lang, computing it once. A non-empty
// treeKey (repository and path) parses incrementally from the tree of the
// path's previous version when the tree cache has it, and keeps the new
// tree for the next version.
func (b *Builder) analysisFor(ctx context.Context, e *index.Content, lang syntax.Lang, treeKey string) (*syntax.Analysis, error) {
	return b.store.Analysis(e, lang, func(text string) (*syntax.Analysis, error) {
		opt := b.analyzeOptions
		if len(text) <= maxTreeBytes {
			opt.TreeKey = treeKey
		}
		return syntax.Analyze(ctx, b.grammars, text, lang, opt)
	})
}

// analyzeAll fills in the analyses, parsing what the cache lacks. When few
// files are new (edits, keystrokes) their trees are kept for incremental
// parsing of their next versions.
func (b *Builder) analyzeAll(ctx context.Context, repo string, files []index.RequestFile) error {
	var todo []int
	for i := range files {
		f := &files[i]
		f.Analysis = f.Indexed.Analysis(f.Lang)
		if f.Analysis == nil {
			todo = append(todo, i)
		}
	}
	var mu sync.Mutex
	var first error
	b.parallel(len(todo), func(k int) {
		if ctx.Err() != nil {
			return
		}
		f := &files[todo[k]]
		key := ""
		if len(todo) <= b.cfg.EditTrees {
			key = repo + "\x00" + f.Path
		}
		a, err := b.analysisFor(ctx, f.Indexed, f.Lang, key)
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			return
		}
		f.Analysis = a
	})
	if first != nil {
		return first
	}
	return ctx.Err()
}

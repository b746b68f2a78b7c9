package contextpack

import (
	"slices"
	"weak"

	"github.com/infill-dev/infill/contextpack/internal/assemble"
	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// The repository record: what the Builder keeps beside a repository's
// index between requests, besides the index itself. It holds the file
// list the index was last updated from and the memos in front of the
// assembly (internal/assemble): the last few prompts, the last context
// selection, and the lookups an assembly makes through assemble.Memos (the
// import ranking and its candidates, the last search, import outlines,
// the typing view's walks). A memo is valid while everything its key names
// is; the index's version stands for the index's state. Guarded by the
// repository's mutex, evicted with its index.
type record struct {
	listed    *fileList // the list of the index's last update
	prompts   promptMemo
	selection selectionMemo
	searched  searchMemo
	searches  int // searches run, not memoized
	ranking   rankingMemo
	outlines  map[weak.Pointer[syntax.Analysis]]outlineMemo
	tails     [2]*assemble.WalkTail // the last prefix and suffix tails of the typing view
}

func newRecord() *record { return &record{} }

// bytes estimates the memos' memory.
func (rec *record) bytes() int64 {
	n := rec.prompts.bytes + rec.selection.sel.MemBytes()
	if rec.searched.found != nil {
		n += rec.searched.found.MemBytes()
	}
	return n
}

// promptKey is everything an assembly reads besides the index's state,
// which version stands for: the cursor file and its analysis, the
// cursor offset, the budgets and the strategy. (The repository name is the
// index's own; the file count is the index's.)
type promptKey struct {
	cursor       *index.File
	analysis     *syntax.Analysis
	text         *index.Content // the cursor file's text (an may be its view's)
	version      uint64
	offset       int
	budget       int
	promptBudget int
	maxNew       int
	strategy     Strategy
}

// maxPromptMemo is how many recent prompts an index keeps: enough for a
// few requests at different cursors (or from different clients) to take
// turns without rebuilding.
const maxPromptMemo = 4

// promptMemo holds the latest prompts of an index, newest first. An
// identical request (a re-request after a cancelled keystroke, several
// samples of one benchmark task, a load test) gets a copy instead of a
// new assembly. Guarded by the index's mu.
type promptMemo struct {
	keys    []promptKey
	prompts []*Prompt
	bytes   int64
}

// get returns a copy of the prompt memoized for k.
func (m *promptMemo) get(k promptKey) *Prompt {
	for i := range m.keys {
		if m.keys[i] == k {
			return copyPrompt(m.prompts[i])
		}
	}
	return nil
}

// put remembers p for k, dropping prompts of older versions of the index.
func (m *promptMemo) put(k promptKey, p *Prompt) {
	n := 0
	for i := range m.keys {
		if m.keys[i].version == k.version && n < maxPromptMemo-1 {
			m.keys[n], m.prompts[n] = m.keys[i], m.prompts[i]
			n++
		}
	}
	clear(m.prompts[n:])
	m.keys, m.prompts = m.keys[:n], m.prompts[:n]
	m.keys = append([]promptKey{k}, m.keys...)
	m.prompts = append([]*Prompt{copyPrompt(p)}, m.prompts...)
	m.bytes = 0
	for _, q := range m.prompts {
		m.bytes += int64(len(q.Text)) + int64(len(q.Manifest.Sources))*96
	}
}

// copyPrompt copies p so that callers may change what they get (the
// server appends warnings) without touching the memo.
func copyPrompt(p *Prompt) *Prompt {
	c := *p
	c.Manifest.Sources = slices.Clone(p.Manifest.Sources)
	c.Manifest.Warnings = slices.Clone(p.Manifest.Warnings)
	return &c
}

// selectionMemo is the repository's last context selection: keystrokes on
// one line repeat it, and only the window and the rendering are new.
type selectionMemo struct {
	key assemble.SelectionKey
	ok  bool
	sel assemble.Selection
}

func (m *selectionMemo) get(k assemble.SelectionKey) *assemble.Selection {
	if m.ok && m.key == k {
		return &m.sel
	}
	return nil
}

// put keeps a copy of s for k.
func (m *selectionMemo) put(k assemble.SelectionKey, s *assemble.Selection) {
	*m = selectionMemo{key: k, ok: true, sel: *s.Clone()}
}

// searchMemo is the repository's last search: keystrokes on one line
// repeat it (the typing view and the index do not change). Candidates are
// copied in and out: the packing writes to them.
type searchMemo struct {
	key   assemble.SearchKey
	found *assemble.SearchResult // nil: none yet
}

func (rec *record) Search(q assemble.SearchQuery) *assemble.SearchResult {
	m := &rec.searched
	if key := q.Key(); m.found == nil || m.key != key {
		found := assemble.Search(q)
		rec.searches++
		*m = searchMemo{key: key, found: found.Clone()}
		return found
	}
	return m.found.Clone()
}

// rankingMemo is rankImportsFor for one cursor file, view and version, and
// the candidates of that ranking for the cursor file's view at a version.
type rankingMemo struct {
	cursor     *index.File
	view       *syntax.Analysis
	lineIdents string
	version    uint64
	ranking    *assemble.Ranking

	cands        []*assemble.Candidate
	candsView    *syntax.Analysis
	candsVersion uint64
	candsIdents  string
}

// ImportRanking memoizes the order until a file changes or the cursor
// moves to another file; while the cursor file alone is typed in, it
// carries over to the new version when nothing the order depends on
// changed (reusable).
func (rec *record) ImportRanking(q assemble.RankingQuery) *assemble.Ranking {
	m := &rec.ranking
	a, version := q.Cursor.Analysis, q.Index.Version()
	switch {
	case m.cursor == q.Cursor && m.view == a && m.lineIdents == q.LineIdents && m.version == version:
	case m.lineIdents == q.LineIdents && m.reusable(q.Index, q.Cursor, a):
		m.view, m.version = a, version
	default:
		*m = rankingMemo{cursor: q.Cursor, view: a, lineIdents: q.LineIdents, version: version, ranking: assemble.RankImports(q)}
	}
	return m.ranking
}

// reusable reports whether the order memoized for version m.view of the
// cursor file t holds for its next version a: every index update since
// m's version changed t alone, a came from m.view by one edit, a imports
// what m.view did, and no identifier that appeared or disappeared with the
// edit names a definition of a file the imports resolved to (so every
// file's used definitions are as they were).
func (m *rankingMemo) reusable(r index.View, t *index.File, a *syntax.Analysis) bool {
	from, flips := a.IdentFlips()
	edited, since := r.OnlyEdited()
	if m.cursor != t || m.view == nil || edited != t || m.version < since ||
		from != weak.Make(m.view) || !sameImports(m.view.Imports, a.Imports) {
		return false
	}
	for _, id := range flips {
		for _, sl := range m.ranking.Resolved {
			if sl.Analysis.Defines(id) {
				return false
			}
		}
	}
	return true
}

// sameImports compares import statements by what they import, not where.
func sameImports(x, y []syntax.Import) bool {
	return slices.EqualFunc(x, y, func(p, q syntax.Import) bool {
		return p.Kind == q.Kind && p.Spec == q.Spec && slices.Equal(p.Names, q.Names)
	})
}

// ImportCandidates memoizes the candidates of the ranking for the cursor
// file's view (the same on one line), version and line identifiers.
func (rec *record) ImportCandidates(q assemble.CandidatesQuery) []*assemble.Candidate {
	m := &rec.ranking
	if m.cands == nil || m.candsView != q.Cursor.Analysis || m.candsVersion != q.Index.Version() || m.candsIdents != q.LineIdents {
		m.cands, m.candsView, m.candsVersion, m.candsIdents = assemble.ImportCandidates(q), q.Cursor.Analysis, q.Index.Version(), q.LineIdents
	}
	return assemble.CloneCandidates(m.cands)
}

// maxOutlines bounds the files whose last outline is kept.
const maxOutlines = 512

// outlineMemo is a file's last outline, for one set of used definitions.
type outlineMemo struct {
	usedDefs []uint64
	limit    int
	outline  assemble.Outline
}

func (rec *record) Outline(q assemble.OutlineQuery) assemble.Outline {
	key := weak.Make(q.File)
	if m, ok := rec.outlines[key]; ok && m.limit == q.Limit && m.usedDefs != nil && slices.Equal(m.usedDefs, q.UsedDefs) {
		return m.outline
	}
	o := assemble.OutlineOf(q)
	if rec.outlines == nil || len(rec.outlines) >= maxOutlines {
		rec.outlines = make(map[weak.Pointer[syntax.Analysis]]outlineMemo)
	}
	rec.outlines[key] = outlineMemo{usedDefs: q.UsedDefs, limit: q.Limit, outline: o}
	return o
}

// WalkTail keeps the typing view's last walk each way: the keystrokes of
// one line walk the same view from the same line.
func (rec *record) WalkTail(q assemble.TailQuery) *assemble.WalkTail {
	i := 0
	if q.Suffix {
		i = 1
	}
	if t := rec.tails[i]; t.Covers(q) {
		return t
	}
	t := assemble.WalkTailOf(q)
	rec.tails[i] = t
	return t
}

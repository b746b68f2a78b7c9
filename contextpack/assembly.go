package contextpack

import (
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// asmWeights are the weights of reciprocal rank fusion: a candidate's score
// is Σ weight/(rrfK+rank) over the sources that ranked it.
type asmWeights struct {
	rrfK       float64
	definition float64
	similar    float64
	imports    float64
	file       float64 // files ranked by the summed similarity of their windows
}

// asmParams are an assembly's explicit parameters: budget shares, limits,
// fusion weights and the token counter. The caller (the Builder) makes
// them once from its Config.
type asmParams struct {
	minPromptTokens     int
	localShare          float64
	suffixShare         float64
	importShare         float64
	contextQuantum      int
	prefixQuantumLines  int
	queryLines          int
	maxCandidates       int
	maxSnippetsPerFile  int
	maxSnippetTokens    int
	maxImportFileTokens int
	weights             asmWeights
	diversity           float64
	counter             *counter
	// neutral rewrites literal special-token text in user text.
	neutral func(string) string
}

// asmStrategy selects how context is chosen (the public Strategy, as the
// assembler names it).
type asmStrategy int

const (
	asmFused asmStrategy = iota
	asmNone
	asmExecRepoBench
	asmJaccard
	asmImportsOnly
	asmDefinitionsOnly
	asmSimilarOnly
)

// selects reports whether the strategy is the fused assembler or one of
// its single-source ablations, whose selection the caller may memoize.
func (s asmStrategy) selects() bool {
	switch s {
	case asmFused, asmImportsOnly, asmDefinitionsOnly, asmSimilarOnly:
		return true
	}
	return false
}

// asmInput is one prompt to assemble, after the index holds the request's
// files.
type asmInput struct {
	repoName string
	// requestFiles counts the request's files: a lone file without a
	// repository name gets the file-level format.
	requestFiles int
	cursor       *index.File // the cursor file in the index (its view, while typing)
	offset       int         // the cursor's byte offset in the cursor file's text
	tokenBudget  int         // prompt and generation
	promptBudget int
	maxNewTokens int
	strategy     asmStrategy
}

// assembly is one prompt being assembled: the cursor file's prefix/suffix
// window first (newAssembly), then the context (selectContext, or a
// selection the caller kept), then the window grown into budget nothing
// used and the rendering (finish). It reads the index (locked by the
// caller) and asks memos for what the caller may keep between requests;
// it stores nothing itself.
type assembly struct {
	in     asmInput
	params *asmParams
	index  index.View
	memos  asmMemos

	text          *syntax.Analysis // the cursor file with its own text (view.go)
	cursorLine    int32
	lineIdents    string // see lineIdentsOf
	repoLevel     bool
	overhead      int // tokens of the control tokens and path lines
	available     int // prompt budget less overhead
	localLimit    int
	window        window
	windowLines   lineRange
	contextBudget int

	sel selection
}

// selection is the context chosen for a prompt: the stable tier of
// imported files, the cursor tier's blocks, same-file context, and what
// was considered (the manifest). A caller may keep it for the next
// keystroke on the same line (selectionKey) and give back a copy
// (useSelection); the maps are read only once made.
type selection struct {
	used         syntax.IdentCounts // identifiers of the cursor file
	imports      []index.ImportHit
	importRank   map[*index.File]int
	fileRank     map[*index.File]int // files by summed window similarity
	stable       []*candidate        // stable tier, most relevant first
	stableWhole  map[*index.File]bool
	stableRanges map[*index.File][]lineRange
	considered   []*candidate
	shown        map[syntax.Term]bool // identifiers the prompt shows (Diversity only)
	blocks       map[*index.File]*block
	above        []lineRange // same-file context above the window
	below        []lineRange // and below it
	extraTokens  int         // tokens of above and below (beyond the headers)
	contextUsed  int

	// head is the prompt up to the cursor file's path line, with its
	// tokens and the context tokens in it.
	head        string
	headTokens  int
	headContext int
	headDone    bool
}

// clone copies what finishing an assembly changes (candidates, blocks,
// same-file ranges); the maps are shared.
func (s *selection) clone() *selection {
	c := *s
	at := make(map[*candidate]int, len(s.considered))
	for i, x := range s.considered {
		at[x] = i
	}
	c.considered = cloneCandidates(s.considered)
	c.stable = make([]*candidate, len(s.stable))
	for i, x := range s.stable {
		c.stable[i] = c.considered[at[x]]
	}
	c.blocks = make(map[*index.File]*block, len(s.blocks))
	for sl, bl := range s.blocks {
		v := *bl
		c.blocks[sl] = &v
	}
	c.above, c.below = slices.Clone(s.above), slices.Clone(s.below)
	return &c
}

// block is the cursor-dependent context from one file.
type block struct {
	file       *index.File
	ranges     []lineRange
	tokens     int // content
	headTokens int // file separator and path line
	best       float64
	snippets   int
}

// newAssembly places the cursor and cuts the cursor file's window within
// the local budget.
func newAssembly(in asmInput, p *asmParams, r index.View, m asmMemos) *assembly {
	as := &assembly{in: in, params: p, index: r, memos: m}
	t := in.cursor
	as.text = t.WithText()
	as.cursorLine = as.text.LineOf(in.offset)
	as.repoLevel = (in.repoName != "" || in.requestFiles > 1) && in.strategy != asmNone
	if as.repoLevel {
		as.overhead = 1 + p.counter.plain(t.Path+"\n") + 3
		if in.repoName != "" {
			as.overhead += 1 + p.counter.plain(in.repoName+"\n")
		}
		if in.promptBudget-as.overhead < p.minPromptTokens {
			as.repoLevel = false // paths do not fit; plain FIM still does
		}
	}
	if !as.repoLevel {
		as.overhead = 3
	}
	as.available = in.promptBudget - as.overhead
	others := as.repoLevel && r.NumFiles() > 1
	as.localLimit = as.available
	if others {
		as.localLimit = int(float64(as.available) * p.localShare)
	}
	as.window = as.localWindow(as.localLimit)
	as.windowLines = as.window.lines(as.text, in.offset)
	if others {
		local := as.window.preTokens + as.window.sufTokens + as.window.headerTokens
		q := p.contextQuantum
		as.contextBudget = max(0, (as.available-local)/q*q)
	}
	as.sel = selection{blocks: map[*index.File]*block{}, stableWhole: map[*index.File]bool{},
		stableRanges: map[*index.File][]lineRange{}, importRank: map[*index.File]int{}}
	if as.contextBudget > 0 && in.strategy.selects() {
		as.lineIdents = as.lineIdentsOf()
	}
	return as
}

// selectionKey is everything selectContext reads besides the index's
// state, which the index's version stands for: the search key, the
// prefix/suffix window's first line and scope headers (same-file context
// is counted against them), the context budget, the cursor line's
// indentation (an elision line next to the window can take it) and its
// identifiers. ok is false when there is no selection to keep: no context
// budget, or a baseline strategy.
type selectionKey struct {
	search      searchKey
	prefixFirst int32
	headers     string
	budget      int
	indent      string
	lineIdents  string
}

func (as *assembly) selectionKey() (selectionKey, bool) {
	if as.contextBudget <= 0 || !as.in.strategy.selects() {
		return selectionKey{}, false
	}
	return selectionKey{
		search:      as.searchQuery().key(),
		prefixFirst: as.prefixFirstLine(), headers: rangesKey(as.in.cursor, as.window.headers),
		budget: as.contextBudget, indent: lineIndent(as.text, as.cursorLine), lineIdents: as.lineIdents,
	}, true
}

// selection returns the assembly's selection (after selectContext): the
// caller keeps a copy (clone) for useSelection.
func (as *assembly) selection() *selection { return &as.sel }

// useSelection takes a copy of a selection made by an assembly with the
// same selectionKey.
func (as *assembly) useSelection(s *selection) { as.sel = *s.clone() }

// selectContext chooses the context: for the fused assembler (and its
// ablations), imported files ranked into a stable tier, then definitions,
// similar windows and the imports left over fused by reciprocal rank into
// the cursor tier, then the cursor tier's files grown whole with budget
// left; for a baseline, its own choice.
func (as *assembly) selectContext() {
	if as.contextBudget > 0 {
		switch as.in.strategy {
		case asmExecRepoBench:
			as.packExecRepoBench()
		case asmJaccard:
			as.packJaccard()
		default:
			as.rankImports()
			pool := as.packStableTier()
			if as.in.strategy != asmImportsOnly {
				as.packCursorTier(pool)
			}
			if as.in.strategy == asmFused {
				as.expandBlocks()
			}
		}
	}
	as.renderHead()
}

// finish gives context budget nothing used back to a cut prefix/suffix
// and renders the prompt.
func (as *assembly) finish() (*asmResult, error) {
	if as.contextBudget > 0 {
		as.growWindow()
	}
	if !as.sel.headDone {
		as.renderHead()
	}
	return as.render()
}

// lineIdentsOf lists, sorted and space-separated, the identifiers typed on
// the cursor's line before the cursor that are complete (something follows
// them), which the typing view leaves out. They change a few times per
// line, not at every keystroke.
func (as *assembly) lineIdentsOf() string {
	if !as.in.cursor.Viewed() {
		return "" // the line is empty
	}
	a := as.text
	line := a.Content[a.Lines[as.cursorLine]:as.in.offset]
	var ids []string
	syntax.ScanIdents(line, a.Lang, func(id string, off int) bool {
		if off+len(id) < len(line) {
			ids = append(ids, id)
		}
		return true
	})
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), " ")
}

// prefixFirstLine is the first line of the kept prefix.
func (as *assembly) prefixFirstLine() int32 { return as.text.LineOf(as.window.preStart) }

func (as *assembly) aboveRanges(extra []lineRange) []lineRange {
	return mergeRanges(append(slices.Clone(as.window.headers), extra...))
}

// extrasTokens is what same-file ranges add to the window's tokens.
func (as *assembly) extrasTokens(above, below []lineRange) int {
	c := as.params.counter
	n := 0
	if len(above) > 0 {
		n += c.rangesTokens(as.text, as.aboveRanges(above), -1, as.prefixFirstLine()) - as.window.headerTokens
	}
	if len(below) > 0 {
		n += c.rangesTokens(as.text, mergeRanges(below), as.windowLines.e+1, -1)
	}
	return n
}

func (as *assembly) headTokens(sl *index.File) int { return 1 + as.params.counter.plain(sl.Path+"\n") }

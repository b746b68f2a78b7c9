package assemble

import (
	"slices"
	"strings"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Weights are the weights of reciprocal rank fusion: a candidate's score
// is Σ weight/(RRFK+rank) over the sources that ranked it.
type Weights struct {
	RRFK       float64
	Definition float64
	Similar    float64
	Imports    float64
	File       float64 // files ranked by the summed similarity of their windows
	// OffTopic multiplies the score of a test file's candidate for a
	// cursor outside tests and of a prose file's for a cursor in code.
	OffTopic float64
}

// Params are an assembly's explicit parameters: budget shares, limits,
// fusion weights and the token counter. contextpack's Builder makes them
// once from its Config.
type Params struct {
	MinPromptTokens     int
	LocalShare          float64
	SuffixShare         float64
	ImportShare         float64
	ContextQuantum      int
	PrefixQuantumLines  int
	QueryLines          int
	MaxCandidates       int
	MaxSnippetsPerFile  int
	MaxSnippetTokens    int
	MaxImportFileTokens int
	// SimilarTailLines: lines after a similar window of another file shown
	// with it (contextpack.Config.SimilarTailLines).
	SimilarTailLines int
	Weights          Weights
	Diversity        float64
	Counter          *Counter
	// Neutral rewrites literal special-token text in user text.
	Neutral func(string) string
}

// Strategy selects how context is chosen (contextpack.Strategy documents
// each): the fused assembler, the file-level prompt, two baselines, and
// the fused assembler with one source.
type Strategy int

// Strategies.
const (
	StrategyFused Strategy = iota
	StrategyNone
	StrategyExecRepoBench
	StrategyJaccard
	StrategyImportsOnly
	StrategyDefinitionsOnly
	StrategySimilarOnly
)

// selects reports whether the strategy is the fused assembler or one of
// its single-source ablations, whose selection the caller may memoize.
func (s Strategy) selects() bool {
	switch s {
	case StrategyFused, StrategyImportsOnly, StrategyDefinitionsOnly, StrategySimilarOnly:
		return true
	}
	return false
}

// Input is one prompt to assemble, after the index holds the request's
// files.
type Input struct {
	RepoName string
	// RequestFiles counts the request's files: a lone file without a
	// repository name gets the file-level format.
	RequestFiles int
	Cursor       *index.File // the cursor file in the index (its view, while typing)
	Offset       int         // the cursor's byte offset in the cursor file's text
	TokenBudget  int         // prompt and generation
	PromptBudget int
	MaxNewTokens int
	Strategy     Strategy
}

// Assembly is one prompt being assembled: the cursor file's prefix/suffix
// window first (New), then the context (Select, or a selection the caller
// kept: UseSelection), then the window grown into budget nothing used and
// the rendering (Finish). It reads the index (locked by the caller) and
// asks Memos for what the caller may keep between requests; it stores
// nothing itself.
type Assembly struct {
	input  Input
	params *Params
	index  index.View
	memos  Memos

	text          *syntax.Analysis // the cursor file with its own text (index.File.WithText)
	cursorLine    int32
	lineIdents    string // see lineIdentsOf
	lineUses      string // see lineUsesOf
	repoLevel     bool
	overhead      int // tokens of the control tokens and path lines
	available     int // prompt budget less overhead
	localLimit    int
	window        window
	windowLines   LineRange
	contextBudget int

	sel Selection
}

// Selection is the context chosen for a prompt: the stable tier of
// imported files, the cursor tier's blocks, same-file context, and what
// was considered (the manifest). A caller may keep it for the next
// keystroke on the same line (SelectionKey) and give back a copy
// (UseSelection); the maps are read only once made.
type Selection struct {
	used         syntax.IdentCounts // identifiers of the cursor file
	imports      []RankedImport
	importRank   map[*index.File]int
	fileRank     map[*index.File]int // files by summed window similarity
	stable       []*Candidate        // stable tier, most relevant first
	stableWhole  map[*index.File]bool
	stableRanges map[*index.File][]LineRange
	considered   []*Candidate
	shown        map[syntax.Term]bool // identifiers the prompt shows (Diversity only)
	blocks       map[*index.File]*block
	above        []LineRange // same-file context above the window
	below        []LineRange // and below it
	extraTokens  int         // tokens of above and below (beyond the headers)
	contextUsed  int

	// head is the prompt up to the cursor file's path line, with its
	// tokens and the context tokens in it.
	head        string
	headTokens  int
	headContext int
	headDone    bool
	// headSnippets are the head's file sections (Result.Context); read
	// only once made.
	headSnippets []Snippet
}

// Clone copies what finishing an assembly changes (candidates, blocks,
// same-file ranges); the maps are shared.
func (s *Selection) Clone() *Selection {
	c := *s
	at := make(map[*Candidate]int, len(s.considered))
	for i, x := range s.considered {
		at[x] = i
	}
	c.considered = CloneCandidates(s.considered)
	c.stable = make([]*Candidate, len(s.stable))
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

// MemBytes estimates what keeping s costs.
func (s *Selection) MemBytes() int64 {
	n := int64(len(s.head)) + int64(len(s.considered))*160
	for _, sn := range s.headSnippets {
		n += int64(len(sn.Text))
	}
	return n
}

// block is the cursor-dependent context from one file.
type block struct {
	file       *index.File
	ranges     []LineRange
	tokens     int // content
	headTokens int // file separator and path line
	best       float64
	snippets   int
}

// New places the cursor and cuts the cursor file's window within
// the local budget.
func New(in Input, p *Params, r index.View, m Memos) *Assembly {
	as := &Assembly{input: in, params: p, index: r, memos: m}
	t := in.Cursor
	as.text = t.WithText()
	as.cursorLine = as.text.LineOf(in.Offset)
	as.repoLevel = (in.RepoName != "" || in.RequestFiles > 1) && in.Strategy != StrategyNone
	if as.repoLevel {
		as.overhead = 1 + p.Counter.plain(t.Path+"\n") + 3
		if in.RepoName != "" {
			as.overhead += 1 + p.Counter.plain(in.RepoName+"\n")
		}
		if in.PromptBudget-as.overhead < p.MinPromptTokens {
			as.repoLevel = false // paths do not fit; plain FIM still does
		}
	}
	if !as.repoLevel {
		as.overhead = 3
	}
	as.available = in.PromptBudget - as.overhead
	others := as.repoLevel && r.NumFiles() > 1
	as.localLimit = as.available
	if others {
		as.localLimit = int(float64(as.available) * p.LocalShare)
	}
	as.window = as.localWindow(as.localLimit)
	as.windowLines = as.window.lines(as.text, in.Offset)
	if others {
		local := as.window.preTokens + as.window.sufTokens + as.window.headerTokens
		q := p.ContextQuantum
		as.contextBudget = max(0, (as.available-local)/q*q)
	}
	as.sel = Selection{blocks: map[*index.File]*block{}, stableWhole: map[*index.File]bool{},
		stableRanges: map[*index.File][]LineRange{}, importRank: map[*index.File]int{}}
	if as.contextBudget > 0 && in.Strategy.selects() {
		as.lineIdents = as.lineIdentsOf()
		as.lineUses = as.lineUsesOf()
	}
	return as
}

// SelectionKey is everything Select reads besides the index's
// state, which the index's version stands for: the search key, the
// prefix/suffix window's first line and scope headers (same-file context
// is counted against them), the context budget, the cursor line's
// indentation (an elision line next to the window can take it) and its
// identifiers (lineIdents, and lineUses for cursorDefs). ok is false when there is no selection to keep: no context
// budget, or a baseline strategy.
type SelectionKey struct {
	search      SearchKey
	prefixFirst int32
	headers     string
	budget      int
	indent      string
	lineIdents  string
	lineUses    string
}

func (as *Assembly) SelectionKey() (SelectionKey, bool) {
	if as.contextBudget <= 0 || !as.input.Strategy.selects() {
		return SelectionKey{}, false
	}
	return SelectionKey{
		search:      as.searchQuery().Key(),
		prefixFirst: as.prefixFirstLine(), headers: rangesKey(as.input.Cursor, as.window.headers),
		budget: as.contextBudget, indent: lineIndent(as.text, as.cursorLine), lineIdents: as.lineIdents,
		lineUses: as.lineUses,
	}, true
}

// Selection returns the assembly's selection (after Select): the caller
// keeps a copy (Clone) for UseSelection.
func (as *Assembly) Selection() *Selection { return &as.sel }

// UseSelection takes a copy of a selection made by an assembly with the
// same SelectionKey.
func (as *Assembly) UseSelection(s *Selection) { as.sel = *s.Clone() }

// Select chooses the context: for the fused assembler (and its
// ablations), imported files ranked into a stable tier, then definitions,
// similar windows and the imports left over fused by reciprocal rank into
// the cursor tier, then the cursor tier's files grown whole with budget
// left; for a baseline, its own choice.
func (as *Assembly) Select() {
	if as.contextBudget > 0 {
		switch as.input.Strategy {
		case StrategyExecRepoBench:
			as.packExecRepoBench()
		case StrategyJaccard:
			as.packJaccard()
		default:
			as.rankImports()
			pool := as.packStableTier()
			if as.input.Strategy != StrategyImportsOnly {
				as.packCursorTier(pool)
			}
			if as.input.Strategy == StrategyFused {
				as.expandBlocks()
			}
		}
	}
	as.renderHead()
}

// Finish gives context budget nothing used back to a cut prefix/suffix
// and renders the prompt.
func (as *Assembly) Finish() (*Result, error) {
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
func (as *Assembly) lineIdentsOf() string {
	if !as.input.Cursor.Viewed() {
		return "" // the line is empty
	}
	a := as.text
	line := a.Content[a.Lines[as.cursorLine]:as.input.Offset]
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
func (as *Assembly) prefixFirstLine() int32 { return as.text.LineOf(as.window.preStart) }

func (as *Assembly) aboveRanges(extra []LineRange) []LineRange {
	return mergeRanges(append(slices.Clone(as.window.headers), extra...))
}

// extrasTokens is what same-file ranges add to the window's tokens.
func (as *Assembly) extrasTokens(above, below []LineRange) int {
	c := as.params.Counter
	n := 0
	if len(above) > 0 {
		n += c.rangesTokens(as.text, as.aboveRanges(above), -1, as.prefixFirstLine()) - as.window.headerTokens
	}
	if len(below) > 0 {
		n += c.rangesTokens(as.text, mergeRanges(below), as.windowLines.Last+1, -1)
	}
	return n
}

func (as *Assembly) headTokens(sl *index.File) int { return 1 + as.params.Counter.plain(sl.Path+"\n") }

package contextpack

// asmMemos answers the lookups an assembly makes that are functions of
// their query and the index's state alone, so that the caller may keep
// them between requests: each method returns what the function it names
// returns for the same query. The assembly never stores a result itself;
// the repository record (memo.go) is a memo in front of these functions,
// and noMemos calls them each time.
type asmMemos interface {
	// walkTail returns walkTailOf(q), or an earlier walk of q's view from
	// the same line that covers q.
	walkTail(q tailQuery) *walkTail
	// importRanking returns rankImportsFor(q) (read only).
	importRanking(q rankingQuery) *importRanking
	// importCandidates returns importCandidates(q), the caller's to change.
	importCandidates(q candidatesQuery) []*candidate
	// search returns search(q), its candidates the caller's to change.
	search(q searchQuery) *searchResult
	// outline returns outlineOf(q) (read only).
	outline(q outlineQuery) outline
}

// noMemos computes every lookup.
type noMemos struct{}

func (noMemos) walkTail(q tailQuery) *walkTail                  { return walkTailOf(q) }
func (noMemos) importRanking(q rankingQuery) *importRanking     { return rankImportsFor(q) }
func (noMemos) importCandidates(q candidatesQuery) []*candidate { return importCandidates(q) }
func (noMemos) search(q searchQuery) *searchResult              { return search(q) }
func (noMemos) outline(q outlineQuery) outline                  { return outlineOf(q) }

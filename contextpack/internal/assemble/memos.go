package assemble

// Memos answers the lookups an assembly makes that are functions of
// their query and the index's state alone, so that the caller may keep
// them between requests: each method returns what the function it names
// returns for the same query. The assembly never stores a result itself;
// contextpack's repository record is a memo in front of these functions.
type Memos interface {
	// WalkTail returns WalkTailOf(q), or an earlier walk of q's view from
	// the same line that covers q.
	WalkTail(q TailQuery) *WalkTail
	// ImportRanking returns RankImports(q) (read only).
	ImportRanking(q RankingQuery) *Ranking
	// ImportCandidates returns ImportCandidates(q), the caller's to change.
	ImportCandidates(q CandidatesQuery) []*Candidate
	// Search returns Search(q), its candidates the caller's to change.
	Search(q SearchQuery) *SearchResult
	// Outline returns OutlineOf(q) (read only).
	Outline(q OutlineQuery) Outline
}

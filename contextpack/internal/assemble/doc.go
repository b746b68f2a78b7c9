// Package assemble chooses and renders the context of one prompt: the
// cursor file's prefix/suffix window under an exact token budget (with the
// headers of the enclosing scopes of a cut prefix), the candidates (the
// cursor file's imports, definitions of the identifiers around the cursor,
// similar windows), their ranking and reciprocal-rank fusion, the packing
// into a stable tier and a cursor tier, and the rendering in Qwen2.5-Coder's
// repository-level or file-level fill-in-the-middle format with a manifest
// of what went in and why.
//
// An assembly is a function of its Input, a read-only index.View and
// explicit Params (budget shares, limits, fusion Weights, the token
// Counter); it returns a Result. It keeps nothing between requests: what a
// caller may keep (the import ranking, searches, outlines, the typing
// view's walks) it asks of Memos, whose every method returns what a
// function of this package returns, and a whole selection can be kept by
// its SelectionKey. So a ranking change is made here, in the functions,
// and touches no cache.
//
// Where to change what:
//   - ranking.go: the order of imported files and how an import is shown
//     (whole or outline); the stable tier.
//   - query.go: the query region (widened when thin) and its weighted
//     identifiers (comment and string words weigh little, stop-words
//     nothing).
//   - search.go: definitions lookup and its weights, BM25 windows,
//     near-duplicate suppression, test and prose paths.
//   - cursordefs.go: the definitions of the names typed on the cursor's
//     line, which take the cursor tier's first slots.
//   - cursortier.go: the fusion (Weights, test and prose files demoted),
//     diversity, the per-file cap (pieces that cost tokens) and the
//     packing of the cursor tier.
//   - window.go: the prefix/suffix cut; render.go: the prompt layout.
//   - baselines.go: the baselines the quality tool compares against.
//
// counter.go holds the exact token counting by segments that every budget
// rests on.
package assemble

// Package syntax owns the analysis of one file content in one language:
// language detection, identifier lexing (terms, keywords), tree-sitter
// parses with the tags queries in queries/*.scm (definitions with their
// header lines and nesting, imports, parameters and locals), the sliding
// windows of lines with their terms, and what is derived from an analysis
// alone (identifier counts, definition names, whole-file terms).
//
// An Analysis is immutable once made and shared between requests. It is a
// function of the text and the language alone, however it was reached:
// incrementally (a TreeCache keeps the trees of recently edited files, so
// that the next version parses from the old tree and queries only the
// top-level nodes around the edit, region.go) or, for a file with a syntax
// error, from segments parsed one by one (segment.go). The tests hold
// every incremental result equal to an analysis from scratch.
//
// Grammars owns the C state (parsers, compiled queries) of one Builder.
// The package knows nothing of repositories, token budgets or prompts.
package syntax

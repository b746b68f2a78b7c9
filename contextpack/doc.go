// Package contextpack owns prompt assembly: it resolves the cursor in the
// request's repository, chooses prefix, suffix and cross-file context under
// an exact token budget, and renders the Qwen2.5-Coder fill-in-the-middle or
// repository-level prompt together with a manifest of what went in and what
// was left out.
//
// It knows nothing about gRPC or the backend: the server converts requests
// into a Request and maps the errors below to status codes.
//
// # Packages
//
// This package is the façade: the public types, the checking of requests,
// edits and snapshots, and the state kept between requests in front of the
// assembly. Below it, imports run one way (layout_test.go keeps them so):
//
//   - internal/syntax: one file content in one language (languages,
//     identifiers, tree-sitter parses and tags, incremental trees, segments,
//     sliding windows).
//   - internal/index: what is kept of repositories: the content store and
//     each repository's index (definitions, BM25 windows, typing views,
//     import resolution per language).
//   - internal/assemble: one prompt as a function of its input, a read-only
//     view of the index and explicit parameters: the prefix/suffix window,
//     candidates, ranking, fusion, packing, rendering, exact counts.
//
// The index and this package's repository record (memo.go) hold every
// memo; assemble keeps nothing between requests and reaches what may be
// memoized through assemble.Memos, whose methods each return what an
// assemble function returns. docs/architecture.md walks one request through
// them.
//
// # Pipeline
//
// A Builder keeps state between requests (it is safe for concurrent use):
//
//   - A content store remembers every file sent with content by its digest
//     ("sha256:<hex>", see Digest; internal/index). Later requests may send
//     the digest alone, or the digest of an earlier text with edits to it
//     (File.Edits, edits.go: a keystroke costs its own bytes, not the
//     file's); digests the store does not hold fail with a
//     *MissingContentError that lists every such path.
//   - Per content digest and language, an analysis: line table, tree-sitter
//     tags (definitions with their header lines and nesting, imports,
//     parameters and locals) for Python, Go, JavaScript, TypeScript, TSX,
//     Java, Rust, C and C++ (internal/syntax, queries in
//     internal/syntax/queries/*.scm; other files are plain text), and the
//     identifier terms of sliding line windows. Trees are closed as soon as
//     the tags are extracted; parsers come from a bounded free list per
//     language and are never shared between goroutines.
//   - Per repository (Request.RepoName), an index updated incrementally: a
//     request re-indexes only the paths whose content changed. It holds an
//     inverted index of definitions by name and a BM25 index of the windows.
//   - Keystrokes are incremental: the few most recently edited files keep
//     their tree and analysis (Config.EditTrees), and the next version is
//     parsed from the old tree, queried for tags only in the top-level nodes
//     around the edit (syntax/region.go), re-scanned only in the windows and
//     lines the edit touched, and re-indexed in place.
//   - The cross-file context is chosen from the cursor file's typing view
//     (view.go, index/typingview.go): the file with the cursor's line
//     emptied. The index holds that view for the cursor file and the text of
//     every other file. While the cursor stays on one line, keystrokes share
//     the view, so they analyse nothing, leave the index as it is and reuse
//     its last search (memo.go); only the prefix and suffix are cut anew. A
//     half-typed line no longer puts the file in a syntax error either.
//   - A file with a syntax error takes its tags from segments
//     (syntax/segment.go): it is cut lexically where top-level declarations
//     begin and each piece is parsed alone, so an error stays in its piece
//     (error recovery over the whole file can swallow the definitions after
//     it), and a keystroke in a file with an error parses only its piece. A
//     tree with an error never gives tags: tree-sitter's error recovery
//     depends on the tree a parse starts from. Tests hold every result equal
//     to an analysis from scratch, in all nine languages.
//   - Snapshots (snapshot.go): each prompt names its request's whole file
//     list (Prompt.Snapshot, a hash of paths, digests and languages), kept
//     in a bounded LRU, so a later Request can send only what changed on
//     that Base; an unknown base is an *UnknownSnapshotError. Each
//     repository's last checked list is remembered (listmemo.go): a request
//     with the same paths skips the path checks and language detection, and
//     the ID rehashes only the 32-file chunks whose digests changed. A
//     request repeating the list the index was last updated from goes
//     straight to its cursor file (no store lookups, analyses or update);
//     one that changes only a few digests of it (a keystroke) resolves,
//     analyses and re-indexes only those files.
//   - Memos of what is derived from immutable state (memo.go): a cursor
//     file's identifiers, the order of its imports until a file of the
//     repository changes, an import's outline for the set of its names the
//     cursor file uses, and the index's last few prompts, keyed by
//     everything an assembly reads (cursor file content, cursor offset,
//     budgets, strategy, index version). An identical request, such as a
//     re-request after a cancelled keystroke, several samples of one task or
//     a load test, gets a copy of its prompt; a keystroke still assembles,
//     from the index's last search when the cursor is on the same line.
//   - One byte cap (Config.CacheBytes) bounds contents, analyses and indexes
//     together; unpinned contents leave least recently used first, then idle
//     repository indexes. Evicted contents are reported missing, never
//     guessed.
//
// For a request, the cursor file's prefix and suffix are cut at line
// boundaries (the suffix gets at most Config.SuffixShare of a tight
// budget); a cut prefix keeps the header lines of the scopes that enclose
// the cursor (class line, function signature). Cross-file context comes
// from three sources: the files the cursor file imports (resolved per
// language, plus same-package files for Go and Java and the matching
// header for C and C++; see Module resolution), definitions of the identifiers around the cursor
// (locals excluded) from the definitions index, and the windows most
// similar to the code around the cursor (BM25), each window of another
// file shown with the lines that follow it (Config.SimilarTailLines).
// Build output (a minified file, or one whose end names its source map:
// a bundle of sources the repository holds) is never a definition or a
// window for a cursor outside build output. Imports fill a stable tier
// first (Config.ImportShare of the context budget); the three sources are
// then fused by weighted reciprocal rank, context from tests (for a cursor
// outside tests) and from prose files is demoted (Config.OffTopicWeight),
// near-duplicates of what the prompt already shows are deferred
// (Config.Diversity), and candidates are packed with a per-file cap,
// never duplicating the prefix/suffix window.
// Context from the cursor file itself (above or below a cut window) is
// placed inside the FIM block with elision comments. Budget left unused
// goes back to a cut prefix/suffix.
//
// # Prompt layout and the backend's prompt cache
//
//	<|repo_name|>name
//	<|file_sep|>path   stable tier: imported files, least relevant first
//	<|file_sep|>path   cursor tier: fused snippets, least relevant first
//	<|file_sep|>cursor file path
//	<|fim_prefix|>…<|fim_suffix|>…<|fim_middle|>
//
// Everything before the cursor file depends on the repository and on the
// code around the cursor, not on the cursor line itself: the query that
// drives the cursor tier leaves the cursor line out, the context budget is
// rounded to Config.ContextQuantum and a cut prefix starts on a multiple of
// Config.PrefixQuantumLines lines. Typing therefore changes the prompt
// only from the cursor on, and the backend re-evaluates only the tail. A
// request with a single file and no repository name gets the file-level
// format <|fim_prefix|>…<|fim_suffix|>…<|fim_middle|>.
//
// # Exact token counts
//
// Qwen2's pre-tokenizer never joins text across the start of a line that
// holds a non-space character, and special tokens split the text too. So
// the prompt is rendered from whole "segments" (a non-blank line plus the
// blank lines after it), each counted once through a bounded cache, and
// Prompt.Tokens is the exact sum (tests check it against the tokenizer on
// real repositories). Literal special-token text in user code is
// neutralised (tokenizer.Neutralize, or the Tokenizer's own Neutralize).
//
// # Measurement
//
// BuildStrategy runs baselines (file-level only, ExecRepoBench-style whole
// files, Copilot-style Jaccard windows) and single-source ablations for the
// model-free quality tool in cmd/cpquality; cmd/cpbench and the Build
// benchmarks measure latency on a generated 2,000-file repository. Results
// and the measurements behind DefaultConfig are in bench/contextpack.
//
// # Module resolution
//
// Import statements resolve to the request's files as the language's
// tools would find them in the repository (internal/index/imports.go);
// imports of anything the request lacks (the standard library,
// third-party packages) resolve to nothing. The manifests must be among
// the request's files (the command-line tool, the client library and the
// workspace loaders send them: they are text):
//
//   - TypeScript/JavaScript: relative specifiers (a ".js", ".mjs" or
//     ".cjs" specifier names the ".ts", ".mts" or ".cts" file; index
//     files; a directory's package.json entry); compilerOptions.paths
//     and baseUrl of the nearest tsconfig.json or jsconfig.json, with its
//     extends chain in the repository; the repository's own packages by
//     their package.json name (every package.json with a name: npm, Yarn
//     and pnpm workspaces), subpaths through "exports", entries in a
//     build directory mapped to src/. A named import follows re-exports
//     (export * from, export {x} from) to the files defining the names.
//   - Python: relative imports with dots; absolute imports under a
//     directory on sys.path (the root, src/-style directories, the
//     importing file's directory, the parent of a top-level package);
//     namespace packages.
//   - Go: go.mod module paths (nested modules: the longest path) and
//     replace directives with a local target, else a directory suffix.
//   - Java: a class or package path anywhere (any source root, any
//     module); a test also sees its package's main sources.
//   - Rust: mod declarations, crate::, self::, super:: and paths into
//     other crates of the workspace (their Cargo.toml names).
//   - C/C++: quoted includes relative to the file, then the nearest file
//     whose path ends in the include (include directories); angle
//     includes of standard and POSIX headers name the system's.
package contextpack

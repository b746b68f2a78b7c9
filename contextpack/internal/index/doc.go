// Package index owns what contextpack keeps of repositories between
// requests: the content store (file texts by digest, each with its
// analyses, pinned while a request or an index uses them, evicted least
// recently used under one byte cap) and, per repository, an Index of the
// files the last request described: an inverted index of definitions by
// name, a BM25 index over the analyses' sliding windows, files by base name
// and directory, and the resolution of import statements to files
// (imports.go, per language). What the repository's manifests say about
// module names (package.json and tsconfig/jsconfig: jsmodules.go;
// Cargo.toml: rustcrates.go) is derived when one of them changes, at the
// next resolution, never per request; go.mod files are read as they are
// indexed. Requests update an index incrementally: only
// the paths whose content changed are re-indexed, and a keystroke
// re-indexes only the windows it touched.
//
// The cursor file of an index's last update is held as its typing view
// (the text with the cursor's line emptied; typingview.go), every other
// file as its text.
//
// A View is what an assembly reads: the index's files and searches, never
// its updates. The Store keeps beside each index a record of its user's
// (type parameter R: contextpack's memos), evicted with it.
package index

// Package layering holds the test that keeps the module's import rules
// (docs/architecture.md, Layering): which packages may depend on which,
// read from `go list`. It has no code of its own.
package layering

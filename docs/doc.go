// Package docs holds infill's documentation, markdown files read on GitHub
// or in a clone (README.md at the repository's root is the entry point), and
// the test that keeps every relative link in the repository's markdown
// working: the file it names exists and so does the heading its anchor
// names.
package docs

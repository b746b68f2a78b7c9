// Package repofs owns the leave-out rules of a repository read from disk:
// which files under a directory infill reads as the repository's text, and
// why it leaves the others out. The command-line tool and client library
// (clients/go/infill.LoadRepository) and the server's workspace mode
// (server/workspace) both read repositories through it, so the two never
// disagree.
//
// The rules: directories named in SkipDirs (version control, dependency
// trees, tool caches) are not entered; paths .gitignore files exclude are
// left out (every .gitignore in the tree, each for its own directory, and
// .git/info/exclude; not the user's global excludes file); symbolic links
// and files that are not regular are left out (a walk never follows a
// link); so are files over MaxFileBytes, binary files (a NUL byte in the
// first 8000 bytes, as git decides), files that are not valid UTF-8 (the
// API carries text as UTF-8), and paths the API cannot carry (not UTF-8,
// or with a line break).
//
// The package is pure Go and imports nothing that needs cgo, so the client
// library can use it without contextpack's tree-sitter. It lives under the
// module's internal/ because its two users, the client library and the
// server, are in different trees and neither owns the other.
package repofs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// DefaultSkipDirs are the directory names skipped by default: version
// control, dependency trees and tool caches.
var DefaultSkipDirs = []string{
	".git", ".hg", ".svn", "node_modules", "vendor", "__pycache__",
	".venv", ".tox", ".mypy_cache", ".pytest_cache",
}

// DefaultMaxFileBytes is the default size above which a file is left out.
const DefaultMaxFileBytes = 1 << 20

// Reasons a path is left out, as Entry.Reason gives them (size reasons
// read "over N bytes").
const (
	ReasonSkippedDir  = "skipped directory"
	ReasonIgnored     = "ignored by .gitignore"
	ReasonSymlink     = "symbolic link"
	ReasonNotRegular  = "not a regular file"
	ReasonUnreadable  = "unreadable"
	ReasonBinary      = "binary"
	ReasonNotUTF8     = "not UTF-8"
	ReasonPathNotUTF8 = "path not UTF-8"
	ReasonLineBreak   = "line break in path"
)

// Rules are the leave-out rules of a walk. The zero value means the
// defaults.
type Rules struct {
	// MaxFileBytes leaves out larger files; 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
	// SkipDirs are directory names skipped wherever they appear; nil means
	// DefaultSkipDirs, an empty non-nil slice skips none.
	SkipDirs []string
	// NoGitignore reads no .gitignore or .git/info/exclude.
	NoGitignore bool
}

func (r Rules) withDefaults() Rules {
	if r.MaxFileBytes <= 0 {
		r.MaxFileBytes = DefaultMaxFileBytes
	}
	if r.SkipDirs == nil {
		r.SkipDirs = DefaultSkipDirs
	}
	return r
}

// Entry is a path a walk met: a file it keeps (Reason "", with its
// Content), or a file or directory it leaves out and why (a directory left
// out is not entered).
type Entry struct {
	// Path is relative to the tree's root, with forward slashes. Bytes
	// that are not UTF-8 are kept as they are (Reason then says so).
	Path    string
	Dir     bool
	Reason  string
	Content []byte
}

// Tree applies the rules to the directory at a root. It remembers the
// .gitignore files it read; a Tree is not safe for concurrent use, and a
// .gitignore that changes needs a new Tree.
type Tree struct {
	root  string // absolute, links resolved
	rules Rules
	// ignores holds each directory's patterns (by slash path, "" for the
	// root) once read; a directory without a .gitignore has nil.
	ignores map[string][]gitignore.Pattern
	// exclude are .git/info/exclude's patterns (below the root's
	// .gitignore in priority).
	exclude []gitignore.Pattern
}

// NewTree returns the tree at root, a directory (or a link to one).
func NewTree(root string, r Rules) (*Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	t := &Tree{root: abs, rules: r.withDefaults(), ignores: map[string][]gitignore.Pattern{}}
	if !t.rules.NoGitignore {
		t.exclude = readPatterns(filepath.Join(abs, ".git", "info", "exclude"), nil)
	}
	return t, nil
}

// Root returns the tree's directory: absolute, links resolved.
func (t *Tree) Root() string { return t.root }

// Rules returns the tree's rules with defaults filled in.
func (t *Tree) Rules() Rules { return t.rules }

// Walk calls fn for every entry under the directory dir ("" for the root,
// else a slash path inside the tree), in lexical order: each file kept,
// each directory kept (before what is in it is read), and each file or
// directory left out (not entered). An unreadable entry is left out
// (Reason ReasonUnreadable); an error fn returns ends the walk with it.
func (t *Tree) Walk(dir string, fn func(Entry) error) error {
	start := t.root
	if dir != "" {
		start = filepath.Join(t.root, filepath.FromSlash(dir))
		t.loadAncestors(dir)
	}
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if p == start {
			if err == nil && d.IsDir() {
				t.load(dir)
			}
			return err
		}
		r, relErr := filepath.Rel(t.root, p)
		if relErr != nil {
			return relErr
		}
		rel := filepath.ToSlash(r)
		if err != nil {
			// Unreadable entry: leave it out rather than fail the walk.
			if d != nil && d.IsDir() {
				if err := fn(Entry{Path: rel, Dir: true, Reason: ReasonUnreadable}); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return fn(Entry{Path: rel, Reason: ReasonUnreadable})
		}
		if d.IsDir() {
			if reason := t.dirProblem(rel, d.Name()); reason != "" {
				if err := fn(Entry{Path: rel, Dir: true, Reason: reason}); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			t.load(rel)
			return fn(Entry{Path: rel, Dir: true})
		}
		e := Entry{Path: rel}
		if e.Reason = t.fileProblem(rel, d.Type()); e.Reason == "" {
			info, err := d.Info()
			if err != nil {
				return err
			}
			e.Content, e.Reason = ReadText(p, info.Size(), t.rules.MaxFileBytes)
		}
		return fn(e)
	})
}

// Check decides one path as Walk would, without walking: a file's content
// when Walk would keep it, or why it would leave the path out (a directory
// left out on the way, a link, the file itself). A directory kept is an
// Entry with Dir set and no Reason. A path that does not exist, or that a
// file on the way hides, is an error wrapping fs.ErrNotExist; rel must be
// a clean slash path inside the tree.
func (t *Tree) Check(rel string) (Entry, error) {
	if !Clean(rel) {
		return Entry{}, fmt.Errorf("%q is not a clean path inside the tree", rel)
	}
	if reason := PathProblem(rel); reason != "" {
		return Entry{Path: rel, Reason: reason}, nil
	}
	t.load("")
	parts := strings.Split(rel, "/")
	cur := t.root
	for i, name := range parts {
		cur = filepath.Join(cur, name)
		sub := strings.Join(parts[:i+1], "/")
		info, err := os.Lstat(cur)
		if err != nil {
			return Entry{}, err
		}
		last := i == len(parts)-1
		if !info.IsDir() && !last {
			// A link or file on the way: Walk never gets below it.
			if info.Mode()&fs.ModeSymlink != 0 {
				return Entry{Path: rel, Reason: ReasonSymlink}, nil
			}
			return Entry{}, fmt.Errorf("%s: %w", cur, fs.ErrNotExist)
		}
		if info.IsDir() {
			if reason := t.dirProblem(sub, name); reason != "" {
				return Entry{Path: rel, Dir: last, Reason: reason}, nil
			}
			if last {
				return Entry{Path: rel, Dir: true}, nil
			}
			t.load(sub)
			continue
		}
		e := Entry{Path: rel}
		if e.Reason = t.fileProblem(rel, info.Mode().Type()); e.Reason == "" {
			e.Content, e.Reason = ReadText(cur, info.Size(), t.rules.MaxFileBytes)
		}
		return e, nil
	}
	return Entry{}, errors.New("repofs: empty path")
}

// Ignored reports whether the .gitignore files of the tree exclude rel (a
// directory when dir). Only the patterns of directories Walk or Check has
// entered count; a path below an excluded directory is not excluded by
// that alone (Walk and Check do not enter it).
func (t *Tree) Ignored(rel string, dir bool) bool {
	if t.rules.NoGitignore {
		return false
	}
	parts := strings.Split(rel, "/")
	for depth := len(parts) - 1; depth >= 0; depth-- {
		ps := t.ignores[strings.Join(parts[:depth], "/")]
		if r := match(ps, parts, dir); r != gitignore.NoMatch {
			return r == gitignore.Exclude
		}
	}
	return match(t.exclude, parts, dir) == gitignore.Exclude
}

// match is the result of the last pattern of ps that matches (git: the
// last matching pattern decides).
func match(ps []gitignore.Pattern, parts []string, dir bool) gitignore.MatchResult {
	for i := len(ps) - 1; i >= 0; i-- {
		if r := ps[i].Match(parts, dir); r != gitignore.NoMatch {
			return r
		}
	}
	return gitignore.NoMatch
}

// dirProblem says why a walk does not enter directory rel (named name), or "".
func (t *Tree) dirProblem(rel, name string) string {
	if reason := PathProblem(rel); reason != "" {
		return reason
	}
	if slices.Contains(t.rules.SkipDirs, name) {
		return ReasonSkippedDir
	}
	if t.Ignored(rel, true) {
		return ReasonIgnored
	}
	return ""
}

// fileProblem says why a walk leaves out file rel of type m before reading
// it, or "".
func (t *Tree) fileProblem(rel string, m fs.FileMode) string {
	if reason := PathProblem(rel); reason != "" {
		return reason
	}
	if t.Ignored(rel, false) {
		return ReasonIgnored
	}
	return ModeProblem(m)
}

// load reads the .gitignore of directory rel once.
func (t *Tree) load(rel string) {
	if t.rules.NoGitignore {
		return
	}
	if _, ok := t.ignores[rel]; ok {
		return
	}
	var domain []string
	if rel != "" {
		domain = strings.Split(rel, "/")
	}
	t.ignores[rel] = readPatterns(filepath.Join(t.root, filepath.FromSlash(rel), ".gitignore"), domain)
}

// loadAncestors reads the .gitignore files of dir's ancestors and of dir.
func (t *Tree) loadAncestors(dir string) {
	t.load("")
	parts := strings.Split(dir, "/")
	for i := range parts {
		t.load(strings.Join(parts[:i+1], "/"))
	}
}

// IsIgnoreFile reports whether rel is a file whose change changes the
// rules: a .gitignore anywhere, or .git/info/exclude.
func IsIgnoreFile(rel string) bool {
	return path.Base(rel) == ".gitignore" || rel == ".git/info/exclude"
}

// readPatterns parses the gitignore file at p (none when it cannot be
// read: a missing .gitignore is the common case), its patterns relative to
// domain.
func readPatterns(p string, domain []string) []gitignore.Pattern {
	info, err := os.Stat(p)
	if err != nil || !info.Mode().IsRegular() || info.Size() > DefaultMaxFileBytes {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// Clean reports whether rel is a clean slash path inside a tree: not
// empty, not absolute, no "." or ".." element, no doubled or trailing
// slash.
func Clean(rel string) bool {
	return rel != "" && path.Clean(rel) == rel && !path.IsAbs(rel) && rel != "." &&
		rel != ".." && !strings.HasPrefix(rel, "../")
}

// PathProblem says why the API cannot carry rel as a path, or "".
func PathProblem(rel string) string {
	switch {
	case !utf8.ValidString(rel):
		return ReasonPathNotUTF8
	case strings.ContainsAny(rel, "\r\n"):
		return ReasonLineBreak
	}
	return ""
}

// ModeProblem says why an entry of type m that is not a directory is left
// out, or "".
func ModeProblem(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return ReasonSymlink
	case !m.IsRegular():
		return ReasonNotRegular
	}
	return ""
}

// TextProblem says why content cannot be sent as text, or "".
func TextProblem(content []byte) string {
	head := content[:min(len(content), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return ReasonBinary
	}
	if !utf8.Valid(content) {
		return ReasonNotUTF8
	}
	return ""
}

// ReadText reads the regular file at p, of the given size, as the rules
// keep it, or says why they leave it out.
func ReadText(p string, size, maxBytes int64) ([]byte, string) {
	if size > maxBytes {
		return nil, fmt.Sprintf("over %d bytes", maxBytes)
	}
	content, err := os.ReadFile(p)
	if err != nil {
		return nil, ReasonUnreadable
	}
	if int64(len(content)) > maxBytes {
		return nil, fmt.Sprintf("over %d bytes", maxBytes) // grew since its size was read
	}
	if reason := TextProblem(content); reason != "" {
		return nil, reason
	}
	return content, ""
}

package workspace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack"
)

// Errors of Resolve, wrapped in a *PathError; test with errors.Is.
var (
	// ErrBadPath: the path cannot name a file (a ".." element, a NUL byte,
	// a file URI that does not parse, a workspace's root itself).
	ErrBadPath = errors.New("not a usable file path")
	// ErrLinkOutside: the path lies in a workspace but a symbolic link on
	// it leads out of the workspace.
	ErrLinkOutside = errors.New("a symbolic link on the path leads out of the workspace")
)

// errDangling: a symbolic link on a path leads to nothing.
var errDangling = errors.New("a symbolic link on the path leads to nothing")

// PathError is a path a request named that Resolve refuses.
type PathError struct {
	Path   string
	Reason string
	Err    error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: %s", e.Path, e.Reason)
}

func (e *PathError) Unwrap() error { return e.Err }

// Set is the workspaces of a server, in the order given.
type Set struct {
	ws []*Workspace
}

// OpenSet opens a workspace for each root (names made unique: a second
// "src" is "src-2"). On an error it closes those it opened.
func OpenSet(roots []string, cfg Config, log *zap.Logger) (*Set, error) {
	s := &Set{}
	names := map[string]bool{}
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		name := filepath.Base(abs)
		for i := 2; names[name]; i++ {
			name = fmt.Sprintf("%s-%d", filepath.Base(abs), i)
		}
		names[name] = true
		w, err := Open(abs, name, cfg, log)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.ws = append(s.ws, w)
	}
	return s, nil
}

// Workspaces returns the set's workspaces. A nil *Set has none.
func (s *Set) Workspaces() []*Workspace {
	if s == nil {
		return nil
	}
	return s.ws
}

// Close closes every workspace.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, w := range s.ws {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}

// Default is the workspace of requests that name no file: the first.
func (s *Set) Default() *Workspace {
	if s == nil || len(s.ws) == 0 {
		return nil
	}
	return s.ws[0]
}

// Resolve finds the workspace holding the file at p, as an editor's plugin
// names it, and the file's path there (relative, forward slashes). It
// returns a nil Workspace and no error when no workspace holds p. The
// rules:
//
//   - p is an absolute path, a file:// URI (percent-escapes decoded; a URI
//     naming another host is in no workspace), or a path relative to a
//     workspace root.
//   - A ".." element, a NUL byte or a URI that does not parse is refused
//     (ErrBadPath), whether or not the path would stay inside: plugins send
//     resolved paths, so a ".." is a mistake or a probe.
//   - An absolute path belongs to the workspace whose root (as given, or
//     with its links resolved) is its longest prefix; one under no root is
//     in no workspace (a file elsewhere on disk gets no workspace context,
//     which is not an error). A root itself is not a file (ErrBadPath).
//   - A relative path belongs to the first workspace that holds that file
//     (read, or on disk), else to the only workspace when there is one.
//   - Links on the path inside the workspace are followed: one that leads
//     out of the workspace is refused (ErrLinkOutside); one that stays
//     inside resolves to the path it leads to. A file that does not exist
//     yet (a new buffer) is resolved through its directories.
func (s *Set) Resolve(p string) (*Workspace, string, error) {
	p = strings.TrimSpace(p)
	if p == "" || s == nil || len(s.ws) == 0 {
		return nil, "", nil
	}
	orig := p
	bad := func(reason string) (*Workspace, string, error) {
		return nil, "", &PathError{Path: orig, Reason: reason, Err: ErrBadPath}
	}
	if strings.HasPrefix(strings.ToLower(p), "file:") {
		u, err := url.Parse(p)
		switch {
		case err != nil:
			return bad("not a valid file URI")
		case u.Host != "" && u.Host != "localhost":
			return nil, "", nil // another machine's file
		case u.Path == "":
			return bad("a file URI without a path")
		}
		p = u.Path
	}
	if strings.IndexByte(p, 0) >= 0 {
		return bad("contains a NUL byte")
	}
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return bad(`contains a ".." element; send the file's resolved path`)
		}
	}
	var w *Workspace
	var rel string
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		var isRoot bool
		if w, rel, isRoot = s.under(p); w == nil && !isRoot {
			// Named through a link that leads into a workspace?
			if real, err := resolveExisting(p); err == nil && real != p {
				w, rel, isRoot = s.under(real)
			}
		}
		switch {
		case isRoot:
			return bad("names a workspace's root directory, not a file")
		case w == nil:
			return nil, "", nil
		}
	} else {
		rel = path.Clean(filepath.ToSlash(p))
		if rel == "." {
			return bad("names no file")
		}
		for _, c := range s.ws {
			if _, ok := c.Snapshot().File(rel); ok || c.exists(rel) {
				w = c
				break
			}
		}
		if w == nil {
			if len(s.ws) > 1 {
				return nil, "", nil
			}
			w = s.ws[0]
		}
	}
	real, err := w.follow(rel)
	switch {
	case errors.Is(err, ErrLinkOutside):
		return nil, "", &PathError{Path: orig, Reason: err.Error(), Err: ErrLinkOutside}
	case err != nil:
		return nil, "", nil // the root is gone: no workspace context
	}
	return w, real, nil
}

// under returns the workspace whose root (as given, or with links
// resolved) is the longest prefix of the clean absolute path p, and p's
// path inside it; isRoot when p is a root.
func (s *Set) under(p string) (w *Workspace, rel string, isRoot bool) {
	best := -1
	for _, c := range s.ws {
		for _, root := range []string{c.root, c.real} {
			if p == root {
				return nil, "", true
			}
			if r, ok := strings.CutPrefix(p, root+string(filepath.Separator)); ok && len(root) > best {
				w, rel, best = c, filepath.ToSlash(r), len(root)
			}
		}
	}
	return w, rel, false
}

// resolveExisting resolves the links of the longest part of the absolute
// path p that exists, and keeps the rest (a file not yet saved) as it is.
func resolveExisting(p string) (string, error) {
	dir, rest := p, ""
	for {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(resolved, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", errDangling // a link to nothing: where it leads is unknown
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", err
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// follow resolves the links on rel inside the workspace: the path it
// leads to, relative to the root, or an error when it leads out. The
// longest part of rel that exists is resolved; the rest (a file not yet
// saved) is kept as it is.
func (w *Workspace) follow(rel string) (string, error) {
	if _, err := os.Stat(w.real); err != nil {
		return "", err // the root is gone
	}
	full, err := resolveExisting(filepath.Join(w.real, filepath.FromSlash(rel)))
	switch {
	case errors.Is(err, errDangling):
		return "", fmt.Errorf("%w (%v)", ErrLinkOutside, err)
	case err != nil:
		return "", fmt.Errorf("resolving its links: %w", err)
	}
	r, err := filepath.Rel(w.real, full)
	switch {
	case err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)):
		return "", ErrLinkOutside
	case r == ".":
		return "", errors.New("a link on the path leads to the workspace root")
	}
	return filepath.ToSlash(r), nil
}

// Builder analyses repositories (contextpack.Builder).
type Builder interface {
	Build(ctx context.Context, req contextpack.Request) (*contextpack.Prompt, error)
}

// Warm has b read and analyse every workspace's files now, with their
// content, so that the first completion in a workspace sends digests
// only and finds the files analysed (without it, the first request pays
// for resending and analysing the whole workspace; see
// BenchmarkWorkspaceFirstRequest in server/httpapi). It stops early when
// ctx ends.
func (s *Set) Warm(ctx context.Context, b Builder, log *zap.Logger) {
	if log == nil {
		log = zap.NewNop()
	}
	for _, w := range s.Workspaces() {
		snap := w.Snapshot()
		if len(snap.Files) == 0 {
			continue
		}
		start := time.Now()
		files := make([]contextpack.File, len(snap.Files))
		for i, f := range snap.Files {
			files[i] = contextpack.File{Path: f.Path, Content: f.Content, HasContent: true}
		}
		_, err := b.Build(ctx, contextpack.Request{RepoName: w.Name(), Files: files,
			Cursor: contextpack.Cursor{Path: files[0].Path, Encoding: contextpack.EncodingByteOffset}})
		if ctx.Err() != nil {
			return
		}
		log.Info("workspace warmed", zap.String("workspace", w.Name()), zap.Int("files", len(files)),
			zap.Duration("took", time.Since(start)), zap.Error(err))
	}
}

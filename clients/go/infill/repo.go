package infill

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/infill-dev/infill/internal/repofs"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// Errors of the request helpers; test with errors.Is.
var (
	// ErrBadPosition: a position is not "LINE:COL" with 1-based numbers.
	ErrBadPosition = errors.New("bad position")
	// ErrRepositoryTooLarge: the files to send exceed LoadOptions.MaxTotalBytes
	// or MaxFiles.
	ErrRepositoryTooLarge = errors.New("repository too large")
	// ErrCursorFile: the cursor file cannot be sent (outside the repository,
	// binary, not UTF-8, a path the API cannot carry, or not a regular
	// file).
	ErrCursorFile = errors.New("cursor file cannot be sent")
)

// DefaultSkipDirs are the directory names LoadRepository skips by default:
// version control, dependency trees and tool caches (repofs.DefaultSkipDirs).
var DefaultSkipDirs = slices.Clone(repofs.DefaultSkipDirs)

// LoadOptions bound what LoadRepository reads. Zero values mean defaults.
type LoadOptions struct {
	// MaxFileBytes skips larger files. Default 1 MiB.
	MaxFileBytes int64
	// MaxTotalBytes fails the load when the files sent would exceed it.
	// Default 32 MiB, well inside the 64 MiB message limit.
	MaxTotalBytes int64
	// MaxFiles fails the load when more files would be sent. Default
	// 20,000, the server's default cap per request.
	MaxFiles int
	// SkipDirs are directory names skipped wherever they appear; nil means
	// DefaultSkipDirs, an empty non-nil slice skips none.
	SkipDirs []string
	// Include lists paths (relative to the root, forward slashes) read even
	// inside a skipped directory, through a symbolic link and over
	// MaxFileBytes (MaxTotalBytes still applies), and for which any problem
	// is an error wrapping ErrCursorFile rather than a skip: the cursor file.
	Include []string
}

func (o LoadOptions) withDefaults() LoadOptions {
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = 1 << 20
	}
	if o.MaxTotalBytes == 0 {
		o.MaxTotalBytes = 32 << 20
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = 20000
	}
	if o.SkipDirs == nil {
		o.SkipDirs = DefaultSkipDirs
	}
	return o
}

// Skipped is a file or directory LoadRepository left out, and why. Bytes
// of Path that are not UTF-8 show as U+FFFD.
type Skipped struct {
	Path   string
	Reason string
}

// LoadReport says what LoadRepository read and what it left out.
type LoadReport struct {
	Files   int
	Bytes   int64
	Skipped []Skipped
}

// LoadRepository reads the text files under root into a Repository named
// after root's base name (root itself may be a symbolic link to the
// directory). Paths are relative to root with forward slashes, in lexical
// order. It applies the leave-out rules of package repofs, the same the
// server's workspace mode uses: it skips directories named in SkipDirs,
// paths that .gitignore files (and .git/info/exclude) exclude, symbolic
// links, files that are not regular, files over MaxFileBytes, binary files
// (a NUL byte in the first 8000 bytes, as git decides), files that are not
// valid UTF-8 (the API carries content as UTF-8 text), and files and
// directories whose path the API cannot carry (not UTF-8, or with a line
// break).
func LoadRepository(root string, opts LoadOptions) (*infillv1.Repository, *LoadReport, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, nil, err
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("repository %s is not a directory", root)
	}
	name := filepath.Base(abs)
	// The tree walks the directory a link at root leads to.
	tree, err := repofs.NewTree(abs, repofs.Rules{MaxFileBytes: opts.MaxFileBytes, SkipDirs: opts.SkipDirs})
	if err != nil {
		return nil, nil, err
	}
	abs = tree.Root()
	include := map[string]bool{}
	for _, p := range opts.Include {
		include[p] = true
	}
	repo := &infillv1.Repository{Name: name}
	report := &LoadReport{}
	seen := map[string]bool{}

	add := func(rel string, content []byte) error {
		report.Files++
		report.Bytes += int64(len(content))
		if report.Bytes > opts.MaxTotalBytes {
			return fmt.Errorf("%w: more than %d bytes of text under %s",
				ErrRepositoryTooLarge, opts.MaxTotalBytes, root)
		}
		if report.Files > opts.MaxFiles {
			return fmt.Errorf("%w: more than %d files under %s",
				ErrRepositoryTooLarge, opts.MaxFiles, root)
		}
		seen[rel] = true
		repo.Files = append(repo.Files, &infillv1.File{Path: rel, Content: proto.String(string(content))})
		return nil
	}

	err = tree.Walk("", func(e repofs.Entry) error {
		switch {
		case e.Dir && e.Reason == "":
			return nil // entered
		case e.Dir:
			p := shown(e.Path)
			if e.Reason != repofs.ReasonUnreadable {
				p += "/"
			}
			report.Skipped = append(report.Skipped, Skipped{Path: p, Reason: e.Reason})
			return nil
		case e.Reason != "" && include[e.Path]:
			// Included: through a link, at any size, whatever the rules say.
			content, err := readIncluded(abs, e.Path)
			if err != nil {
				return err
			}
			return add(e.Path, content)
		case e.Reason != "":
			report.Skipped = append(report.Skipped, Skipped{Path: shown(e.Path), Reason: e.Reason})
			return nil
		}
		return add(e.Path, e.Content)
	})
	if err != nil {
		return nil, nil, err
	}
	// Included paths: wherever they are, through a link, at any size.
	for _, rel := range opts.Include {
		if seen[rel] {
			continue
		}
		content, err := readIncluded(abs, rel)
		if err != nil {
			return nil, nil, err
		}
		if err := add(rel, content); err != nil {
			return nil, nil, err
		}
	}
	return repo, report, nil
}

// LoadFile reads one file of the repository at root as LoadRepository
// would: it returns the content of rel (relative to root, forward
// slashes) when LoadRepository would send it, and otherwise the reason it
// would leave the file out: a directory on the way that SkipDirs names,
// that .gitignore excludes or that is a symbolic link, a file .gitignore
// excludes, a symbolic link, a file that is not regular, over
// MaxFileBytes, binary or not UTF-8, or a path the API cannot carry.
// Include, MaxTotalBytes and MaxFiles do not apply. A file that does not
// exist is an error wrapping fs.ErrNotExist; a rel that is not a clean
// path inside root is an error. Editor integrations use it to keep a
// loaded repository current as single files change on disk. The rules are
// package repofs's (Tree.Check), the same LoadRepository walks with.
func LoadFile(root, rel string, opts LoadOptions) (content string, skipped string, err error) {
	opts = opts.withDefaults()
	if reason := repofs.PathProblem(rel); reason != "" {
		return "", reason, nil
	}
	if !repofs.Clean(rel) {
		return "", "", fmt.Errorf("%q is not a clean path inside the repository", rel)
	}
	// A directory SkipDirs names leaves the file out, whether or not it
	// (still) exists.
	dirs := strings.Split(rel, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if slices.Contains(opts.SkipDirs, d) {
			return "", repofs.ReasonSkippedDir, nil
		}
	}
	tree, err := repofs.NewTree(root, repofs.Rules{MaxFileBytes: opts.MaxFileBytes, SkipDirs: opts.SkipDirs})
	if err != nil {
		return "", "", err
	}
	e, err := tree.Check(rel)
	switch {
	case err != nil:
		return "", "", err
	case e.Dir && e.Reason == "":
		return "", repofs.ReasonNotRegular, nil
	}
	return string(e.Content), e.Reason, nil
}

// readIncluded reads an Include path under root: through a link and at
// any size; any problem is an ErrCursorFile.
func readIncluded(root, rel string) ([]byte, error) {
	if reason := repofs.PathProblem(rel); reason != "" {
		return nil, fmt.Errorf("%w: %q: %s", ErrCursorFile, shown(rel), reason)
	}
	if !repofs.Clean(rel) {
		return nil, fmt.Errorf("%w: %q is not a clean path inside the repository", ErrCursorFile, rel)
	}
	path := filepath.Join(root, filepath.FromSlash(rel))
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCursorFile, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrCursorFile, rel)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCursorFile, err)
	}
	if reason := repofs.TextProblem(content); reason != "" {
		return nil, fmt.Errorf("%w: %s is %s", ErrCursorFile, rel, reason)
	}
	return content, nil
}

// shown is a path as a message shows it: bytes that are not UTF-8 as
// U+FFFD.
func shown(rel string) string { return strings.ToValidUTF8(rel, "\uFFFD") }

// FindRoot returns the repository directory of file: the nearest enclosing
// directory that holds a ".git" entry, or else the file's own directory.
func FindRoot(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir, nil
		}
		d = parent
	}
}

// Position is a 1-based line and column, as people and most tools count.
type Position struct {
	Line, Column int
}

// ParsePosition parses "LINE:COL" (or "LINE", meaning column 1), both
// 1-based.
func ParsePosition(s string) (Position, error) {
	bad := func() (Position, error) {
		return Position{}, fmt.Errorf("%w %q: want LINE:COL, both counted from 1", ErrBadPosition, s)
	}
	lineStr, colStr, hasCol := strings.Cut(s, ":")
	if !hasCol {
		colStr = "1"
	}
	line, err1 := strconv.Atoi(lineStr)
	col, err2 := strconv.Atoi(colStr)
	if err1 != nil || err2 != nil || line < 1 || col < 1 || line > math.MaxUint32 || col > math.MaxUint32 {
		return bad()
	}
	return Position{Line: line, Column: col}, nil
}

// String formats p as "LINE:COL".
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Cursor returns the API cursor for p in the file at path: 0-based line and
// column, the column counted in enc (UTF-8 bytes, UTF-16 code units or
// Unicode code points; POSITION_ENCODING_UNSPECIFIED means UTF-16).
func (p Position) Cursor(path string, enc infillv1.PositionEncoding) *infillv1.Cursor {
	return &infillv1.Cursor{
		Path:     path,
		Line:     uint32(p.Line - 1),
		Column:   uint32(p.Column - 1),
		Encoding: enc,
	}
}

// RequestFromDir builds a request for a completion in file at pos, with
// the repository read from root ("" means FindRoot(file)). pos.Column is
// counted in enc. The cursor file is always sent, even inside a skipped
// directory, through a link or over MaxFileBytes; it must lie under root.
func RequestFromDir(root, file string, pos Position, enc infillv1.PositionEncoding, opts LoadOptions) (*infillv1.CompleteRequest, *LoadReport, error) {
	if enc == infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET {
		return nil, nil, fmt.Errorf("%w: LINE:COL cannot use the byte-offset encoding", ErrBadPosition)
	}
	if root == "" {
		r, err := FindRoot(file)
		if err != nil {
			return nil, nil, err
		}
		root = r
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return nil, nil, err
	}
	// Compare where root and the file's directory lead, so that either may
	// be named through a link; the file itself may be a link.
	if _, err := os.Stat(absRoot); err != nil {
		return nil, nil, fmt.Errorf("repository: %w", err)
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("repository: %w", err)
	}
	realFile := absFile
	if dir, err := filepath.EvalSymlinks(filepath.Dir(absFile)); err == nil {
		realFile = filepath.Join(dir, filepath.Base(absFile))
	}
	rel, err := filepath.Rel(realRoot, realFile)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, nil, fmt.Errorf("%w: %s is not inside the repository %s", ErrCursorFile, file, root)
	}
	rel = filepath.ToSlash(rel)
	opts.Include = append(slices.Clip(opts.Include), rel)
	repo, report, err := LoadRepository(absRoot, opts)
	if err != nil {
		return nil, nil, err
	}
	return &infillv1.CompleteRequest{
		Repository: repo,
		Cursor:     pos.Cursor(rel, enc),
	}, report, nil
}

// StreamRequest returns the streaming twin of r. The two messages have the
// same fields; the copy shares r's sub-messages.
func StreamRequest(r *infillv1.CompleteRequest) *infillv1.StreamCompleteRequest {
	out := &infillv1.StreamCompleteRequest{}
	copyFields(out.ProtoReflect(), r.ProtoReflect())
	return out
}

// StreamPredictRequest returns the streaming twin of r, as StreamRequest
// does for completions.
func StreamPredictRequest(r *infillv1.PredictEditRequest) *infillv1.StreamPredictEditRequest {
	out := &infillv1.StreamPredictEditRequest{}
	copyFields(out.ProtoReflect(), r.ProtoReflect())
	return out
}

// copyFields sets each field of dst from src's field of the same number
// and kind.
func copyFields(dst, src protoreflect.Message) {
	fields := dst.Descriptor().Fields()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if f := fields.ByNumber(fd.Number()); f != nil && f.Kind() == fd.Kind() {
			dst.Set(f, v)
		}
		return true
	})
}

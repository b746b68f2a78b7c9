package lsp

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// The workspace is what completions draw on: a repository per workspace
// folder (or rootUri), read from disk with the command-line tool's
// leave-out rules (infill.LoadRepository) and overlaid with the text of
// the documents the editor has open, which wins over the disk. A document
// outside every folder brings in the repository around it
// (infill.FindRoot: the nearest directory above it holding .git). A
// document that is not a file (an "untitled:" buffer) is a repository of
// its own. The workspace is only touched with the session's lock held.

// document is an open text document.
type document struct {
	uri     string
	repo    *repo
	rel     string // path in repo
	lang    string
	version int32
	text    string
	leftOut bool // the leave-out rules keep it out of other documents' requests
}

// repo is one repository: the files read from disk, the open documents
// over them, and the file list requests send.
type repo struct {
	root string // absolute directory; "" for a document that is not a file
	name string

	disk  map[string]string         // path → content read from disk
	files map[string]*infillv1.File // what a request sends, by path

	// list is files in path order; nil when it must be rebuilt. Requests
	// keep the slice they got, so it is copied before it changes
	// (shared).
	list   []*infillv1.File
	index  map[string]int
	shared bool

	ready       chan struct{} // closed when the first load has finished
	readyClosed bool
	loading     bool  // a load is under way
	again       bool  // load again when it finishes
	loadErr     error // the last load's failure
}

func newRepo(root, name string) *repo {
	return &repo{root: root, name: name, disk: map[string]string{}, files: map[string]*infillv1.File{}, ready: make(chan struct{})}
}

// set makes path's file f (nil: none).
func (r *repo) set(p string, f *infillv1.File) {
	old, had := r.files[p]
	switch {
	case f == nil && !had:
		return
	case f == nil:
		delete(r.files, p)
		r.list = nil
		return
	}
	r.files[p] = f
	if !had || r.list == nil {
		r.list = nil
		return
	}
	if old == f {
		return
	}
	if r.shared {
		r.list = slices.Clone(r.list)
		r.shared = false
	}
	r.list[r.index[p]] = f
}

// snapshot returns the file list as a request sends it; the caller must
// not change it.
func (r *repo) snapshot() []*infillv1.File {
	if r.list == nil {
		paths := make([]string, 0, len(r.files))
		for p := range r.files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		r.list = make([]*infillv1.File, len(paths))
		r.index = make(map[string]int, len(paths))
		for i, p := range paths {
			r.list[i] = r.files[p]
			r.index[p] = i
		}
	}
	r.shared = true
	return r.list
}

// diskFile is path's file as read from disk.
func diskFile(p, content string) *infillv1.File {
	return &infillv1.File{Path: p, Content: proto.String(content)}
}

// docFile is an open document's file.
func docFile(d *document) *infillv1.File {
	return &infillv1.File{Path: d.rel, Content: proto.String(d.text), Language: d.lang}
}

// workspace holds the repositories and open documents.
type workspace struct {
	folders []*repo // by root, longest first (the innermost folder wins)
	others  map[string]*repo
	docs    map[string]*document
	names   map[string]int // repository names in use
}

func newWorkspace() *workspace {
	return &workspace{others: map[string]*repo{}, docs: map[string]*document{}, names: map[string]int{}}
}

// uniqueName returns base, or base with a number when another repository
// of the workspace already has that name (the client keeps its deltas
// by name).
func (w *workspace) uniqueName(base string) string {
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "workspace"
	}
	n := w.names[base]
	w.names[base] = n + 1
	if n == 0 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, n+1)
}

// addFolder adds a workspace folder; it returns the new repository, or
// nil when the folder is already one.
func (w *workspace) addFolder(root string) *repo {
	for _, r := range w.folders {
		if r.root == root {
			return nil
		}
	}
	r := newRepo(root, w.uniqueName(filepath.Base(root)))
	w.folders = append(w.folders, r)
	slices.SortStableFunc(w.folders, func(a, b *repo) int { return len(b.root) - len(a.root) })
	return r
}

// removeFolder drops a workspace folder; open documents in it move to
// the repository that now holds them.
func (w *workspace) removeFolder(root string) (moved []*document) {
	i := slices.IndexFunc(w.folders, func(r *repo) bool { return r.root == root })
	if i < 0 {
		return nil
	}
	w.folders = slices.Delete(w.folders, i, i+1)
	for _, d := range w.docs {
		if d.repo.root == root {
			moved = append(moved, d)
		}
	}
	return moved
}

// folderFor returns the workspace folder holding the file at abs, and
// its path there.
func (w *workspace) folderFor(abs string) (*repo, string) {
	for _, r := range w.folders {
		if rel, ok := inside(r.root, abs); ok {
			return r, rel
		}
	}
	for _, r := range w.others {
		if r.root == "" {
			continue
		}
		if rel, ok := inside(r.root, abs); ok {
			return r, rel
		}
	}
	return nil, ""
}

// inside returns abs's slash path under root, if it lies there.
func inside(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// placeDocument finds (or creates, for a document outside every folder)
// the repository of a document; created is a repository to load.
func (w *workspace) placeDocument(uri string) (r *repo, rel string, created *repo) {
	abs, ok := uriPath(uri)
	if !ok {
		// Not a file: a repository of its own, named by its scheme.
		key := "uri:" + uri
		if r := w.others[key]; r != nil {
			return r, r.name, nil
		}
		name, base := "untitled", ""
		if u, err := url.Parse(uri); err == nil {
			if u.Scheme != "" {
				name = u.Scheme
			}
			base = u.Opaque
			if base == "" {
				base = u.Path
			}
			base = path.Base(strings.TrimRight(base, "/"))
		}
		if base == "" || base == "." || base == "/" || strings.ContainsAny(base, "\r\n") || !utf8.ValidString(base) {
			base = "buffer"
		}
		r := newRepo("", w.uniqueName(name))
		close(r.ready)
		r.readyClosed = true
		w.others[key] = r
		return r, base, nil
	}
	if r, rel := w.folderFor(abs); r != nil {
		return r, rel, nil
	}
	root, err := infill.FindRoot(abs)
	if err != nil {
		root = filepath.Dir(abs)
	}
	r = newRepo(root, w.uniqueName(filepath.Base(root)))
	w.others[root] = r
	rel, _ = inside(root, abs)
	return r, rel, r
}

// uriPath returns the local path of a file: URI.
func uriPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/")
	}
	if p == "" {
		return "", false
	}
	return filepath.Clean(filepath.FromSlash(p)), true
}

// pathURI is uriPath's inverse.
func pathURI(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// merge installs a load's result: the disk's files, then every open
// document of the repository over them.
func (w *workspace) merge(r *repo, disk map[string]string) {
	r.disk = disk
	r.files = make(map[string]*infillv1.File, len(disk))
	r.list = nil
	for p, c := range disk {
		r.files[p] = diskFile(p, c)
	}
	for _, d := range w.docs {
		if d.repo == r && !d.leftOut {
			r.files[d.rel] = docFile(d)
		}
	}
}

// readDisk reads r's root (the leave-out rules of opts) into a map.
func readDisk(root string, opts infill.LoadOptions) (map[string]string, error) {
	loaded, _, err := infill.LoadRepository(root, opts)
	if err != nil {
		return nil, err
	}
	disk := make(map[string]string, len(loaded.GetFiles()))
	for _, f := range loaded.GetFiles() {
		disk[f.GetPath()] = f.GetContent()
	}
	return disk, nil
}

// refresh brings path p of r up to date with the disk, unless an open
// document holds it. It reports whether p is a directory (whose files
// only a new load finds).
func (w *workspace) refresh(r *repo, p string, opts infill.LoadOptions) (dir bool) {
	if w.openAt(r, p) {
		return false
	}
	abs := filepath.Join(r.root, filepath.FromSlash(p))
	if info, err := os.Stat(abs); err == nil && info.IsDir() {
		return true
	}
	content, skipped, err := infill.LoadFile(r.root, p, opts)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.remove(r, p)
	case err != nil || skipped != "":
		w.remove(r, p)
	default:
		r.disk[p] = content
		r.set(p, diskFile(p, content))
	}
	return false
}

// remove drops path p of r, and every file under it when it was a
// directory, unless an open document holds it.
func (w *workspace) remove(r *repo, p string) {
	open := map[string]bool{}
	for _, d := range w.docs {
		if d.repo == r {
			open[d.rel] = true
		}
	}
	for q := range r.files {
		if (q == p || strings.HasPrefix(q, p+"/")) && !open[q] {
			delete(r.disk, q)
			r.set(q, nil)
		}
	}
}

func (w *workspace) openAt(r *repo, p string) bool {
	for _, d := range w.docs {
		if d.repo == r && d.rel == p {
			return true
		}
	}
	return false
}

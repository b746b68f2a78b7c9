// Package workspace owns the server's workspace mode (--workspace DIR):
// repositories the server reads from its own disk, keeps current with
// file-system notifications, and offers to the HTTP surfaces as the
// repository of a request whose file lies in one.
//
// A Workspace reads its directory with the command-line tool's leave-out
// rules (package internal/repofs: skipped directories, .gitignore,
// links, binary files, text that is not UTF-8, files over the size cap),
// watches every directory it keeps (fsnotify is not recursive: new
// directories are added as they appear, removed and renamed ones dropped)
// and re-indexes once per burst of changes: events are gathered until the
// tree has been quiet for Config.Quiet (or Config.MaxDelay has passed since
// the first), then only the paths they name are decided again; a changed
// .gitignore, or an event queue overflow, re-reads the whole tree. Each
// re-index publishes an immutable Snapshot, so requests read files without
// locks. Memory is bounded by the caps in Config; the first read fails when
// a cap is exceeded, later growth leaves the files past a cap out (logged).
//
// A Set holds the workspaces of a server and resolves the file paths
// requests name (Resolve): see its doc for the rules. The package imports
// no transport; the HTTP surfaces map its *PathError to their statuses.
package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/internal/repofs"
)

// Config bounds what a workspace reads and how it watches.
type Config struct {
	// MaxFileBytes leaves out larger files.
	MaxFileBytes int64
	// MaxTotalBytes and MaxFiles cap the text a workspace holds.
	MaxTotalBytes int64
	MaxFiles      int
	// MaxDirs caps the directories watched (one inotify watch each).
	MaxDirs int
	// SkipDirs are directory names never read; nil means
	// repofs.DefaultSkipDirs.
	SkipDirs []string
	// Quiet is how long the tree must be still before a burst of changes
	// is re-indexed; MaxDelay bounds the wait from a burst's first event.
	Quiet, MaxDelay time.Duration
	// HistoryEdits is how many recent changes to files are kept
	// (RecentEdits), each a diff of at most HistoryDiffBytes; 0 keeps none.
	HistoryEdits, HistoryDiffBytes int
}

// DefaultConfig returns the defaults: the command-line tool's caps (1 MiB
// per file, 32 MiB and 20,000 files in all), 10,000 directories, 100 ms
// quiet, 1 s at most.
func DefaultConfig() Config {
	return Config{
		MaxFileBytes: repofs.DefaultMaxFileBytes, MaxTotalBytes: 32 << 20, MaxFiles: 20000,
		MaxDirs: 10000, Quiet: 100 * time.Millisecond, MaxDelay: time.Second,
		HistoryEdits: 16, HistoryDiffBytes: 8 << 10,
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxFileBytes < 1 || c.MaxTotalBytes < 1 || c.MaxFiles < 1 || c.MaxDirs < 1 {
		return errors.New("workspace: MaxFileBytes, MaxTotalBytes, MaxFiles and MaxDirs must be >= 1")
	}
	if c.HistoryEdits < 0 || c.HistoryEdits > 0 && c.HistoryDiffBytes < 1 {
		return errors.New("workspace: HistoryEdits must be >= 0, and HistoryDiffBytes >= 1 with it")
	}
	if c.Quiet <= 0 || c.MaxDelay < c.Quiet {
		return fmt.Errorf("workspace: need 0 < Quiet (%v) <= MaxDelay (%v)", c.Quiet, c.MaxDelay)
	}
	return nil
}

// ErrTooLarge: a workspace's first read exceeded a cap of Config.
var ErrTooLarge = errors.New("workspace too large")

// File is a file of a workspace.
type File struct {
	// Path is relative to the workspace root, with forward slashes.
	Path string
	// Digest is contextpack.Digest(Content).
	Digest  string
	Content string
}

// Snapshot is a workspace's files at one time. It is never changed.
type Snapshot struct {
	// Gen counts the snapshots of the workspace that changed its files.
	Gen uint64
	// Files are sorted by path.
	Files []File
	// Bytes is the text of all files; LeftOut counts files kept out by
	// the caps.
	Bytes   int64
	LeftOut int
	index   map[string]int
}

// File returns the file at rel.
func (s *Snapshot) File(rel string) (File, bool) {
	if i, ok := s.index[rel]; ok {
		return s.Files[i], true
	}
	return File{}, false
}

// Stats describe a workspace's state.
type Stats struct {
	// Reindexes counts re-indexes after the first read (one per burst of
	// changes).
	Reindexes int64
	// Full counts those that re-read the whole tree.
	Full int64
	// Dirs is the number of directories watched.
	Dirs int
}

// Workspace is a directory read from disk and kept current. Its methods
// are safe for concurrent use.
type Workspace struct {
	name string
	root string // absolute, as given
	real string // links resolved: the directory read and watched
	cfg  Config
	log  *zap.Logger

	snap      atomic.Pointer[Snapshot]
	reindexes atomic.Int64
	full      atomic.Int64
	dirs      atomic.Int64

	history history // recent changes to files held (history.go)

	watcher   *fsnotify.Watcher
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// Owned by the watch loop (and by Open before it starts).
	tree    *repofs.Tree
	files   map[string]File
	bytes   int64
	leftOut int
	watched map[string]bool
}

// Open reads the directory at root and starts watching it, until Close.
// name names the repository in prompts ("" means root's base name).
func Open(root, name string, cfg Config, log *zap.Logger) (*Workspace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = filepath.Base(abs)
	}
	tree, err := repofs.NewTree(abs, repofs.Rules{MaxFileBytes: cfg.MaxFileBytes, SkipDirs: cfg.SkipDirs})
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("workspace %s: watching: %w", root, err)
	}
	w := &Workspace{
		name: name, root: abs, real: tree.Root(), cfg: cfg, log: log.With(zap.String("workspace", name)),
		watcher: watcher, stop: make(chan struct{}), done: make(chan struct{}),
		tree: tree, files: map[string]File{}, watched: map[string]bool{},
		history: history{max: cfg.HistoryEdits, maxBytes: cfg.HistoryDiffBytes},
	}
	start := time.Now()
	if err := w.readAll(true); err != nil {
		_ = watcher.Close()
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	w.publish()
	s := w.snap.Load()
	w.log.Info("workspace read", zap.String("root", abs), zap.Int("files", len(s.Files)),
		zap.Int64("bytes", s.Bytes), zap.Int("dirs", len(w.watched)), zap.Duration("took", time.Since(start)))
	go w.loop()
	return w, nil
}

// Name names the repository in prompts.
func (w *Workspace) Name() string { return w.name }

// Root returns the directory as given (absolute).
func (w *Workspace) Root() string { return w.root }

// Snapshot returns the current files.
func (w *Workspace) Snapshot() *Snapshot { return w.snap.Load() }

// Stats returns counters of the workspace's work.
func (w *Workspace) Stats() Stats {
	return Stats{Reindexes: w.reindexes.Load(), Full: w.full.Load(), Dirs: int(w.dirs.Load())}
}

// Close stops watching and waits until the watch loop has returned.
func (w *Workspace) Close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.stop)
		<-w.done
		err = w.watcher.Close()
	})
	return err
}

// loop gathers events into bursts and re-indexes each once.
func (w *Workspace) loop() {
	defer close(w.done)
	pending := map[string]bool{}
	full := false
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var first time.Time
	arm := func() {
		now := time.Now()
		if len(pending) == 0 && !full {
			first = now
		}
		timer.Reset(min(w.cfg.Quiet, first.Add(w.cfg.MaxDelay).Sub(now)))
	}
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.watcher.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue // the text is the same
			}
			rel, ok := w.rel(ev.Name)
			if !ok {
				continue
			}
			arm()
			switch {
			case rel == "":
				full = true // the root itself moved or went
			case repofs.IsIgnoreFile(rel):
				full = true
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// Its watches now name a path that is gone (a renamed
				// directory keeps its watches under the old name).
				w.unwatch(rel)
			}
			if rel != "" {
				pending[rel] = true
			}
		case err, ok := <-w.watcher.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				arm()
				full = true
				continue
			}
			w.log.Warn("workspace: watch error", zap.Error(err))
		case <-timer.C:
			w.reindex(pending, full)
			clear(pending)
			full = false
		}
	}
}

// rel returns the slash path of the absolute name inside the root; ok is
// false for a name outside it.
func (w *Workspace) rel(name string) (string, bool) {
	r, err := filepath.Rel(w.real, name)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

// reindex decides the paths of a burst again (or the whole tree) and
// publishes the result.
func (w *Workspace) reindex(pending map[string]bool, full bool) {
	start := time.Now()
	w.reindexes.Add(1)
	before := w.leftOut
	if full {
		w.full.Add(1)
		if err := w.readAll(false); err != nil {
			w.log.Warn("workspace: re-reading failed; keeping no files", zap.Error(err))
			w.clearAll()
		}
	} else {
		paths := make([]string, 0, len(pending))
		for p := range pending {
			paths = append(paths, p)
		}
		slices.Sort(paths) // a directory before what is in it
		for _, p := range paths {
			w.update(p)
		}
	}
	w.publish()
	s := w.snap.Load()
	w.log.Debug("workspace re-indexed", zap.Int("paths", len(pending)), zap.Bool("full", full),
		zap.Int("files", len(s.Files)), zap.Duration("took", time.Since(start)))
	if w.leftOut > before {
		w.log.Warn("workspace: files left out by the caps", zap.Int("left_out", w.leftOut),
			zap.Int("max_files", w.cfg.MaxFiles), zap.Int64("max_total_bytes", w.cfg.MaxTotalBytes))
	}
}

// readAll reads the whole tree again with fresh rules and brings the
// watches to the directories it keeps (each watched before it is read, so
// that a change in between is not lost). At the first read (strict) a cap
// exceeded or a directory that cannot be watched is an error.
func (w *Workspace) readAll(strict bool) error {
	tree, err := repofs.NewTree(w.real, repofs.Rules{MaxFileBytes: w.cfg.MaxFileBytes, SkipDirs: w.cfg.SkipDirs})
	if err != nil {
		return err
	}
	w.tree = tree
	old := w.files
	w.files, w.bytes, w.leftOut = make(map[string]File, len(old)), 0, 0
	dirs := map[string]bool{}
	var unwatched []error
	watch := func(rel string) error {
		dirs[rel] = true
		if err := w.watch(rel); err != nil {
			if strict {
				return err
			}
			unwatched = append(unwatched, err)
		}
		return nil
	}
	if err := watch(""); err != nil {
		return err
	}
	err = tree.Walk("", func(e repofs.Entry) error {
		switch {
		case e.Dir && e.Reason == "":
			if strict && len(dirs) >= w.cfg.MaxDirs {
				return fmt.Errorf("%w: more than %d directories", ErrTooLarge, w.cfg.MaxDirs)
			}
			return watch(e.Path)
		case e.Reason == "":
			if !w.add(e.Path, e.Content, old) && strict {
				return fmt.Errorf("%w: more than %d files or %d bytes of text", ErrTooLarge, w.cfg.MaxFiles, w.cfg.MaxTotalBytes)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for d := range w.watched {
		if !dirs[d] {
			w.unwatch(d)
		}
	}
	if len(unwatched) > 0 {
		w.log.Warn("workspace: some directories are not watched", zap.Int("count", len(unwatched)), zap.Error(unwatched[0]))
	}
	return nil
}

// update decides path rel again: a file kept or left out, a directory
// entered (new or moved in) or left out, or a path that is gone.
func (w *Workspace) update(rel string) {
	e, err := w.tree.Check(rel)
	if err != nil {
		w.drop(rel) // gone (or no longer reachable)
		return
	}
	switch {
	case e.Dir && e.Reason == "":
		w.drop(rel)
		w.walkInto(rel)
	case e.Dir:
		w.drop(rel)
	case e.Reason == "":
		w.add(rel, e.Content, w.files)
	default:
		w.remove(rel)
	}
}

// walkInto reads and watches directory rel and everything kept below it.
// Watches go on before the reads, so a change in between is not lost.
func (w *Workspace) walkInto(rel string) {
	if err := w.watch(rel); err != nil {
		w.log.Warn("workspace: directory not watched", zap.Error(err))
	}
	err := w.tree.Walk(rel, func(e repofs.Entry) error {
		switch {
		case e.Dir && e.Reason == "":
			if err := w.watch(e.Path); err != nil {
				w.log.Warn("workspace: directory not watched", zap.Error(err))
			}
		case e.Reason == "":
			w.add(e.Path, e.Content, w.files)
		}
		return nil
	})
	if err != nil {
		w.log.Debug("workspace: reading a directory", zap.String("dir", rel), zap.Error(err))
	}
}

// add keeps file rel with content, reusing prev's entry (and digest) when
// the text is the same; false when a cap leaves it out.
func (w *Workspace) add(rel string, content []byte, prev map[string]File) bool {
	old, had := w.files[rel]
	grow := int64(len(content))
	if had {
		grow -= int64(len(old.Content))
	}
	if !had && len(w.files) >= w.cfg.MaxFiles || w.bytes+grow > w.cfg.MaxTotalBytes {
		w.leftOut++
		w.remove(rel)
		return false
	}
	f, ok := prev[rel]
	if !ok || f.Content != string(content) {
		text := string(content)
		if ok {
			w.history.record(rel, f.Content, text, time.Now())
		}
		f = File{Path: rel, Digest: contextpack.Digest(text), Content: text}
	}
	w.files[rel] = f
	w.bytes += grow
	return true
}

// remove drops file rel.
func (w *Workspace) remove(rel string) {
	if f, ok := w.files[rel]; ok {
		w.bytes -= int64(len(f.Content))
		delete(w.files, rel)
	}
}

// drop removes rel and everything below it, and their watches.
func (w *Workspace) drop(rel string) {
	w.remove(rel)
	prefix := rel + "/"
	for p := range w.files {
		if strings.HasPrefix(p, prefix) {
			w.remove(p)
		}
	}
	w.unwatch(rel)
}

func (w *Workspace) clearAll() {
	for d := range w.watched {
		w.unwatch(d)
	}
	clear(w.files)
	w.bytes = 0
}

// watch adds a watch on directory rel.
func (w *Workspace) watch(rel string) error {
	if w.watched[rel] {
		return nil
	}
	if len(w.watched) >= w.cfg.MaxDirs {
		return fmt.Errorf("%s: more than %d directories watched", rel, w.cfg.MaxDirs)
	}
	if err := w.watcher.Add(filepath.Join(w.real, filepath.FromSlash(rel))); err != nil {
		return err
	}
	w.watched[rel] = true
	w.dirs.Store(int64(len(w.watched)))
	return nil
}

// unwatch removes the watches on directory rel and below it.
func (w *Workspace) unwatch(rel string) {
	prefix := rel + "/"
	for d := range w.watched {
		if d == rel || rel == "" || strings.HasPrefix(d, prefix) {
			// The kernel may have dropped it already (a directory gone).
			_ = w.watcher.Remove(filepath.Join(w.real, filepath.FromSlash(d)))
			delete(w.watched, d)
		}
	}
	w.dirs.Store(int64(len(w.watched)))
}

// publish makes the files the current snapshot, when they changed.
func (w *Workspace) publish() {
	prev := w.snap.Load()
	files := make([]File, 0, len(w.files))
	for _, f := range w.files {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	if prev != nil && slices.EqualFunc(prev.Files, files, func(a, b File) bool {
		return a.Path == b.Path && a.Digest == b.Digest
	}) {
		if prev.LeftOut != w.leftOut {
			s := *prev
			s.LeftOut = w.leftOut
			w.snap.Store(&s)
		}
		return
	}
	s := &Snapshot{Files: files, Bytes: w.bytes, LeftOut: w.leftOut, index: make(map[string]int, len(files))}
	if prev != nil {
		s.Gen = prev.Gen + 1
	} else {
		s.Gen = 1
	}
	for i, f := range files {
		s.index[f.Path] = i
	}
	w.snap.Store(s)
}

// exists reports whether rel names something on disk under the root.
func (w *Workspace) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(w.real, filepath.FromSlash(rel)))
	return err == nil
}

package lsp

import (
	"fmt"
	"time"

	protocol "github.com/tliron/glsp/protocol_3_16"
	"go.uber.org/zap"

	"github.com/infill-dev/infill/clients/go/infill"
)

func (s *session) didOpen(p protocol.DidOpenTextDocumentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri := p.TextDocument.URI
	if old := s.ws.docs[uri]; old != nil {
		// Opened again without a close: the new text wins.
		old.text, old.version, old.lang = p.TextDocument.Text, p.TextDocument.Version, p.TextDocument.LanguageID
		overlay(old)
		return nil
	}
	r, rel, created := s.ws.placeDocument(uri)
	d := &document{uri: uri, repo: r, rel: rel, lang: p.TextDocument.LanguageID, version: p.TextDocument.Version, text: p.TextDocument.Text}
	s.ws.docs[uri] = d
	d.leftOut = leftOut(r, rel, s.cfg)
	overlay(d)
	if created != nil {
		s.log.Info("document outside the workspace folders: reading its repository", zap.String("root", created.root))
		s.loadLocked(created)
	}
	return nil
}

func (s *session) didChange(p protocol.DidChangeTextDocumentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.ws.docs[p.TextDocument.URI]
	if d == nil {
		return fmt.Errorf("document %s is not open", p.TextDocument.URI)
	}
	if p.TextDocument.Version <= d.version {
		s.log.Warn("didChange does not raise the document's version", zap.Int32("had", d.version), zap.Int32("got", p.TextDocument.Version))
	}
	text, err := applyChanges(d.text, p.ContentChanges, s.enc)
	if err != nil {
		return err
	}
	old := d.text
	d.text, d.version = text, p.TextDocument.Version
	overlay(d)
	s.history.changed(d, old, time.Now())
	return nil
}

func (s *session) didSave(p protocol.DidSaveTextDocumentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.ws.docs[p.TextDocument.URI]
	if d == nil {
		return nil
	}
	if p.Text != nil && *p.Text != d.text {
		s.log.Warn("the saved text differs from the document's: taking the saved text")
		d.text = *p.Text
		overlay(d)
	}
	if s.noWatcher {
		// Without file events the save is when the disk is seen to change:
		// read the repository again, in the background.
		s.loadLocked(d.repo)
	}
	return nil
}

func (s *session) didClose(p protocol.DidCloseTextDocumentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.ws.docs[p.TextDocument.URI]
	if d == nil {
		return nil
	}
	delete(s.ws.docs, d.uri)
	if d.repo.root == "" {
		d.repo.set(d.rel, nil)
		return nil
	}
	// The disk's text (or none) takes the document's place.
	s.ws.refresh(d.repo, d.rel, s.cfg.Load)
	return nil
}

func (s *session) didChangeWatched(p protocol.DidChangeWatchedFilesParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	reload := map[*repo]bool{}
	for _, ev := range p.Changes {
		abs, ok := uriPath(ev.URI)
		if !ok {
			continue
		}
		r, rel := s.ws.folderFor(abs)
		if r == nil {
			continue
		}
		switch ev.Type {
		case protocol.FileChangeTypeDeleted:
			s.ws.remove(r, rel)
		default:
			if s.ws.refresh(r, rel, s.cfg.Load) {
				reload[r] = true // a directory: its files are found by reading it
			}
		}
	}
	for r := range reload {
		s.loadLocked(r)
	}
	return nil
}

func (s *session) didChangeFolders(p protocol.DidChangeWorkspaceFoldersParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range p.Event.Removed {
		dir, ok := uriPath(f.URI)
		if !ok {
			continue
		}
		for _, d := range s.ws.removeFolder(dir) {
			r, rel, created := s.ws.placeDocument(d.uri)
			d.repo, d.rel = r, rel
			d.leftOut = leftOut(r, rel, s.cfg)
			overlay(d)
			if created != nil {
				s.loadLocked(created)
			}
		}
	}
	for _, f := range p.Event.Added {
		dir, ok := uriPath(f.URI)
		if !ok {
			continue
		}
		if r := s.ws.addFolder(dir); r != nil {
			// Open documents in the new folder move into it.
			for _, d := range s.ws.docs {
				if abs, ok := uriPath(d.uri); ok {
					if nr, rel := s.ws.folderFor(abs); nr == r && d.repo != r {
						old, oldRel := d.repo, d.rel
						d.repo, d.rel = r, rel
						d.leftOut = leftOut(r, rel, s.cfg)
						overlay(d)
						if old.root == "" {
							old.set(oldRel, nil)
						} else {
							s.ws.refresh(old, oldRel, s.cfg.Load) // the disk's text again there
						}
					}
				}
			}
			s.loadLocked(r)
		}
	}
	return nil
}

// leftOut reports whether the leave-out rules keep the file at rel of r
// out of the repository (a skipped directory, a link, over the size
// cap, binary...): then its document is sent only with its own
// completions, as `infill complete` sends such a file only as the
// cursor's. A file not on disk yet is in.
func leftOut(r *repo, rel string, cfg Config) bool {
	if r.root == "" {
		return false
	}
	_, reason, err := infill.LoadFile(r.root, rel, cfg.Load)
	return err == nil && reason != ""
}

// overlay puts d's text in its repository's file list, unless it is
// left out.
func overlay(d *document) {
	if !d.leftOut {
		d.repo.set(d.rel, docFile(d))
	}
}

// loadLocked reads r from disk in the background (again, when a load is
// under way) and installs it; requests in r wait for the first load.
func (s *session) loadLocked(r *repo) {
	if r.root == "" {
		return
	}
	if r.loading {
		r.again = true
		return
	}
	opts := s.cfg.Load
	r.loading = s.goLocked(func() {
		for {
			disk, err := readDisk(r.root, opts)
			s.mu.Lock()
			r.loadErr = err
			if err == nil {
				s.ws.merge(r, disk)
			}
			again := r.again && s.ctx.Err() == nil
			r.again = false
			if !again {
				r.loading = false
				if !r.readyClosed {
					r.readyClosed = true
					close(r.ready)
				}
			}
			n := len(r.files)
			s.mu.Unlock()
			if err != nil {
				s.showOnce("load:"+r.root, protocol.MessageTypeWarning,
					fmt.Sprintf("infill: could not read the repository %s (%v): completions there use the open files only", r.root, err))
			} else {
				s.log.Info("repository read", zap.String("root", r.root), zap.String("name", r.name), zap.Int("files", n))
			}
			if !again {
				return
			}
		}
	})
}

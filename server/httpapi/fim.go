package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/server/pipeline"
	"github.com/infill-dev/infill/server/workspace"
)

// fimRequest is what every dialect's body comes down to: the text around
// the cursor, the file it is in where the plugin names it, and what else
// the plugin chose to send.
type fimRequest struct {
	Prefix, Suffix string
	// Path is the file's path as the plugin sends it (absolute, or relative
	// to the project); "" when it sends none.
	Path string
	// Language is the plugin's language id ("python", ...), a hint for
	// files whose path says nothing.
	Language string
	// RepoName names the repository in the prompt where nothing better is
	// known (a workspace's name wins).
	RepoName string
	// Extra are snippets of other files the plugin chose (llama.cpp's
	// input_extra, Tabby's declarations and snippets): they join the
	// repository and are ranked with the rest of the cross-file context.
	Extra []snippet

	Model               string
	Generation          pipeline.Generation
	LatencyBudget       *time.Duration
	ClientID, SessionID string
	Class               pipeline.Class
}

// snippet is a piece of another file.
type snippet struct {
	Path string
	Text string
}

// Workspaces are the repositories the server reads from its own disk
// (--workspace; *workspace.Set).
type Workspaces interface {
	// Resolve returns the workspace holding the file a plugin names (an
	// absolute path, a file:// URI or a path relative to a workspace) and
	// its path there; a nil workspace when none holds it. A path refused
	// is a *workspace.PathError.
	Resolve(p string) (*workspace.Workspace, string, error)
	// Default is the workspace of requests that name no file, or nil.
	Default() *workspace.Workspace
}

// complete turns f into a pipeline request and runs it. Workspace files
// go by digest; when the builder does not hold some of them (the first
// request, or after eviction) the call is made once more with their
// content, before anything has been streamed.
func (h *Handler) complete(ctx context.Context, f *fimRequest, surface string, st pipeline.Stream) (*pipeline.Result, error) {
	req, snap, err := h.toPipeline(f, surface)
	if err != nil {
		return nil, err
	}
	return retryMissing(req.Context.Files, snap, func() (*pipeline.Result, error) { return h.pipe.Complete(ctx, req, st) })
}

// withContent gives the files of paths their content from snap instead
// of their digest; false when one is not a workspace file.
func withContent(files []contextpack.File, snap *workspace.Snapshot, paths []string) bool {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	n := 0
	for i := range files {
		f := &files[i]
		if !want[f.Path] || f.HasContent {
			continue
		}
		wf, ok := snap.File(f.Path)
		if !ok || wf.Digest != f.Digest {
			return false
		}
		f.Content, f.HasContent, f.Digest = wf.Content, true, ""
		n++
	}
	return n == len(want)
}

// toPipeline builds the repository of a request. Without a workspace it is
// the cursor file (prefix + suffix, the cursor between them) and the extra
// snippets, each under its own path. In a workspace (the one holding the
// request's file, or the first when the request names none) it is every
// workspace file by digest, the cursor file with the editor's text in
// place of the disk copy (a request naming no file gets a new "untitled"
// file, whose similar code contextpack's retrieval then finds in the
// workspace), and the snippets the workspace does not already hold; the
// snapshot returned is the one the files came from (nil without a
// workspace).
func (h *Handler) toPipeline(f *fimRequest, surface string) (*pipeline.Request, *workspace.Snapshot, error) {
	var ws *workspace.Workspace
	var cursorPath string
	if h.ws != nil {
		w, rel, err := h.ws.Resolve(f.Path)
		if err != nil {
			return nil, nil, pathError(err)
		}
		ws, cursorPath = w, rel
		if ws == nil && strings.TrimSpace(f.Path) == "" {
			ws = h.ws.Default()
		}
	}
	var snap *workspace.Snapshot
	if ws != nil {
		snap = ws.Snapshot()
	}
	if cursorPath == "" {
		cursorPath = cleanPath(f.Path)
	}
	if cursorPath == "" {
		cursorPath = untitled(snap, f.Language)
	}
	cursor := contextpack.File{Path: cursorPath, Content: f.Prefix + f.Suffix, HasContent: true, Language: f.Language}
	var files []contextpack.File
	seen := map[string]int{}
	repoName := f.RepoName
	if snap == nil {
		files = append(files, cursor)
		seen[cursorPath] = 0
	} else {
		repoName = ws.Name()
		files = make([]contextpack.File, 0, len(snap.Files)+1+len(f.Extra))
		placed := false
		for _, wf := range snap.Files {
			if wf.Path == cursorPath {
				// The editor's text wins over the disk copy.
				seen[cursorPath], placed = len(files), true
				files = append(files, cursor)
				continue
			}
			files = append(files, contextpack.File{Path: wf.Path, Digest: wf.Digest})
		}
		if !placed {
			seen[cursorPath] = len(files)
			files = append(files, cursor)
		}
	}
	for i, s := range f.Extra {
		p, held := h.snippetPath(ws, snap, s)
		switch {
		case p == cursorPath:
			continue // the cursor file's own text is already there
		case held:
			continue // the workspace holds it already
		case p == "":
			p = fmt.Sprintf("extra/snippet-%d", i)
		case snap != nil:
			if _, ok := snap.File(p); ok {
				p = "extra/" + p // an unsaved piece of a workspace file
			}
		}
		if j, ok := seen[p]; ok {
			files[j].Content += "\n" + s.Text // pieces of one file
			continue
		}
		seen[p] = len(files)
		files = append(files, contextpack.File{Path: p, Content: s.Text, HasContent: true})
	}
	return &pipeline.Request{
		Context: contextpack.Request{
			RepoName: repoName,
			Files:    files,
			Cursor: contextpack.Cursor{Path: cursorPath, Offset: len(f.Prefix),
				Encoding: contextpack.EncodingByteOffset},
		},
		Generation:    f.Generation,
		Model:         f.Model,
		LatencyBudget: f.LatencyBudget,
		ClientID:      f.ClientID,
		SessionID:     f.SessionID,
		Class:         f.Class,
		Surface:       surface,
	}, snap, nil
}

// snippetPath is the repository path of a snippet: its path in the
// workspace when it lies there, else its cleaned path; held when the
// workspace holds that file with the snippet's text in it (the snippet
// would only repeat it). A snippet's path is only a name (its text comes
// from the request, nothing is read from disk), so a path Resolve refuses
// is merely cleaned.
func (h *Handler) snippetPath(ws *workspace.Workspace, snap *workspace.Snapshot, s snippet) (p string, held bool) {
	if ws != nil {
		if w, rel, err := h.ws.Resolve(s.Path); err == nil && w == ws {
			wf, ok := snap.File(rel)
			return rel, ok && strings.Contains(wf.Content, s.Text)
		}
	}
	return cleanPath(s.Path), false
}

// untitled names the file of a request that names none: "untitled" with
// the language's extension, made unique in the workspace.
func untitled(snap *workspace.Snapshot, lang string) string {
	ext := extensionFor(lang)
	name := "untitled" + ext
	for i := 2; snap != nil; i++ {
		if _, ok := snap.File(name); !ok {
			break
		}
		name = fmt.Sprintf("untitled-%d%s", i, ext)
	}
	return name
}

// pathError is a refused path in the HTTP surfaces' terms: a link out of
// the workspace is 403, any other refusal 400.
func pathError(err error) error {
	var pe *workspace.PathError
	if !errors.As(err, &pe) {
		return err
	}
	status := http.StatusBadRequest
	if errors.Is(err, workspace.ErrLinkOutside) {
		status = http.StatusForbidden
	}
	return &httpError{status: status, msg: pe.Error()}
}

// cleanPath makes a plugin's file path a repository path: a file:// URI's
// path, forward slashes, no leading "/" or "./", no ".." (a path that
// climbs out keeps only its base name).
func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(strings.ToLower(p), "file:") {
		if u, err := url.Parse(p); err == nil {
			p = u.Path
		}
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if p == "" {
		return ""
	}
	p = path.Clean("/" + p)[1:]
	return p
}

// extensionFor returns a file extension for a plugin's language id, so
// that a file with no name is still parsed as its language.
func extensionFor(lang string) string {
	switch strings.ToLower(lang) {
	case "python":
		return ".py"
	case "go":
		return ".go"
	case "javascript", "javascriptreact":
		return ".js"
	case "typescript":
		return ".ts"
	case "typescriptreact":
		return ".tsx"
	case "java":
		return ".java"
	case "rust":
		return ".rs"
	case "c":
		return ".c"
	case "cpp", "c++":
		return ".cpp"
	}
	return ""
}

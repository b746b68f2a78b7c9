package httpapi

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/server/pipeline"
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

// Workspaces are repositories the server reads from its own disk
// (--workspace): a request whose file lies in one gets that repository as
// its cross-file context.
type Workspaces interface {
	// Lookup returns the workspace holding the file at p (absolute, or
	// relative to a workspace root), with p's slash-separated path inside
	// it; ok is false when no workspace holds p. A path that leaves every
	// workspace (.., a link out) is an error.
	Lookup(p string) (ws Workspace, rel string, ok bool, err error)
}

// Workspace is one repository read from disk.
type Workspace interface {
	// Name names the repository in prompts.
	Name() string
	// Files lists the workspace's files as the pipeline takes them, except
	// skip (the cursor file, whose text the editor sends). A file is sent by
	// digest unless withContent asks for its content.
	Files(skip string, withContent func(rel string) bool) []contextpack.File
}

// complete turns f into a pipeline request and runs it.
func (h *Handler) complete(ctx context.Context, f *fimRequest, surface string, st pipeline.Stream) (*pipeline.Result, error) {
	req, err := h.toPipeline(f, surface)
	if err != nil {
		return nil, err
	}
	return h.pipe.Complete(ctx, req, st)
}

// toPipeline builds the repository of a request: the cursor file (prefix +
// suffix, the cursor between them) and the extra snippets, each under its
// own path.
func (h *Handler) toPipeline(f *fimRequest, surface string) (*pipeline.Request, error) {
	cursorPath := cleanPath(f.Path)
	if cursorPath == "" {
		cursorPath = "untitled" + extensionFor(f.Language)
	}
	files := []contextpack.File{{Path: cursorPath, Content: f.Prefix + f.Suffix, HasContent: true, Language: f.Language}}
	seen := map[string]int{cursorPath: 0}
	for i, s := range f.Extra {
		p := cleanPath(s.Path)
		if p == "" {
			p = fmt.Sprintf("extra/snippet-%d", i)
		}
		if j, ok := seen[p]; ok {
			if j == 0 {
				continue // the cursor file's own text is already there
			}
			files[j].Content += "\n" + s.Text // pieces of one file
			continue
		}
		seen[p] = len(files)
		files = append(files, contextpack.File{Path: p, Content: s.Text, HasContent: true})
	}
	return &pipeline.Request{
		Context: contextpack.Request{
			RepoName: f.RepoName,
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
	}, nil
}

// cleanPath makes a plugin's file path a repository path: forward slashes,
// no leading "/" or "./", no ".." (a path that climbs out keeps only its
// base name).
func cleanPath(p string) string {
	p = strings.ReplaceAll(strings.TrimSpace(p), "\\", "/")
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

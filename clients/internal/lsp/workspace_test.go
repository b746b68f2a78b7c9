package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

func sentPaths(req *infillv1.CompleteRequest) []string {
	var out []string
	for _, f := range req.GetRepository().GetFiles() {
		out = append(out, f.GetPath())
	}
	return out
}

// Which repository a document's completion draws on: its workspace
// folder; for a file outside every folder, the directory above it
// holding .git; for a buffer that is not a file, itself alone. A folder
// added later takes in the open documents under it.
func TestDocumentRepositories(t *testing.T) {
	t.Parallel()
	folder := writeRepo(t, map[string]string{"app.py": "import lib\n", "lib.py": "X = 1\n"})
	other := writeRepo(t, map[string]string{"pkg/mod.py": "Y = 2\n", "pkg/use.py": "from mod import Y\n"})
	if err := os.Rename(other, filepath.Join(filepath.Dir(other), "other")); err != nil {
		t.Fatal(err)
	}
	other = filepath.Join(filepath.Dir(other), "other")
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{})
	e.initialize(map[string]any{"workspaceFolders": []any{map[string]any{"uri": pathURI(folder), "name": "proj"}}})

	ask := func(uri string, line, char int) *infillv1.CompleteRequest {
		t.Helper()
		if items := inlineItems(t, e.call(methodInlineCompletion, position(uri, line, char))); len(items) != 1 {
			t.Fatalf("%s: items %+v", uri, items)
		}
		return rec.lastSent()
	}

	appURI := pathURI(filepath.Join(folder, "app.py"))
	e.open(appURI, "python", "import lib\nx = ")
	req := ask(appURI, 1, 4)
	if req.GetRepository().GetName() != "proj" || !slices.Equal(sentPaths(req), []string{"app.py", "lib.py"}) || req.GetCursor().GetPath() != "app.py" {
		t.Errorf("in the folder: %s %v cursor %s", req.GetRepository().GetName(), sentPaths(req), req.GetCursor().GetPath())
	}

	appSession := req.GetSessionId()
	useURI := pathURI(filepath.Join(other, "pkg", "use.py"))
	e.open(useURI, "python", "from mod import Y\nz = ")
	req = ask(useURI, 1, 4)
	if req.GetRepository().GetName() != "other" || !slices.Equal(sentPaths(req), []string{"pkg/mod.py", "pkg/use.py"}) || req.GetCursor().GetPath() != "pkg/use.py" {
		t.Errorf("outside the folders: %s %v cursor %s", req.GetRepository().GetName(), sentPaths(req), req.GetCursor().GetPath())
	}
	// Each document is its own session at the server (its latest request
	// wins there too), the same one for each of its requests.
	if s := req.GetSessionId(); s == appSession || !strings.HasPrefix(s, "lsp-") || ask(appURI, 1, 4).GetSessionId() != appSession {
		t.Errorf("session ids: %q for one document, %q for another", appSession, s)
	}

	e.open("untitled:Untitled-1", "python", "q = ")
	req = ask("untitled:Untitled-1", 0, 4)
	if req.GetRepository().GetName() != "untitled" || !slices.Equal(sentPaths(req), []string{"Untitled-1"}) {
		t.Errorf("a buffer that is not a file: %s %v", req.GetRepository().GetName(), sentPaths(req))
	}

	// The other directory becomes a folder; its open document follows.
	e.notify(methodDidChangeFolders, map[string]any{"event": map[string]any{
		"added": []any{map[string]any{"uri": pathURI(filepath.Join(other, "pkg")), "name": "pkg"}}, "removed": []any{}}})
	req = ask(useURI, 1, 4)
	if req.GetRepository().GetName() != "pkg" || !slices.Equal(sentPaths(req), []string{"mod.py", "use.py"}) || req.GetCursor().GetPath() != "use.py" {
		t.Errorf("after adding the folder: %s %v cursor %s", req.GetRepository().GetName(), sentPaths(req), req.GetCursor().GetPath())
	}
	e.notify(methodDidChangeFolders, map[string]any{"event": map[string]any{
		"added": []any{}, "removed": []any{map[string]any{"uri": pathURI(filepath.Join(other, "pkg")), "name": "pkg"}}}})
	req = ask(useURI, 1, 4)
	if req.GetRepository().GetName() != "other" || req.GetCursor().GetPath() != "pkg/use.py" {
		t.Errorf("after removing it again: %s cursor %s", req.GetRepository().GetName(), req.GetCursor().GetPath())
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// A repository that cannot be read whole (over the file cap) is told
// once, and completions there use the open documents.
func TestRepositoryTooLarge(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, map[string]string{"a.py": "A = 1\n", "b.py": "B = 2\n", "c.py": "C = 3\n"})
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{Load: infill.LoadOptions{MaxFiles: 2}})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	uri := pathURI(filepath.Join(root, "a.py"))
	e.open(uri, "python", "A = 1\nx = ")
	for range 2 {
		if items := inlineItems(t, e.call(methodInlineCompletion, position(uri, 1, 4))); len(items) != 1 {
			t.Fatalf("items %+v", items)
		}
	}
	rec.mu.Lock()
	first := rec.sent[0]
	rec.mu.Unlock()
	if got := sentPaths(first); !slices.Equal(got, []string{"a.py"}) {
		t.Errorf("sent %v; want the open document only", got)
	}
	msgs := e.waitNotes(methodShowMessage, 1)
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Params), "could not read the repository") {
		t.Errorf("messages %v", msgs)
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// With a debounce, a request that a newer one for the same document
// replaces while it waits never reaches the server and answers empty.
func TestDebounceDropsReplacedRequests(t *testing.T) {
	t.Parallel()
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{Settings: Settings{DebounceMs: 300}})
	e.initialize(nil)
	e.open("untitled:a", "python", "x = ")
	_, older := e.send(methodInlineCompletion, position("untitled:a", 0, 4))
	_, newer := e.send(methodInlineCompletion, position("untitled:a", 0, 4))
	if items := inlineItems(t, e.await("older", older)); len(items) != 0 {
		t.Errorf("the replaced request got %+v", items)
	}
	if items := inlineItems(t, e.await("newer", newer)); len(items) != 1 {
		t.Errorf("the newer request got %+v", items)
	}
	rec.mu.Lock()
	n := len(rec.sent)
	rec.mu.Unlock()
	if n != 1 {
		t.Errorf("%d requests reached the server; want 1", n)
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// The answer's items: candidates in index order, empty and repeated
// texts dropped; the inline range at the cursor, or over the rest of the
// line when a one-line completion ends with it; the completion item over
// the word before the cursor.
func TestAnswer(t *testing.T) {
	t.Parallel()
	text := "def f(x):\n    return g(ab)\n"
	off := strings.Index(text, "b)") // cursor between "a" and "b)"
	j := &job{kind: kindInline, text: text, off: off, enc: encodingUTF16, lang: "python"}
	cands := []*infillv1.Candidate{{Index: 2, Text: "cb)"}, {Index: 0, Text: "c)\n    pass"}, {Index: 1, Text: ""}, {Index: 3, Text: "c)\n    pass"}}
	inline := answer(j, cands).(inlineCompletionList)
	if len(inline.Items) != 2 || inline.Items[0].InsertText != "c)\n    pass" || inline.Items[1].InsertText != "cb)" {
		t.Fatalf("items %+v", inline.Items)
	}
	if r := inline.Items[0].Range; r.Start != pos(1, 14) || r.End != pos(1, 14) {
		t.Errorf("a multi-line completion's range %+v; want an insertion at 1:14", r)
	}
	if r := inline.Items[1].Range; r.Start != pos(1, 14) || r.End != pos(1, 16) {
		t.Errorf("a completion ending with the rest of the line (\"b)\"): range %+v; want 1:14-1:16", r)
	}

	j.kind = kindCompletion
	b, _ := json.Marshal(answer(j, cands))
	var list struct {
		IsIncomplete bool
		Items        []struct {
			Label, FilterText, SortText string
			Preselect                   bool
			TextEdit                    struct {
				Range   struct{ Start, End struct{ Line, Character int } }
				NewText string
			}
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if !list.IsIncomplete || len(list.Items) != 2 {
		t.Fatalf("%s", b)
	}
	it := list.Items[0]
	if it.TextEdit.NewText != "ac)\n    pass" || it.TextEdit.Range.Start.Character != 13 || it.TextEdit.Range.End.Character != 14 ||
		it.Label != "ac) …" || it.FilterText != "ac)\n    pass" || !it.Preselect || it.SortText != "00" {
		t.Errorf("first item %s", b)
	}
	if list.Items[1].TextEdit.Range.End.Character != 16 || list.Items[1].Preselect {
		t.Errorf("second item %s", b)
	}
}

// An open document whose file the leave-out rules keep out (here under
// node_modules) goes only with its own completions, as `infill
// complete` sends such a file only as the cursor's.
func TestLeftOutDocumentOnlyAsCursor(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, map[string]string{"app.js": "const x = require('dep')\n", "node_modules/dep/index.js": "module.exports = 1\n"})
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	depURI := pathURI(filepath.Join(root, "node_modules", "dep", "index.js"))
	appURI := pathURI(filepath.Join(root, "app.js"))
	e.open(depURI, "javascript", "module.exports = 2\n")
	e.open(appURI, "javascript", "const x = require('dep')\nx.")

	inlineItems(t, e.call(methodInlineCompletion, position(depURI, 1, 0)))
	if got := sentPaths(rec.lastSent()); !slices.Equal(got, []string{"app.js", "node_modules/dep/index.js"}) {
		t.Errorf("as the cursor's document: %v", got)
	}
	inlineItems(t, e.call(methodInlineCompletion, position(appURI, 1, 2)))
	req := rec.lastSent()
	if slices.Contains(sentPaths(req), "node_modules/dep/index.js") ||
		(req.GetRepository().GetBase() != "" && !slices.Contains(req.GetRepository().GetRemoved(), "node_modules/dep/index.js")) {
		t.Errorf("with another document's completion: files %v, removed %v", sentPaths(req), req.GetRepository().GetRemoved())
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

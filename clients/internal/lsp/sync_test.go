package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

const utilPy = `"""Helpers for the geometry package."""


def helper(radius):
    """Twice the radius."""
    return radius * 2


def unrelated(values):
    return [v for v in values if v]
`

// mainPy has a four-byte character (a UTF-16 surrogate pair) and a
// two-byte one before the cursor's column on the line that is typed on.
const mainPy = "from util import helper\n\n\ndef area(r):\n    label = \"😀 é\"; x = \n    return helper(r)\n"

// typed is one keystroke: an incremental change at a UTF-16 position.
type typed struct {
	line, char int // where (UTF-16), the cursor after it is at char+len
	text       string
	del        int // UTF-16 units deleted after line:char
}

// utf16Offset is the byte offset of line:char (UTF-16) in text, computed
// the plain way (for "\n" line breaks), independently of the server's.
func utf16Offset(text string, line, char int) int {
	off := 0
	for range line {
		off += strings.IndexByte(text[off:], '\n') + 1
	}
	units := 0
	for i, r := range text[off:] {
		if units >= char {
			return off + i
		}
		units += len(utf16.Encode([]rune{r}))
	}
	return len(text)
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// Typing in an open document reaches the server as edits: after the
// first request, each keystroke's request carries the document as one
// edit of the keystroke's bytes on the server's snapshot, and the
// repository's other files as nothing; the prompt the server builds is
// the one it builds from the editor's text sent whole with a UTF-16
// cursor. Left-out files (node_modules) never travel.
func TestTypingReachesServerAsEdits(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, map[string]string{
		"geo/util.py":             utilPy,
		"geo/main.py":             mainPy,
		"node_modules/x/index.js": "module.exports = 1\n",
	})
	rec := startRecorder(t)
	ref := startRecorder(t) // the same requests with every file whole
	whole, err := infill.Dial(ref.addr, infill.Config{Transfer: infill.TransferWhole}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()

	e := startEditor(t, rec.client, Config{})
	e.initialize(map[string]any{"rootUri": pathURI(root)})
	uri := pathURI(filepath.Join(root, "geo", "main.py"))
	e.open(uri, "python", mainPy)

	text := mainPy
	line, char := 4, utf16Len(`    label = "😀 é"; x = `)
	keys := []typed{
		{line, char, "h", 0}, {line, char + 1, "e", 0}, {line, char + 2, "😀", 0}, {line, char + 4, "", 0},
		{line, char + 2, "", 2}, // the emoji deleted again: back to "he"
		{line, char + 2, "lp", 0}, {line, char + 4, "\n    ", 0},
	}
	version := 1
	for i, k := range keys {
		version++
		curLine, curChar := k.line, k.char
		if k.text != "" || k.del != 0 {
			e.change(uri, version, k.line, k.char, k.line, k.char+k.del, k.text)
			off := utf16Offset(text, k.line, k.char)
			end := utf16Offset(text, k.line, k.char+k.del)
			text = text[:off] + k.text + text[end:]
			if nl := strings.LastIndex(k.text, "\n"); nl >= 0 {
				curLine, curChar = k.line+strings.Count(k.text, "\n"), utf16Len(k.text[nl+1:])
			} else {
				curChar = k.char + utf16Len(k.text)
			}
		}
		items := inlineItems(t, e.call(methodInlineCompletion, position(uri, curLine, curChar)))
		if len(items) != 1 || items[0].InsertText != "x" {
			t.Fatalf("key %d: items %+v", i, items)
		}
		if r := items[0].Range; r == nil || r.Start.Line != uint32(curLine) || r.Start.Character != uint32(curChar) || r.End != r.Start {
			t.Errorf("key %d: range %+v; want an insertion at %d:%d", i, items[0].Range, curLine, curChar)
		}

		sent := rec.lastSent()
		got := describe(sent)
		t.Logf("key %d %q: sent %s", i, k.text, got)
		switch {
		case i == 0:
			if !strings.Contains(got, "geo/main.py:content") || !strings.Contains(got, "geo/util.py:content") || strings.Contains(got, "node_modules") {
				t.Errorf("key 0 sent %s; want both files whole and nothing from node_modules", got)
			}
		case k.text == "" && k.del == 0:
			// The same text again: nothing changed since the server's
			// snapshot.
			if got != "base" {
				t.Errorf("key %d (no change) sent %s; want only the base", i, got)
			}
		case k.del > 0:
			// Back to a text the server held: its digest on the base.
			if got != "base geo/main.py:digest" {
				t.Errorf("key %d (a deletion back to an earlier text) sent %s", i, got)
			}
		default:
			want := "base geo/main.py:edits(1," + strconv.Itoa(len(k.text)) + "B)"
			if got != want {
				t.Errorf("key %d sent %s; want %s", i, got, want)
			}
		}
		if sent.GetCursor().GetOffset() != uint64(utf16Offset(text, curLine, curChar)) {
			t.Errorf("key %d: cursor offset %d; want %d", i, sent.GetCursor().GetOffset(), utf16Offset(text, curLine, curChar))
		}

		refReq := &infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: "proj", Files: []*infillv1.File{
				{Path: "geo/main.py", Content: proto.String(text), Language: "python"},
				{Path: "geo/util.py", Content: proto.String(utilPy)},
			}},
			Cursor: &infillv1.Cursor{Path: "geo/main.py", Line: uint32(curLine), Column: uint32(curChar), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF16},
		}
		if _, err := whole.Complete(t.Context(), refReq); err != nil {
			t.Fatal(err)
		}
		if rec.lastPrompt() != ref.lastPrompt() {
			t.Fatalf("key %d: the prompt differs from the one built from the editor's text:\n%q\n%q", i, rec.lastPrompt(), ref.lastPrompt())
		}
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// The repository stays current: a file changed on disk (a watched-file
// event), a file created and then seen on save by a client that does
// not watch, a document closed (its disk text comes back), and a file
// deleted.
func TestWorkspaceKeptCurrent(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, map[string]string{"a.py": "import b\n", "b.py": "B = 1\n"})
	rec := startRecorder(t)
	e := startEditor(t, rec.client, Config{})
	e.initialize(map[string]any{"workspaceFolders": []any{map[string]any{"uri": pathURI(root), "name": "proj"}}})
	uri := pathURI(filepath.Join(root, "a.py"))
	e.open(uri, "python", "import b\nx = ")

	// files asks for a completion and returns what the server then holds:
	// the request's files resolved against the previous ones.
	held := map[string]string{}
	files := func() map[string]string {
		t.Helper()
		items := inlineItems(t, e.call(methodInlineCompletion, position(uri, 1, 4)))
		if len(items) != 1 {
			t.Fatalf("items %+v", items)
		}
		req := rec.lastSent()
		if req.GetRepository().GetBase() == "" {
			held = map[string]string{}
		}
		for _, p := range req.GetRepository().GetRemoved() {
			delete(held, p)
		}
		for _, f := range req.GetRepository().GetFiles() {
			switch {
			case f.Content != nil:
				held[f.GetPath()] = f.GetContent()
			case len(f.GetEdits()) > 0:
				s := held[f.GetPath()]
				for _, ed := range f.GetEdits() {
					s = s[:ed.GetStart()] + ed.GetText() + s[ed.GetEnd():]
				}
				held[f.GetPath()] = s
			}
		}
		return held
	}
	if got := files(); got["a.py"] != "import b\nx = " || got["b.py"] != "B = 1\n" || len(got) != 2 {
		t.Fatalf("first request: %v", got)
	}

	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.py", "B = 2\n")
	e.notify(methodDidChangeWatched, map[string]any{"changes": []any{map[string]any{"uri": pathURI(filepath.Join(root, "b.py")), "type": 2}}})
	if got := files(); got["b.py"] != "B = 2\n" {
		t.Errorf("after a watched change: %v", got)
	}

	// This client does not watch files: a save reads the repository again.
	write("c.py", "C = 3\n")
	e.notify(methodDidSave, map[string]any{"textDocument": map[string]any{"uri": uri}})
	deadline := time.Now().Add(waitFor)
	for files()["c.py"] != "C = 3\n" {
		if time.Now().After(deadline) {
			t.Fatalf("a file created before a save never reached the server: %v", held)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A second document, closed: the disk's text takes its place.
	uriB := pathURI(filepath.Join(root, "b.py"))
	e.open(uriB, "python", "B = 2\n")
	e.change(uriB, 2, 0, 4, 0, 5, "99")
	if got := files(); got["b.py"] != "B = 99\n" {
		t.Errorf("an unsaved change of an open document: %v", got)
	}
	e.notify(methodDidClose, map[string]any{"textDocument": map[string]any{"uri": uriB}})
	if got := files(); got["b.py"] != "B = 2\n" {
		t.Errorf("after closing without saving: %v", got)
	}

	if err := os.Remove(filepath.Join(root, "c.py")); err != nil {
		t.Fatal(err)
	}
	e.notify(methodDidChangeWatched, map[string]any{"changes": []any{map[string]any{"uri": pathURI(filepath.Join(root, "c.py")), "type": 3}}})
	if got := files(); len(got) != 2 || got["c.py"] != "" {
		t.Errorf("after a watched deletion: %v", got)
	}
	if err := e.shutdown(); err != nil {
		t.Error(err)
	}
}

// The negotiated encoding counts every column both ways: the edit's and
// the request's positions coming in, the items' ranges going out.
func TestNegotiatedEncodingUsed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		enc           string
		afterEmoji    int // column after "x = '😀"
		afterAccented int // column after "éé"
	}{{encodingUTF8, 9, 4}, {encodingUTF32, 6, 2}, {encodingUTF16, 7, 2}} {
		t.Run(c.enc, func(t *testing.T) {
			rec := startRecorder(t)
			e := startEditor(t, rec.client, Config{})
			e.initialize(map[string]any{"capabilities": map[string]any{"general": map[string]any{"positionEncodings": []string{c.enc}}}})
			e.open("untitled:a", "python", "x = '😀'\ny = ")
			e.change("untitled:a", 2, 0, c.afterEmoji, 0, c.afterEmoji, "!")
			e.change("untitled:a", 3, 1, 4, 1, 4, "éé")
			m := e.call(methodCompletion, position("untitled:a", 1, 4+c.afterAccented))
			req := rec.lastSent()
			if got := req.GetRepository().GetFiles()[0].GetContent(); got != "x = '😀!'\ny = éé" {
				t.Errorf("the server got %q", got)
			}
			if req.GetCursor().GetOffset() != uint64(len("x = '😀!'\ny = éé")) {
				t.Errorf("cursor offset %d", req.GetCursor().GetOffset())
			}
			var list struct {
				Items []struct {
					TextEdit struct {
						Range struct{ Start, End struct{ Line, Character int } }
					}
				}
			}
			if err := json.Unmarshal(m.Result, &list); err != nil || len(list.Items) != 1 {
				t.Fatalf("%s %v", m.Result, err)
			}
			r := list.Items[0].TextEdit.Range
			if r.Start.Line != 1 || r.Start.Character != 4 || r.End.Character != 4+c.afterAccented {
				t.Errorf("the item's range %+v; want the word \"éé\" at 1:4-1:%d", r, 4+c.afterAccented)
			}
		})
	}
}

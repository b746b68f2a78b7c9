package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/infill-dev/infill/clients/go/infill"
	"github.com/infill-dev/infill/contextpack"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/ollama/ollama/api"
	"google.golang.org/protobuf/proto"
)

// typedText is what a typer types at the cursor, over and over: a
// statement and the indentation of the next line, as in a Go function
// body. Its variable name carries a number unique to the run, so that no
// keystroke repeats a content the server analysed in an earlier run.
func typedText() string {
	return fmt.Sprintf("resp%d, err := c.send(req, deadline)\n\t", time.Now().UnixNano()%1_000_000_007)
}

// typer types into the cursor file of a payload, one character per
// request, as an editor sends a completion request per keystroke: every
// request has new cursor-file content (so a new digest, a new analysis and
// no prompt memo), the other files are unchanged.
type typer struct {
	base    *infillv1.CompleteRequest
	idx     int // the cursor file in base.Repository.Files
	content string
	off     int // cursor, bytes
	n       int
	text    string
	pb      *contextpack.Builder
	o       pairOpts
	// sent is the cursor file's text as infill last received it; with
	// -typing-edits a request carries the cursor file as an edit to it,
	// as the Go client sends keystrokes.
	sent string
}

func newTyper(base *infillv1.CompleteRequest, pb *contextpack.Builder, o pairOpts) (*typer, error) {
	cur := base.GetCursor()
	for i, f := range base.GetRepository().GetFiles() {
		if f.GetPath() != cur.GetPath() {
			continue
		}
		if f.Content == nil {
			return nil, fmt.Errorf("-typing: the cursor file %s has no content in the payload", f.GetPath())
		}
		off, err := contextpack.ByteOffset(f.GetContent(), contextpack.Cursor{Path: cur.GetPath(),
			Line: int(cur.GetLine()), Column: int(cur.GetColumn()), Encoding: contextpack.EncodingUTF16})
		if err != nil {
			return nil, err
		}
		return &typer{base: base, idx: i, content: f.GetContent(), off: off, text: typedText(), pb: pb, o: o,
			sent: f.GetContent()}, nil
	}
	return nil, fmt.Errorf("-typing: the cursor file %s is not in the payload", cur.GetPath())
}

// next types one character and returns the request, the direct request
// with the prompt infill builds for it, and that prompt.
func (t *typer) next() (*infillv1.CompleteRequest, *api.GenerateRequest, string, error) {
	ch := t.text[t.n%len(t.text)]
	t.n++
	t.content = t.content[:t.off] + string(ch) + t.content[t.off:]
	t.off++
	lineStart := strings.LastIndexByte(t.content[:t.off], '\n') + 1
	line := strings.Count(t.content[:lineStart], "\n")
	col := len(utf16.Encode([]rune(t.content[lineStart:t.off])))

	req := proto.Clone(t.base).(*infillv1.CompleteRequest) // outside the timed calls
	f := req.Repository.Files[t.idx]
	f.Content, f.Digest = proto.String(t.content), ""
	req.Cursor = &infillv1.Cursor{Path: f.GetPath(), Line: uint32(line), Column: uint32(col),
		Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF16}

	p, maxTokens, err := buildPrompt(t.pb, req, t.o.numCtx)
	if err != nil {
		return nil, nil, "", fmt.Errorf("-typing: building the prompt after keystroke %d: %w", t.n, err)
	}
	return req, directRequest(req, p.Text, maxTokens, t.o), p.Text, nil
}

// wire returns req as infill receives it: with -typing-edits, the cursor
// file as an edit to the text infill last received (the rounds rotate, so
// that is not always the previous keystroke's). commit records that infill
// received it; call it after a successful call.
func (t *typer) wire(req *infillv1.CompleteRequest) (out *infillv1.CompleteRequest, commit func()) {
	f := req.GetRepository().GetFiles()[t.idx]
	if !t.o.typingEdits || f.Content == nil {
		return req, func() {}
	}
	content := f.GetContent()
	out = proto.Clone(req).(*infillv1.CompleteRequest)
	out.Repository.Files[t.idx] = &infillv1.File{Path: f.GetPath(), Language: f.GetLanguage(),
		Digest: contextpack.Digest(t.sent), Edits: []*infillv1.Edit{infill.DiffEdit(t.sent, content)}}
	return out, func() { t.sent = content }
}

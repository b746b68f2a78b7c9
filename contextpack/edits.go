package contextpack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Edit replaces bytes [Start, End) of a file's text with Text.
type Edit struct {
	Start, End int
	Text       string
}

// MaxEdits is the most edits one file may carry: each costs a copy of the
// file, and a client with more changes sends the content.
const MaxEdits = 64

// maxEditBytes bounds the bytes one request's edits may copy: texts come
// from the store, so a small request could otherwise make the server copy
// every held file MaxEdits times.
const maxEditBytes = 64 << 20

// applyEdits returns files with every file that carries edits replaced by
// its content: the text its digest names with the edits applied in order.
// files itself is left as it is. Texts the store does not hold fail with a
// *MissingContentError listing their paths, so that the client sends
// content.
func (b *Builder) applyEdits(files []File) ([]File, error) {
	var out []File
	var missing []int
	work := 0
	for i := range files {
		f := &files[i]
		if len(f.Edits) == 0 {
			continue
		}
		switch {
		case f.HasContent:
			return nil, &ArgumentError{Field: fileField(i), Reason: fmt.Sprintf("file %q has both content and edits; edits apply to a digest", f.Path)}
		case f.Digest == "":
			return nil, &ArgumentError{Field: fileField(i), Reason: fmt.Sprintf("file %q has edits but no digest of the text they apply to", f.Path)}
		case len(f.Edits) > MaxEdits:
			return nil, &ArgumentError{Field: fileField(i) + ".edits",
				Reason: fmt.Sprintf("%d edits exceed the limit of %d; send the content", len(f.Edits), MaxEdits)}
		}
		text, ok := b.store.Text(f.Digest)
		if !ok {
			missing = append(missing, i)
			continue
		}
		text, err := apply(text, f.Edits, fileField(i), &work)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = slices.Clone(files)
		}
		out[i] = File{Path: f.Path, Content: text, HasContent: true, Language: f.Language, ownText: true}
	}
	if len(missing) > 0 {
		return nil, missingContent(files, missing)
	}
	if out == nil {
		return files, nil
	}
	return out, nil
}

// apply applies edits to text in order; field names the file in errors,
// and work counts the bytes copied in the request so far.
func apply(text string, edits []Edit, field string, work *int) (string, error) {
	for k, e := range edits {
		switch {
		case e.Start < 0 || e.Start > e.End || e.End > len(text):
			return "", &ArgumentError{Field: field + ".edits[" + strconv.Itoa(k) + "]",
				Reason: fmt.Sprintf("range [%d, %d) is not inside the text's %d bytes", e.Start, e.End, len(text))}
		case !boundary(text, e.Start) || !boundary(text, e.End):
			return "", &ArgumentError{Field: field + ".edits[" + strconv.Itoa(k) + "]",
				Reason: fmt.Sprintf("range [%d, %d) splits a UTF-8 character", e.Start, e.End)}
		case !utf8.ValidString(e.Text):
			return "", &ArgumentError{Field: field + ".edits[" + strconv.Itoa(k) + "].text", Reason: "not valid UTF-8"}
		}
		if *work += len(text) + len(e.Text); *work > maxEditBytes {
			return "", &ArgumentError{Field: field + ".edits",
				Reason: fmt.Sprintf("the request's edits copy more than %d MiB; send the content", maxEditBytes>>20)}
		}
		var sb strings.Builder
		sb.Grow(len(text) - (e.End - e.Start) + len(e.Text))
		sb.WriteString(text[:e.Start])
		sb.WriteString(e.Text)
		sb.WriteString(text[e.End:])
		text = sb.String()
	}
	return text, nil
}

// boundary reports whether byte offset off of text starts a character (or
// is its end).
func boundary(text string, off int) bool {
	return off == len(text) || utf8.RuneStart(text[off])
}

package contextpack

import (
	"errors"
	"fmt"
	"strings"
)

// Encoding says how Cursor.Column (or Cursor.Offset) counts.
type Encoding int

const (
	// EncodingUTF16 counts columns in UTF-16 code units (the LSP default).
	EncodingUTF16 Encoding = iota
	// EncodingUTF8 counts columns in UTF-8 bytes.
	EncodingUTF8
	// EncodingUTF32 counts columns in Unicode code points.
	EncodingUTF32
	// EncodingByteOffset uses Cursor.Offset, a byte offset into the file.
	EncodingByteOffset
)

func (e Encoding) String() string {
	switch e {
	case EncodingUTF16:
		return "utf-16"
	case EncodingUTF8:
		return "utf-8"
	case EncodingUTF32:
		return "utf-32"
	case EncodingByteOffset:
		return "byte-offset"
	}
	return fmt.Sprintf("Encoding(%d)", int(e))
}

// File is one repository file. Exactly one of Content (HasContent) or
// Digest identifies its text; with Edits, Digest names the text they
// apply to.
type File struct {
	Path       string
	Content    string
	HasContent bool
	// Digest is "sha256:<hex>" of content the server received earlier.
	Digest   string
	Language string
	// Edits change the text Digest names, in order, each applied to the
	// text the ones before it left (at most MaxEdits).
	Edits []Edit

	ownText bool // Content is the Builder's own (applyEdits made it, or own copied it)
}

// Cursor is the insertion point; Line and Column are 0-based.
type Cursor struct {
	Path     string
	Line     int
	Column   int
	Offset   int
	Encoding Encoding
}

// Request is everything needed to build one prompt.
type Request struct {
	RepoName string
	Files    []File
	// Base, when set, is the Snapshot of an earlier prompt: its files are
	// the repository, Files replace or add files by path and Removed
	// drops paths. An unknown base fails with *UnknownSnapshotError.
	Base    string
	Removed []string
	Cursor  Cursor
	// TokenBudget is the total for prompt plus generation; 0 means the
	// model's context size.
	TokenBudget int
	// MaxNewTokens is the generation budget reserved inside TokenBudget.
	MaxNewTokens int
}

// SourceKind is the role of a piece of context.
type SourceKind int

// Source kinds, in the order they are usually listed in a manifest.
const (
	SourcePrefix SourceKind = iota + 1
	SourceSuffix
	SourceImport
	SourceDefinition
	SourceSimilar
	SourceScopeHeader
)

func (k SourceKind) String() string {
	switch k {
	case SourcePrefix:
		return "prefix"
	case SourceSuffix:
		return "suffix"
	case SourceImport:
		return "import"
	case SourceDefinition:
		return "definition"
	case SourceSimilar:
		return "similar"
	case SourceScopeHeader:
		return "scope-header"
	}
	return fmt.Sprintf("SourceKind(%d)", int(k))
}

// Source is one piece of context that was considered.
type Source struct {
	Kind SourceKind
	Path string
	// StartLine and EndLine are 1-based and inclusive; 0 for a whole file.
	StartLine, EndLine int
	Tokens             int
	Included           bool
	Reason             string
	Score              float64
}

// Manifest says what went into a prompt.
type Manifest struct {
	TokenBudget      int
	GenerationTokens int
	PromptTokens     int
	// ContextBudget is the share of the prompt budget given to cross-file
	// and same-file context; ContextTokens what that context used
	// (separators and path lines included).
	ContextBudget int
	ContextTokens int
	Sources       []Source
	Warnings      []string
}

// CheckEvaluated compares the backend's count of the prompt with the plan
// and adds a warning when they disagree: fewer tokens mean the backend
// truncated the prompt silently; more than one extra (a BOS token the
// backend may add) mean its tokenizer disagrees with ours, so budgets are
// off. evaluated must be the prompt length the backend worked with, not the
// tokens it had to compute after its prompt cache; 0 means unknown. It
// reports whether it warned.
func (m *Manifest) CheckEvaluated(evaluated int) bool {
	switch {
	case evaluated <= 0 || evaluated == m.PromptTokens || evaluated == m.PromptTokens+1:
		return false
	case evaluated < m.PromptTokens:
		m.Warnings = append(m.Warnings, fmt.Sprintf(
			"backend evaluated %d prompt tokens of %d planned: the prompt was truncated", evaluated, m.PromptTokens))
	default:
		m.Warnings = append(m.Warnings, fmt.Sprintf(
			"backend evaluated %d prompt tokens but infill planned %d: the tokenizers disagree, budgets may be off",
			evaluated, m.PromptTokens))
	}
	return true
}

// Prompt is a rendered prompt ready for the backend.
type Prompt struct {
	// Text is the raw prompt, special tokens written as their literal text.
	Text string
	// Tokens is the exact token count of Text.
	Tokens   int
	Manifest Manifest
	// Snapshot names the request's whole file list (after Base, Files and
	// Removed): a later Request.Base.
	Snapshot string
	// Cursor is the cursor file's whole text and the cursor's byte offset
	// in it, as the request resolved them (after edits).
	Cursor CursorText
	// Context is the prompt's cross-file context, one entry per file
	// section in prompt order (least relevant first); none for the
	// file-level format. A caller rendering another prompt format (edit
	// prediction) takes the context from here.
	Context []ContextSnippet
}

// ContextSnippet is one file's section of a prompt's cross-file context:
// the file's path and the text shown from it (line ranges with elision
// lines between them, ending with a newline, literal special-token text
// neutralised), without the file separator and path line. Tokens counts
// Text exactly.
type ContextSnippet struct {
	Path   string
	Text   string
	Tokens int
}

// CursorText is a cursor file's text split at the cursor.
type CursorText struct {
	Path   string
	Text   string
	Offset int
}

// Prefix is the text before the cursor.
func (c CursorText) Prefix() string { return c.Text[:c.Offset] }

// Suffix is the text after the cursor.
func (c CursorText) Suffix() string { return c.Text[c.Offset:] }

// ErrInvalidArgument is the class of errors caused by a malformed request
// (bad cursor, unknown file, duplicate path). Test with errors.Is.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrBudget is returned when the prompt cannot fit the token budget even
// with all optional context removed.
var ErrBudget = errors.New("token budget too small")

// ArgumentError is an ErrInvalidArgument naming the offending field.
type ArgumentError struct {
	Field  string // e.g. "cursor.line"
	Reason string
}

func (e *ArgumentError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// ErrUnknownSnapshot is the class of *UnknownSnapshotError.
var ErrUnknownSnapshot = errors.New("unknown repository snapshot")

// UnknownSnapshotError says that Request.Base names a file list the
// Builder does not hold (never made, or evicted): the client must send the
// whole list.
type UnknownSnapshotError struct {
	ID string
}

func (e *UnknownSnapshotError) Error() string {
	return fmt.Sprintf("repository snapshot %q is not held (evicted or never made): send the whole file list", e.ID)
}

// Is makes errors.Is(err, ErrUnknownSnapshot) true.
func (e *UnknownSnapshotError) Is(target error) bool { return target == ErrUnknownSnapshot }

// MissingContentError lists files sent as a digest the server does not
// hold; the client must resend them with content.
type MissingContentError struct {
	Paths []string
}

func (e *MissingContentError) Error() string {
	const shown = 10 // the message stays short; callers read Paths
	list := strings.Join(e.Paths[:min(len(e.Paths), shown)], ", ")
	if len(e.Paths) > shown {
		list += fmt.Sprintf(" and %d more", len(e.Paths)-shown)
	}
	return fmt.Sprintf("content not held for %d file(s), resend with content: %s", len(e.Paths), list)
}

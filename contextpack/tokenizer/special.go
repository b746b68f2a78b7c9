package tokenizer

import (
	"fmt"
	"strings"
)

// Ids of Qwen2.5's added tokens. All 22 are parsed as control tokens when
// their text appears literally in a raw Ollama prompt or in Hugging Face's
// default encoding.
const (
	EndOfText      = 151643 // <|endoftext|>
	ImStart        = 151644 // <|im_start|>
	ImEnd          = 151645 // <|im_end|>
	ObjectRefStart = 151646 // <|object_ref_start|>
	ObjectRefEnd   = 151647 // <|object_ref_end|>
	BoxStart       = 151648 // <|box_start|>
	BoxEnd         = 151649 // <|box_end|>
	QuadStart      = 151650 // <|quad_start|>
	QuadEnd        = 151651 // <|quad_end|>
	VisionStart    = 151652 // <|vision_start|>
	VisionEnd      = 151653 // <|vision_end|>
	VisionPad      = 151654 // <|vision_pad|>
	ImagePad       = 151655 // <|image_pad|>
	VideoPad       = 151656 // <|video_pad|>
	ToolCall       = 151657 // <tool_call>
	ToolCallEnd    = 151658 // </tool_call>
	FimPrefix      = 151659 // <|fim_prefix|>
	FimMiddle      = 151660 // <|fim_middle|>
	FimSuffix      = 151661 // <|fim_suffix|>
	FimPad         = 151662 // <|fim_pad|>
	RepoName       = 151663 // <|repo_name|>
	FileSep        = 151664 // <|file_sep|>
)

const firstSpecial = EndOfText

// specialNames is a read-only table: specialNames[id-EndOfText] is the text of
// added token id. Every name starts with '<' and has no other '<'.
var specialNames = [...]string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
	"<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
	"<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
	"<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
	"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>",
}

// SpecialID returns the id of an added token given its text, for example
// SpecialID("<|fim_prefix|>") == (151659, true).
func SpecialID(name string) (int, bool) {
	for i, n := range specialNames {
		if n == name {
			return firstSpecial + i, true
		}
	}
	return 0, false
}

// SpecialName returns the text of an added token id.
func SpecialName(id int) (string, bool) {
	if id < firstSpecial || id >= firstSpecial+len(specialNames) {
		return "", false
	}
	return specialNames[id-firstSpecial], true
}

// IsSpecial reports whether id is one of the 22 added tokens.
func IsSpecial(id int) bool { return id >= firstSpecial && id < firstSpecial+len(specialNames) }

func checkSpecialTable(added []addedToken) error {
	if len(added) != len(specialNames) {
		return fmt.Errorf("%w: %d added tokens, want %d", ErrCorruptData, len(added), len(specialNames))
	}
	for i, a := range added {
		if a.id != firstSpecial+i || a.content != specialNames[i] {
			return fmt.Errorf("%w: added token %d is %q, want %q", ErrCorruptData, a.id, a.content, specialNames[i])
		}
	}
	return nil
}

// matchAt returns the added token whose text starts at s[i] (s[i] == '<').
func matchAt(s string, i int) (id, length int, ok bool) {
	for k, n := range specialNames {
		if strings.HasPrefix(s[i:], n) {
			// No name is a prefix of another, so the first match is the longest.
			return firstSpecial + k, len(n), true
		}
	}
	return 0, 0, false
}

// findAdded returns the position, id and length of the leftmost added token in
// s, or at == -1.
func findAdded(s string) (at, id, length int) {
	for off := 0; ; {
		k := strings.IndexByte(s[off:], '<')
		if k < 0 {
			return -1, 0, 0
		}
		off += k
		if id, l, ok := matchAt(s, off); ok {
			return off, id, l
		}
		off++
	}
}

// FindSpecial returns the byte offset and length of the leftmost literal
// added token in s, or at == -1 when s holds none: where a raw prompt's
// control tokens split its text.
func FindSpecial(s string) (at, length int) {
	at, _, length = findAdded(s)
	return at, length
}

// ContainsSpecial reports whether s contains the literal text of any of the 22
// added tokens (which Ollama would parse as control tokens in a raw prompt).
func ContainsSpecial(s string) bool {
	at, _, _ := findAdded(s)
	return at >= 0
}

// zwsp is U+200B ZERO WIDTH SPACE: invisible, not whitespace for \s, and it
// breaks every added-token match because no token text contains it.
const zwsp = "\u200B"

// Neutralize makes literal added-token text in user content harmless before it
// is put into a raw prompt: it inserts U+200B ZERO WIDTH SPACE right after the
// "<" of every occurrence of an added token's text, so "<|endoftext|>" becomes
// "<\u200B|endoftext|>" and stays ordinary text for Ollama and Hugging Face.
//
// To stay exactly reversible (see [Restore]), text that already reads "<",
// one or more U+200B and then the rest of an added token gets one more U+200B
// as well. Neutralize returns s itself when nothing needs changing, and
// ContainsSpecial(Neutralize(s)) is always false.
func Neutralize(s string) string {
	return rewriteSpecial(s, true)
}

// Restore undoes [Neutralize]: Restore(Neutralize(s)) == s for every s. Use it
// on model output that may have copied neutralized text from the prompt.
func Restore(s string) string {
	return rewriteSpecial(s, false)
}

func rewriteSpecial(s string, neutralize bool) string {
	var b strings.Builder
	copied := 0
	for off := 0; ; {
		k := strings.IndexByte(s[off:], '<')
		if k < 0 {
			break
		}
		off += k + 1 // just after '<'
		j := off
		for strings.HasPrefix(s[j:], zwsp) {
			j += len(zwsp)
		}
		zw := (j - off) / len(zwsp)
		if !neutralize && zw == 0 {
			continue
		}
		if !tailMatches(s[j:]) {
			continue
		}
		if b.Len() == 0 && copied == 0 {
			b.Grow(len(s) + 3*4)
		}
		b.WriteString(s[copied:off])
		if neutralize {
			b.WriteString(zwsp)
			copied = off
		} else {
			copied = off + len(zwsp) // drop one U+200B
		}
		off = j
	}
	if copied == 0 {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}

// tailMatches reports whether s starts with an added token's text minus its
// leading '<'.
func tailMatches(s string) bool {
	for _, n := range specialNames {
		if strings.HasPrefix(s, n[1:]) {
			return true
		}
	}
	return false
}

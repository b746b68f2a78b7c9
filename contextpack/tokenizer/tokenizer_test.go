package tokenizer

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// vector is one line of testdata/vectors.jsonl.gz, written by
// scripts/tokenizer/vectors/make_vectors.sh with Hugging Face tokenizers.
type vector struct {
	Name       string `json:"name"`
	Text       string `json:"text"`
	IDs        []int  `json:"ids"`         // Encode (empty added vocabulary)
	SpecialIDs []int  `json:"special_ids"` // EncodeWithSpecial (HF default)
	NFC        *string
	Gen        *struct {
		Prefix string `json:"prefix"`
		Unit   string `json:"unit"`
		Count  int    `json:"count"`
	} `json:"gen"`
	Count         int    `json:"count"`
	IDsSHA        string `json:"ids_sha256"`
	SpecialCount  int    `json:"special_count"`
	SpecialIDsSHA string `json:"special_sha256"`
	Decode        []int  `json:"decode"`
	Decoded       string `json:"decoded"`
}

func (v *vector) UnmarshalJSON(b []byte) error {
	type plain vector
	var aux struct {
		plain
		NFC *string `json:"nfc"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*v = vector(aux.plain)
	v.NFC = aux.NFC
	return nil
}

func (v *vector) input() string {
	if v.Gen != nil {
		return v.Gen.Prefix + strings.Repeat(v.Gen.Unit, v.Gen.Count)
	}
	return v.Text
}

var vectorsOnce = sync.OnceValues(func() ([]vector, error) {
	f, err := os.Open("testdata/vectors.jsonl.gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var out []vector
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, sc.Err()
})

func loadVectors(t testing.TB) []vector {
	t.Helper()
	vs, err := vectorsOnce()
	if err != nil {
		t.Fatalf("reference vectors: %v", err)
	}
	if len(vs) < 1000 {
		t.Fatalf("only %d reference vectors", len(vs))
	}
	return vs
}

func qwen(t testing.TB) *Tokenizer {
	t.Helper()
	tk, err := Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func idsHash(ids []int) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestReferenceVectors(t *testing.T) {
	tk := qwen(t)
	var text, long, dec int
	for _, v := range loadVectors(t) {
		switch {
		case v.Decode != nil:
			dec++
			if got := tk.Decode(v.Decode); got != v.Decoded {
				t.Errorf("%s: Decode(%v) = %q, want %q", v.Name, v.Decode, got, v.Decoded)
			}
		case v.Gen != nil:
			long++
			in := v.input()
			ids := tk.Encode(in)
			if len(ids) != v.Count || idsHash(ids) != v.IDsSHA {
				t.Errorf("%s: Encode gives %d ids (hash %.12s), want %d (hash %.12s)", v.Name, len(ids), idsHash(ids), v.Count, v.IDsSHA)
			}
			if n := tk.Count(in); n != v.Count {
				t.Errorf("%s: Count = %d, want %d", v.Name, n, v.Count)
			}
			sids := tk.EncodeWithSpecial(in)
			if len(sids) != v.SpecialCount || idsHash(sids) != v.SpecialIDsSHA {
				t.Errorf("%s: EncodeWithSpecial gives %d ids, want %d", v.Name, len(sids), v.SpecialCount)
			}
		default:
			text++
			want := v.Text
			if v.NFC != nil {
				want = *v.NFC
			}
			if got := tk.runes.normalize(v.Text); got != want {
				t.Errorf("%s: NFC(%q) = %q, want %q", v.Name, v.Text, got, want)
			}
			if got := tk.Encode(v.Text); !slices.Equal(got, v.IDs) {
				t.Errorf("%s: Encode(%q)\n got %v\nwant %v", v.Name, v.Text, got, v.IDs)
			}
			if got := tk.Count(v.Text); got != len(v.IDs) {
				t.Errorf("%s: Count = %d, want %d", v.Name, got, len(v.IDs))
			}
			if got := tk.EncodeWithSpecial(v.Text); !slices.Equal(got, v.SpecialIDs) {
				t.Errorf("%s: EncodeWithSpecial(%q)\n got %v\nwant %v", v.Name, v.Text, got, v.SpecialIDs)
			}
			if got := tk.CountWithSpecial(v.Text); got != len(v.SpecialIDs) {
				t.Errorf("%s: CountWithSpecial = %d, want %d", v.Name, got, len(v.SpecialIDs))
			}
		}
	}
	t.Logf("%d text vectors, %d long vectors, %d decode vectors", text, long, dec)
	if text < 800 || long < 20 || dec < 300 {
		t.Errorf("vector file is missing cases")
	}
}

// Decode(Encode(s)) gives back the NFC form of s.
func TestRoundTrip(t *testing.T) {
	tk := qwen(t)
	for _, v := range loadVectors(t) {
		if v.Decode != nil {
			continue
		}
		in := v.input()
		want := tk.runes.normalize(in)
		if got := tk.Decode(tk.Encode(in)); got != want {
			t.Errorf("%s: Decode(Encode(s)) != NFC(s)", v.Name)
		}
		if got := tk.Decode(tk.EncodeWithSpecial(in)); got != want {
			t.Errorf("%s: Decode(EncodeWithSpecial(s)) != NFC(s)", v.Name)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	tk := qwen(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s)
		if got, want := tk.Decode(ids), tk.runes.normalize(sanitize(s)); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		if n := tk.Count(s); n != len(ids) {
			t.Fatalf("Count(%q) = %d, len(Encode) = %d", s, n, len(ids))
		}
		for _, id := range ids {
			if IsSpecial(id) {
				t.Fatalf("Encode(%q) produced special id %d", s, id)
			}
		}
		if n := tk.CountWithSpecial(s); n != len(tk.EncodeWithSpecial(s)) {
			t.Fatalf("CountWithSpecial(%q) = %d, len(EncodeWithSpecial) differs", s, n)
		}
	})
}

func TestInvalidUTF8(t *testing.T) {
	tk := qwen(t)
	// Each invalid byte becomes one U+FFFD, as encoding/json does.
	for in, same := range map[string]string{
		"\xff":         "\uFFFD",
		"a\xe4\xb8b":   "a\uFFFD\uFFFDb",
		"\xed\xa0\x80": "\uFFFD\uFFFD\uFFFD",
		"ok\xc0":       "ok\uFFFD",
	} {
		if got, want := tk.Encode(in), tk.Encode(same); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", in, got, want)
		}
	}
	// Decoding replaces each maximal invalid subpart, as Rust's from_utf8_lossy.
	for _, c := range []struct{ in, want string }{
		{"\xe4\xb8", "\uFFFD"},
		{"\xe4\xb8a", "\uFFFDa"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf0\x9f\x98\x80", "😀"},
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"a\xc3", "a\uFFFD"},
	} {
		if got := lossyUTF8([]byte(c.in)); got != c.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := tk.Decode([]int{-1, 1 << 30, 9707}); got != "Hello" {
		t.Errorf("Decode skips unknown ids: got %q", got)
	}
}

func TestSpecialTokens(t *testing.T) {
	tk := qwen(t)
	want := map[string]int{
		"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
		"<|fim_prefix|>": 151659, "<|fim_middle|>": 151660, "<|fim_suffix|>": 151661,
		"<|fim_pad|>": 151662, "<|repo_name|>": 151663, "<|file_sep|>": 151664,
	}
	for name, id := range want {
		if got, ok := SpecialID(name); !ok || got != id {
			t.Errorf("SpecialID(%q) = %d, %v; want %d", name, got, ok, id)
		}
	}
	for id := EndOfText; id <= FileSep; id++ {
		name, ok := SpecialName(id)
		if !ok {
			t.Fatalf("SpecialName(%d) missing", id)
		}
		if got, _ := SpecialID(name); got != id {
			t.Errorf("SpecialID(SpecialName(%d)) = %d", id, got)
		}
		if got := tk.EncodeWithSpecial(name); !slices.Equal(got, []int{id}) {
			t.Errorf("EncodeWithSpecial(%q) = %v", name, got)
		}
		if got := tk.Encode(name); len(got) < 2 || slices.ContainsFunc(got, IsSpecial) {
			t.Errorf("Encode(%q) = %v, want plain tokens", name, got)
		}
		if got := tk.Decode([]int{id}); got != name {
			t.Errorf("Decode(%d) = %q", id, got)
		}
		if b, ok := tk.TokenBytes(id); !ok || b != name {
			t.Errorf("TokenBytes(%d) = %q", id, b)
		}
	}
	if _, ok := SpecialID("<|nope|>"); ok {
		t.Error("SpecialID accepted an unknown name")
	}
	if _, ok := SpecialName(EndOfText - 1); ok || IsSpecial(EndOfText-1) || IsSpecial(FileSep+1) {
		t.Error("ids outside 151643..151664 are not special")
	}
	if tk.VocabSize() != 151665 {
		t.Errorf("VocabSize = %d", tk.VocabSize())
	}
}

func TestNeutralize(t *testing.T) {
	tk := qwen(t)
	const z = "\u200B"
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain code <div> a<|b", "plain code <div> a<|b"},
		{"<|endoftext|>", "<" + z + "|endoftext|>"},
		{"x = '<|fim_prefix|>' + s + '<|fim_suffix|>'", "x = '<" + z + "|fim_prefix|>' + s + '<" + z + "|fim_suffix|>'"},
		{"<tool_call></tool_call>", "<" + z + "tool_call><" + z + "/tool_call>"},
		{"<<|file_sep|>>", "<<" + z + "|file_sep|>>"},
		{"<" + z + "|im_end|>", "<" + z + z + "|im_end|>"},
		{"<" + z + "|im_e", "<" + z + "|im_e"},
		{"<|endoftext|", "<|endoftext|"},
	} {
		got := Neutralize(c.in)
		if got != c.want {
			t.Errorf("Neutralize(%q) = %q, want %q", c.in, got, c.want)
		}
		if ContainsSpecial(got) {
			t.Errorf("Neutralize(%q) still contains a special token", c.in)
		}
		if back := Restore(got); back != c.in {
			t.Errorf("Restore(Neutralize(%q)) = %q", c.in, back)
		}
		if slices.ContainsFunc(tk.EncodeWithSpecial(got), IsSpecial) {
			t.Errorf("EncodeWithSpecial(Neutralize(%q)) has control tokens", c.in)
		}
	}
	if !ContainsSpecial("a <|im_start|> b") || ContainsSpecial("a <|im_star b") {
		t.Error("ContainsSpecial")
	}
	if at, n := FindSpecial("a <|im_sta <|im_start|>b<|im_end|>"); at != 11 || n != len("<|im_start|>") {
		t.Errorf("FindSpecial = %d, %d", at, n)
	}
	if at, _ := FindSpecial(Neutralize("<|im_end|>")); at != -1 {
		t.Errorf("FindSpecial found a neutralised token at %d", at)
	}
	// Every special token text is neutralised.
	for id := EndOfText; id <= FileSep; id++ {
		name, _ := SpecialName(id)
		if ContainsSpecial(Neutralize("a" + name + "b")) {
			t.Errorf("%s survives Neutralize", name)
		}
	}
}

func FuzzNeutralize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("<\u200b\u200b|fim_pad|><\u200b")
	tk := qwen(f)
	f.Fuzz(func(t *testing.T, s string) {
		n := Neutralize(s)
		if ContainsSpecial(n) {
			t.Fatalf("ContainsSpecial(Neutralize(%q))", s)
		}
		if Restore(n) != s {
			t.Fatalf("Restore(Neutralize(%q)) = %q", s, Restore(n))
		}
		if !ContainsSpecial(s) && !strings.Contains(s, "<\u200b") && n != s {
			t.Fatalf("Neutralize changed %q without need", s)
		}
		if slices.ContainsFunc(tk.EncodeWithSpecial(n), IsSpecial) {
			t.Fatalf("EncodeWithSpecial(Neutralize(%q)) has control tokens", s)
		}
	})
}

// The "whole piece is a vocabulary entry" shortcut is only valid for ids
// whose bytes BPE-encode to themselves; both BPE variants must agree on that.
func TestVocabularyIsSelfConsistent(t *testing.T) {
	tk := qwen(t)
	sc := new(scratch)
	for id := 0; id < tk.nVocab; id++ {
		b := tk.blob[tk.off[id]:tk.off[id+1]]
		got := slices.Clone(tk.bpeHeap(b, sc))
		if len(b) <= linearMax {
			if lin := tk.bpeLinear(b, sc); !slices.Equal(lin, got) {
				t.Fatalf("id %d: linear %v, heap %v", id, lin, got)
			}
		}
		regular := len(got) == 1 && got[0] == int32(id)
		if regular != tk.isRegular(int32(id)) {
			t.Errorf("id %d (%q): BPE gives %v, regular flag %v", id, b, got, tk.isRegular(int32(id)))
		}
	}
}

// slowBPE is the textbook algorithm, independent of the optimised ones.
func slowBPE(tk *Tokenizer, p string) []int32 {
	ids := make([]int32, len(p))
	for i := range len(p) {
		ids[i] = tk.byteID[p[i]]
	}
	for {
		best, at := noMerge, -1
		for i := 0; i+1 < len(ids); i++ {
			if r := tk.merges.get(ids[i], ids[i+1]); r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			return ids
		}
		ids[at] = 256 + best
		ids = slices.Delete(ids, at+1, at+2)
	}
}

func TestBPEVariantsAgree(t *testing.T) {
	tk := qwen(t)
	sc := new(scratch)
	r := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{" =-_ab", "abcdefghij", "  \n\t", "中文字日本語", "0123456789.,", "eeeeee\u0301"}
	for i := 0; i < 3060; i++ {
		al := []rune(alphabets[i%len(alphabets)])
		n := 1 + r.IntN(80)
		if i >= 3000 { // long pieces: many distinct ranks in the queue
			al = []rune(strings.Join(alphabets, ""))
			n = 200 + r.IntN(400)
		}
		var b strings.Builder
		for range n {
			b.WriteRune(al[r.IntN(len(al))])
		}
		p := b.String()
		want := slowBPE(tk, p)
		if got := tk.bpeHeap(p, sc); !slices.Equal(got, want) {
			t.Fatalf("bpeHeap(%q) = %v, want %v", p, got, want)
		}
		if got := tk.bpeLinear(p, sc); !slices.Equal(got, want) {
			t.Fatalf("bpeLinear(%q) = %v, want %v", p, got, want)
		}
	}
}

// nfcExact (used when x/text would insert CGJ) agrees with x/text elsewhere.
func TestNFCExactMatchesXText(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pool := []rune("aeouAEOKkqsc\u0301\u0300\u0302\u0308\u0316\u0323\u0328\u0304\u0345\u0313\u030a\u0327\u0344\u0f73\u0958\u212b\u2126\u1100\u1161\u11a8\uac00\u0b47\u0b3e\u0cc6\u0cc2\u0cd5\u3099\u304b\uff76\uff9e ω")
	for i := 0; i < 20000; i++ {
		rs := make([]rune, 1+r.IntN(12))
		for k := range rs {
			rs[k] = pool[r.IntN(len(pool))]
		}
		s := string(rs)
		if got, want := nfcExact(s), norm.NFC.String(s); got != want {
			t.Fatalf("nfcExact(%+q) = %+q, x/text %+q", s, got, want)
		}
	}
}

func FuzzNFCExact(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.Contains(norm.NFC.String(s), cgj) {
			return
		}
		if got, want := nfcExact(s), norm.NFC.String(s); got != want {
			t.Fatalf("nfcExact(%+q) = %+q, x/text %+q", s, got, want)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	vs := loadVectors(t)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			tk, err := Qwen25()
			if err != nil {
				errs <- err.Error()
				return
			}
			for i := g; i < len(vs); i += 3 {
				v := &vs[i]
				if v.Decode != nil || v.Gen != nil {
					continue
				}
				if !slices.Equal(tk.Encode(v.Text), v.IDs) || tk.Count(v.Text) != len(v.IDs) {
					errs <- v.Name
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent encode failed: %s", e)
	}
}

func TestCorruptData(t *testing.T) {
	for _, data := range []string{"", "not gzip", qwen25Data[:len(qwen25Data)/2]} {
		if _, err := load(data); err == nil {
			t.Errorf("load(%d bytes) succeeded", len(data))
		}
	}
}

// fuzzSeeds are shared by the fuzz tests.
var fuzzSeeds = []string{
	"", " ", "\n", "\r\n", "a b", "it's", "'ſa", "x \r y", "a  b", "a\u3000b", "  \n  x",
	"def f(x):\n\treturn x + 1\n", "<|endoftext|>", "<\u200b|im_start|>", "e\u0301", "x" + strings.Repeat("\u0301", 40),
	"\u1100" + strings.Repeat("\u1161", 35), "中文 text", "😀👍🏽", " !!!\n\n", "1,000.5", "\xff\xfe",
}

// radixQueue pops keys in ascending order as long as pushes are monotone in
// rank, like a binary heap would.
func TestRadixQueue(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var q radixQueue
	for round := 0; round < 200; round++ {
		q.reset()
		var ref []uint64
		lastRank := uint32(0)
		for i := 0; i < 50+r.IntN(50); i++ {
			k := uint64(r.Uint32N(1000))<<32 | uint64(r.Uint32N(5000))
			q.push(k)
			ref = append(ref, k)
		}
		for len(ref) > 0 {
			mi := slices.Index(ref, slices.Min(ref))
			want := ref[mi]
			ref = slices.Delete(ref, mi, mi+1)
			got, ok := q.pop()
			if !ok || got != want {
				t.Fatalf("round %d: pop = %#x, %v; want %#x", round, got, ok, want)
			}
			lastRank = uint32(got >> 32)
			for range r.IntN(2) { // on average fewer pushes than pops: it drains
				k := uint64(lastRank+1+r.Uint32N(1<<17))<<32 | uint64(r.Uint32N(1<<20))
				q.push(k)
				ref = append(ref, k)
			}
		}
		if _, ok := q.pop(); ok {
			t.Fatal("queue not empty")
		}
	}
}

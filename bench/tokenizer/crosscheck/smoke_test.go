package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgainstRecordedReference runs the cross-check on the tokenizer's
// corpus (scripts/tokenizer/vectors/testdata/corpus) against Hugging Face
// ids recorded for it (contextpack/tokenizer/testdata/vectors.jsonl.gz, the
// "corpus/NAME" vectors made by make_vectors.js), written in reference.js's
// format: every file matches; one altered record is a mismatch.
func TestAgainstRecordedReference(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	dir := filepath.Join(root, "scripts", "tokenizer", "vectors", "testdata", "corpus")
	f, err := os.Open(filepath.Join(root, "contextpack", "tokenizer", "testdata", "vectors.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var refs []record
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v struct {
			Name       string `json:"name"`
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			SpecialIDs []int  `json:"special_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(v.Name, "corpus/")
		if !ok || strings.Contains(name, "#") { // the file as it is, not its variants
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != v.Text {
			t.Fatalf("%s: the recorded text is not the corpus file's (%v)", name, err)
		}
		refs = append(refs, record{Path: name, Count: len(v.IDs), SHA: hash(v.IDs), SpecialCount: len(v.SpecialIDs), SpecialSHA: hash(v.SpecialIDs)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(refs) < 10 {
		t.Fatalf("%d corpus files in the vectors, want the whole corpus", len(refs))
	}
	write := func(refs []record) string {
		path := filepath.Join(t.TempDir(), "ref.jsonl")
		var b strings.Builder
		for _, r := range refs {
			line, _ := json.Marshal(r)
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if err := run(dir, write(refs)); err != nil {
		t.Fatalf("crosscheck against Hugging Face's recorded ids: %v", err)
	}
	refs[0].Count++
	if err := run(dir, write(refs)); err == nil || !strings.Contains(err.Error(), "1 mismatches") {
		t.Errorf("crosscheck with one record altered: %v, want 1 mismatch", err)
	}
}

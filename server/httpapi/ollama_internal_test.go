package httpapi

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzFromOllama feeds the prompt reader (FIM templates, repository
// formats, Twinny's headers) arbitrary prompts: it must not panic, and what
// it takes out of a UTF-8 prompt is UTF-8 and no longer than the prompt.
func FuzzFromOllama(f *testing.F) {
	paths, _ := filepath.Glob("testdata/ollama/*.json")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		f.Add(string(b), "")
	}
	f.Add("<|fim_prefix|><|fim_suffix|>", "")
	f.Add("[SUFFIX]x[PREFIX]\n a Language: b\n c File uri: file:///%zz (x) \ny", "")
	f.Add("<|repo_name|>r\n<|file_sep|>a b\n// File: x\n// Content: \n y<|file_sep|>", "")
	f.Add("<PRE> <SUF> <MID>", "")
	f.Fuzz(func(t *testing.T, prompt, suffix string) {
		r, err := fromOllama(&ollamaGenerateRequest{Prompt: prompt, Suffix: suffix})
		if err != nil {
			return
		}
		n := len(r.Prefix) + len(r.Suffix)
		for _, s := range r.Extra {
			n += len(s.Text)
		}
		if n > len(prompt)+len(suffix) {
			t.Fatalf("took out %d bytes from %d", n, len(prompt)+len(suffix))
		}
		if utf8.ValidString(prompt) && utf8.ValidString(suffix) && (!utf8.ValidString(r.Prefix) || !utf8.ValidString(r.Suffix) || !utf8.ValidString(r.Path)) {
			t.Fatalf("invalid UTF-8 out of %q", prompt)
		}
	})
}

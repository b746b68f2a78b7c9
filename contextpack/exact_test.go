package contextpack

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
	"github.com/infill-dev/infill/contextpack/tokenizer"
)

func qwen(t testing.TB) *tokenizer.Tokenizer { return testcorpus.Qwen(t) }

// loadRepo reads the source files under root (relative paths) for tests.
func loadRepo(t testing.TB, root string, exts []string, limit int) []File {
	t.Helper()
	var files []File
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(files) >= limit {
			return nil
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		ok := false
		for _, e := range exts {
			ok = ok || strings.HasSuffix(p, e)
		}
		if !ok {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 256<<10 {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, File{Path: filepath.ToSlash(rel), Content: string(b), HasContent: true})
		return nil
	})
	if len(files) == 0 {
		t.Skipf("no files under %s", root)
	}
	return files
}

// Every prompt's token count is exact (the real tokenizer, special tokens
// parsed, agrees), fits the budget, and carries no control token that the
// assembler did not put there.
func TestPromptTokensExactOnRealRepos(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	repos := []struct {
		root string
		exts []string
	}{
		{filepath.Join(runtime.GOROOT(), "src", "net", "http"), []string{".go"}},
		{filepath.Join(runtime.GOROOT(), "src", "encoding"), []string{".go"}},
	}
	if m, _ := filepath.Glob("/usr/lib/python3*/email"); len(m) > 0 {
		repos = append(repos, struct {
			root string
			exts []string
		}{m[0], []string{".py"}})
	}
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := rand.New(rand.NewPCG(3, 4))
	for _, repo := range repos {
		files := loadRepo(t, repo.root, repo.exts, 400)
		for i := 0; i < 40; i++ {
			f := files[r.IntN(len(files))]
			off := r.IntN(len(f.Content) + 1)
			for off > 0 && off < len(f.Content) && !utf8.RuneStart(f.Content[off]) {
				off--
			}
			budget := []int{300, 1024, 4096, 8192}[i%4]
			req := Request{RepoName: filepath.Base(repo.root), Files: files, TokenBudget: budget, MaxNewTokens: 64,
				Cursor: Cursor{Path: f.Path, Offset: off, Encoding: EncodingByteOffset}}
			p, err := b.Build(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s@%d: %v", repo.root, f.Path, off, err)
			}
			ids := tok.EncodeWithSpecial(p.Text)
			if len(ids) != p.Tokens {
				t.Fatalf("%s@%d budget %d: Tokens %d, real count %d", f.Path, off, budget, p.Tokens, len(ids))
			}
			if p.Tokens+64 > budget {
				t.Fatalf("%s@%d: %d prompt tokens + 64 > budget %d", f.Path, off, p.Tokens, budget)
			}
			specials := 0
			for _, id := range ids {
				if tokenizer.IsSpecial(id) {
					specials++
				}
			}
			want := 4 + strings.Count(p.Text, FileSep) // repo name, FIM ×3
			if specials != want {
				t.Fatalf("%s@%d: %d control tokens, want %d", f.Path, off, specials, want)
			}
		}
	}
}

// A minified one-line file far over budget is cut without counting it and
// still gives a valid prompt.
func TestHugeLineIsNotCounted(t *testing.T) {
	t.Parallel()
	var calls, biggest int
	tok := countingTok{n: &calls, biggest: &biggest}
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("var a=1;", 1<<17) // 1 MiB, one line
	p, err := b.Build(context.Background(), Request{Files: []File{{Path: "min.js", Content: line + "\nx\n", HasContent: true}},
		Cursor: Cursor{Path: "min.js", Line: 1}, TokenBudget: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens > 1024 {
		t.Fatalf("%d tokens", p.Tokens)
	}
	if biggest > 1<<16 {
		t.Fatalf("counted a %d-byte segment", biggest)
	}
}

type countingTok struct {
	n       *int
	biggest *int
}

func (c countingTok) Count(s string) int {
	*c.n++
	if len(s) > *c.biggest {
		*c.biggest = len(s)
	}
	return len(s)
}

package syntax

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
)

// BenchmarkAnalyze measures parsing plus tag extraction of one generated
// ~10 KB file per language (the per-keystroke cost for the cursor file).
func BenchmarkAnalyze(b *testing.B) {
	files := synthrepo.Generate(synthrepo.Options{Files: 5})
	g := NewGrammars(1)
	defer g.Close()
	opt := testAnalyzeOptions()
	for _, f := range files[:5] {
		lang := DetectLang(f.Path, "")
		b.Run(lang.String()+"/full", func(b *testing.B) {
			b.SetBytes(int64(len(f.Content)))
			for i := 0; i < b.N; i++ {
				if _, err := Analyze(context.Background(), g, f.Content, lang, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(lang.String()+"/parse", func(b *testing.B) {
			st, _ := g.acquire(lang)
			defer g.release()
			p := st.getParser()
			defer st.putParser(p)
			src := []byte(f.Content)
			b.SetBytes(int64(len(f.Content)))
			for i := 0; i < b.N; i++ {
				t, err := p.ParseCtx(context.Background(), nil, src)
				if err != nil {
					b.Fatal(err)
				}
				t.Close()
			}
		})
		b.Run(lang.String()+"/query", func(b *testing.B) {
			st, _ := g.acquire(lang)
			defer g.release()
			p := st.getParser()
			defer st.putParser(p)
			src := []byte(f.Content)
			t, _ := p.ParseCtx(context.Background(), nil, src)
			defer t.Close()
			b.SetBytes(int64(len(f.Content)))
			for i := 0; i < b.N; i++ {
				qc := sitter.NewQueryCursor()
				qc.Exec(st.query, t.RootNode())
				n := 0
				for {
					m, ok := qc.NextMatch()
					if !ok {
						break
					}
					n += len(m.Captures)
				}
				qc.Close()
			}
		})
	}
}

// BenchmarkAnalyzeTyping: one keystroke per iteration, typing a Go
// statement again and again in a switch case of net/http/client.go (the
// ghz payload's cursor file and position; about 60% of the keystrokes
// leave a syntax error). "incremental" is the cursor file's analysis in a
// warm server (tree cache, segments), "scratch" the same versions
// analysed cold.
func BenchmarkAnalyzeTyping(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "client.go"))
	const anchor = "\tcase 307, 308:\n\t\t"
	if err != nil || !strings.Contains(string(raw), anchor) {
		b.Skip("no net/http/client.go with the anchor in GOROOT")
	}
	for _, mode := range []string{"incremental", "scratch"} {
		b.Run(mode, func(b *testing.B) {
			g := NewGrammars(1)
			defer g.Close()
			opt := testAnalyzeOptions()
			opt.Trees = NewTreeCache(4)
			defer opt.Trees.Close()
			if mode == "incremental" {
				opt.TreeKey = "repo\x00client.go"
			}
			content := string(raw)
			off := strings.Index(content, anchor) + len(anchor)
			if _, err := Analyze(context.Background(), g, content, LangGo, opt); err != nil {
				b.Fatal(err)
			}
			testcorpus.TypeKeys(b, content, off, "resp, err := c.send(req, deadline)\n\t\t", func(content string, _ int) error {
				_, err := Analyze(context.Background(), g, content, LangGo, opt)
				return err
			})
		})
	}
}

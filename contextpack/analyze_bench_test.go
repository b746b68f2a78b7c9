package contextpack

import (
	"context"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/infill-dev/infill/contextpack/internal/synthrepo"
)

// BenchmarkAnalyze measures parsing plus tag extraction of one generated
// ~10 KB file per language (the per-keystroke cost for the cursor file).
func BenchmarkAnalyze(b *testing.B) {
	files := synthrepo.Generate(synthrepo.Options{Files: 5})
	g := newGrammars(1)
	defer g.close()
	opt := testAnalyzeOptions()
	for _, f := range files[:5] {
		lang := detectLang(f.Path, "")
		b.Run(lang.String()+"/full", func(b *testing.B) {
			b.SetBytes(int64(len(f.Content)))
			for i := 0; i < b.N; i++ {
				if _, err := analyze(context.Background(), g, f.Content, lang, opt); err != nil {
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

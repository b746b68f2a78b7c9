package assemble

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/index"
	"github.com/infill-dev/infill/contextpack/internal/syntax"
	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
)

// corpusFile is a source file and its language.
type corpusFile struct {
	lang syntax.Lang
	src  string
}

// keptTails keeps the last walk tail each way, as contextpack's record
// does, and computes every other lookup.
type keptTails struct{ tails [2]*WalkTail }

func (m *keptTails) WalkTail(q TailQuery) *WalkTail {
	i := 0
	if q.Suffix {
		i = 1
	}
	if t := m.tails[i]; t.Covers(q) {
		return t
	}
	m.tails[i] = WalkTailOf(q)
	return m.tails[i]
}

func (*keptTails) ImportRanking(q RankingQuery) *Ranking           { return RankImports(q) }
func (*keptTails) ImportCandidates(q CandidatesQuery) []*Candidate { return ImportCandidates(q) }
func (*keptTails) Search(q SearchQuery) *SearchResult              { return Search(q) }
func (*keptTails) Outline(q OutlineQuery) Outline                  { return OutlineOf(q) }

// typingView is the view of content for a cursor at off, and its line; ok
// is false when the line is empty (the view is content).
func typingView(content string, off int) (view string, line int32, ok bool) {
	ls, le, line := index.CursorLine(content, off)
	return content[:ls] + content[le:], line, ls < le
}

// The prefix and suffix walks of a typing view's analysis (whose parts
// beyond the cursor's line come from the memos, which keep the last walk
// each way and answer a walk it covers) equal the walks of the file's own
// text, whatever the cursor, the limit and the walks before them.
func TestWalkTailsMatchPlainWalk(t *testing.T) {
	var files []corpusFile
	for _, f := range testcorpus.Golden(t, "../../testdata/golden") {
		if lang := syntax.DetectLang(f.Path, ""); lang != syntax.LangPlain {
			files = append(files, corpusFile{lang, f.Text})
		}
	}
	files = append(files, corpusFile{syntax.LangPlain, "a\n\n\n  \nb\nc"}, corpusFile{syntax.LangPlain, "\n\nx"})
	files = append(files, corpusFile{syntax.LangPlain, strings.Repeat("=", 20000) + "\nshort\n" + strings.Repeat("y ", 5000)})
	r := rand.New(rand.NewPCG(3, 5))
	views := map[string]*syntax.Analysis{}
	wk := walker{NewCounter(testcorpus.ByteTokens{}, testcorpus.ByteTokens{}.Neutralize, 1<<17, 8192), &keptTails{}} // a view's walks kept as a caller keeps them
	for step := 0; step < 3000; step++ {
		f := files[r.IntN(len(files))]
		content := f.src
		off := r.IntN(len(content) + 1)
		if r.IntN(4) == 0 { // a line's start: the walks go straight to the tails
			off = strings.LastIndexByte(content[:off], '\n') + 1
		}
		if r.IntN(3) == 0 { // typing: text inserted at the cursor
			ins := []string{"x", "  ", "foo(bar", "\t", ")"}[r.IntN(5)]
			content = content[:off] + ins + content[off:]
			off += len(ins)
		}
		plain := &syntax.Analysis{Lang: f.lang, Content: content, Lines: syntax.LineStarts(content)}
		view, line, ok := typingView(content, off)
		if !ok {
			continue
		}
		v := views[view] // one view analysis per view text, as the store keeps them
		if v == nil {
			v = &syntax.Analysis{Lang: f.lang, Content: view, Lines: syntax.LineStarts(view)}
			views[view] = v
		}
		h := v.WithText(content, line)
		for range 3 { // several limits at one cursor: the memoized tails are reused
			limit := []int{0, 1, 7, 40, 300, 2000, 1 << 20}[r.IntN(7)]
			for _, walk := range []struct {
				name string
				fn   func(a *syntax.Analysis, off, limit int) segWalk
			}{{"prefix", wk.prefix}, {"suffix", wk.suffix}} {
				got, want := walk.fn(h, off, limit), walk.fn(plain, off, limit)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: %s walk at %d with limit %d:\n got %+v\nwant %+v", step, walk.name, off, limit, got, want)
				}
			}
		}
	}
}

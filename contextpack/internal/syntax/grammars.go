package syntax

import (
	"embed"
	"fmt"
	"strings"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/c"
	"github.com/smacker/go-tree-sitter/cpp"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/java"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

//go:embed queries/*.scm
var queryFS embed.FS

var queryFiles = [NumLangs]string{
	LangPython: "python.scm", LangGo: "go.scm", LangJS: "javascript.scm", LangTS: "typescript.scm",
	LangTSX: "typescript.scm", LangJava: "java.scm", LangRust: "rust.scm", LangC: "c.scm", LangCPP: "cpp.scm",
}

func grammar(l Lang) *sitter.Language {
	switch l {
	case LangPython:
		return python.GetLanguage()
	case LangGo:
		return golang.GetLanguage()
	case LangJS:
		return javascript.GetLanguage()
	case LangTS:
		return typescript.GetLanguage()
	case LangTSX:
		return tsx.GetLanguage()
	case LangJava:
		return java.GetLanguage()
	case LangRust:
		return rust.GetLanguage()
	case LangC:
		return c.GetLanguage()
	case LangCPP:
		return cpp.GetLanguage()
	}
	return nil
}

// Grammars owns the tree-sitter state of one Builder: per language a
// compiled tags query (immutable, shared by all goroutines) and a free list
// of parsers (a parser is used by one goroutine at a time). Parsers beyond
// the free list's capacity and everything at Close are freed explicitly
// rather than left to finalizers.
type Grammars struct {
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	langs    [NumLangs]*langState
	poolN    int
}

type langState struct {
	lang    *sitter.Language
	query   *sitter.Query
	capture []string // capture names by id
	free    chan *sitter.Parser
	// rooted holds the top-level node kinds that patterns anchored at the
	// root match, such as Go's (source_file (const_declaration …)): the
	// query must start at the root to match them.
	rooted map[sitter.Symbol]bool
}

// NewGrammars returns the tree-sitter state for up to poolN parsers per
// language kept free.
func NewGrammars(poolN int) *Grammars {
	if poolN < 1 {
		poolN = 1
	}
	return &Grammars{poolN: poolN}
}

// acquire returns the compiled state for l (nil for plain text) and
// registers one user of the C state; the caller must call release once it
// no longer touches parsers, trees or queries.
func (g *Grammars) acquire(l Lang) (*langState, error) {
	if l == LangPlain || l >= NumLangs {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	s, err := g.stateLocked(l)
	if err != nil {
		return nil, err
	}
	g.inflight.Add(1)
	return s, nil
}

func (g *Grammars) release() { g.inflight.Done() }

// IsClosed reports whether Close was called.
func (g *Grammars) IsClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *Grammars) stateLocked(l Lang) (*langState, error) {
	if s := g.langs[l]; s != nil {
		return s, nil
	}
	src, err := queryFS.ReadFile("queries/" + queryFiles[l])
	if err != nil {
		return nil, err
	}
	lang := grammar(l)
	q, err := sitter.NewQuery(src, lang)
	if err != nil {
		return nil, fmt.Errorf("contextpack: %s query: %w", l, err)
	}
	s := &langState{lang: lang, query: q, free: make(chan *sitter.Parser, g.poolN), rooted: rootedKinds(lang, string(src))}
	for i := uint32(0); i < q.CaptureCount(); i++ {
		s.capture = append(s.capture, q.CaptureNameForId(i))
	}
	g.langs[l] = s
	return s, nil
}

// rootedKinds finds the patterns of a query that start at the root node,
// "(ROOT (KIND …" (a field name or anchor may sit between), and returns
// the symbols named KIND.
func rootedKinds(lang *sitter.Language, query string) map[sitter.Symbol]bool {
	var text strings.Builder
	for _, line := range strings.Split(query, "\n") {
		if i := strings.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // comment (the queries have no ';' in strings)
		}
		text.WriteString(line)
		text.WriteByte('\n')
	}
	tok := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(text.String()))
	names := map[string]bool{}
	for i := 0; i+1 < len(tok); i++ {
		if tok[i] != "(" || !rootKinds[tok[i+1]] {
			continue
		}
		j := i + 2
		for j < len(tok) && (strings.HasSuffix(tok[j], ":") || tok[j] == ".") {
			j++
		}
		if j+1 < len(tok) && tok[j] == "(" {
			names[tok[j+1]] = true
		}
	}
	out := map[sitter.Symbol]bool{}
	for sym := sitter.Symbol(0); uint32(sym) < lang.SymbolCount(); sym++ {
		if names[lang.SymbolName(sym)] {
			out[sym] = true
		}
	}
	return out
}

// rootKinds are the root node kinds of the grammars infill parses.
var rootKinds = map[string]bool{"source_file": true, "module": true, "program": true, "translation_unit": true}

func (s *langState) getParser() *sitter.Parser {
	select {
	case p := <-s.free:
		return p
	default:
	}
	p := sitter.NewParser()
	p.SetLanguage(s.lang)
	return p
}

// putParser returns p to the free list, or frees it when the list is full.
// Callers hold an acquire, so close cannot run concurrently.
func (s *langState) putParser(p *sitter.Parser) {
	select {
	case s.free <- p:
	default:
		p.Close()
	}
}

// Close waits for in-flight analyses, then frees every parser and query.
func (g *Grammars) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	g.inflight.Wait()
	for _, s := range g.langs {
		if s == nil {
			continue
		}
	drain:
		for {
			select {
			case p := <-s.free:
				p.Close()
			default:
				break drain
			}
		}
		s.query.Close()
	}
}

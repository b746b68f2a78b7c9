package main

import (
	"path"
	"strings"

	"github.com/infill-dev/infill/contextpack"
)

// cell is one prompt's measurements (one sample, strategy and budget).
type cell struct {
	// Code identifiers of the middle: Need are those absent (as a word)
	// from the cursor file's part of the prompt; Found those of Need that
	// occur as code identifiers in the cross-file context; FoundWord
	// those of Need that occur there as a word at all.
	CodeMid, CodeNeed, CodeFound, CodeFoundWord int
	// CodeShown: middle code identifiers shown anywhere in the prompt (as
	// a word in the cursor file's part or as code in the context).
	CodeShown int
	// CodeNeedFile are the middle's code identifiers that occur nowhere
	// in the masked cursor file or its path (the same set for every
	// strategy and budget); CodeFoundFile those of them found as code in
	// the context.
	CodeNeedFile, CodeFoundFile int
	// Prose words of the middle (comments and strings), counted like
	// words: Need absent from the cursor file's part, Found present as a
	// word in the cross-file context.
	ProseNeed, ProseFound int

	Tokens, CtxTokens, CtxBudget int
	Nanos                        int64
	diag
}

// diag is what the prompt's context is made of, for the diagnosis of
// issue 30's causes. Byte counts are of the cross-file context blocks.
type diag struct {
	CtxBytes, TestBytes, NonCodeBytes, DupBytes int
	Unmatched                                   int // context lines not found in their file
	// From the manifest, cross-file candidates only.
	ImpSeen, ImpIncl, DefSeen, DefIncl, SimSeen, SimIncl int
	ImpTokens, DefTokens, SimTokens                      int
	CapDrops, CapDropsImpDef                             int
	ResolvedImports                                      int // distinct files among import candidates
	// Included definitions whose name is not a code identifier of the
	// cursor file: of them, DefProse are words of its comments/strings.
	DefNotCode, DefProse int
}

var specials = strings.NewReplacer(contextpack.FIMPrefix, "\n", contextpack.FIMSuffix, "\n", contextpack.FIMMiddle, "\n",
	contextpack.FileSep, "\n", contextpack.RepoName, "\n")

// contextBlock is one file's part of the cross-file context.
type contextBlock struct {
	path, body string
}

// splitPrompt parses a repository-level prompt: the blocks between file
// separators, and the cursor file's part (after the last separator:
// its path, same-file context, prefix and suffix). A file-level prompt is
// all cursor part.
func splitPrompt(text string) (blocks []contextBlock, cursorPart string) {
	parts := strings.Split(text, contextpack.FileSep)
	if len(parts) == 1 {
		return nil, text
	}
	for _, p := range parts[1 : len(parts)-1] {
		head, body, _ := strings.Cut(p, "\n")
		blocks = append(blocks, contextBlock{path: head, body: body})
	}
	return blocks, parts[len(parts)-1]
}

// isElision says whether a line is one of the assembler's elision marks.
func isElision(line string) bool {
	switch strings.TrimSpace(line) {
	case "...", "# ...", "// ...":
		return true
	}
	return false
}

// matchLines finds the lines of body in content, in order (context shows
// line ranges of a file in order, with elision marks between them), and
// returns the matched line numbers and the count of lines not found.
func matchLines(body, content string, fs *fileSyntax) (lines []int, unmatched int) {
	bl := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	n := fs.numLines()
	j := 0
	for _, l := range bl {
		if j < n && fs.line(content, j) == l {
			lines = append(lines, j)
			j++
			continue
		}
		if isElision(l) {
			continue
		}
		k := j
		for k < n && fs.line(content, k) != l {
			k++
		}
		if k == n {
			if strings.TrimSpace(l) != "" {
				unmatched++
			}
			continue
		}
		lines = append(lines, k)
		j = k + 1
	}
	return lines, unmatched
}

// isTestPath says whether a path is a test file by the conventions of the
// languages measured: *_test.go; test_*.py, *_test.py, conftest.py;
// *.test.* and *.spec.* (JS/TS); *Test.java, *Tests.java, *IT.java; any
// file under a directory named test, tests, testing, __tests__, spec,
// specs or e2e (Java's src/test, Rust's tests/, …).
func isTestPath(p string) bool {
	base := path.Base(p)
	for _, d := range strings.Split(path.Dir(p), "/") {
		switch d {
		case "test", "tests", "testing", "__tests__", "spec", "specs", "e2e":
			return true
		}
	}
	stem := base
	if i := strings.IndexByte(base, '.'); i > 0 {
		stem = base[:i]
	}
	switch {
	case strings.HasSuffix(base, "_test.go"), strings.HasSuffix(base, "_test.py"), strings.HasPrefix(base, "test_"),
		base == "conftest.py", strings.Contains(base, ".test."), strings.Contains(base, ".spec."),
		strings.HasSuffix(stem, "Test") && strings.HasSuffix(base, ".java"),
		strings.HasSuffix(stem, "Tests") && strings.HasSuffix(base, ".java"),
		strings.HasSuffix(stem, "IT") && strings.HasSuffix(base, ".java"),
		strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "_unittest"):
		return true
	}
	return false
}

// scorer measures prompts for one sample.
type scorer struct {
	s           *sample
	midCode     []string
	midProse    []string
	cursorCode  map[string]bool // code identifiers of the cursor file outside the middle
	cursorProse map[string]bool
	fileWords   map[string]bool // every word of the masked cursor file and its path
}

func newScorer(s *sample) *scorer {
	sc := &scorer{s: s, cursorCode: map[string]bool{}, cursorProse: map[string]bool{},
		fileWords: wordSet(s.path + "\n" + s.full[:s.start] + s.full[s.end:])}
	sc.midCode, sc.midProse = s.syntax.middleWords(s.start, s.end)
	for _, o := range s.syntax.occs {
		if int(o.end) <= s.start || int(o.start) >= s.end {
			if o.code {
				sc.cursorCode[o.name] = true
			} else {
				sc.cursorProse[o.name] = true
			}
		}
	}
	return sc
}

// score measures one prompt; needed and found list the code identifiers
// behind CodeNeed and CodeFound.
func (sc *scorer) score(p *contextpack.Prompt) (c cell, needed, found []string) {
	r := sc.s.repo
	blocks, cursorPart := splitPrompt(p.Text)
	inCursor := wordSet(specials.Replace(cursorPart))
	ctxCode := map[string]bool{}
	ctxWords := map[string]bool{}
	needed, found = []string{}, []string{}
	seenLines := map[string]bool{}
	for _, b := range blocks {
		scanWords(b.path, func(w string, _ int) { ctxWords[w] = true })
		scanWords(b.body, func(w string, _ int) { ctxWords[w] = true })
		c.CtxBytes += len(b.body)
		fi, ok := r.byPath[b.path]
		if !ok {
			c.Unmatched += strings.Count(b.body, "\n")
			continue
		}
		fs := r.fileSyntax(fi)
		if isTestPath(b.path) {
			c.TestBytes += len(b.body)
		}
		if !fs.parsed {
			c.NonCodeBytes += len(b.body)
		}
		lines, un := matchLines(b.body, r.files[fi].Content, fs)
		c.Unmatched += un
		for _, i := range lines {
			fs.lineCode(i, ctxCode)
		}
		c.DupBytes += duplicateBytes(b.body, seenLines)
	}
	for _, id := range sc.midCode {
		c.CodeMid++
		if inCursor[id] || ctxCode[id] {
			c.CodeShown++
		}
		if !sc.fileWords[id] {
			c.CodeNeedFile++
			if ctxCode[id] {
				c.CodeFoundFile++
			}
		}
		if inCursor[id] {
			continue
		}
		c.CodeNeed++
		needed = append(needed, id)
		if ctxCode[id] {
			c.CodeFound++
			found = append(found, id)
		}
		if ctxWords[id] {
			c.CodeFoundWord++
		}
	}
	for _, w := range sc.midProse {
		if inCursor[w] {
			continue
		}
		c.ProseNeed++
		if ctxWords[w] {
			c.ProseFound++
		}
	}
	c.Tokens, c.CtxTokens, c.CtxBudget = p.Tokens, p.Manifest.ContextTokens, p.Manifest.ContextBudget
	sc.manifest(p, &c)
	return c, needed, found
}

// duplicateBytes counts the bytes of body's windows (runs of lines between
// elision marks) that repeat what earlier blocks showed: a window with at
// least two lines of 8+ non-blank characters, 80% of which were seen
// before. seen collects the lines of every window.
func duplicateBytes(body string, seen map[string]bool) int {
	dup := 0
	var win []string
	flush := func() {
		n, old, bytes := 0, 0, 0
		for _, l := range win {
			bytes += len(l) + 1
			t := strings.TrimSpace(l)
			if len(t) < 8 {
				continue
			}
			n++
			if seen[t] {
				old++
			}
		}
		if n >= 2 && old*5 >= n*4 {
			dup += bytes
		}
		for _, l := range win {
			if t := strings.TrimSpace(l); len(t) >= 8 {
				seen[t] = true
			}
		}
		win = win[:0]
	}
	for _, l := range strings.Split(body, "\n") {
		if isElision(l) {
			flush()
			continue
		}
		win = append(win, l)
	}
	flush()
	return dup
}

// manifest reads the manifest's cross-file candidates.
func (sc *scorer) manifest(p *contextpack.Prompt, c *cell) {
	resolved := map[string]bool{}
	for _, src := range p.Manifest.Sources {
		if src.Path == sc.s.path {
			continue
		}
		capped := strings.Contains(src.Reason, "(cap)")
		switch src.Kind {
		case contextpack.SourceImport:
			resolved[src.Path] = true
			c.ImpSeen++
			if src.Included {
				c.ImpIncl++
				c.ImpTokens += src.Tokens
			}
		case contextpack.SourceDefinition:
			c.DefSeen++
			if src.Included {
				c.DefIncl++
				c.DefTokens += src.Tokens
				if name := definitionName(src.Reason); name != "" && !sc.cursorCode[name] {
					c.DefNotCode++
					if sc.cursorProse[name] {
						c.DefProse++
					}
				}
			}
		case contextpack.SourceSimilar:
			c.SimSeen++
			if src.Included {
				c.SimIncl++
				c.SimTokens += src.Tokens
			}
		default:
			continue
		}
		if capped {
			c.CapDrops++
			if src.Kind != contextpack.SourceSimilar {
				c.CapDropsImpDef++
			}
		}
	}
	c.ResolvedImports = len(resolved)
}

// definitionName reads the defined name from an included definition's
// reason ("cursor tier: function name, fused …"); "" when it is not
// written that way.
func definitionName(reason string) string {
	_, rest, ok := strings.Cut(reason, "tier: ")
	if !ok {
		return ""
	}
	label, _, _ := strings.Cut(rest, ",")
	f := strings.Fields(label)
	if len(f) < 2 {
		return ""
	}
	return f[len(f)-1]
}

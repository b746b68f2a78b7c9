package contextpack

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/contextpack/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the want.* sections of testdata/golden/**/*.txtar")

// cursorMark marks the cursor in a golden case's files (exactly once).
const cursorMark = "⁁"

// TestGolden runs the data-driven cases in testdata/golden: each txtar
// archive is a repository whose files hold the cursor mark once; its
// comment sets request options ("budget: 1024", "gen: 64", "repo: name",
// "language: python", "strategy: fused") and its want.prompt and
// want.manifest sections hold the expected prompt and manifest. Run with
// -update to rewrite them; review the diff before committing.
func TestGolden(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no golden cases")
	}
	tok := qwen(t)
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.ToSlash(path)[len("testdata/golden/"):], ".txtar")
		t.Run(name, func(t *testing.T) { runGolden(t, tok, path) })
	}
}

type goldenCase struct {
	req      Request
	strategy Strategy
}

func parseGolden(t *testing.T, ar *txtar.Archive) goldenCase {
	t.Helper()
	gc := goldenCase{req: Request{TokenBudget: 2048, MaxNewTokens: 64, RepoName: "repo"}}
	language := ""
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue // prose
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var err error
		switch k {
		case "budget":
			gc.req.TokenBudget, err = strconv.Atoi(v)
		case "gen":
			gc.req.MaxNewTokens, err = strconv.Atoi(v)
		case "repo":
			gc.req.RepoName = v
			if v == "-" {
				gc.req.RepoName = ""
			}
		case "language":
			language = v
		case "strategy":
			gc.strategy, err = ParseStrategy(v)
		default:
			// Other "key: value" lines are prose.
		}
		if err != nil {
			t.Fatalf("option %q: %v", line, err)
		}
	}
	found := 0
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want.") {
			continue
		}
		content := string(f.Data)
		if i := strings.Index(content, cursorMark); i >= 0 {
			found += strings.Count(content, cursorMark)
			content = content[:i] + content[i+len(cursorMark):]
			gc.req.Cursor = Cursor{Path: f.Name, Offset: i, Encoding: EncodingByteOffset}
		}
		file := File{Path: f.Name, Content: content, HasContent: true}
		if gc.req.Cursor.Path == f.Name {
			file.Language = language
		}
		gc.req.Files = append(gc.req.Files, file)
	}
	if found != 1 {
		t.Fatalf("want exactly one cursor mark %q, found %d", cursorMark, found)
	}
	return gc
}

func runGolden(t *testing.T, tok *tokenizer.Tokenizer, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(data)
	gc := parseGolden(t, ar)
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.BuildStrategy(context.Background(), gc.req, gc.strategy)
	if err != nil {
		t.Fatal(err)
	}
	// Properties that hold for every case.
	if n := len(tok.EncodeWithSpecial(p.Text)); n != p.Tokens {
		t.Errorf("Tokens = %d, the tokenizer counts %d", p.Tokens, n)
	}
	if p.Tokens+gc.req.MaxNewTokens > b.Budget(gc.req) {
		t.Errorf("prompt %d + generation %d exceeds budget %d", p.Tokens, gc.req.MaxNewTokens, b.Budget(gc.req))
	}
	if !strings.HasSuffix(p.Text, FIMMiddle) || strings.Count(p.Text, FIMPrefix) != 1 {
		t.Errorf("malformed FIM block")
	}
	// A second build of the same request (warm caches) is identical.
	p2, err := b.BuildStrategy(context.Background(), gc.req, gc.strategy)
	if err != nil || p2.Text != p.Text || p2.Tokens != p.Tokens {
		t.Errorf("rebuild differs (err %v)", err)
	}

	got := map[string]string{"want.prompt": p.Text + "\n", "want.manifest": manifestText(p)}
	if *update {
		var files []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want.") {
				files = append(files, f)
			}
		}
		for _, n := range []string{"want.prompt", "want.manifest"} {
			files = append(files, txtar.File{Name: n, Data: []byte(got[n])})
		}
		ar.Files = files
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, n := range []string{"want.prompt", "want.manifest"} {
		var want []byte
		ok := false
		for _, f := range ar.Files {
			if f.Name == n {
				want, ok = f.Data, true
			}
		}
		if !ok {
			t.Errorf("%s missing; run go test ./contextpack -run TestGolden -update", n)
			continue
		}
		if !bytes.Equal(want, []byte(got[n])) {
			t.Errorf("%s differs (run with -update and review the diff):\n--- got ---\n%s\n--- want ---\n%s", n, got[n], want)
		}
	}
}

// manifestText renders a manifest one source per line.
func manifestText(p *Prompt) string {
	var sb strings.Builder
	m := p.Manifest
	fmt.Fprintf(&sb, "budget %d, generation %d, prompt %d, context %d of %d\n", m.TokenBudget, m.GenerationTokens,
		m.PromptTokens, m.ContextTokens, m.ContextBudget)
	for _, s := range m.Sources {
		inc := "dropped "
		if s.Included {
			inc = "included"
		}
		lines := "whole"
		if s.StartLine > 0 {
			lines = fmt.Sprintf("%d-%d", s.StartLine, s.EndLine)
		}
		fmt.Fprintf(&sb, "%s %-12s %s:%s tokens=%d: %s\n", inc, s.Kind, s.Path, lines, s.Tokens, s.Reason)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(&sb, "warning: %s\n", w)
	}
	return sb.String()
}

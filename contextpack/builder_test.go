package contextpack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/contextpack/internal/testcorpus"
)

// byteTok counts one token per byte: enough to test budgeting logic; the
// exact tokenizer has its own tests.
type byteTok = testcorpus.ByteTokens

func newTestBuilder(t *testing.T, ctxTokens int) *Builder {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ContextTokens = ctxTokens
	b, err := NewBuilder(cfg, byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildFileLevel(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 8192)
	src := "def f(x):\n    return x\n"
	p, err := b.Build(context.Background(), Request{
		Files:        []File{{Path: "a.py", Content: src, HasContent: true}},
		Cursor:       Cursor{Path: "a.py", Line: 1, Column: 11},
		MaxNewTokens: 32,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := FIMPrefix + "def f(x):\n    return " + FIMSuffix + "x\n" + FIMMiddle
	if p.Text != want {
		t.Fatalf("prompt = %q, want %q", p.Text, want)
	}
	if p.Tokens != 3+len(src) || p.Manifest.PromptTokens != p.Tokens {
		t.Fatalf("tokens = %d, manifest %d", p.Tokens, p.Manifest.PromptTokens)
	}
}

func TestBuildCutsAtLinesWithinBudget(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	for i := 0; i < 200; i++ {
		sb.WriteString("line line line line\n") // 20 bytes
	}
	src := sb.String()
	b := newTestBuilder(t, 200)
	p, err := b.Build(context.Background(), Request{
		Files:        []File{{Path: "a.txt", Content: src, HasContent: true}},
		Cursor:       Cursor{Path: "a.txt", Line: 100},
		MaxNewTokens: 40,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens+40 > 200 {
		t.Fatalf("prompt %d + generation 40 exceeds budget 200", p.Tokens)
	}
	pre := p.Text[len(FIMPrefix):strings.Index(p.Text, FIMSuffix)]
	suf := p.Text[strings.Index(p.Text, FIMSuffix)+len(FIMSuffix) : strings.Index(p.Text, FIMMiddle)]
	if !strings.HasSuffix(src[:100*20], pre) || !strings.HasPrefix(src[100*20:], suf) {
		t.Fatal("prefix/suffix are not the text adjacent to the cursor")
	}
	if len(pre)%20 != 0 || len(suf)%20 != 0 || len(pre) <= len(suf) {
		t.Fatalf("cut not at line boundaries or prefix not favoured: %d/%d", len(pre), len(suf))
	}
	if !strings.Contains(p.Manifest.Sources[0].Reason, "cut") {
		t.Fatalf("manifest does not say the prefix was cut: %+v", p.Manifest.Sources[0])
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 256)
	files := []File{{Path: "a.py", Content: "x = 1\n", HasContent: true}}
	cases := []struct {
		name string
		req  Request
		is   error
	}{
		{"unknown file", Request{Files: files, Cursor: Cursor{Path: "b.py"}}, ErrInvalidArgument},
		{"empty path", Request{Files: files}, ErrInvalidArgument},
		{"bad line", Request{Files: files, Cursor: Cursor{Path: "a.py", Line: 5}}, ErrInvalidArgument},
		{"duplicate", Request{Files: append(files, files[0]), Cursor: Cursor{Path: "a.py"}}, ErrInvalidArgument},
		{"budget", Request{Files: files, Cursor: Cursor{Path: "a.py"}, TokenBudget: 100, MaxNewTokens: 95}, ErrBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.Build(context.Background(), tc.req); !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
		})
	}
	_, err := b.Build(context.Background(), Request{
		Files:  []File{files[0], {Path: "b.py", Digest: Digest("not held")}},
		Cursor: Cursor{Path: "a.py"},
	})
	var me *MissingContentError
	if !errors.As(err, &me) || len(me.Paths) != 1 || me.Paths[0] != "b.py" {
		t.Fatalf("err = %v, want MissingContentError for b.py", err)
	}
	// A digest or base that is not one at all is a bad argument, not
	// content to resend.
	for _, req := range []Request{
		{Files: []File{files[0], {Path: "b.py", Digest: "sha256:00"}}},
		{Files: []File{files[0], {Path: "b.py", Digest: "md5:" + strings.Repeat("a", 64)}}},
		{Files: []File{files[0], {Path: "b.py", Digest: "sha256:" + strings.Repeat("A", 64)}}},
		{Base: "garbage"},
	} {
		req.Cursor = Cursor{Path: "a.py"}
		var ae *ArgumentError
		if _, err := b.Build(context.Background(), req); !errors.As(err, &ae) ||
			(ae.Field != "repository.files[1].digest" && ae.Field != "repository.base") {
			t.Errorf("%+v: %v, want an ArgumentError on the digest or base", req, err)
		}
	}
}

func TestBuildNeutralizesSpecialTokens(t *testing.T) {
	t.Parallel()
	b := newTestBuilder(t, 8192)
	p, err := b.Build(context.Background(), Request{
		Files:  []File{{Path: "a.py", Content: "s = '<|endoftext|>'\n", HasContent: true}},
		Cursor: Cursor{Path: "a.py", Line: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Text, "<|endoftext|>") {
		t.Fatal("literal special token reached the prompt")
	}
}

// A repository's index shrunk to a few files, grown back, and shrunk to
// others (removeAll filters shared lists once for many files) gives the
// prompts a fresh Builder gives.
func TestShrinkMatchesFresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := pyRepo(120, "shrink")
	// Files that share a base name and a directory with many others.
	for i := range 30 {
		all = append(all, File{Path: fmt.Sprintf("q%d/__init__.py", i), HasContent: true,
			Content: fmt.Sprintf("from p.m%d import helper_%d\n\ndef setup():\n    return helper_%d(%d)\n", i, i, i, i)})
	}
	// One Go package: its files are each other's context by directory.
	for i := range 20 {
		all = append(all, File{Path: fmt.Sprintf("g/f%d.go", i), HasContent: true,
			Content: fmt.Sprintf("package g\n\nfunc F%d(x int) int {\n\treturn F%d(x) + %d\n}\n", i, (i+1)%20, i)})
	}
	b := newTestBuilder(t, 4096)
	defer b.Close()
	steps := []struct {
		keep []int // indexes of all, the cursor in the first
	}{
		{nil}, // everything
		{[]int{3, 4, 120, 121}},
		{nil},
		{[]int{130, 5, 6, 7, 140}},
		{[]int{130, 7}},
		{nil},
		{[]int{150, 151}}, // two files of the Go package
	}
	for n, s := range steps {
		var files []File
		if s.keep == nil {
			files = slices.Clone(all)
		} else {
			for _, k := range s.keep {
				files = append(files, all[k])
			}
		}
		req := Request{RepoName: "r", Files: files, Cursor: Cursor{Path: files[0].Path, Line: 2}}
		got, err := b.Build(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fresh := newTestBuilder(t, 4096)
		want, err := fresh.Build(ctx, req)
		fresh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want.Text || got.Snapshot != want.Snapshot {
			t.Fatalf("step %d (%d files): the prompt differs from a fresh builder's", n, len(files))
		}
	}
}

// TestParseBoundIsSize checks that whether a file is parsed is decided by
// its size (MaxParseBytes), not by how long the parse takes: with the
// default Config a Python file of the largest size still parsed gets its
// scope headers and no warning, however slowly the machine parses it, and
// one a byte larger is plain text with a warning.
func TestParseBoundIsSize(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	if cfg.ParseTimeout < 10*time.Second {
		t.Fatalf("ParseTimeout %v: a wall-clock cutoff that ordinary parses reach on a busy machine makes prompts depend on the load", cfg.ParseTimeout)
	}
	b := newTestBuilder(t, 8192)
	defer b.Close()
	// Statement-dense Python: the slowest language per byte measured.
	var sb strings.Builder
	sb.WriteString("class Big:\n")
	for i := 0; sb.Len() < cfg.MaxParseBytes-200; i++ {
		fmt.Fprintf(&sb, "    def m%d(self, x):\n        return [y * %d for y in x if y.k(%d)]\n", i, i, i)
	}
	body := sb.String()
	for _, tc := range []struct {
		size int
		warn bool
	}{{cfg.MaxParseBytes, false}, {cfg.MaxParseBytes + 1, true}} {
		// The cursor on an empty line: the index holds the file itself
		// (a cursor line's text is left out of what is parsed).
		src := body + "\n    def last(self):\n        return 1 #"
		src += strings.Repeat(" ", tc.size-len(src)-1) + "\n"
		if len(src) != tc.size {
			t.Fatalf("built %d bytes, want %d", len(src), tc.size)
		}
		p, err := b.Build(context.Background(), Request{
			Files:        []File{{Path: "big.py", Content: src, HasContent: true}, {Path: "other.py", Content: "x = 1\n", HasContent: true}},
			Cursor:       Cursor{Path: "big.py", Offset: len(body), Encoding: EncodingByteOffset},
			RepoName:     "r",
			MaxNewTokens: 32,
		})
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(p.Manifest.Warnings, func(w string) bool { return strings.Contains(w, "too large to parse") })
		if warned != tc.warn || !tc.warn && len(p.Manifest.Warnings) > 0 {
			t.Errorf("%d bytes: warnings %q, want too large: %v", tc.size, p.Manifest.Warnings, tc.warn)
		}
		if !tc.warn && !strings.Contains(p.Text, "class Big:") {
			t.Errorf("%d bytes: the enclosing class's header is not in the prompt", tc.size)
		}
	}
}

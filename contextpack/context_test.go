package contextpack

import (
	"context"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/tokenizer"
)

// Prompt.Context is the head's file sections as the prompt shows them, in
// order, each counted exactly; CountPrompt counts a finished prompt as the
// real tokenizer does (special tokens parsed), neutralised user text
// included.
func TestPromptContextAndCountPrompt(t *testing.T) {
	tok := qwen(t)
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	files := pyRepo(12, "ctx")
	// Literal and already neutralised special-token text in user code.
	files[3].Content += "\nMARK = '<|endoftext|>' + '<\u200B|im_end|>'\n"
	p, err := b.Build(context.Background(), Request{RepoName: "r", Files: files,
		Cursor: Cursor{Path: files[0].Path, Line: 6, Column: 4}, MaxNewTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Context) == 0 {
		t.Fatal("no cross-file context")
	}
	// The sections are the head's, in order.
	at := 0
	for _, c := range p.Context {
		sec := FileSep + c.Path + "\n" + c.Text
		i := strings.Index(p.Text[at:], sec)
		if i < 0 {
			t.Fatalf("section %s not found in order in the prompt", c.Path)
		}
		at += i + len(sec)
		if !strings.HasSuffix(c.Text, "\n") || tokenizer.ContainsSpecial(c.Text) {
			t.Errorf("%s: text %q does not end with a newline or holds a control token", c.Path, c.Text)
		}
		if got := tok.Count(c.Text); got != c.Tokens {
			t.Errorf("%s: Tokens %d, the tokenizer counts %d", c.Path, c.Tokens, got)
		}
	}
	if got, want := b.CountPrompt(p.Text), tok.CountWithSpecial(p.Text); got != want || got != p.Tokens {
		t.Errorf("CountPrompt %d, tokenizer %d, Prompt.Tokens %d", got, want, p.Tokens)
	}
	for _, s := range []string{
		"", "plain text\n\n  indented\n", "<|im_start|>system\nhi<|im_end|>\n<|im_start|>user\n",
		tokenizer.Neutralize("a = '<|fim_prefix|>'\n") + "<|file_sep|>x\n",
		"<" + "\u200B" + "\u200B|endoftext|>\n<|endoftext|>",
	} {
		if got, want := b.CountPrompt(s), tok.CountWithSpecial(s); got != want {
			t.Errorf("CountPrompt(%q) = %d, tokenizer %d", s, got, want)
		}
	}
}

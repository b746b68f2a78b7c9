package contextpack

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// While the user types on one line, everything before the cursor file's
// block (repository context) stays byte-identical, and a cut prefix keeps
// its first line, so the backend's prompt cache is reused up to the cursor.
func TestPromptStableWhileTyping(t *testing.T) {
	t.Parallel()
	tok := qwen(t)
	b, err := NewBuilder(DefaultConfig(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs := pyRepo(12, "stable")
	var body strings.Builder
	body.WriteString("from .m1 import helper_1\nfrom .m2 import helper_2\n\n\nclass Worker:\n")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&body, "    def step_%d(self, value):\n        total = helper_1(value) + helper_2(value)\n        return total * %d\n\n", i, i)
	}
	body.WriteString("    def run(self, value):\n        result = helper_1(value)\n        ")
	cursorAt := body.Len()
	body.WriteString("\n        return result\n")
	target := File{Path: "p/worker.py", Content: body.String(), HasContent: true}
	files := append(fs, target)
	for _, budget := range []int{1024, 4096} {
		var firstCtx string
		firstLine := -1
		typed := ""
		for i, ch := range "result = helper_2(value" {
			typed += string(ch)
			content := target.Content[:cursorAt] + typed + target.Content[cursorAt:]
			files[len(files)-1] = File{Path: target.Path, Content: content, HasContent: true}
			p, err := b.Build(context.Background(), Request{RepoName: "r", Files: files, TokenBudget: budget,
				MaxNewTokens: 64, Cursor: Cursor{Path: target.Path, Offset: cursorAt + len(typed), Encoding: EncodingByteOffset}})
			if err != nil {
				t.Fatal(err)
			}
			ctxPart := p.Text[:strings.LastIndex(p.Text, FileSep)]
			line := p.Manifest.Sources[0].StartLine
			if i == 0 {
				firstCtx, firstLine = ctxPart, line
				if budget == 1024 && !strings.Contains(p.Manifest.Sources[0].Reason, "cut") {
					t.Fatalf("budget %d: prefix not cut; the test needs a cut prefix", budget)
				}
				continue
			}
			if ctxPart != firstCtx {
				t.Fatalf("budget %d, keystroke %d: repository context changed", budget, i)
			}
			if line != firstLine {
				t.Fatalf("budget %d, keystroke %d: prefix start moved from line %d to %d", budget, i, firstLine, line)
			}
		}
	}
}

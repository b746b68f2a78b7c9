package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/internal/repofs/repofstest"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/servertest"
	"github.com/infill-dev/infill/server/workspace"
)

// TestWorkspaceEndToEnd runs workspace mode through the HTTP surfaces of
// the real server in front of the real Ollama (tiny model): a file saved
// after start joins the prompt of the next request that names a file of the
// workspace (the backend's prompt count grows by it), absolute paths and
// requests naming no file are served from the workspace, Zed's Zeta
// requests get the workspace and its recent edits, and paths that climb
// out are refused in the dialect's error style.
func TestWorkspaceEndToEnd(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "shop")
	repofstest.WriteFiles(t, root, map[string]string{
		"cart.py": "from pricing import discounted_total\n\n\ndef checkout(items):\n    return \n",
	})
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	cfg := workspace.DefaultConfig()
	cfg.Quiet, cfg.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	set, err := workspace.OpenSet([]string{root}, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() }) // after the server's shutdown (registered later)
	srv := servertest.StartWith(t, servertest.Options{
		Config: func(c *server.Config) { c.Inference.DefaultMaxTokens = 8 },
		Deps:   func(d *server.Deps) { d.Workspaces = set },
	})
	ctx := context.Background()

	prefix := "from pricing import discounted_total\n\n\ndef checkout(items):\n    return "
	// Continue's Qwen multi-file template, naming the cursor file.
	openAI := func(path string) (*http.Response, completion) {
		t.Helper()
		prompt := "<|file_sep|>" + path + "\n<|fim_prefix|>" + prefix + "<|fim_suffix|>\n<|fim_middle|>"
		resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", map[string]any{"model": srv.Model, "prompt": prompt, "max_tokens": 8})
		var c completion
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return resp, c
	}
	resp, before := openAI("cart.py")
	if resp.StatusCode != http.StatusOK || before.Usage == nil || len(before.Choices) != 1 {
		t.Fatalf("before the save: %d %+v", resp.StatusCode, before)
	}

	// Saved after start, as an editor would.
	pricing := "def discounted_total(items, rate):\n    return sum(i.price for i in items) * (1 - rate)\n"
	repofstest.WriteFiles(t, root, map[string]string{"pricing.py": pricing})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := set.Default().Snapshot().File("pricing.py"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pricing.py not picked up within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, after := openAI("cart.py")
	if resp.StatusCode != http.StatusOK || after.Usage == nil || len(after.Choices) != 1 {
		t.Fatalf("after the save: %d %+v", resp.StatusCode, after)
	}
	// pricing.py is about 30 tokens, with its path line.
	if after.Usage.PromptTokens < before.Usage.PromptTokens+20 {
		t.Errorf("prompt tokens %d before the save, %d after: pricing.py is not in the prompt",
			before.Usage.PromptTokens, after.Usage.PromptTokens)
	}
	if after.Usage.CompletionTokens < 1 || after.Usage.CompletionTokens > 8 {
		t.Errorf("usage %+v", after.Usage)
	}

	// Tabby's agent sends the absolute path; a request naming no file
	// (a plain prompt and suffix) gets the workspace too.
	resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", map[string]any{"language": "python",
		"segments": map[string]any{"prefix": prefix, "suffix": "\n", "filepath": filepath.Join(root, "cart.py")}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"choices":[{`) {
		t.Errorf("tabby, absolute path: %d %s", resp.StatusCode, out)
	}
	resp, out = postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", map[string]any{"model": srv.Model, "prompt": prefix, "suffix": "\n", "max_tokens": 8})
	var plain completion
	if err := json.Unmarshal(out, &plain); err != nil || resp.StatusCode != http.StatusOK || plain.Usage == nil ||
		plain.Usage.PromptTokens < after.Usage.PromptTokens-10 {
		t.Errorf("no path: %d %s (prompt tokens, want about %d with the workspace)", resp.StatusCode, out, after.Usage.PromptTokens)
	}

	// Zed's Zeta request (testdata/zed), naming the file from its
	// worktree's root as Zed does, with no events: the workspace is the
	// repository and its change to pricing.py on disk the history; the
	// answer is the region between Zeta's markers, as Zed reads it.
	repofstest.WriteFiles(t, root, map[string]string{"pricing.py": pricing + "\n\nRATE = 0.1\n"})
	for deadline := time.Now().Add(10 * time.Second); len(set.Default().RecentEdits()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("pricing.py's change not recorded within 10s")
		}
	}
	zeta := "### Instruction:\nYou are a code completion assistant.\n\n### User Edits:\n\n\n\n### User Excerpt:\n\n" +
		"```shop/cart.py\n<|start_of_file|>\nfrom pricing import discounted_total\n\n\n<|editable_region_start|>\n" +
		"def checkout(items):\n    return <|user_cursor_is_here|>\n<|editable_region_end|>\n```\n\n### Response:\n"
	resp, out = postJSON(t, ctx, srv.HTTPAddr, "/api/generate", map[string]any{"model": srv.Model, "prompt": zeta, "raw": true,
		"stream": false, "options": map[string]any{"num_predict": 16, "temperature": 0.2}})
	var zr struct {
		Response        string `json:"response"`
		PromptEvalCount int    `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal(out, &zr); err != nil || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(zr.Response, "<|editable_region_start|>\n") || !strings.HasSuffix(zr.Response, "\n<|editable_region_end|>") ||
		zr.PromptEvalCount < 100 {
		t.Errorf("zeta: %d %s", resp.StatusCode, out)
	}

	// Refused paths: 400 for "..", 403 for a link out, in OpenAI's error
	// style, before anything reaches the backend.
	for path, status := range map[string]int{"../secret.py": 400, "out/x.py": 403} {
		resp, out := postJSON(t, ctx, srv.HTTPAddr, "/v1/completions", map[string]any{"language": "python",
			"segments": map[string]any{"prefix": "x = ", "suffix": "", "filepath": path}})
		var e struct {
			Error struct{ Message, Type string } `json:"error"`
		}
		if err := json.Unmarshal(out, &e); err != nil || resp.StatusCode != status || !strings.Contains(e.Error.Message, path) || e.Error.Type == "" {
			t.Errorf("path %q: %d %s, want %d with an error naming it", path, resp.StatusCode, out, status)
		}
	}
}

package lsp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infill-dev/infill/server/servertest"
)

// yegappanLSP is the commit of github.com/yegappan/lsp the Vim test and
// docs/editors.md were checked with. No registry this project installs
// from carries the plugin, so the test runs where $INFILL_YEGAPPAN_LSP
// names a checkout of it:
//
//	git clone https://github.com/yegappan/lsp ~/src/yegappan-lsp
//	git -C ~/src/yegappan-lsp checkout 33aef9d2f041d16f6e0c0adc9f486a5cf3724924
//	INFILL_YEGAPPAN_LSP=~/src/yegappan-lsp go test ./clients/internal/lsp -run Vim
const yegappanLSP = "33aef9d2f041d16f6e0c0adc9f486a5cf3724924"

// vimHarness follows the documented configuration
// (editors/vim9-yegappan-lsp.vim) in the test's vimrc. Once Vim has
// started it opens the file (yegappan/lsp starts `infill lsp` for its
// filetype), completes at the cursor through the plugin's omnifunc (as
// <C-x><C-o> calls it, waiting for its answer), adds a line and completes
// again below it, waits a moment for requests that must not come, writes
// what it saw as JSON and quits with :qa!.
const vimHarness = `
set virtualedit=onemore
func s:Complete(line)
  call cursor(a:line, 12)
  let start = g:LspOmniFunc(1, '')
  let n = 0
  while g:LspOmniCompletePending() && n < 6000
    sleep 10m
    let n += 1
  endwhile
  return #{start: start, items: g:LspOmniFunc(0, '')}
endfunc
func s:Run()
  execute 'edit' fnameescape($INFILL_FILE)
  let n = 0
  while !LspServerReady() && n < 3000
    sleep 10m
    let n += 1
  endwhile
  if !LspServerReady()
    call writefile([json_encode(#{error: 'the language server is not ready'})], $INFILL_OUT)
    qa!
  endif
  let first = s:Complete(10)
  call append(8, 'MARKER_EDIT_42 = 1')
  let second = s:Complete(11)
  sleep 1
  call writefile([json_encode(#{first: first, second: second})], $INFILL_OUT)
  qa!
endfunc
autocmd VimEnter * ++nested call s:Run()
`

// Vim 9 (Debian's 9.0) with yegappan/lsp runs the documented
// configuration against the built `infill lsp` and the real server and
// backend: completions come back through the plugin's omnifunc, the
// edit reaches the next prompt, the plugin's [null] answer to
// workspace/configuration (no "infill" section) is asked for once, and
// :qa! ends Vim.
func TestVimEndToEnd(t *testing.T) {
	t.Parallel()
	vim, err := exec.LookPath("vim")
	servertest.Require(t, err, "Vim 9 (apt-get install vim)")
	plugin := os.Getenv("INFILL_YEGAPPAN_LSP")
	if plugin == "" {
		t.Skip("set INFILL_YEGAPPAN_LSP to a checkout of github.com/yegappan/lsp at " + yegappanLSP + " (no package registry carries it)")
	}
	if out, err := exec.Command("git", "-C", plugin, "rev-parse", "HEAD").Output(); err == nil && strings.TrimSpace(string(out)) != yegappanLSP {
		t.Logf("yegappan/lsp at %s; the documentation was checked at %s", strings.TrimSpace(string(out)), yegappanLSP)
	}
	srv, w := startWatched(t)
	path := buildInfill(t)
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy, "geo/__init__.py": "from .circle import area\n"})
	dir := t.TempDir()
	pack := filepath.Join(dir, "pack", "plugins", "opt")
	if err := os.MkdirAll(pack, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(plugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(pack, "lsp")); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "infill-lsp.log")
	vimrc := filepath.Join(dir, "vimrc")
	// A vimrc of the user's: where the plugin is installed, then the
	// documented configuration.
	head := "set nocompatible\nlet &packpath = $INFILL_PACKPATH\n"
	if err := os.WriteFile(vimrc, []byte(head+configured(t, "vim9-yegappan-lsp.vim", srv.Addr, logFile)+vimHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	type completion struct {
		Start int
		Items []struct {
			Word string `json:"word"`
		}
	}
	var res struct {
		Error         string
		First, Second completion
	}
	runVimHarness(t, vim, vimrc, []string{"PATH=" + path, "INFILL_PACKPATH=" + dir,
		"INFILL_FILE=" + filepath.Join(root, "geo", "circle.py")}, nil, &res)
	if res.Error != "" {
		t.Fatalf("in Vim: %s", res.Error)
	}
	if n := settingsPulls(t, logFile); n != 1 {
		t.Errorf("the language server asked Vim for its settings %d times; want 1", n)
	}
	gens := w.finished(t, 2)
	first, second := gens[0], gens[1]
	for i, c := range []completion{res.First, res.Second} {
		g := gens[i]
		if g.tokens > 64 {
			t.Errorf("request %d: %d tokens; the configuration's initializationOptions allow 64", i+1, g.tokens)
		}
		// The item is the backend's text (the plugin trims its leading
		// space: spacing aside).
		if c.Start != 11 || (g.text != "" && (len(c.Items) != 1 || fields(c.Items[0].Word) != fields(g.text))) {
			t.Errorf("request %d: start %d, items %+v; want start 11 and the backend's %q", i+1, c.Start, c.Items, g.text)
		}
		t.Logf("request %d: the backend generated %d tokens, %q; Vim got %+v", i+1, g.tokens, g.text, c.Items)
	}
	if !strings.Contains(second.prompt, "MARKER_EDIT_42 = 1\n") || strings.Contains(first.prompt, "MARKER_EDIT_42") {
		t.Errorf("the edit is not in the second prompt alone:\n%s\n---\n%s", first.prompt, second.prompt)
	}
	if !strings.Contains(second.prompt, "    return <|fim_suffix|>") {
		t.Errorf("the second prompt's cursor is not after \"return \":\n%s", second.prompt)
	}
}

// runVimHarness runs Vim headless (Ex mode) with vimrc and env added to
// its environment, for at most 3 minutes, and decodes into res the JSON
// its harness wrote to $INFILL_OUT. It fails the test when Vim does not
// exit, fails or writes nothing, with Vim's output and logs() (nil: none).
func runVimHarness(t *testing.T, vim, vimrc string, env []string, logs func() string, res any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vim, "-Nu", vimrc, "-i", "NONE", "-es")
	cmd.Dir = t.TempDir() // not the repository: the configuration finds it from the file
	cmd.Env = append(append(os.Environ(), env...), "INFILL_OUT="+out)
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	why := func() string {
		if logs == nil {
			return string(b)
		}
		return string(b) + logs()
	}
	if ctx.Err() != nil {
		t.Fatalf("Vim did not exit (:qa!) within 3 minutes:\n%s", why())
	}
	if err != nil {
		t.Fatalf("vim: %v\n%s", err, why())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("Vim wrote no result: %v\n%s", err, why())
	}
	if err := json.Unmarshal(data, res); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// fields is s with its runs of white space as one space.
func fields(s string) string { return strings.Join(strings.Fields(s), " ") }

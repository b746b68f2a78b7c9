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

// nvimInit drives Neovim's built-in LSP client (0.7's API, which later
// versions keep): it starts `infill lsp` for the buffer, asks for a
// completion, edits the buffer (a new line holding a four-byte
// character, then a keystroke after that character: incremental
// didChange with UTF-16 columns), asks again, writes both answers as
// JSON and stops the client (shutdown, exit).
const nvimInit = `
local bin, server, root, file, out = vim.env.INFILL_BIN, vim.env.INFILL_SERVER_ADDR, vim.env.INFILL_ROOT, vim.env.INFILL_FILE, vim.env.INFILL_OUT
local function fail(msg)
  local f = io.open(out, 'w'); f:write(vim.json.encode({ error = msg })); f:close()
  vim.cmd('qa!')
end
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({
  name = 'infill',
  cmd = { bin, '--server', server, 'lsp', '--log-level', 'debug' },
  root_dir = root,
  init_options = { maxTokens = 8 },
  flags = { debounce_text_changes = 0 },
})
if not id then return fail('start_client failed') end
vim.lsp.buf_attach_client(buf, id)
if not vim.wait(30000, function() local c = vim.lsp.get_client_by_id(id); return c ~= nil and c.initialized end, 20) then
  return fail('the server did not initialize')
end
local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = 9, character = 11 } }
local first = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 60000)
vim.api.nvim_buf_set_lines(buf, 8, 8, false, { 'MARKER_EDIT_42 = "😀"' })
vim.api.nvim_buf_set_text(buf, 8, 22, 8, 22, { 'x' }) -- after the emoji (byte 22)
params.position.line = 10
local second = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 60000)
local f = io.open(out, 'w')
f:write(vim.json.encode({ first = first, second = second, line = vim.api.nvim_buf_get_lines(buf, 8, 9, false)[1] }))
f:close()
vim.lsp.stop_client(id)
vim.wait(10000, function() return vim.lsp.get_client_by_id(id) == nil end, 20)
vim.cmd('qa!')
`

// Debian's Neovim (0.7) with its built-in LSP client talks to the built
// `infill lsp` binary, which asks the real server and backend: a
// completion comes back as an item at the cursor, and after an edit the
// next request's prompt (what the backend received) holds the edit,
// applied where Neovim's UTF-16 columns put it.
func TestNeovimEndToEnd(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	servertest.Require(t, err, "Neovim (apt-get install neovim)")
	srv, w := startWatched(t)

	bin := filepath.Join(t.TempDir(), "infill")
	build := exec.Command("go", "build", "-o", bin, "github.com/infill-dev/infill/clients/cmd/infill")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building infill: %v\n%s", err, out)
	}
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy, "geo/__init__.py": "from .circle import area\n"})
	file := filepath.Join(root, "geo", "circle.py")
	dir := t.TempDir()
	initLua := filepath.Join(dir, "init.lua")
	if err := os.WriteFile(initLua, []byte(nvimInit), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-u", initLua)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "INFILL_BIN="+bin, "INFILL_SERVER_ADDR="+srv.Addr, "INFILL_ROOT="+root,
		"INFILL_FILE="+file, "INFILL_OUT="+out, "XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_DATA_HOME="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	var res struct {
		Error         string
		Line          string
		First, Second json.RawMessage
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if res.Error != "" {
		t.Fatalf("in Neovim: %s", res.Error)
	}
	if res.Line != `MARKER_EDIT_42 = "😀x"` {
		t.Fatalf("the buffer's line %q: the edit script went wrong", res.Line)
	}

	first, second := w.next(t), w.next(t)
	wait(t, "the first generation", first.done)
	wait(t, "the second generation", second.done)
	for i, r := range []json.RawMessage{res.First, res.Second} {
		g := []*generation{first, second}[i]
		items := nvimItems(t, r)
		if g.err != nil {
			t.Fatalf("request %d: the backend: %v", i+1, g.err)
		}
		// The word before the cursor is empty (it follows "return "), so
		// the item's text is the backend's.
		if g.text != "" && (len(items) != 1 || items[0] != g.text) {
			t.Errorf("request %d: items %q; want the backend's %q", i+1, items, g.text)
		}
		t.Logf("request %d: the backend generated %d tokens, %q; Neovim got %q", i+1, g.tokens, g.text, items)
	}
	if strings.Contains(first.prompt, "MARKER_EDIT_42") {
		t.Error("the first prompt holds the edit made after it")
	}
	if !strings.Contains(second.prompt, `MARKER_EDIT_42 = "😀x"`+"\n") {
		t.Errorf("the second prompt lacks the edit as Neovim made it:\n%s", second.prompt)
	}
	if !strings.Contains(second.prompt, "    return <|fim_suffix|>") {
		t.Errorf("the second prompt's cursor is not after \"return \" on the line below the edit:\n%s", second.prompt)
	}
}

// nvimItems returns the newText of each completion item in a
// buf_request_sync answer ({client_id: {result = ...}}, which Lua's JSON
// encoder writes as an array for client 1).
func nvimItems(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	type answer struct {
		Err    any `json:"err"`
		Error  any `json:"error"`
		Result *struct {
			Items []struct {
				TextEdit struct {
					NewText string `json:"newText"`
				} `json:"textEdit"`
			} `json:"items"`
		} `json:"result"`
	}
	var list []answer
	if err := json.Unmarshal(raw, &list); err != nil {
		var byID map[string]answer
		if err := json.Unmarshal(raw, &byID); err != nil {
			t.Fatalf("answer %s: %v", raw, err)
		}
		for _, a := range byID {
			list = append(list, a)
		}
	}
	if len(list) != 1 || list[0].Result == nil || list[0].Err != nil || list[0].Error != nil {
		t.Fatalf("answer %s: want one client's result", raw)
	}
	var out []string
	for _, it := range list[0].Result.Items {
		out = append(out, it.TextEdit.NewText)
	}
	return out
}

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

// nvimHarness follows the documented Neovim 0.7 configuration
// (editors/nvim-0.7.lua) in the test's init.lua: it counts the
// workspace/configuration requests Neovim answers and, once Neovim has
// started, opens the file (the
// configuration's FileType autocommand starts `infill lsp` and attaches
// it), asks for a completion, edits the buffer (a new line holding a
// four-byte character, then a keystroke after that character:
// incremental didChange with UTF-16 columns), asks again, opens a second
// file of the repository (the same client must take it), waits a moment
// for requests that must not come, writes what it saw as JSON and stops
// the client (shutdown, exit). With INFILL_ADVERTISE_CONFIGURATION=1 the
// client advertises workspace/configuration, which 0.7 does not and later
// versions do; 0.7's handler answers as theirs do.
const nvimHarness = `
local file, file2, out = vim.env.INFILL_FILE, vim.env.INFILL_FILE2, vim.env.INFILL_OUT
if vim.env.INFILL_ADVERTISE_CONFIGURATION == '1' then -- as later versions do
  local make = vim.lsp.protocol.make_client_capabilities
  vim.lsp.protocol.make_client_capabilities = function()
    local c = make()
    c.workspace.configuration = true
    return c
  end
end
local asked = 0
local answer = vim.lsp.handlers['workspace/configuration']
vim.lsp.handlers['workspace/configuration'] = function(...)
  asked = asked + 1
  return answer(...)
end
local function finish(res)
  local f = io.open(out, 'w'); f:write(vim.json.encode(res)); f:close()
  vim.cmd('qa!')
end
local function attached(b)
  for _, c in pairs(vim.lsp.buf_get_clients(b)) do return c end
end
-- After startup, as a user opens a file (filetype detection is on by then).
vim.api.nvim_create_autocmd('VimEnter', { once = true, nested = true, callback = function()
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local client
if not vim.wait(30000, function() client = attached(buf); return client ~= nil and client.initialized end, 20) then
  return finish({ error = 'no initialized infill client for the buffer' })
end
local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = 9, character = 11 } }
local first = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 60000)
vim.api.nvim_buf_set_lines(buf, 8, 8, false, { 'MARKER_EDIT_42 = "😀"' })
vim.api.nvim_buf_set_text(buf, 8, 22, 8, 22, { 'x' }) -- after the emoji (byte 22)
params.position.line = 10
local second = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 60000)
local line = vim.api.nvim_buf_get_lines(buf, 8, 9, false)[1]
vim.cmd('edit ' .. vim.fn.fnameescape(file2))
local buf2 = vim.api.nvim_get_current_buf()
vim.wait(5000, function() return attached(buf2) ~= nil end, 20)
vim.wait(1000) -- a settings loop would show here
local other = attached(buf2)
finish({
  first = first, second = second, line = line, asked = asked,
  omnifunc = vim.api.nvim_buf_get_option(buf, 'omnifunc'), root = client.config.root_dir,
  clients = #vim.lsp.get_active_clients(), same = other ~= nil and other.id == client.id,
})
end })
`

// Debian's Neovim (0.7) runs the documented configuration
// (editors/nvim-0.7.lua, the address aside) with its built-in LSP
// client against the built `infill lsp`, which asks the real server and
// backend: a completion comes back as an item at the cursor, and after
// an edit the next request's prompt (what the backend received) holds
// the edit, applied where Neovim's UTF-16 columns put it. Neovim answers
// workspace/configuration with [null] (no "infill" section): the
// language server asks once, and the defaults hold.
func TestNeovimEndToEnd(t *testing.T) {
	t.Parallel()
	nvim, err := exec.LookPath("nvim")
	servertest.Require(t, err, "Neovim (apt-get install neovim)")
	srv, w := startWatched(t)
	path := buildInfill(t)
	for _, c := range []struct {
		name      string
		advertise bool
	}{{"as 0.7 advertises", false}, {"advertising workspace/configuration", true}} {
		t.Run(c.name, func(t *testing.T) {
			pulls := 0
			if c.advertise {
				pulls = 1 // Neovim answers [null]: no "infill" section
			}
			neovimSession(t, nvim, path, srv.Addr, w, c.advertise, pulls)
		})
	}
}

func neovimSession(t *testing.T, nvim, path, addr string, w *watched, advertise bool, wantPulls int) {
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy, "geo/__init__.py": "from .circle import area\n"})
	file := filepath.Join(root, "geo", "circle.py")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "infill-lsp.log")
	initLua := filepath.Join(dir, "init.lua")
	if err := os.WriteFile(initLua, []byte(configured(t, "nvim-0.7.lua", addr, logFile)+nvimHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-u", initLua)
	cmd.Dir = t.TempDir() // not the repository: the configuration finds it from the file
	cmd.Env = append(os.Environ(), "PATH="+path, "INFILL_FILE="+file, "INFILL_FILE2="+filepath.Join(root, "geo", "__init__.py"),
		"INFILL_OUT="+out, "XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_DATA_HOME="+dir)
	if advertise {
		cmd.Env = append(cmd.Env, "INFILL_ADVERTISE_CONFIGURATION=1")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	var res struct {
		Error, Line, Omnifunc, Root string
		First, Second               json.RawMessage
		Asked, Clients              int
		Same                        bool
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
	if res.Root != root || res.Clients != 1 || !res.Same {
		t.Errorf("root_dir %q (want %q), %d clients, second file on the same client: %v; want one client for the repository", res.Root, root, res.Clients, res.Same)
	}
	if res.Omnifunc != "v:lua.vim.lsp.omnifunc" {
		t.Errorf("omnifunc %q: the configuration's on_attach did not run", res.Omnifunc)
	}
	if pulls := settingsPulls(t, logFile); res.Asked != wantPulls || pulls != wantPulls {
		t.Errorf("Neovim answered %d workspace/configuration requests, the language server logged %d; want %d", res.Asked, pulls, wantPulls)
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
		if g.tokens > 64 {
			t.Errorf("request %d: %d tokens; the configuration's init_options allow 64", i+1, g.tokens)
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

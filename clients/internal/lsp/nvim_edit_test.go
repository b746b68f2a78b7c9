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

// nvimEditHarness drives editors/nvim-edit-predictions.lua as a user
// does: it opens the file, renames area's parameter (an edit the language
// server records), asks for a prediction (<M-p>'s function) on the last
// line, waits for the edit's virtual lines, then applies it (<M-a>'s) and
// writes what it saw.
const nvimEditHarness = `
local file, out = vim.env.INFILL_FILE, vim.env.INFILL_OUT
local function finish(res)
  local f = io.open(out, 'w'); f:write(vim.json.encode(res)); f:close()
  vim.cmd('qa!')
end
vim.api.nvim_create_autocmd('VimEnter', { once = true, nested = true, callback = function()
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local ready = function()
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do return c.initialized end
end
if not vim.wait(30000, ready, 20) then return finish({ error = 'no initialized infill client' }) end
vim.api.nvim_buf_set_text(buf, 3, 10, 3, 10, { 'adius' }) -- def area(r): -> def area(radius):
vim.api.nvim_win_set_cursor(0, { 9, 11 })                  -- after "    return "
_G.infill_edit_predict()
local ns = vim.api.nvim_get_namespaces()['infill_edit']
local marks
if not vim.wait(30000, function()
  marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
  for _, m in ipairs(marks) do if m[4].virt_lines then return true end end
end, 20) then return finish({ error = 'no prediction shown' }) end
local shown = {}
for _, m in ipairs(marks) do
  for _, vl in ipairs(m[4].virt_lines or {}) do table.insert(shown, vl[1][1]) end
end
_G.infill_edit_accept()
finish({ shown = shown, lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
  left = #vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {}) })
end })
`

// Debian's Neovim (0.7) runs editors/nvim-edit-predictions.lua against
// the built infill lsp and the real server, whose backend answers as a
// Zeta model would (rewriter): the edit the model makes away from the
// cursor (the rename finished in area's body, with the user's rename in
// the prompt's history) shows as virtual lines, and accepting applies
// it.
func TestNeovimEditPredictions(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	servertest.Require(t, err, "Neovim (apt-get install neovim)")
	be := &rewriter{}
	be.set(func(region string) string {
		return strings.Replace(region, "math.pi * r ** 2", "math.pi * radius ** 2", 1)
	})
	srv := servertest.StartLocal(t, be)
	path := buildInfill(t)
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy})
	dir := t.TempDir()
	initLua := filepath.Join(dir, "init.lua")
	logFile := filepath.Join(dir, "infill-lsp.log")
	if err := os.WriteFile(initLua, []byte(configured(t, "nvim-edit-predictions.lua", srv.Addr, logFile)+nvimEditHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-u", initLua)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+path, "INFILL_FILE="+filepath.Join(root, "geo", "circle.py"), "INFILL_OUT="+out,
		"XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_DATA_HOME="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	var res struct {
		Error string
		Shown []string
		Lines []string
		Left  int
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if res.Error != "" {
		t.Fatalf("in Neovim: %s", res.Error)
	}
	if len(res.Shown) != 1 || res.Shown[0] != "+ adius" {
		t.Errorf("virtual lines %q; want the edit's text", res.Shown)
	}
	if len(res.Lines) < 6 || res.Lines[3] != "def area(radius):" || res.Lines[5] != "    return math.pi * radius ** 2" || res.Left != 0 {
		t.Errorf("after accepting: %q, %d marks left", res.Lines, res.Left)
	}
	if p := be.lastPrompt(); !strings.Contains(p, "-def area(r):\n+def area(radius):") {
		t.Errorf("the prompt lacks the rename Neovim made:\n%s", p)
	}
}

-- infill's edit predictions, Neovim 0.7 and later (in place of the completion configuration):
-- the predicted next edit, wherever it is near the cursor. <M-p> in normal or insert mode, or a
-- pause in insert mode, asks infill/predictEdit; the lines the edit replaces are highlighted and
-- its new text shows as virtual lines below them; <M-a> applies it, <M-d> or typing on drops it.
local infill_clients = {} -- one language server per repository
vim.api.nvim_create_autocmd('FileType', {
  pattern = { 'python', 'go', 'rust', 'javascript', 'typescript', 'c', 'cpp', 'java' },
  callback = function(ev)
    local dir = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(ev.buf), ':p:h')
    local git = vim.fn.finddir('.git', dir .. ';')
    local root = git ~= '' and vim.fn.fnamemodify(git, ':p:h:h') or dir
    local id = infill_clients[root]
    if not (id and vim.lsp.get_client_by_id(id)) then
      id = vim.lsp.start_client({
        name = 'infill',
        cmd = { 'infill', 'lsp', '--server', '127.0.0.1:50051' },
        root_dir = root,
        init_options = { editPrediction = true },
      })
      infill_clients[root] = id
    end
    vim.lsp.buf_attach_client(ev.buf, id)
  end,
})

local ns = vim.api.nvim_create_namespace('infill_edit')
local shown = {} -- by buffer: { edit = TextEdit, encoding = the client's }

local function infill_client(buf)
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
    if c.name == 'infill' then return c end
  end
end

function _G.infill_edit_dismiss(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  shown[buf] = nil
end

function _G.infill_edit_predict()
  local buf = vim.api.nvim_get_current_buf()
  local client = infill_client(buf)
  if not client then return end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  client.request('infill/predictEdit', params, function(err, res)
    _G.infill_edit_dismiss(buf)
    if err or not res or res == vim.NIL or not res.edit or res.edit == vim.NIL then return end
    local r = res.edit.range
    for line = r.start.line, r['end'].line do
      if r.start.line ~= r['end'].line or r.start.character ~= r['end'].character then
        vim.api.nvim_buf_set_extmark(buf, ns, line, 0, { line_hl_group = 'DiffDelete' })
      end
    end
    local virt = {}
    for _, l in ipairs(vim.split(res.edit.newText, '\n', { plain = true })) do
      table.insert(virt, { { '+ ' .. l, 'DiffAdd' } })
    end
    vim.api.nvim_buf_set_extmark(buf, ns, r['end'].line, 0, { virt_lines = virt })
    shown[buf] = { edit = res.edit, encoding = client.offset_encoding }
  end, buf)
end

function _G.infill_edit_accept()
  local buf = vim.api.nvim_get_current_buf()
  local s = shown[buf]
  if not s then return end
  _G.infill_edit_dismiss(buf)
  vim.lsp.util.apply_text_edits({ s.edit }, buf, s.encoding)
end

vim.keymap.set({ 'n', 'i' }, '<M-p>', _G.infill_edit_predict)
vim.keymap.set({ 'n', 'i' }, '<M-a>', _G.infill_edit_accept)
vim.keymap.set({ 'n', 'i' }, '<M-d>', function() _G.infill_edit_dismiss() end)
vim.api.nvim_create_autocmd('CursorHoldI', { callback = _G.infill_edit_predict })
vim.api.nvim_create_autocmd({ 'TextChangedI', 'InsertLeave' }, { callback = function(ev) _G.infill_edit_dismiss(ev.buf) end })

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
        init_options = { maxTokens = 64 },
        on_attach = function(_, buf)
          vim.api.nvim_buf_set_option(buf, 'omnifunc', 'v:lua.vim.lsp.omnifunc')  -- <C-x><C-o> completes
        end,
      })
      infill_clients[root] = id
    end
    vim.lsp.buf_attach_client(ev.buf, id)
  end,
})

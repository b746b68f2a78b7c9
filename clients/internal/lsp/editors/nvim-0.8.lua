vim.api.nvim_create_autocmd('FileType', {
  pattern = { 'python', 'go', 'rust', 'javascript', 'typescript', 'c', 'cpp', 'java' },
  callback = function(ev)
    local dir = vim.fs.dirname(vim.api.nvim_buf_get_name(ev.buf))
    local git = vim.fs.find('.git', { upward = true, path = dir })[1]
    vim.lsp.start({
      name = 'infill',
      cmd = { 'infill', 'lsp', '--server', '127.0.0.1:50051' },
      root_dir = git and vim.fs.dirname(git) or dir,
      init_options = { maxTokens = 64 },
      on_attach = function(_, buf)
        vim.bo[buf].omnifunc = 'v:lua.vim.lsp.omnifunc'  -- <C-x><C-o> completes
      end,
    })
  end,
})

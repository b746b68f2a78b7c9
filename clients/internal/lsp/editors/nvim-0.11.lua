vim.lsp.config('infill', {
  cmd = { 'infill', 'lsp', '--server', '127.0.0.1:50051' },
  filetypes = { 'python', 'go', 'rust', 'javascript', 'typescript', 'c', 'cpp', 'java' },
  root_markers = { '.git' },
  init_options = { maxTokens = 64 },
})
vim.lsp.enable('infill')
vim.lsp.inline_completion.enable(true)                       -- 0.12
vim.keymap.set('i', '<C-f>', vim.lsp.inline_completion.get)  -- accept the ghost text

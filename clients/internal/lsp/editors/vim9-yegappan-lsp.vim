filetype plugin on  " the plugin starts servers by filetype; a ~/.vimrc turns off Vim's defaults
packadd lsp
call LspAddServer([#{
      \ name: 'infill',
      \ filetype: ['python', 'go', 'rust', 'javascript', 'typescript', 'c', 'cpp', 'java'],
      \ path: 'infill',
      \ args: ['lsp', '--server', '127.0.0.1:50051'],
      \ initializationOptions: #{maxTokens: 64},
      \ rootSearch: ['.git/'],
      \ }])

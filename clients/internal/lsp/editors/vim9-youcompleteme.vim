" Debian 12: apt-get install vim-nox vim-youcompleteme (YCM needs Vim with +python3)
set encoding=utf-8
filetype plugin on  " YCM completes by filetype; a ~/.vimrc turns off Vim's defaults
packadd youcompleteme
let g:ycm_server_python_interpreter = '/usr/bin/python3'  " ycmd's modules are Debian's
let g:ycm_language_server = [{
      \ 'name': 'infill',
      \ 'cmdline': ['infill', 'lsp', '--server', '127.0.0.1:50051'],
      \ 'filetypes': ['python', 'go', 'rust', 'javascript', 'typescript', 'c', 'cpp', 'java'],
      \ 'project_root_files': ['.git/HEAD', '.git'],
      \ 'capabilities': {'workspace': {'configuration': v:true}},
      \ }]
" infill's settings come from this file (a global extra conf loads without a question)
let g:ycm_global_ycm_extra_conf = '~/.vim/infill_ycm_extra_conf.py'

# ~/.vim/infill_ycm_extra_conf.py: YCM answers infill's workspace/configuration
# request with config_sections['infill'] (the settings `infill lsp --help` lists).
# ycmd shows only completions of one line and at most 80 bytes: stop at the
# line's end, and keep them short.
def Settings(**kwargs):
    if kwargs['language'] == 'infill':
        return {'config_sections': {'infill': {'maxTokens': 16, 'stop': ['\n']}}}
    return {}

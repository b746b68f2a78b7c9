package lsp

import (
	"embed"
	"path"
	"strings"
)

//go:embed editors
var editorFiles embed.FS

// EditorConfig is one editor's configuration for `infill lsp`, as
// docs/editors.md shows it and `infill lsp --help` prints it; the
// end-to-end tests run the ones for editors they can drive, with
// DefaultServer replaced by their server's address.
type EditorConfig struct {
	Title string // the editor, and the versions the configuration is for
	Name  string // its file under editors/; the extension is the language
	Text  string
}

// DefaultServer is the infill server's address in EditorConfigs:
// infill-server's and scripts/run.sh's default.
const DefaultServer = "127.0.0.1:50051"

// Lang is the configuration's language, as a Markdown fence names it.
func (c EditorConfig) Lang() string {
	switch path.Ext(c.Name) {
	case ".el":
		return "elisp"
	case ".vim":
		return "vim"
	case ".py":
		return "python"
	}
	return strings.TrimPrefix(path.Ext(c.Name), ".")
}

// EditorConfigs returns the editor configurations in the order the
// documentation gives them.
func EditorConfigs() []EditorConfig {
	list := []EditorConfig{
		{Title: "Neovim 0.11 and later", Name: "nvim-0.11.lua"},
		{Title: "Neovim 0.8 to 0.10", Name: "nvim-0.8.lua"},
		{Title: "Neovim 0.7 (Debian 12's)", Name: "nvim-0.7.lua"},
		{Title: "Neovim 0.7 and later: edit predictions", Name: "nvim-edit-predictions.lua"},
		{Title: "Vim 9 with YouCompleteMe (Debian 12's vim-youcompleteme)", Name: "vim9-youcompleteme.vim"},
		{Title: "Vim 9 with YouCompleteMe: ~/.vim/infill_ycm_extra_conf.py", Name: "vim9-youcompleteme-extra-conf.py"},
		{Title: "Vim 9 with yegappan/lsp", Name: "vim9-yegappan-lsp.vim"},
		{Title: "Helix (languages.toml)", Name: "helix.toml"},
		{Title: "Emacs, eglot", Name: "eglot.el"},
		{Title: `VS Code (extension "Generic LSP Client (v2)", settings.json)`, Name: "vscode-glspc.json"},
	}
	for i := range list {
		b, err := editorFiles.ReadFile("editors/" + list[i].Name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		list[i].Text = string(b)
	}
	return list
}

package lsp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/infill-dev/infill/server/servertest"
)

// docsEditors is the documentation that shows the editor configurations.
const docsEditors = "../../../docs/editors.md"

// The editor configurations docs/editors.md shows under "Editor
// configurations" are EditorConfigs, byte for byte and in order, and
// nothing else: what the documentation shows is what the tests run.
func TestEditorConfigsDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(docsEditors)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, section, ok := strings.Cut(doc, "\n### Editor configurations\n")
	if !ok {
		t.Fatalf("%s has no section \"### Editor configurations\"", docsEditors)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	blocks := regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```$").FindAllStringSubmatch(section, -1)
	configs := EditorConfigs()
	if len(blocks) != len(configs) {
		t.Errorf("the section has %d code blocks; want the %d configurations", len(blocks), len(configs))
	}
	for i, c := range configs {
		if i >= len(blocks) {
			break
		}
		if blocks[i][1] != c.Lang() || blocks[i][2] != c.Text {
			t.Errorf("code block %d is not editors/%s (a %s block):\n%s", i+1, c.Name, c.Lang(), blocks[i][0])
		}
		if c.Lang() != "python" && !strings.Contains(c.Text, DefaultServer) {
			t.Errorf("editors/%s does not name the server %s", c.Name, DefaultServer)
		}
	}
}

// The configurations no test drives in its editor parse at least: JSON
// and TOML here, Python (YouCompleteMe's extra conf) in python3, Lua in Neovim's LuaJIT (the language all versions
// share), and the Vim one in Vim 9 against a stand-in for the plugin
// that checks what LspAddServer is given.
func TestEditorConfigsParse(t *testing.T) {
	t.Parallel()
	for _, c := range EditorConfigs() {
		switch c.Lang() {
		case "json":
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Text), &v); err != nil {
				t.Errorf("editors/%s: %v", c.Name, err)
			}
		case "toml":
			var v map[string]any
			if _, err := toml.Decode(c.Text, &v); err != nil {
				t.Errorf("editors/%s: %v", c.Name, err)
			}
		}
	}
	t.Run("python", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		servertest.Require(t, err, "Python 3 (apt-get install python3)")
		parseEach(t, "python", func(file string) *exec.Cmd {
			return exec.Command(python, "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')", file)
		})
	})
	t.Run("lua", func(t *testing.T) {
		nvim, err := exec.LookPath("nvim")
		servertest.Require(t, err, "Neovim (apt-get install neovim)")
		parseEach(t, "lua", func(file string) *exec.Cmd {
			cmd := exec.Command(nvim, "--headless", "--clean", "-u", "NONE", "-c",
				`lua local f, err = loadfile(vim.env.SNIPPET); if not f then io.stderr:write(err) vim.cmd('cquit') end`, "-c", "qa!")
			cmd.Env = append(os.Environ(), "SNIPPET="+file)
			return cmd
		})
	})
	t.Run("vim", func(t *testing.T) {
		vim, err := exec.LookPath("vim")
		servertest.Require(t, err, "Vim 9 (apt-get install vim)")
		c, _ := editorConfig("vim9-yegappan-lsp.vim")
		dir := t.TempDir()
		stub := filepath.Join(dir, "pack", "stub", "opt", "lsp", "plugin", "lsp.vim")
		if err := os.MkdirAll(filepath.Dir(stub), 0o755); err != nil {
			t.Fatal(err)
		}
		// The stand-in writes what it was given.
		if err := os.WriteFile(stub, []byte("func LspAddServer(list)\n  call writefile([json_encode(a:list)], $OUT)\nendfunc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		vimrc := filepath.Join(dir, "vimrc")
		if err := os.WriteFile(vimrc, []byte("set nocompatible\nlet &packpath = $PACK\n"+c.Text+"qa!\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.json")
		cmd := exec.Command(vim, "-Nu", vimrc, "-i", "NONE", "-es")
		cmd.Env = append(os.Environ(), "PACK="+dir, "OUT="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("vim: %v\n%s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("LspAddServer was not called: %v", err)
		}
		var servers []struct {
			Name, Path            string
			Filetype, Args        []string
			RootSearch            []string
			InitializationOptions map[string]any
		}
		if err := json.Unmarshal(b, &servers); err != nil || len(servers) != 1 {
			t.Fatalf("LspAddServer(%s): %v", b, err)
		}
		s := servers[0]
		if s.Path != "infill" || strings.Join(s.Args, " ") != "lsp --server "+DefaultServer || len(s.Filetype) == 0 ||
			s.InitializationOptions["maxTokens"] == nil || len(s.RootSearch) == 0 {
			t.Errorf("LspAddServer(%s)", b)
		}
	})
}

// parseEach writes each configuration in lang to a file and runs the
// command parse makes for it, which must succeed.
func parseEach(t *testing.T, lang string, parse func(file string) *exec.Cmd) {
	t.Helper()
	for _, c := range EditorConfigs() {
		if c.Lang() != lang {
			continue
		}
		file := filepath.Join(t.TempDir(), c.Name)
		if err := os.WriteFile(file, []byte(c.Text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := parse(file).CombinedOutput(); err != nil {
			t.Errorf("editors/%s does not parse: %v\n%s", c.Name, err, out)
		}
	}
}

// editorConfig returns the configuration in file name.
func editorConfig(name string) (EditorConfig, bool) {
	for _, c := range EditorConfigs() {
		if c.Name == name {
			return c, true
		}
	}
	return EditorConfig{}, false
}

// configured returns the configuration in file name as a user would
// have it, with one change: the server is addr, and `infill lsp` logs at
// debug to logFile (the arguments after the documented '127.0.0.1:50051'
// in its Lua table or Vim list).
func configured(t *testing.T, name, addr, logFile string) string {
	t.Helper()
	c, ok := editorConfig(name)
	if !ok {
		t.Fatalf("no editors/%s", name)
	}
	quoted := "'" + DefaultServer + "'"
	if strings.Count(c.Text, quoted) != 1 {
		t.Fatalf("editors/%s names %s %d times; want once", name, quoted, strings.Count(c.Text, quoted))
	}
	return strings.Replace(c.Text, quoted, fmt.Sprintf("'%s', '--log-level', 'debug', '--log-file', '%s'", addr, logFile), 1)
}

// buildInfill builds the infill tool and returns a PATH that finds it
// first, as `infill` (the name the configurations run).
func buildInfill(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "infill"), "github.com/infill-dev/infill/clients/cmd/infill")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building infill: %v\n%s", err, out)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// settingsPulls counts the workspace/configuration requests `infill lsp`
// logged (at debug, one line per request).
func settingsPulls(t *testing.T, logFile string) int {
	t.Helper()
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("the language server's log: %v", err)
	}
	return strings.Count(string(b), "asking the editor for settings (workspace/configuration)")
}

package lsp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// ycmHarness follows the documented configuration
// (editors/vim9-youcompleteme.vim) in the test's vimrc. Vim runs in Ex
// mode (-es), where YCM's timers still run while the harness sleeps. Once
// Vim has started it opens the file, waits for ycmd and then for ycmd to
// say the language server for the filetype is ready (YCM's timer asks
// ycmd to parse the buffer once ycmd is up, and ycmd starts `infill lsp`),
// asks for a completion at the cursor as g:ycm_key_invoke_completion
// (<C-Space>) does (ycm_state's semantic completion request) and waits
// for its answer, adds a line and completes again below it, waits a
// moment for requests that must not come, writes what it saw as JSON and
// quits with :qa! (YCM then stops ycmd, which stops `infill lsp`).
const ycmHarness = `
set virtualedit=onemore
let g:ycm_keep_logfiles = 1
let g:ycm_log_level = "debug"
func s:Until(expr, ms)
  let n = 0
  while !eval(a:expr) && n < a:ms / 10
    sleep 10m
    let n += 1
  endwhile
  return eval(a:expr)
endfunc
func s:Complete(line)
  call cursor(a:line, 12)
  let start = reltime()
  py3 ycm_state.SendCompletionRequest(True)
  if !s:Until('py3eval("ycm_state.CompletionRequestReady()")', 60000)
    return #{error: 'no answer to the completion request'}
  endif
  let r = py3eval('ycm_state.GetCompletionResponse()')
  let r.ms = float2nr(reltimefloat(reltime(start)) * 1000)
  return r
endfunc
func s:Run()
  execute 'edit' fnameescape($INFILL_FILE)
  if !s:Until('py3eval("ycm_state.CheckIfServerIsReady()")', 60000)
    return #{error: 'ycmd is not ready'}
  endif
  py3 << trim EOF
    from ycm.client.base_request import BaseRequest
    def infill_ready():
      return bool(BaseRequest().GetDataFromHandler('ready', display_message=False, payload={'subserver': vim.eval('&filetype')}))
  EOF
  if !s:Until('py3eval("infill_ready()")', 60000)
    return #{error: 'the infill language server is not ready'}
  endif
  let first = s:Complete(10)
  call append(8, 'MARKER_EDIT_42 = 1')
  let second = s:Complete(11)
  sleep 1
  return #{first: first, second: second}
endfunc
func s:Main()
  call writefile([json_encode(s:Run())], $INFILL_OUT)
  qa!
endfunc
autocmd VimEnter * ++nested call s:Main()
`

// ycmdCompletionTimeout is how long ycmd waits for a language server's
// completion (REQUEST_TIMEOUT_COMPLETION in its language_server_completer).
const ycmdCompletionTimeout = 5 * time.Second

// ycmCapability is the documented configuration's line that advertises
// workspace/configuration.
const ycmCapability = "      \\ 'capabilities': {'workspace': {'configuration': v:true}},\n"

// Vim 9 (Debian's vim-nox) with YouCompleteMe and ycmd (Debian's
// vim-youcompleteme) runs the documented configuration against the
// built `infill lsp` and the real server and backend, in the three ways
// YCM answers infill's workspace/configuration request: with the extra
// conf's config_sections['infill'] (the documented files), with [null]
// (an extra conf with no such section), and not at all when the
// configuration does not advertise the capability (then the settings
// come as initializationOptions and didChangeConfiguration, from the
// extra conf's "ls"). Each time completions come back through YCM, the
// edit reaches the next prompt, the settings reach the backend, the
// language server asks a bounded number of times (ycmd follows
// initialized with an empty didChangeConfiguration, the LSP's signal to
// ask again: two questions where it may ask, none where it may not), and
// :qa! ends Vim.
func TestVimYouCompleteMeEndToEnd(t *testing.T) {
	t.Parallel()
	vim, err := exec.LookPath("vim")
	servertest.Require(t, err, "Vim 9 (apt-get install vim-nox)")
	if out, err := exec.Command(vim, "--version").Output(); err != nil || !strings.Contains(string(out), "+python3") {
		servertest.Require(t, fmt.Errorf("%s lacks +python3 (%v)", vim, err), "Vim with +python3 (apt-get install vim-nox)")
	}
	_, err = os.Stat("/usr/share/vim/vimfiles/pack/dist-bundle/opt/youcompleteme")
	servertest.Require(t, err, "YouCompleteMe (apt-get install vim-youcompleteme)")
	documented, ok := editorConfig("vim9-youcompleteme-extra-conf.py")
	if !ok {
		t.Fatal("no editors/vim9-youcompleteme-extra-conf.py")
	}
	srv, w := startWatched(t)
	path := buildInfill(t)
	// The first generation loads the model: on a loaded machine longer
	// than ycmd waits (5 s). Load it first.
	warm := &infillv1.CompleteRequest{
		Repository: &infillv1.Repository{Name: "warm", Files: []*infillv1.File{{Path: "a.py", Content: proto.String("x = ")}}},
		Cursor:     &infillv1.Cursor{Path: "a.py", Offset: 4, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
		Generation: &infillv1.GenerationOptions{MaxTokens: 1},
	}
	if _, err := dialReal(t, srv.Addr).Complete(t.Context(), warm); err != nil {
		t.Fatalf("warming the model: %v", err)
	}
	wait(t, "the warming generation", w.next(t).done)
	shown, i := 0, 0
	for _, c := range []struct {
		name       string
		capability bool
		extraConf  string
		pulls      int
		settings   ycmSettings // at the backend
	}{
		{"the documented files", true, documented.Text, 2, ycmSettings{16, true}},
		{"no infill section", true, "def Settings(**kwargs):\n    return {}\n", 2, ycmSettings{inference.DefaultConfig().DefaultMaxTokens, false}},
		{"settings pushed, workspace/configuration not advertised", false,
			"def Settings(**kwargs):\n    return {'ls': {'maxTokens': 4, 'stop': ['\\n']}, 'config_sections': {'infill': {'maxTokens': 8}}}\n",
			0, ycmSettings{4, true}},
	} {
		i++
		t.Run(c.name, func(t *testing.T) {
			shown += ycmSession(t, i, vim, path, srv.Addr, w, c.capability, c.extraConf, c.pulls, c.settings)
		})
	}
	// The random-weight model's text decides which items ycmd keeps; one
	// at least must have reached the completion menu.
	if shown == 0 && !t.Failed() {
		t.Error("no completion reached Vim: the test showed nothing")
	}
}

// ycmSettings are what a test's settings make of a request at the
// backend.
type ycmSettings struct {
	maxTokens int
	lineStop  bool // "\n" is a stop string
}

func ycmSession(t *testing.T, n int, vim, path, addr string, w *watched, capability bool, extraConf string, wantPulls int, want ycmSettings) (shown int) {
	root := writeRepo(t, map[string]string{"geo/circle.py": circlePy, "geo/__init__.py": "from .circle import area\n"})
	// A repository name of the session's own: its prompts say it.
	named := filepath.Join(filepath.Dir(root), fmt.Sprintf("proj%d", n))
	if err := os.Rename(root, named); err != nil {
		t.Fatal(err)
	}
	root = named
	repoLine := "<|repo_name|>" + filepath.Base(root) + "\n"
	// What a repository's .git holds, and the configuration looks for.
	if err := os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	logFile := filepath.Join(home, "infill-lsp.log")
	conf := configured(t, "vim9-youcompleteme.vim", addr, logFile)
	if !capability {
		if strings.Count(conf, ycmCapability) != 1 {
			t.Fatalf("editors/vim9-youcompleteme.vim lacks the line %q", ycmCapability)
		}
		conf = strings.Replace(conf, ycmCapability, "", 1)
	}
	// The user's files: ~/.vimrc holding the documented configuration,
	// and the extra conf where it says.
	vimrc := filepath.Join(home, ".vimrc")
	if err := os.WriteFile(vimrc, []byte("set nocompatible\n"+conf+ycmHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".vim"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".vim", "infill_ycm_extra_conf.py"), []byte(extraConf), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir() // ycmd's logs
	// Vim's exit stops ycmd, and ycmd stops `infill lsp` (shutdown, exit).
	t.Cleanup(func() {
		for _, p := range []struct{ what, arg string }{{"ycmd", tmp}, {"infill lsp", logFile}} {
			if pids := waitExited(p.arg, 30*time.Second); len(pids) > 0 {
				t.Errorf("%s still runs 30s after Vim exited (killed: %v)", p.what, pids)
			}
		}
	})
	type completion struct {
		Error       string
		StartColumn int `json:"completion_start_column"`
		Completions []struct {
			Word string `json:"word"`
		}
		Ms int64 // from the request to its answer, in Vim
	}
	var res struct {
		Error         string
		First, Second completion
	}
	runVimHarness(t, vim, vimrc, []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + tmp,
		"INFILL_FILE=" + filepath.Join(root, "geo", "circle.py")}, func() string { return ycmdLogs(tmp) }, &res)
	if res.Error != "" || res.First.Error != "" || res.Second.Error != "" {
		t.Fatalf("in Vim: %+v\n%s", res, ycmdLogs(tmp))
	}
	if n := settingsPulls(t, logFile); n != wantPulls {
		t.Errorf("the language server asked YCM for its settings %d times; want %d", n, wantPulls)
	}
	// project_root_files made the repository the root (Vim runs
	// elsewhere): the prompts name it.
	first := w.matching(t, "the first completion", func(p string) bool {
		return strings.HasPrefix(p, repoLine) && !strings.Contains(p, "MARKER_EDIT_42")
	})
	second := w.matching(t, "the second completion", func(p string) bool {
		return strings.HasPrefix(p, repoLine) && strings.Contains(p, "MARKER_EDIT_42")
	})
	// ycmd gives up on a completion after 5 s (on a loaded machine the
	// tiny model can take that long) and answers without one; its log
	// says so. Only a request Vim waited that long for can be the one.
	loggedTimeout := strings.Contains(ycmdLogs(tmp), "ResponseTimeoutException")
	for i, c := range []completion{res.First, res.Second} {
		g := []*generation{first, second}[i]
		wait(t, fmt.Sprintf("generation %d", i+1), g.done)
		timedOut := loggedTimeout && time.Duration(c.Ms)*time.Millisecond >= ycmdCompletionTimeout
		// A generation ends in an error only when cancelled (a later
		// request replaces the one ycmd gave up on).
		if g.err != nil && !(timedOut && g.ctxErr != nil) {
			t.Fatalf("request %d: the backend: %v (context: %v)", i+1, g.err, g.ctxErr)
		}
		if got := (ycmSettings{g.maxTokens, slices.Contains(g.stop, "\n")}); got != want {
			t.Errorf("request %d: at the backend %+v; the settings say %+v", i+1, got, want)
		}
		// The item is the backend's text (spacing aside), starting at the
		// cursor, where ycmd keeps it: it drops a textEdit of several lines
		// and a candidate longer than 80 bytes.
		switch {
		case timedOut && len(c.Completions) == 0:
			t.Logf("request %d: the backend took %v; ycmd gave up after %v (Vim waited %d ms)", i+1, g.took, ycmdCompletionTimeout, c.Ms)
		case c.StartColumn != 12:
			t.Errorf("request %d: start column %d; want 12, the cursor's", i+1, c.StartColumn)
		case strings.Contains(g.text, "\n") || len(g.text) > 80:
			if len(c.Completions) != 0 {
				t.Errorf("request %d: items %+v; ycmd drops the backend's %q", i+1, c.Completions, g.text)
			}
		case fields(g.text) != "":
			if len(c.Completions) != 1 || fields(c.Completions[0].Word) != fields(g.text) {
				t.Errorf("request %d: items %+v; want the backend's %q", i+1, c.Completions, g.text)
			}
			shown++
		}
		t.Logf("request %d: the backend generated %d tokens, %q; Vim got %+v", i+1, g.tokens, g.text, c.Completions)
	}
	if !strings.Contains(second.prompt, "MARKER_EDIT_42 = 1\n") || strings.Contains(first.prompt, "MARKER_EDIT_42") {
		t.Errorf("the edit is not in the second prompt alone:\n%s\n---\n%s", first.prompt, second.prompt)
	}
	if !strings.Contains(second.prompt, "    return <|fim_suffix|>") {
		t.Errorf("the second prompt's cursor is not after \"return \":\n%s", second.prompt)
	}
	return shown
}

// ycmdLogs returns the logs ycmd and YCM left under dir, for a failure's
// message.
func ycmdLogs(dir string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		b.WriteString("\n--- " + filepath.Base(f) + "\n")
		b.Write(data)
	}
	return b.String()
}

// waitExited waits until no process has arg in its command line, for at
// most d; it kills and returns those still running then.
func waitExited(arg string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := processesWith(arg)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill() //nolint:errcheck // it may have exited
				}
			}
			return pids
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith returns the processes with arg in their command line.
func processesWith(arg string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(b), arg) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

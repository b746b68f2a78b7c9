package server_test

import (
	"bufio"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/auth"
	"github.com/infill-dev/infill/server/servertest"
)

// Tabby's agent as Tabby's editor plugins run it: the npm package
// tabby-agent at this version, checked against the registry's integrity
// hash (the package bundles its dependencies: node runs it as it is).
const (
	tabbyAgentVersion   = "1.5.0"
	tabbyAgentIntegrity = "sha512-A502A5KUU8nO8T5J+Z6nq5hwXqG8/Yzh1dPcqwgm7W7Umm/f36OBUY5y22WQgySXOmTRyD0LKM59BdWXasxDEg=="
)

// fetchHook is loaded into the agent's node (--require) before the agent:
// it writes every fetch the agent makes (URL, method, status) to
// $INFILL_FETCH_LOG and refuses those not under $INFILL_FETCH_ALLOWED, so
// the test sees what would have left the machine and nothing does.
const fetchHook = `
const fs = require('fs');
const real = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = typeof input === 'string' ? input : (input.url || String(input));
  const method = (init && init.method) || (input && input.method) || 'GET';
  let status = 'refused';
  try {
    if (!url.startsWith(process.env.INFILL_FETCH_ALLOWED)) throw new TypeError('fetch failed: the test refuses ' + url);
    const res = await real(input, init);
    status = String(res.status);
    return res;
  } finally {
    fs.appendFileSync(process.env.INFILL_FETCH_LOG, JSON.stringify({url, method, status}) + '\n');
  }
};
`

// tabbyAgentCLI fetches the pinned agent with npm (npm's cache keeps it),
// checks its integrity and returns its command-line entry point.
func tabbyAgentCLI(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	servertest.Require(t, err, "npm (apt-get install npm), to fetch tabby-agent")
	dir := t.TempDir()
	pack := exec.Command(npm, "pack", "--silent", "tabby-agent@"+tabbyAgentVersion)
	pack.Dir = dir
	if out, err := pack.CombinedOutput(); err != nil {
		servertest.Require(t, fmt.Errorf("npm pack tabby-agent@%s: %v\n%s", tabbyAgentVersion, err, out), "tabby-agent from the npm registry")
	}
	tgz := filepath.Join(dir, "tabby-agent-"+tabbyAgentVersion+".tgz")
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(b)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != tabbyAgentIntegrity {
		t.Fatalf("tabby-agent@%s: integrity %s; want %s", tabbyAgentVersion, got, tabbyAgentIntegrity)
	}
	if out, err := exec.Command("tar", "-xzf", tgz, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return filepath.Join(dir, "package", "dist", "cli.js")
}

// tabbyAgent is one agent process, spoken to in its JSON-lines protocol
// (what vim-tabby 1.x used): [id, {func, args}] calls the agent's method,
// [id, result] answers, [0, event] are its events.
type tabbyAgent struct {
	t        *testing.T
	cmd      *exec.Cmd
	in       io.WriteCloser
	fetchLog string

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan json.RawMessage
	events  []tabbyEvent
	changed chan struct{}
	done    chan struct{}
}

type tabbyEvent struct {
	Event  string `json:"event"`
	Status string `json:"status"`
}

// startTabbyAgent runs the agent with home as its home directory
// (~/.tabby-client/agent: its config file and the data it keeps), its
// fetches refused outside endpoint.
func startTabbyAgent(t *testing.T, node, cli, home, endpoint string) *tabbyAgent {
	t.Helper()
	dir := t.TempDir() // this process's: the home may be another's too
	hook := filepath.Join(dir, "fetch-hook.js")
	if err := os.WriteFile(hook, []byte(fetchHook), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &tabbyAgent{t: t, fetchLog: filepath.Join(dir, "fetches.jsonl"), waiting: map[int]chan json.RawMessage{},
		changed: make(chan struct{}, 1), done: make(chan struct{})}
	a.cmd = exec.Command(node, "--require", hook, cli)
	a.cmd.Env = append(os.Environ(), "HOME="+home, "INFILL_FETCH_LOG="+a.fetchLog, "INFILL_FETCH_ALLOWED="+endpoint+"/")
	a.cmd.Stderr = os.Stderr
	var err error
	if a.in, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go a.read(out)
	t.Cleanup(a.stop)
	return a
}

func (a *tabbyAgent) read(out io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg []json.RawMessage
		var id int
		if json.Unmarshal(sc.Bytes(), &msg) != nil || len(msg) != 2 || json.Unmarshal(msg[0], &id) != nil {
			a.t.Errorf("tabby-agent wrote %q", sc.Text())
			continue
		}
		a.mu.Lock()
		if id == 0 {
			var e tabbyEvent
			if json.Unmarshal(msg[1], &e) == nil {
				a.events = append(a.events, e)
			}
			select {
			case a.changed <- struct{}{}:
			default:
			}
		} else if ch := a.waiting[id]; ch != nil {
			delete(a.waiting, id)
			ch <- msg[1]
		}
		a.mu.Unlock()
	}
}

// call calls the agent's method fn and decodes its answer into out.
func (a *tabbyAgent) call(fn string, out any, args ...any) {
	a.t.Helper()
	if args == nil {
		args = []any{}
	}
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	ch := make(chan json.RawMessage, 1)
	a.waiting[id] = ch
	a.mu.Unlock()
	line, err := json.Marshal([]any{id, map[string]any{"func": fn, "args": args}})
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.in.Write(append(line, '\n')); err != nil {
		a.t.Fatalf("tabby-agent %s: %v", fn, err)
	}
	select {
	case raw := <-ch:
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				a.t.Fatalf("tabby-agent %s answered %s: %v", fn, raw, err)
			}
		}
	case <-a.done:
		a.t.Fatalf("tabby-agent exited during %s", fn)
	case <-time.After(time.Minute):
		a.t.Fatalf("tabby-agent %s: no answer within a minute", fn)
	}
}

// waitStatus waits until the agent's status is want.
func (a *tabbyAgent) waitStatus(want string) {
	a.t.Helper()
	deadline := time.After(time.Minute)
	for {
		var status string
		a.call("getStatus", &status)
		if status == want {
			return
		}
		select {
		case <-a.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			a.t.Fatalf("tabby-agent's status %q after a minute; want %q (events %+v)", status, want, a.eventsSoFar())
		}
	}
}

func (a *tabbyAgent) eventsSoFar() []tabbyEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]tabbyEvent(nil), a.events...)
}

// fetches returns the agent's fetches so far.
func (a *tabbyAgent) fetches() []agentFetch {
	a.t.Helper()
	b, err := os.ReadFile(a.fetchLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		a.t.Fatal(err)
	}
	var out []agentFetch
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var f agentFetch
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			a.t.Fatalf("fetch log %q: %v", line, err)
		}
		out = append(out, f)
	}
	return out
}

type agentFetch struct{ URL, Method, Status string }

// stop finalizes the agent (it sends its stats then) and ends it.
func (a *tabbyAgent) stop() {
	a.in.Close()
	a.cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may have exited
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		a.cmd.Process.Kill() //nolint:errcheck // it may have exited
	}
	a.cmd.Wait() //nolint:errcheck // killed or interrupted
}

// completionPosts counts the fetches that POST /v1/completions to
// endpoint; one the server did not answer 200 fails the test.
func completionPosts(t *testing.T, fetches []agentFetch, endpoint string) int {
	t.Helper()
	n := 0
	for _, f := range fetches {
		if f.URL == endpoint+"/v1/completions" && f.Method == "POST" {
			n++
			if f.Status != "200" {
				t.Errorf("POST /v1/completions: %s", f.Status)
			}
		}
	}
	return n
}

// outside returns the fetches not to endpoint.
func outside(fetches []agentFetch, endpoint string) []string {
	var out []string
	for _, f := range fetches {
		if !strings.HasPrefix(f.URL, endpoint+"/") {
			out = append(out, f.Method+" "+f.URL)
		}
	}
	return out
}

// writeTabbyConfig writes the agent's config file in home, as
// docs/editors.md shows it, and returns home.
func writeTabbyConfig(t *testing.T, home, endpoint, token, more string) string {
	t.Helper()
	dir := filepath.Join(home, ".tabby-client", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("[server]\nendpoint = %q\ntoken = %q\n%s", endpoint, token, more)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// Tabby's agent (tabby-agent 1.5.0 from npm, the agent Tabby's editor
// plugins run) against the real server with tokens on and the tiny
// backend, configured by ~/.tabby-client/agent/config.toml as
// docs/editors.md says: with a valid token it is "ready" and completions
// come from infill's /v1/completions; the server's /v1beta/server_setting
// turns its usage reports to Tabby's cloud off, which it keeps for the
// endpoint, so that its next session sends nothing beyond infill's
// address; with a wrong token it says "unauthorized"; and with the
// config file's [anonymousUsageTracking] disable = true it sends nothing
// beyond infill's address from its first session on. (Its first session
// without that line sends two usage events before it reads the server's
// settings, and one with a wrong token, which never reads them: the agent's
// order, logged below, which the documentation tells users about.)
func TestTabbyAgent(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	servertest.Require(t, err, "Node.js (apt-get install nodejs)")
	cli := tabbyAgentCLI(t)
	tf := newTokenFile(t, map[string]string{"editor": "complete"})
	srv := servertest.StartWith(t, servertest.Options{Config: func(c *server.Config) { c.Auth.TokenFile = tf.path }})
	endpoint := "http://" + srv.HTTPAddr
	session := map[string]any{"clientProperties": map[string]any{"session": map[string]any{"client": "infill test"}}}
	text := "import math\n\n\ndef area(r):\n    return "
	complete := map[string]any{"filepath": "geo/circle.py", "language": "python", "text": text + "\n", "position": len(text), "manually": true}
	const telemetryOff = "\n[anonymousUsageTracking]\ndisable = true\n"

	t.Run("valid token", func(t *testing.T) {
		home := writeTabbyConfig(t, t.TempDir(), endpoint, tf.tok["editor"], "")
		a := startTabbyAgent(t, node, cli, home, endpoint)
		var ok bool
		a.call("initialize", &ok, session)
		a.waitStatus("ready")
		var res struct {
			ID      string
			Choices []struct {
				Index int
				Text  string
			}
		}
		a.call("provideCompletions", &res, complete)
		completions := completionPosts(t, a.fetches(), endpoint)
		// The answer's id is the server's; the random model's text may be
		// one the agent's post-processing drops, so no choice is required.
		if completions == 0 || !strings.HasPrefix(res.ID, "cmpl-") {
			t.Errorf("%d POST /v1/completions, answer %+v; want the server's completion", completions, res)
		}
		t.Logf("tabby-agent's answer: %+v", res)

		// The server's settings reach the agent: its usage reports are off.
		deadline := time.Now().Add(time.Minute)
		for {
			var cfg struct {
				AnonymousUsageTracking struct{ Disable bool } `json:"anonymousUsageTracking"`
			}
			a.call("getConfig", &cfg)
			if cfg.AnonymousUsageTracking.Disable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("tabby-agent's anonymousUsageTracking.disable is still false a minute after it connected")
			}
			time.Sleep(100 * time.Millisecond)
		}
		a.stop()
		t.Logf("the first session's fetches outside infill (refused by the test): %v", outside(a.fetches(), endpoint))

		// It keeps them for the endpoint: the next session sends nothing
		// to Tabby's cloud.
		again := startTabbyAgent(t, node, cli, home, endpoint)
		again.call("initialize", &ok, session)
		again.waitStatus("ready")
		again.call("provideCompletions", &res, complete)
		again.stop()
		// It did complete (else sending nothing outside proves nothing).
		if completionPosts(t, again.fetches(), endpoint) == 0 {
			t.Error("the second session sent no POST /v1/completions")
		}
		if out := outside(again.fetches(), endpoint); len(out) > 0 {
			t.Errorf("the second session fetched %v", out)
		}
	})

	t.Run("wrong token", func(t *testing.T) {
		a := startTabbyAgent(t, node, cli, writeTabbyConfig(t, t.TempDir(), endpoint, auth.NewToken(), ""), endpoint)
		var ok bool
		a.call("initialize", &ok, session)
		a.waitStatus("unauthorized")
		a.stop()
		t.Logf("fetches outside infill (refused by the test): %v", outside(a.fetches(), endpoint))
	})

	t.Run("telemetry off in the config file", func(t *testing.T) {
		for _, token := range []string{tf.tok["editor"], auth.NewToken()} {
			a := startTabbyAgent(t, node, cli, writeTabbyConfig(t, t.TempDir(), endpoint, token, telemetryOff), endpoint)
			var ok bool
			a.call("initialize", &ok, session)
			want := "ready"
			if token != tf.tok["editor"] {
				want = "unauthorized"
			}
			a.waitStatus(want)
			if want == "ready" {
				var res any
				a.call("provideCompletions", &res, complete)
			}
			a.stop()
			if want == "ready" && completionPosts(t, a.fetches(), endpoint) == 0 {
				t.Errorf("%s: the agent sent no POST /v1/completions", want)
			}
			if out := outside(a.fetches(), endpoint); len(out) > 0 {
				t.Errorf("%s: the agent fetched %v", want, out)
			}
		}
	})
}

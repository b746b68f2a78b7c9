// Command lspbench measures what `infill lsp` adds to a keystroke's
// completion: an editor's keystroke (an incremental didChange and a
// textDocument/inlineCompletion request, over the stdio pipes of the
// built `infill lsp` process) against the same keystroke sent straight
// to an infill server with the Go client library (the best a plugin
// linked with the client could do). Each path has its own infill-server
// (the same binary and flags), both in front of one fakeollama, paced or
// instant, so what differs is the LSP layer: the editor's JSON-RPC, the
// process hop, the document and workspace bookkeeping and the request
// building. Rounds alternate which path goes first; each round types
// the same character on both paths, and the tool checks that both sent
// the backend the same prompt (fakeollama's /fake/last).
//
// It is not a test: bench/lspbench/run.sh builds the binaries, runs it
// and writes bench/lspbench/results/REPORT.md.
//
//	lspbench -infill BIN -server BIN -fake BIN -src DIR -rounds 300 -out DIR
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

func main() {
	var o options
	flag.StringVar(&o.infillBin, "infill", "", "the built infill command-line tool")
	flag.StringVar(&o.serverBin, "server", "", "the built infill-server")
	flag.StringVar(&o.fakeBin, "fake", "", "the built fakeollama")
	flag.StringVar(&o.src, "src", "", "directory whose .go files (tests left out) make the repository")
	flag.StringVar(&o.cursorFile, "cursor-file", "client.go", "the file typed in, under -src")
	flag.StringVar(&o.cursorAfter, "cursor-after", "func (c *Client) send(", "type on a new line after the first line holding this")
	flag.IntVar(&o.rounds, "rounds", 300, "measured keystrokes per phase")
	flag.IntVar(&o.warmup, "warmup", 30, "keystrokes per phase before measuring")
	flag.StringVar(&o.phases, "phases", "paced,instant", "paced (20 ms + 16 × 5 ms) and/or instant (16 tokens at once)")
	flag.StringVar(&o.out, "out", "", "directory for summary.json and samples.csv")
	flag.StringVar(&o.logs, "logs", "", "directory for the processes' logs (default: -out)")
	flag.StringVar(&o.report, "report", "", "write the Markdown report here")
	flag.StringVar(&o.commit, "commit", "", "the commit measured, for the report")
	flag.Parse()
	o.loadStart = loadAverage()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "lspbench:", err)
		os.Exit(1)
	}
}

type options struct {
	infillBin, serverBin, fakeBin string
	src, cursorFile, cursorAfter  string
	rounds, warmup                int
	phases, out, logs             string
	report, commit                string
	loadStart                     string
}

// phaseResult is one phase's measurements (milliseconds).
type phaseResult struct {
	Name        string    `json:"name"`
	Fake        string    `json:"fake"`
	LSP         []float64 `json:"lsp_ms"`
	Direct      []float64 `json:"direct_ms"`
	Mismatches  int       `json:"prompt_mismatches"`
	Mismatch    []string  `json:"first_mismatch,omitempty"` // round, the two prompts' sha256`
	GRPCBytes   []int     `json:"grpc_request_bytes"`
	LSPBytes    []int     `json:"lsp_message_bytes"`
	EmptyAnswer int       `json:"empty_answers"`
}

type summary struct {
	Files     int           `json:"files"`
	RepoBytes int           `json:"repo_bytes"`
	Cursor    string        `json:"cursor"`
	Rounds    int           `json:"rounds"`
	Warmup    int           `json:"warmup"`
	Phases    []phaseResult `json:"phases"`
}

func run(o options) error {
	if o.infillBin == "" || o.serverBin == "" || o.fakeBin == "" || o.src == "" || o.out == "" {
		return errors.New("-infill, -server, -fake, -src and -out are required")
	}
	if o.logs == "" {
		o.logs = o.out
	}
	for _, d := range []string{o.out, o.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	repo, err := copyRepo(o.src, filepath.Join(o.logs, "repo"))
	if err != nil {
		return err
	}
	sum := summary{Rounds: o.rounds, Warmup: o.warmup}
	loaded, _, err := infill.LoadRepository(repo, infill.LoadOptions{})
	if err != nil {
		return err
	}
	for _, f := range loaded.GetFiles() {
		sum.Files++
		sum.RepoBytes += len(f.GetContent())
	}
	for _, name := range strings.Split(o.phases, ",") {
		var fakeArgs []string
		switch name {
		case "paced":
			fakeArgs = []string{"-tokens", "16", "-prompt-delay", "20ms", "-token-delay", "5ms"}
		case "instant":
			fakeArgs = []string{"-tokens", "16", "-prompt-delay", "0", "-token-delay", "0"}
		default:
			return fmt.Errorf("unknown phase %q", name)
		}
		res, cursor, err := phase(o, name, fakeArgs, repo)
		if err != nil {
			return fmt.Errorf("phase %s: %w", name, err)
		}
		sum.Cursor = cursor
		sum.Phases = append(sum.Phases, res)
		fmt.Fprintf(os.Stderr, "lspbench: %s: lsp p50 %.2f ms, direct p50 %.2f ms, %d prompt mismatches\n",
			name, pct(res.LSP, 50), pct(res.Direct, 50), res.Mismatches)
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.json"), b, 0o644); err != nil {
		return err
	}
	if o.report == "" {
		return nil
	}
	return os.WriteFile(o.report, []byte(render(o, sum)), 0o644)
}

// render writes the report.
func render(o options, sum summary) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# `infill lsp`: what the LSP layer adds to a keystroke\n\n")
	p("Generated by `bench/lspbench/run.sh` (one run; machines are noisy, so compare within it).\n\n")
	p("- Commit measured: %s; %s.\n", o.commit, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	p("- Machine: %s, %d cores shared with other work (load average %s at the start, %s at the end); %s.\n",
		cpuModel(), runtime.NumCPU(), o.loadStart, loadAverage(), runtime.Version())
	p("- Repository: the %d `.go` files (tests left out) of `%s`, %d KB; cursor: %s.\n",
		sum.Files, filepath.ToSlash(o.src), sum.RepoBytes/1024, sum.Cursor)
	p("- Each round types one character on both paths, in alternating order: **infill lsp** is an editor's\n"+
		"  `textDocument/didChange` + `textDocument/inlineCompletion` over the stdio pipes of the built `infill lsp`\n"+
		"  process until its answer; **direct** is the same keystroke as a `Complete` call with the Go client library\n"+
		"  (`infill lsp` uses the same library, so the difference is the LSP layer: JSON-RPC both ways, the process hop,\n"+
		"  applying the change, the workspace's file list, building the request and the answer). Each path has its own\n"+
		"  `infill-server` (same binary and flags) in front of one `fakeollama`. %d rounds per phase after %d warm-up.\n",
		sum.Rounds, sum.Warmup)
	p("- Times in ms; percentiles by nearest rank. \"Adds\" is the per-round difference infill lsp − direct\n" +
		"  (95%% bootstrap interval of its median in brackets).\n\n")
	p("| phase | fakeollama | path | p50 | p90 | p99 |\n|---|---|---|---:|---:|---:|\n")
	for _, ph := range sum.Phases {
		diff := make([]float64, len(ph.LSP))
		for i := range ph.LSP {
			diff[i] = ph.LSP[i] - ph.Direct[i]
		}
		lo, hi := bootstrapMedian(diff)
		p("| %s | `%s` | infill lsp | %.2f | %.2f | %.2f |\n", ph.Name, ph.Fake, pct(ph.LSP, 50), pct(ph.LSP, 90), pct(ph.LSP, 99))
		p("| | | direct gRPC | %.2f | %.2f | %.2f |\n", pct(ph.Direct, 50), pct(ph.Direct, 90), pct(ph.Direct, 99))
		p("| | | **LSP layer adds** | **%.2f** [%.2f, %.2f] | %.2f | **%.2f** |\n", pct(diff, 50), lo, hi, pct(diff, 90), pct(diff, 99))
	}
	p("\n")
	for _, ph := range sum.Phases {
		lb := make([]float64, len(ph.LSPBytes))
		gb := make([]float64, len(ph.GRPCBytes))
		for i := range lb {
			lb[i], gb[i] = float64(ph.LSPBytes[i]), float64(ph.GRPCBytes[i])
		}
		if ph.Mismatches > 0 {
			p("- %s: **the prompts differed** in %d rounds, from round %s on. The two paths sent the same text (the\n"+
				"  servers' `bytes_in` differ only by the client and session ids), so the servers built different context,\n"+
				"  most likely because contextpack's 500 ms `ParseTimeout` ran out in one server and not in the other on this\n"+
				"  loaded machine (see bench/lspbench/README.md). The rounds then did unequal context work.\n",
				ph.Name, ph.Mismatches, ph.Mismatch[0])
		}
		p("- %s: the backend got the same prompt from both paths in %d of %d rounds; %d answers without items.\n"+
			"  Bytes per keystroke (median): %.0f B of LSP messages between editor and `infill lsp` (change, request, answer);\n"+
			"  %.0f B of gRPC request to the server (direct path; the repository is %d KB).\n",
			ph.Name, len(ph.LSP)-ph.Mismatches, len(ph.LSP), ph.EmptyAnswer, pct(lb, 50), pct(gb, 50), sum.RepoBytes/1024)
	}
	return b.String()
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return runtime.GOARCH
}

// copyRepo copies src's .go files (not tests) into dst, with a .git
// directory so that the language server takes dst as the repository.
func copyRepo(src, dst string) (string, error) {
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dst, ".git"), 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	return dst, nil
}

// procs are the processes a phase started.
type procs struct{ cmds []*exec.Cmd }

func (p *procs) start(logs, name, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(logs, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmds = append(p.cmds, cmd)
	return cmd, nil
}

func (p *procs) stop() {
	for _, c := range slices.Backward(p.cmds) {
		if c.Process != nil {
			_ = c.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		}
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func phase(o options, name string, fakeArgs []string, repo string) (phaseResult, string, error) {
	res := phaseResult{Name: name, Fake: strings.Join(fakeArgs, " ")}
	var ps procs
	defer ps.stop()

	fakeAddr, err := freePort()
	if err != nil {
		return res, "", err
	}
	// The fake holds the model the servers are given: infill's health
	// reports SERVING only for a backend that lists it.
	if _, err := ps.start(o.logs, name+"-fake", o.fakeBin, append([]string{"-listen", fakeAddr, "-models", "fake"}, fakeArgs...)...); err != nil {
		return res, "", err
	}
	fakeURL := "http://" + fakeAddr
	if err := waitHTTP(fakeURL + "/api/version"); err != nil {
		return res, "", err
	}
	var addrs [2]string
	for i, who := range []string{"lsp", "direct"} {
		if addrs[i], err = freePort(); err != nil {
			return res, "", err
		}
		if _, err := ps.start(o.logs, name+"-server-"+who, o.serverBin, "--listen", addrs[i], "--ollama-url", fakeURL,
			"--model", "fake", "--num-ctx", "8192", "--http-listen", ""); err != nil {
			return res, "", err
		}
		if err := waitServing(addrs[i]); err != nil {
			return res, "", fmt.Errorf("infill-server for %s: %w", who, err)
		}
	}

	// The cursor: a new line after the chosen one, typed on.
	cursorPath := filepath.Join(repo, o.cursorFile)
	orig, err := os.ReadFile(cursorPath)
	if err != nil {
		return res, "", err
	}
	text := string(orig)
	at := strings.Index(text, o.cursorAfter)
	if at < 0 {
		return res, "", fmt.Errorf("%s holds no %q", o.cursorFile, o.cursorAfter)
	}
	lineEnd := at + strings.IndexByte(text[at:], '\n') + 1
	line := strings.Count(text[:lineEnd], "\n")
	cursor := fmt.Sprintf("%s, a new line after line %d (%q), typed on", o.cursorFile, line, strings.TrimSpace(text[at:lineEnd]))

	// The LSP path: `infill lsp` on pipes.
	ed, err := startEditor(&ps, o, name, addrs[0])
	if err != nil {
		return res, "", err
	}
	defer ed.close()
	if _, err := ed.call("initialize", map[string]any{"processId": os.Getpid(), "rootUri": fileURI(repo), "capabilities": map[string]any{}}); err != nil {
		return res, "", err
	}
	ed.notify("initialized", map[string]any{})
	uri := fileURI(cursorPath)
	ed.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 1, "text": text}})

	// The direct path: the Go client, sending what the language server
	// sends (the repository read with the same rules, the document with
	// its language, no context listing, a session for the document).
	var grpcBytes int
	var mu sync.Mutex
	client, err := infill.Dial(addrs[1], infill.Config{ClientID: "lspbench-direct", DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			mu.Lock()
			grpcBytes = proto.Size(req.(proto.Message))
			mu.Unlock()
			return invoker(ctx, method, req, reply, cc, opts...)
		})}}, nil)
	if err != nil {
		return res, "", err
	}
	defer client.Close()
	loaded, _, err := infill.LoadRepository(repo, infill.LoadOptions{})
	if err != nil {
		return res, "", err
	}
	files := loaded.GetFiles()
	ci := slices.IndexFunc(files, func(f *infillv1.File) bool { return f.GetPath() == o.cursorFile })

	// Keystrokes: a new line, a tab, then letters. Not "r": fakeollama's
	// text starts with it, and the server answers a keystroke that types
	// the start of the session's last completion from that completion
	// (response.reused), without the backend.
	version := 1
	lspText, directText := text, text
	off := lineEnd
	keys := []string{"\n", "\t", "/", "/", " "}
	const letters = "abcdefghijklmnopqstuvwxyz"
	for i := 0; len(keys) < o.warmup+o.rounds+8; i++ {
		keys = append(keys, string(letters[i%len(letters)]))
	}
	for k, key := range keys[:o.warmup+o.rounds+5] {
		// Where the key goes, in the LSP's UTF-16 positions.
		ls := strings.LastIndexByte(lspText[:off], '\n') + 1
		pl := strings.Count(lspText[:off], "\n")
		pc := len(utf16.Encode([]rune(lspText[ls:off])))
		lspText = lspText[:off] + key + lspText[off:]
		directText = directText[:off] + key + directText[off:]
		off += len(key)
		cl, cc := pl, pc+1
		if key == "\n" {
			cl, cc = pl+1, 0
		}
		version++
		measured := k >= 5+o.warmup

		doLSP := func() (float64, string, int, bool, error) {
			change := map[string]any{"textDocument": map[string]any{"uri": uri, "version": version}, "contentChanges": []any{map[string]any{
				"range": map[string]any{"start": map[string]any{"line": pl, "character": pc}, "end": map[string]any{"line": pl, "character": pc}},
				"text":  key}}}
			begin := time.Now()
			n := ed.notify("textDocument/didChange", change)
			resp, err := ed.callN("textDocument/inlineCompletion", map[string]any{"textDocument": map[string]any{"uri": uri},
				"position": map[string]any{"line": cl, "character": cc}}, &n)
			d := time.Since(begin)
			if err != nil {
				return 0, "", 0, false, err
			}
			var list struct {
				Items []struct{ InsertText string } `json:"items"`
			}
			_ = json.Unmarshal(resp, &list)
			sha, err := lastPrompt(fakeURL)
			return ms(d), sha, n, len(list.Items) > 0, err
		}
		doDirect := func() (float64, string, int, error) {
			begin := time.Now()
			fs := slices.Clone(files)
			fs[ci] = &infillv1.File{Path: o.cursorFile, Content: proto.String(directText), Language: "go"}
			req := &infillv1.CompleteRequest{
				Repository:    &infillv1.Repository{Name: loaded.GetName(), Files: fs},
				Cursor:        &infillv1.Cursor{Path: o.cursorFile, Offset: uint64(off), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
				ContextDetail: infillv1.ContextDetail_CONTEXT_DETAIL_NONE,
				SessionId:     "lspbench-" + o.cursorFile, // as infill lsp: a session per document
			}
			_, err := client.Complete(context.Background(), req)
			d := time.Since(begin)
			if err != nil {
				return 0, "", 0, err
			}
			sha, err := lastPrompt(fakeURL)
			mu.Lock()
			b := grpcBytes
			mu.Unlock()
			return ms(d), sha, b, err
		}

		var (
			lspMS, directMS   float64
			lspSHA, directSHA string
			lspN, gb          int
			items             bool
		)
		if k%2 == 0 {
			if lspMS, lspSHA, lspN, items, err = doLSP(); err == nil {
				directMS, directSHA, gb, err = doDirect()
			}
		} else {
			if directMS, directSHA, gb, err = doDirect(); err == nil {
				lspMS, lspSHA, lspN, items, err = doLSP()
			}
		}
		if err != nil {
			return res, "", fmt.Errorf("keystroke %d: %w", k, err)
		}
		if !measured {
			continue
		}
		res.LSP = append(res.LSP, lspMS)
		res.Direct = append(res.Direct, directMS)
		res.GRPCBytes = append(res.GRPCBytes, gb)
		res.LSPBytes = append(res.LSPBytes, lspN)
		if lspSHA != directSHA {
			if res.Mismatches == 0 {
				res.Mismatch = []string{strconv.Itoa(k), lspSHA, directSHA}
			}
			res.Mismatches++
		}
		if !items {
			res.EmptyAnswer++
		}
	}
	if _, err := ed.call("shutdown", nil); err != nil {
		return res, "", err
	}
	ed.notify("exit", nil)
	ed.close()
	exited := make(chan error, 1)
	go func() { exited <- ed.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return res, "", fmt.Errorf("infill lsp after shutdown and exit: %w", err)
		}
	case <-time.After(10 * time.Second):
		return res, "", errors.New("infill lsp did not exit after shutdown and exit")
	}
	ps.cmds = slices.DeleteFunc(ps.cmds, func(c *exec.Cmd) bool { return c == ed.cmd })
	return res, cursor, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

func waitHTTP(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer", u)
}

func waitServing(addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("not SERVING within 60s")
}

func lastPrompt(fakeURL string) (string, error) {
	resp, err := http.Get(fakeURL + "/fake/last")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var last struct {
		PromptSHA256 string `json:"prompt_sha256"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&last); err != nil {
		return "", err
	}
	return last.PromptSHA256, nil
}

// editor is the editor's side of `infill lsp`'s stdio.
type editor struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startEditor(ps *procs, o options, name, server string) (*editor, error) {
	logf, err := os.Create(filepath.Join(o.logs, name+"-lsp.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.infillBin, "--server", server, "lsp")
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ps.cmds = append(ps.cmds, cmd)
	return &editor{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

func (e *editor) close() { e.in.Close() }

// write sends one message and returns its size on the wire.
func (e *editor) write(m map[string]any) int {
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	h := "Content-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n"
	_, _ = io.WriteString(e.in, h+string(b))
	return len(h) + len(b)
}

func (e *editor) notify(method string, params any) int {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return e.write(m)
}

func (e *editor) call(method string, params any) (json.RawMessage, error) {
	return e.callN(method, params, nil)
}

// callN sends a request and reads until its answer; n, when not nil,
// gains the bytes sent and received.
func (e *editor) callN(method string, params any, n *int) (json.RawMessage, error) {
	e.next++
	id := e.next
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	sent := e.write(m)
	if n != nil {
		*n += sent
	}
	for {
		body, size, err := e.read()
		if err != nil {
			return nil, err
		}
		if n != nil {
			*n += size
		}
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			return nil, err
		}
		switch {
		case msg.Method != "" && msg.ID != nil:
			e.write(map[string]any{"id": *msg.ID, "result": nil})
		case msg.Method == "window/showMessage":
			return nil, fmt.Errorf("the language server says: %s", msg.Params)
		case msg.Method != "":
		case msg.ID != nil && *msg.ID == id:
			if msg.Error != nil {
				return nil, fmt.Errorf("%s: %d %s", method, msg.Error.Code, msg.Error.Message)
			}
			return msg.Result, nil
		}
	}
}

func (e *editor) read() ([]byte, int, error) {
	length, size := -1, 0
	for {
		line, err := e.out.ReadString('\n')
		if err != nil {
			return nil, 0, err
		}
		size += len(line)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, length)
	_, err := io.ReadFull(e.out, body)
	return body, size + length, err
}

// pct is the nearest-rank percentile of xs.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// bootstrapMedian is a 95% interval of the median of xs.
func bootstrapMedian(xs []float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, 2000)
	s := make([]float64, len(xs))
	for i := range meds {
		for j := range s {
			s[j] = xs[rng.IntN(len(xs))]
		}
		meds[i] = pct(s, 50)
	}
	return pct(meds, 2.5), pct(meds, 97.5)
}

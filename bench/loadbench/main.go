// Command loadbench is the load benchmark of issue 20: many people typing
// at once and an evaluation harness sharing one backend, measured through
// infill-server with admission (--backend-slots N) and without it
// (--backend-slots 0), against the real local Ollama (tiny model) or the
// paced fake (bench/fakeollama with -parallel and -finish-prompt).
//
// The workload, in each of two phases per server:
//
//   - unloaded: one typing session alone, each keystroke sent after the
//     answer to the one before (the reference for the interactive target:
//     an interactive request's time to first token on an idle backend);
//   - loaded: -sessions typing sessions and an evaluation stream at full
//     speed (-eval-inflight requests of class EVALUATION always in flight,
//     as one Evaluate call keeps --eval-workers samples generating);
//   - typist: one session alone typing as in the loaded phase (a keystroke
//     every 80 ms whatever came back, then a pause): does a lone user on a
//     slow backend see completions at the pauses (-typist 0: skipped).
//
// A session types words of 3–7 characters, a keystroke every -keystroke
// (80 ms); each keystroke is a StreamComplete with the session's client_id
// and session_id, so it supersedes the one before (latest wins), as an
// editor's plugin sends them. After a word the user pauses (-pause, 1 s)
// and reads the completion if one came; half the time they then type its
// first one or two characters (each a request that typed-through reuse
// should answer without the backend), and go on typing other text.
//
// Requests reach the backend through a counting proxy in this process, so
// backend requests per keystroke are counted where they arrive, by kind:
// interactive generations, admission's probes (one token, the prompt's
// head), evaluation generations and infill's health probes.
//
// It writes one JSON file and one Markdown section per backend.
// bench/loadbench/run.sh builds the binaries and runs both backends.
//
//	loadbench -backend fake|ollama -server-bin PATH [-fake-bin PATH] -out DIR
//	loadbench -render DIR/BACKEND.json   (the Markdown again, from the results)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type options struct {
	backend           string
	serverBin         string
	fakeBin           string
	out               string
	commit, note      string
	slots             int
	modes             []string
	sessions          int
	keystroke, pause  time.Duration
	wordMin, wordMax  int
	typeThrough       float64
	unloaded, loaded  time.Duration
	typist            time.Duration
	maxTokens         int
	evalMaxTokens     int
	evalInflight      int
	budget, deadline  time.Duration
	evalDeadline      time.Duration
	numCtx            int
	fakePrompt        time.Duration
	fakeToken         time.Duration
	fakeTokens        int
	seed              uint64
	warmupPerSession  int
	settle            time.Duration
	keepServerLogsDir string
}

func main() {
	var o options
	var modes, render string
	flag.StringVar(&o.backend, "backend", "fake", "fake (bench/fakeollama) or ollama (the real local Ollama, tiny model)")
	flag.StringVar(&o.serverBin, "server-bin", "", "infill-server binary built from this tree")
	flag.StringVar(&o.fakeBin, "fake-bin", "", "fakeollama binary (for -backend fake)")
	flag.StringVar(&o.out, "out", "", "directory for BACKEND.json and BACKEND.md")
	flag.StringVar(&o.commit, "commit", "", "the commit measured, for the report")
	flag.StringVar(&o.note, "note", "", "a line for the report")
	flag.IntVar(&o.slots, "slots", 1, "the backend's parallelism (OLLAMA_NUM_PARALLEL, fakeollama -parallel) and --backend-slots with admission")
	flag.StringVar(&modes, "modes", "admission,no-burst-wait,none", "servers to measure, in order: admission (--backend-slots = -slots), no-burst-wait (the same with --burst-wait 0), none (--backend-slots 0)")
	flag.IntVar(&o.sessions, "sessions", 16, "typing sessions in the loaded phase")
	flag.DurationVar(&o.keystroke, "keystroke", 80*time.Millisecond, "time between keystrokes while typing")
	flag.DurationVar(&o.pause, "pause", time.Second, "pause after each word, the user reading the completion")
	flag.IntVar(&o.wordMin, "word-min", 3, "fewest keystrokes of a word")
	flag.IntVar(&o.wordMax, "word-max", 7, "most keystrokes of a word")
	flag.Float64Var(&o.typeThrough, "type-through", 0.5, "chance that the user types the first characters of a completion shown")
	flag.DurationVar(&o.unloaded, "unloaded", 20*time.Second, "length of the unloaded phase (one session)")
	flag.DurationVar(&o.loaded, "loaded", 60*time.Second, "length of the loaded phase")
	flag.DurationVar(&o.typist, "typist", 20*time.Second, "length of the typist phase (one session typing alone); 0: none")
	flag.IntVar(&o.maxTokens, "max-tokens", 16, "max_tokens of a keystroke's completion")
	flag.IntVar(&o.evalMaxTokens, "eval-max-tokens", 16, "max_tokens of an evaluation completion")
	flag.IntVar(&o.evalInflight, "eval-inflight", 2, "evaluation requests always in flight (one Evaluate call with --eval-workers 2)")
	flag.DurationVar(&o.budget, "budget", time.Second, "latency_budget of a keystroke's completion (its pause: later is useless)")
	flag.DurationVar(&o.deadline, "deadline", 5*time.Second, "gRPC deadline of a keystroke's completion")
	flag.DurationVar(&o.evalDeadline, "eval-deadline", 60*time.Second, "gRPC deadline of an evaluation completion")
	flag.IntVar(&o.numCtx, "num-ctx", 4096, "infill-server --num-ctx")
	flag.DurationVar(&o.fakePrompt, "fake-prompt-delay", 50*time.Millisecond, "fakeollama -prompt-delay")
	flag.DurationVar(&o.fakeToken, "fake-token-delay", 10*time.Millisecond, "fakeollama -token-delay")
	flag.IntVar(&o.fakeTokens, "fake-tokens", 16, "fakeollama -tokens")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the typing")
	flag.IntVar(&o.warmupPerSession, "warmup", 1, "requests per session file and evaluation task before measuring")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "quiet time between phases")
	flag.StringVar(&o.keepServerLogsDir, "logs", "", "directory for the server's and backend's logs (default: a temporary one, removed)")
	flag.StringVar(&render, "render", "", "only write the Markdown of a result file (BACKEND.json) again, beside it")
	flag.Parse()
	if render != "" {
		if err := rerender(render); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench:", err)
			os.Exit(1)
		}
		return
	}
	o.modes = strings.Split(modes, ",")
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func (o *options) validate() error {
	switch {
	case o.backend != "fake" && o.backend != "ollama":
		return fmt.Errorf("-backend %q: want fake or ollama", o.backend)
	case o.serverBin == "":
		return fmt.Errorf("-server-bin is required")
	case o.backend == "fake" && o.fakeBin == "":
		return fmt.Errorf("-backend fake needs -fake-bin")
	case o.out == "":
		return fmt.Errorf("-out is required")
	case o.slots < 1 || o.sessions < 1 || o.evalInflight < 0 || o.wordMin < 1 || o.wordMax < o.wordMin:
		return fmt.Errorf("bad sizes: -slots %d -sessions %d -eval-inflight %d -word-min %d -word-max %d",
			o.slots, o.sessions, o.evalInflight, o.wordMin, o.wordMax)
	}
	for _, m := range o.modes {
		if m != "admission" && m != "none" && m != "no-burst-wait" {
			return fmt.Errorf("-modes: %q is none of admission, no-burst-wait, none", m)
		}
	}
	return nil
}

// serverSlots is --backend-slots of a mode.
func (o *options) serverSlots(mode string) int {
	if mode == "none" {
		return 0
	}
	return o.slots
}

func run(o options) error {
	logs := o.keepServerLogsDir
	if logs == "" {
		d, err := os.MkdirTemp("", "loadbench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		logs = d
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	rep := &report{Backend: o.backend, Commit: o.commit, Note: o.note, Date: time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Machine: machine(), Workload: o.workload()}
	for _, mode := range o.modes {
		// A fresh backend for each server: a backend wedged by one mode
		// must not be the next one's starting point.
		logf("%s: starting the backend (%s)", mode, o.backend)
		be, err := startBackend(o, filepath.Join(logs, mode))
		if err != nil {
			return fmt.Errorf("backend: %w", err)
		}
		rep.BackendDesc = be.desc
		px, err := startProxy(be.url)
		if err != nil {
			be.stop()
			return err
		}
		logf("%s: server with --backend-slots %d", mode, o.serverSlots(mode))
		m, err := runMode(o, be, px, mode, logs)
		px.close()
		be.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		rep.Modes = append(rep.Modes, m)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	base := filepath.Join(o.out, o.backend)
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := rep.markdown()
	if err := os.WriteFile(base+".md", []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

// rerender writes the Markdown of a result file again.
func rerender(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(strings.TrimSuffix(file, ".json")+".md", []byte(rep.markdown()), 0o644)
}

func (o *options) workload() map[string]string {
	d := func(x time.Duration) string { return x.String() }
	return map[string]string{
		"sessions":        strconv.Itoa(o.sessions),
		"keystroke":       d(o.keystroke),
		"pause":           d(o.pause),
		"word":            fmt.Sprintf("%d–%d keystrokes", o.wordMin, o.wordMax),
		"type_through":    fmt.Sprintf("%.0f%% of completions shown, 1–2 characters", 100*o.typeThrough),
		"interactive":     fmt.Sprintf("StreamComplete, max_tokens %d, latency_budget %v, deadline %v", o.maxTokens, o.budget, o.deadline),
		"evaluation":      fmt.Sprintf("StreamComplete REQUEST_CLASS_EVALUATION, %d in flight, max_tokens %d, deadline %v", o.evalInflight, o.evalMaxTokens, o.evalDeadline),
		"phases":          fmt.Sprintf("unloaded %v (1 session), loaded %v, typist %v (1 session typing)", o.unloaded, o.loaded, o.typist),
		"num_ctx":         strconv.Itoa(o.numCtx),
		"backend_slots":   fmt.Sprintf("%d with admission, 0 without", o.slots),
		"backend_workers": strconv.Itoa(o.slots),
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[loadbench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Command ollamasetup is scripts/setup.sh's client of an Ollama that already
// runs (scripts/run.sh asks it before it builds anything; backend.sh asks it
// of its own backend), through Ollama's Go API client:
//
//	ollamasetup find [URL]        the Ollama at URL (default: as the ollama CLI
//	                              reads OLLAMA_HOST) and its Qwen2.5-Coder base
//	                              model, or exactly $INFILL_MODEL: prints
//	                              "URL MODEL", or says why not on stderr and
//	                              exits 1 (no answer), 2 (no such model) or 3
//	                              (the model asked for is the tiny test model
//	                              under a real name)
//	ollamasetup pull URL MODEL    pulls MODEL into that Ollama (POST /api/pull,
//	                              as `ollama pull` does) with a progress line on
//	                              stderr: in place on a terminal, else every
//	                              10 s; on failure, or no progress for
//	                              $INFILL_PULL_STALL seconds (default 120), it
//	                              prints why on stdout too and exits 1
//	ollamasetup fake-models URL   the tiny test model's names at that Ollama
//	                              other than its own (infill-tiny), one a line;
//	                              exits 1 when nothing answers
//
// The tiny random-weight model (scripts/tinymodel) is told from a real one by
// what Ollama reports of it, whatever its name: family qwen2 with under 100
// million parameters. Messages go to stderr prefixed with -log-prefix
// (setup.sh passes its own name: the user ran setup.sh or run.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/ollama/ollama/api"
	"golang.org/x/term"
)

func main() {
	prefix := flag.String("log-prefix", "ollamasetup", "prefix of the messages on stderr")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ollamasetup [-log-prefix P] find [URL] | pull URL MODEL | fake-models URL")
	}
	flag.Parse()
	c := &cli{prefix: *prefix, stdout: os.Stdout, stderr: os.Stderr, tty: term.IsTerminal(int(os.Stderr.Fd()))}
	os.Exit(c.run(context.Background(), flag.Args()))
}

// cli is one run of the command.
type cli struct {
	prefix         string
	stdout, stderr io.Writer
	tty            bool // stderr is a terminal: the progress line is rewritten in place
}

func (c *cli) logf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "%s: %s\n", c.prefix, fmt.Sprintf(format, args...))
}

func (c *cli) run(ctx context.Context, args []string) int {
	switch {
	case len(args) >= 1 && len(args) <= 2 && args[0] == "find":
		at := os.Getenv("OLLAMA_HOST")
		if len(args) == 2 {
			at = args[1]
		}
		return c.find(ctx, ollamaURL(at), os.Getenv("INFILL_MODEL"))
	case len(args) == 3 && args[0] == "pull":
		stall := 120 * time.Second
		if s := os.Getenv("INFILL_PULL_STALL"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				c.logf("INFILL_PULL_STALL=%q: want a number of seconds", s)
				return 2
			}
			stall = time.Duration(n) * time.Second
		}
		return c.pull(ctx, ollamaURL(args[1]), args[2], stall)
	case len(args) == 2 && args[0] == "fake-models":
		return c.fakeModels(ctx, ollamaURL(args[1]))
	}
	c.logf("usage: find [URL] | pull URL MODEL | fake-models URL")
	return 2
}

func client(u string) *api.Client {
	base, _ := url.Parse(u) // ollamaURL's own output
	return api.NewClient(base, http.DefaultClient)
}

// list is the Ollama's model list, within 5 seconds.
func list(ctx context.Context, u string) ([]api.ListModelResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := client(u).List(ctx)
	if err != nil {
		return nil, err
	}
	return l.Models, nil
}

func (c *cli) find(ctx context.Context, u, want string) int {
	models, err := list(ctx, u)
	if err != nil {
		c.logf("no Ollama answers at %s", u)
		return 1
	}
	ch := choose(u, want, models)
	for _, w := range ch.warnings {
		c.logf("%s", w)
	}
	if ch.code != 0 {
		c.logf("%s", ch.why)
		return ch.code
	}
	fmt.Fprintf(c.stdout, "%s %s\n", u, ch.model)
	return 0
}

func (c *cli) fakeModels(ctx context.Context, u string) int {
	models, err := list(ctx, u)
	if err != nil {
		return 1
	}
	for _, f := range fakes(models) {
		fmt.Fprintln(c.stdout, f)
	}
	return 0
}

// errStalled ends a pull that made no progress for the stall time.
var errStalled = errors.New("stalled")

func (c *cli) pull(ctx context.Context, u, model string, stall time.Duration) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer watchdog.Stop()
	status, shown := "", ""
	var last time.Time
	stream := true
	err := client(u).Pull(ctx, &api.PullRequest{Model: model, Stream: &stream}, func(p api.ProgressResponse) error {
		watchdog.Reset(stall)
		status = p.Status
		if status == "success" {
			return nil
		}
		line := progressLine(p)
		switch {
		case c.tty:
			fmt.Fprintf(c.stderr, "\r%s: pulling %s: %s\033[K", c.prefix, model, line)
		case line != shown && (last.IsZero() || time.Since(last) >= 10*time.Second):
			c.logf("pulling %s: %s", model, line)
			shown, last = line, time.Now()
		}
		return nil
	})
	if c.tty {
		fmt.Fprintln(c.stderr)
	}
	why := ""
	var se api.StatusError
	switch {
	case errors.Is(context.Cause(ctx), errStalled):
		why = fmt.Sprintf("no progress for %ds", int(stall.Seconds()))
	case errors.As(err, &se) && se.ErrorMessage != "":
		why = se.ErrorMessage
	case err != nil:
		why = err.Error()
	case status != "success":
		if status == "" {
			status = "nothing"
		}
		why = fmt.Sprintf("the answer ended without success (last: %s)", status)
	}
	if why == "" {
		c.logf("pulled %s into the Ollama at %s", model, u)
		return 0
	}
	c.logf("pulling %s into the Ollama at %s failed: %s", model, u, why)
	fmt.Fprintln(c.stdout, why)
	return 1
}

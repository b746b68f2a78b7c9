// Command infill is the command-line tool of the infill completion server:
// `infill complete FILE LINE:COL` streams a completion to the terminal;
// `infill lsp` is a language server giving LSP editors those completions;
// `infill eval run|report|mask|list` runs benchmarks through the server,
// reports their results and builds repository benchmarks.
// Run `infill --help` for the commands; the code lives in clients/internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/infill-dev/infill/clients/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{
		Stdin:            os.Stdin,
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		Getenv:           os.Getenv,
		StdoutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		StderrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
	})
	stop()
	os.Exit(code)
}

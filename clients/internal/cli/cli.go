// Package cli owns the infill command-line tool: its commands, flags,
// terminal output and exit codes. clients/cmd/infill is its main; tests
// run it in-process with an Env that points at a fake server.
//
// Output conventions: generated text goes to stdout exactly as the server
// streams it; everything else (context manifest, statistics, errors) goes
// to stderr, so `infill complete ... > out.txt` captures only the text.
// Errors are one line, "infill: CODE: message" for server errors.
//
// Exit codes: 0 success, 1 error, 2 usage error, 130 interrupted.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/clients/go/infill"
)

// DefaultServer is the server address used when neither --server nor
// INFILL_SERVER is set; it matches infill-server's default listen address.
const DefaultServer = "127.0.0.1:50051"

// Exit codes.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// Env is everything the tool touches outside itself; tests replace it.
type Env struct {
	// Stdin is read by `infill lsp` (the editor's messages); nil reads
	// nothing.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (INFILL_SERVER, INFILL_TOKEN).
	Getenv func(string) string
	// StdoutIsTerminal adds a final newline after text that lacks one.
	StdoutIsTerminal bool
	// StderrIsTerminal draws progress bars (eval run) instead of lines.
	StderrIsTerminal bool
	// Dial connects to the server; nil means infill.Dial.
	Dial func(target string, cfg infill.Config) (*infill.Client, error)
}

// usageError marks errors in how the tool was invoked (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// globals are the flags every command shares.
type globals struct {
	server  string
	token   string
	useTLS  bool
	tlsCA   string
	tlsCert string
	tlsKey  string
	timeout time.Duration
}

// Main runs the tool with args (without the program name) and returns the
// exit code. Cancelling ctx (e.g. on SIGINT) stops the call in flight.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Dial == nil {
		env.Dial = func(target string, cfg infill.Config) (*infill.Client, error) {
			return infill.Dial(target, cfg, zap.NewNop())
		}
	}
	root := newRoot(&env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil {
		fmt.Fprintln(env.Stderr, "infill: interrupted")
		return ExitInterrupted
	}
	fmt.Fprintln(env.Stderr, "infill: "+errorLine(err))
	var u usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return ExitUsage
	}
	return ExitError
}

func newRoot(env *Env) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "infill",
		Short: "Repository-aware code completion from an infill server",
		Long: `infill asks an infill server for fill-in-the-middle completions of code in a
repository on disk and streams them to the terminal (complete), gives LSP
editors those completions as a language server (lsp), and runs execution
benchmarks through the server, reports their results and builds benchmarks
from repositories (eval).

The server address is --server, else $INFILL_SERVER, else ` + DefaultServer + `.
A bearer token is --token, else $INFILL_TOKEN; it needs --tls unless the
server is on loopback or a Unix socket. --tls-cert and --tls-key present a
client certificate to a server that requires one (mutual TLS).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", "", "server address, host:port or unix:///path (default $INFILL_SERVER or "+DefaultServer+"); eval run takes a list a,b,...")
	pf.StringVar(&g.token, "token", "", "bearer token sent with every call (default $INFILL_TOKEN)")
	pf.BoolVar(&g.useTLS, "tls", false, "connect with TLS, trusting the system's CAs")
	pf.StringVar(&g.tlsCA, "tls-ca", "", "connect with TLS, trusting the PEM certificates in `FILE`")
	pf.StringVar(&g.tlsCert, "tls-cert", "", "connect with TLS, presenting the client certificate in `FILE` (PEM, with --tls-key) to a server that asks for one")
	pf.StringVar(&g.tlsKey, "tls-key", "", "the private key (PEM `FILE`) of --tls-cert")
	pf.DurationVar(&g.timeout, "timeout", 5*time.Minute, "give up on a call after this long (0: never)")
	root.AddCommand(newCompleteCmd(env, g), newEvalCmd(env, g), newLSPCmd(env, g))
	return root
}

// dial connects with the shared flags.
func (g *globals) dial(env *Env) (*infill.Client, string, error) {
	return g.dialWith(env, nil)
}

// dialWith is dial with the client configuration changed by mutate
// before the connection is made.
func (g *globals) dialWith(env *Env, mutate func(*infill.Config)) (*infill.Client, string, error) {
	target := g.target(env)
	if strings.Contains(target, ",") {
		return nil, "", usageError{fmt.Errorf("--server %q: this command talks to one server (a list a,b,... is for eval run)", target)}
	}
	return g.dialTarget(env, target, mutate)
}

// target is --server, else $INFILL_SERVER, else DefaultServer.
func (g *globals) target(env *Env) string {
	return firstNonEmpty(g.server, env.Getenv("INFILL_SERVER"), DefaultServer)
}

// targets splits target() at commas: the servers eval run spreads a
// benchmark over. An empty or repeated element is a usage error.
func (g *globals) targets(env *Env) ([]string, error) {
	list := strings.Split(g.target(env), ",")
	for i, t := range list {
		list[i] = strings.TrimSpace(t)
		if list[i] == "" || slices.Contains(list[:i], list[i]) {
			return nil, usageError{fmt.Errorf("--server %q: want host:port addresses separated by commas, each once", g.target(env))}
		}
	}
	return list, nil
}

// dialTarget connects to target with the shared flags.
func (g *globals) dialTarget(env *Env, target string, mutate func(*infill.Config)) (*infill.Client, string, error) {
	cfg := infill.Config{
		Token:    firstNonEmpty(g.token, env.Getenv("INFILL_TOKEN")),
		ClientID: "infill-cli",
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, "", usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	if g.useTLS || g.tlsCA != "" || g.tlsCert != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if g.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
			if err != nil {
				return nil, "", fmt.Errorf("--tls-cert/--tls-key: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		if g.tlsCA != "" {
			pem, err := os.ReadFile(g.tlsCA)
			if err != nil {
				return nil, "", err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, "", fmt.Errorf("--tls-ca %s: no PEM certificates in it", g.tlsCA)
			}
			tc.RootCAs = pool
		}
		cfg.TLS = tc
	} else if cfg.Token != "" {
		if !isLocal(target) {
			return nil, "", usageError{fmt.Errorf("a token needs --tls for %s (it would travel in the clear)", target)}
		}
		cfg.AllowTokenWithoutTLS = true
	}
	c, err := env.Dial(target, cfg)
	return c, target, err
}

// callContext applies --timeout.
func (g *globals) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout > 0 {
		return context.WithTimeout(ctx, g.timeout)
	}
	return context.WithCancel(ctx)
}

// isLocal reports whether target is a Unix socket or a loopback address.
func isLocal(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		return true
	}
	if i := strings.Index(target, ":///"); i >= 0 {
		target = target[i+4:]
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// hintError adds a hint for the user to the one-line rendering of err.
type hintError struct {
	err  error
	hint string
}

func (h hintError) Error() string { return h.err.Error() + "; " + h.hint }
func (h hintError) Unwrap() error { return h.err }

// errorLine renders err for "infill: ...", with its hint once, and a hint
// when the client could not reach the server at all (not when the server
// reports that its backend is down).
func errorLine(err error) string {
	line := infill.FormatError(err)
	var h hintError
	if errors.As(err, &h) && !strings.Contains(line, h.hint) {
		line += "; " + h.hint
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable &&
		(strings.Contains(st.Message(), "while dialing") || strings.HasPrefix(st.Message(), "connection error:")) {
		line += " (is infill-server running there? set --server or INFILL_SERVER)"
	}
	return line
}

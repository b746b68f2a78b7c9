package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// columnUnits maps --column-unit values to the API's encodings.
var columnUnits = map[string]infillv1.PositionEncoding{
	"char":  infillv1.PositionEncoding_POSITION_ENCODING_UTF32,
	"utf16": infillv1.PositionEncoding_POSITION_ENCODING_UTF16,
	"byte":  infillv1.PositionEncoding_POSITION_ENCODING_UTF8,
}

type completeFlags struct {
	repo         string
	model        string
	maxTokens    uint32
	showContext  bool
	stats        bool
	columnUnit   string
	maxFileBytes int64
}

func newCompleteCmd(env *Env, g *globals) *cobra.Command {
	f := &completeFlags{}
	cmd := &cobra.Command{
		Use:   "complete FILE LINE:COL",
		Short: "Complete FILE at LINE:COL, streaming the text to stdout",
		Long: `complete sends FILE and the rest of its repository to the server and streams
the completion for the cursor at LINE:COL to stdout as it is generated.

LINE and COL count from 1, as editors and compilers show them. COL counts
characters (Unicode code points) by default; --column-unit byte counts UTF-8
bytes (as gcc and go vet report), utf16 counts UTF-16 code units (as LSP
does). The tool sends them to the server 0-based in that encoding.

The repository is --repo, else the nearest directory above FILE holding
.git, else FILE's directory. Files under .git, node_modules, vendor and
similar tool directories, symbolic links, binary files, files that are not
UTF-8, files over --max-file-bytes and names that are not UTF-8 or hold a
line break are left out; FILE itself is always sent.

--show-context prints, before the text, what went into the prompt: each
source with its token count, whether it was used and why.`,
		Example: `  infill complete src/app.py 42:9
  infill complete --show-context --max-tokens 64 main.go 10:1
  INFILL_SERVER=gpu-box:50051 infill complete --tls pkg/util.py 7:5`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("complete needs FILE and LINE:COL, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runComplete(cmd, env, g, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "repository `DIR` (default: nearest directory above FILE with .git)")
	fl.StringVar(&f.model, "model", "", "model name on the backend (default: the server's)")
	fl.Uint32Var(&f.maxTokens, "max-tokens", 0, "most tokens to generate (default: the server's)")
	fl.BoolVar(&f.showContext, "show-context", false, "print the context manifest (what went into the prompt) to stderr")
	fl.BoolVar(&f.stats, "stats", false, "print model, token usage and timings to stderr at the end")
	fl.StringVar(&f.columnUnit, "column-unit", "char", "what COL counts: char (code points), byte (UTF-8) or utf16")
	fl.Int64Var(&f.maxFileBytes, "max-file-bytes", 1<<20, "leave out repository files larger than this")
	return cmd
}

func runComplete(cmd *cobra.Command, env *Env, g *globals, f *completeFlags, file, at string) error {
	pos, err := infill.ParsePosition(at)
	if err != nil {
		return usageError{err}
	}
	enc, ok := columnUnits[f.columnUnit]
	if !ok {
		return usageError{fmt.Errorf("--column-unit %q: want char, byte or utf16", f.columnUnit)}
	}
	if f.maxFileBytes <= 0 {
		return usageError{fmt.Errorf("--max-file-bytes must be positive")}
	}
	req, report, err := infill.RequestFromDir(f.repo, file, pos, enc, infill.LoadOptions{MaxFileBytes: f.maxFileBytes})
	if errors.Is(err, infill.ErrRepositoryTooLarge) {
		return hintError{err, "point --repo at a smaller directory"}
	}
	if err != nil {
		return err
	}
	req.Model = f.model
	if f.showContext {
		// The table lists what was left out too.
		req.ContextDetail = infillv1.ContextDetail_CONTEXT_DETAIL_FULL
	}
	if f.maxTokens > 0 {
		req.Generation = &infillv1.GenerationOptions{MaxTokens: f.maxTokens}
	}
	client, _, err := g.dial(env)
	if err != nil {
		return err
	}
	defer client.Close()

	ctx, cancel := g.callContext(cmd.Context())
	defer cancel()
	var (
		text      strings.Builder
		shownCtx  bool
		final     *infillv1.CompleteResponse
		requestID string
	)
	for ev, err := range client.Stream(ctx, infill.StreamRequest(req)) {
		if err != nil {
			endText(env, text.String())
			if timedOut(ctx, err) && cmd.Context().Err() == nil {
				return status.Errorf(codes.DeadlineExceeded, "no complete answer within --timeout %v", g.timeout)
			}
			return cursorHint(err, pos, req.GetCursor())
		}
		switch e := ev.GetEvent().(type) {
		case *infillv1.StreamCompleteResponse_Start:
			requestID = e.Start.GetRequestId()
			if f.showContext {
				printManifest(env.Stderr, req.GetRepository().GetName(), report, e.Start.GetContext())
				shownCtx = true
			}
		case *infillv1.StreamCompleteResponse_Delta:
			if e.Delta.GetCandidateIndex() != 0 {
				continue
			}
			text.WriteString(e.Delta.GetText())
			if _, err := io.WriteString(env.Stdout, e.Delta.GetText()); err != nil {
				return err
			}
		case *infillv1.StreamCompleteResponse_Done:
			final = e.Done
		}
	}
	if text.Len() == 0 {
		// A server that sent the text only in its final response.
		for _, c := range final.GetCandidates() {
			if c.GetIndex() == 0 {
				text.WriteString(c.GetText())
				if _, err := io.WriteString(env.Stdout, c.GetText()); err != nil {
					return err
				}
				break
			}
		}
	}
	endText(env, text.String())
	if f.showContext && !shownCtx {
		printManifest(env.Stderr, req.GetRepository().GetName(), report, final.GetContext())
	}
	if f.stats {
		printStats(env.Stderr, final, requestID)
	}
	return nil
}

// timedOut reports whether err ended the call because ctx's deadline (the
// --timeout) passed. The server's DEADLINE_EXCEEDED, sent when it sees the
// propagated deadline pass, can arrive a moment before the client's own
// timer fires, so a deadline that is about to pass counts too.
func timedOut(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(dl) < 100*time.Millisecond
}

// cursorHint explains a cursor error, which the server reports 0-based,
// in terms of the 1-based position the user typed.
func cursorHint(err error, pos infill.Position, c *infillv1.Cursor) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "cursor.") {
		return err
	}
	return hintError{err, fmt.Sprintf("the server counts from 0 (%s here is %d:%d there)",
		pos, c.GetLine(), c.GetColumn())}
}

// endText ends the terminal line after text that lacks a final newline.
func endText(env *Env, text string) {
	if env.StdoutIsTerminal && text != "" && !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(env.Stdout)
	}
}

// printManifest writes the context manifest as a table.
func printManifest(w io.Writer, repoName string, report *infill.LoadReport, m *infillv1.ContextManifest) {
	fmt.Fprintf(w, "repository %s: %s sent (%s), %d left out\n",
		repoName, plural(report.Files, "file"), byteSize(report.Bytes), len(report.Skipped))
	if m == nil {
		fmt.Fprintln(w, "context: the server sent no manifest")
		return
	}
	fmt.Fprintf(w, "prompt: %d tokens; budget %d tokens, %d reserved for generation\n",
		m.GetPromptTokens(), m.GetTokenBudget(), m.GetGenerationTokens())
	if len(m.GetSources()) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tPATH\tLINES\tTOKENS\tUSED\tSCORE\tREASON")
		for _, s := range m.GetSources() {
			lines := "all"
			if s.GetStartLine() > 0 {
				lines = fmt.Sprintf("%d-%d", s.GetStartLine(), s.GetEndLine())
			}
			used := "no"
			if s.GetIncluded() {
				used = "yes"
			}
			score := ""
			if s.GetScore() != 0 {
				score = fmt.Sprintf("%.2f", s.GetScore())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", kindName(s.GetKind()), s.GetPath(), lines,
				s.GetTokens(), used, score, s.GetReason())
		}
		_ = tw.Flush()
	}
	for _, warn := range m.GetWarnings() {
		fmt.Fprintln(w, "warning: "+warn)
	}
}

func kindName(k infillv1.SourceKind) string {
	name := strings.TrimPrefix(k.String(), "SOURCE_KIND_")
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

func finishName(r infillv1.FinishReason) string {
	name := strings.TrimPrefix(r.String(), "FINISH_REASON_")
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// printStats writes one line of model, usage and timings.
func printStats(w io.Writer, r *infillv1.CompleteResponse, requestID string) {
	if r == nil {
		return
	}
	finish := "none"
	if cs := r.GetCandidates(); len(cs) > 0 {
		finish = finishName(cs[0].GetFinishReason())
	}
	u, t := r.GetUsage(), r.GetTimings()
	if id := r.GetRequestId(); id != "" {
		requestID = id
	}
	fmt.Fprintf(w, "model %s, request %s, finish %s; tokens: prompt %d, generated %d; "+
		"time: context %s, first token %s, total %s\n",
		r.GetModel(), requestID, finish, u.GetPromptTokens(), u.GetCompletionTokens(),
		dur(t.GetContextAssembly()), dur(t.GetTimeToFirstToken()), dur(t.GetTotal()))
}

func dur(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	v := d.AsDuration()
	if v < time.Millisecond {
		return v.Round(time.Microsecond).String()
	}
	return v.Round(time.Millisecond).String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/internal/repofs/repofstest"
	"github.com/infill-dev/infill/server/pipeline"
	"github.com/infill-dev/infill/server/workspace"
)

// wsOpen opens a workspace set over roots, closed when the test ends.
func wsOpen(t testing.TB, roots ...string) *workspace.Set {
	t.Helper()
	cfg := workspace.DefaultConfig()
	cfg.Quiet, cfg.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	set, err := workspace.OpenSet(roots, cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	return set
}

// wsRecorder is a Completer that records the requests it gets and answers
// each with err (nil: an empty result).
type wsRecorder struct {
	reqs []pipeline.Request
	errs []error
}

func (r *wsRecorder) Complete(_ context.Context, req *pipeline.Request, _ pipeline.Stream) (*pipeline.Result, error) {
	c := *req
	c.Context.Files = slices.Clone(req.Context.Files)
	r.reqs = append(r.reqs, c)
	if len(r.errs) > 0 {
		err := r.errs[0]
		r.errs = r.errs[1:]
		return nil, err
	}
	return &pipeline.Result{}, nil
}

func wsHandler(t testing.TB, c Completer, ws Workspaces) *Handler {
	t.Helper()
	h, err := New(DefaultConfig(), c, ws, nil, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// files lists a request's files as "path=content" or "path@digest".
func files(req *pipeline.Request) []string {
	var out []string
	for _, f := range req.Context.Files {
		if f.HasContent {
			out = append(out, f.Path+"="+f.Content)
		} else {
			out = append(out, f.Path+"@"+f.Digest)
		}
	}
	return out
}

func TestToPipelineWorkspace(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root := filepath.Join(t.TempDir(), "proj")
	repofstest.WriteFiles(t, root, map[string]string{
		"app.py": "import util\n\nprint(util.f())\n", "util.py": "def f():\n    return 1\n", "z.py": "z = 1\n",
	})
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	set := wsOpen(t, root)
	h := wsHandler(t, &wsRecorder{}, set)
	d := func(s string) string { return "@" + contextpack.Digest(s) }

	for _, c := range []struct {
		name string
		f    fimRequest
		repo string
		want []string
	}{{
		name: "cursor file in the workspace: its disk copy gives way to the editor's text",
		f:    fimRequest{Prefix: "import util\n\nprint(util.", Suffix: ")\n", Path: filepath.Join(root, "app.py"), RepoName: "ignored"},
		repo: "proj",
		want: []string{"app.py=import util\n\nprint(util.)\n", "util.py" + d("def f():\n    return 1\n"), "z.py" + d("z = 1\n")},
	}, {
		name: "a file URI, a new file, and snippets: one the workspace holds, one unsaved, one from elsewhere",
		f: fimRequest{Prefix: "x = ", Path: "file://" + root + "/new.py", Extra: []snippet{
			{Path: filepath.Join(root, "util.py"), Text: "def f():"},
			{Path: filepath.Join(root, "z.py"), Text: "z = 2  # unsaved"},
			{Path: "/elsewhere/lib.py", Text: "def g(): pass"},
			{Text: "no name"},
		}},
		repo: "proj",
		want: []string{"app.py" + d("import util\n\nprint(util.f())\n"), "util.py" + d("def f():\n    return 1\n"), "z.py" + d("z = 1\n"),
			"new.py=x = ", "extra/z.py=z = 2  # unsaved", "elsewhere/lib.py=def g(): pass", "extra/snippet-3=no name"},
	}, {
		name: "no path: a new untitled file in the first workspace",
		f:    fimRequest{Prefix: "def g():\n    return util.", Language: "python"},
		repo: "proj",
		want: []string{"app.py" + d("import util\n\nprint(util.f())\n"), "util.py" + d("def f():\n    return 1\n"), "z.py" + d("z = 1\n"),
			"untitled.py=def g():\n    return util."},
	}, {
		name: "a file URI outside every workspace: no workspace context",
		f:    fimRequest{Prefix: "a", Path: "file:///elsewhere/other%20file.py", RepoName: "r"},
		repo: "r",
		want: []string{"elsewhere/other file.py=a"},
	}, {
		name: "a path outside every workspace: no workspace context",
		f:    fimRequest{Prefix: "a", Path: "/elsewhere/other.py", RepoName: "r"},
		repo: "r",
		want: []string{"elsewhere/other.py=a"},
	}} {
		req, snap, err := h.toPipeline(&c.f, "test")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := files(req); !slices.Equal(got, c.want) || req.Context.RepoName != c.repo {
			t.Errorf("%s:\nrepo %q files\n  %s\nwant %q\n  %s", c.name, req.Context.RepoName,
				strings.Join(got, "\n  "), c.repo, strings.Join(c.want, "\n  "))
		}
		if (snap != nil) != (c.repo == "proj") {
			t.Errorf("%s: snapshot %v", c.name, snap != nil)
		}
		if req.Context.Cursor.Offset != len(c.f.Prefix) || req.Context.Cursor.Encoding != contextpack.EncodingByteOffset {
			t.Errorf("%s: cursor %+v", c.name, req.Context.Cursor)
		}
	}

	for path, status := range map[string]int{
		root + "/../secret.py":                 http.StatusBadRequest,
		"../secret.py":                         http.StatusBadRequest,
		root:                                   http.StatusBadRequest,
		filepath.Join(root, "out", "x.py"):     http.StatusForbidden,
		"file://" + root + "/out/x.py":         http.StatusForbidden,
		"file://" + root + "/%2E%2E/secret.py": http.StatusBadRequest,
	} {
		_, _, err := h.toPipeline(&fimRequest{Prefix: "x", Path: path}, "test")
		if p := toProblem(err); err == nil || p.status != status || !strings.Contains(p.msg, "path") {
			t.Errorf("path %q: %v (status %d), want %d", path, err, p.status, status)
		}
	}
}

// The first request in a workspace sends digests the builder does not
// hold; complete resends exactly those with content, once.
func TestCompleteResendsMissingContent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root := filepath.Join(t.TempDir(), "proj")
	repofstest.WriteFiles(t, root, map[string]string{"a.py": "a = 1\n", "b.py": "b = 2\n", "c.py": "c = 3\n"})
	rec := &wsRecorder{errs: []error{&contextpack.MissingContentError{Paths: []string{"a.py", "c.py"}}}}
	h := wsHandler(t, rec, wsOpen(t, root))
	if _, err := h.complete(context.Background(), &fimRequest{Prefix: "b = ", Path: "b.py"}, "test", pipeline.Stream{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(rec.reqs))
	}
	want := []string{"a.py=a = 1\n", "b.py=b = ", "c.py=c = 3\n"}
	if got := files(&rec.reqs[1]); !slices.Equal(got, want) {
		t.Errorf("resent %v, want %v", got, want)
	}
	// A second miss is the client's error; a miss outside a workspace too.
	rec.reqs, rec.errs = nil, []error{&contextpack.MissingContentError{Paths: []string{"a.py"}}, &contextpack.MissingContentError{Paths: []string{"a.py"}}}
	_, err := h.complete(context.Background(), &fimRequest{Prefix: "b = ", Path: "b.py"}, "test", pipeline.Stream{})
	if p := toProblem(err); len(rec.reqs) != 2 || p.status != http.StatusConflict {
		t.Errorf("%d calls, %v", len(rec.reqs), err)
	}
	rec.reqs, rec.errs = nil, []error{&contextpack.MissingContentError{Paths: []string{"x.py"}}}
	if _, err := h.complete(context.Background(), &fimRequest{Prefix: "x", Path: "/elsewhere/x.py"}, "test", pipeline.Stream{}); err == nil || len(rec.reqs) != 1 {
		t.Errorf("outside a workspace: %d calls, %v", len(rec.reqs), err)
	}
}

// instantBackend answers at once with a few tokens: what infill itself
// costs per request, without a model.
type instantBackend struct{ calls atomic.Int64 }

func (*instantBackend) Model(string) string                   { return "m" }
func (*instantBackend) ContextTokens(string) int              { return 8192 }
func (*instantBackend) MaxTokens(n int) int                   { return max(n, 16) }
func (*instantBackend) CheckOptions(*inference.Request) error { return nil }
func (b *instantBackend) Generate(_ context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	b.calls.Add(1)
	if err := d(0, "x"); err != nil {
		return nil, err
	}
	return &inference.Result{Model: "m", Candidates: []inference.Candidate{{Text: "x", Finish: inference.FinishStop, Tokens: 1}}}, nil
}

func wsBuilder(t testing.TB, contextTokens int) *contextpack.Builder {
	t.Helper()
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	cfg := contextpack.DefaultConfig()
	cfg.ContextTokens = contextTokens
	b, err := contextpack.NewBuilder(cfg, tok, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// countingCompleter counts the pipeline calls complete makes.
type countingCompleter struct {
	Completer
	n int
}

func (c *countingCompleter) Complete(ctx context.Context, req *pipeline.Request, st pipeline.Stream) (*pipeline.Result, error) {
	c.n++
	return c.Completer.Complete(ctx, req, st)
}

// wsRepo writes n Python modules that call each other under root/bench.
func wsRepo(t testing.TB, n int) (root string, cursor string, text string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "bench")
	files := map[string]string{}
	for i := range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "from pkg%d import mod%d\n\n\n", (i+1)%7, (i+3)%n)
		for f := range 12 {
			fmt.Fprintf(&sb, "def func_%d_%d(value, scale=%d):\n", i, f, f+1)
			fmt.Fprintf(&sb, "    total = mod%d.func_%d_%d(value) * scale\n", (i+3)%n, (i+3)%n, f)
			fmt.Fprintf(&sb, "    if total > %d:\n        return total - value\n    return total + %d\n\n\n", 10*f, f)
		}
		files[fmt.Sprintf("pkg%d/mod%d.py", i%7, i)] = sb.String()
	}
	repofstest.WriteFiles(t, root, files)
	cursor = fmt.Sprintf("pkg%d/mod%d.py", (n-1)%7, n-1)
	return root, cursor, files[cursor]
}

// TestCompleteWorkspaceDigests runs the real pipeline and builder: the
// first request sends content once, later ones only digests.
func TestCompleteWorkspaceDigests(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root, cursor, text := wsRepo(t, 20)
	p, err := pipeline.New(pipeline.DefaultConfig(), wsBuilder(t, 8192), &instantBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingCompleter{Completer: p}
	h := wsHandler(t, cc, wsOpen(t, root))
	off := strings.Index(text, "    total")
	f := &fimRequest{Prefix: text[:off], Suffix: text[off:], Path: filepath.Join(root, cursor)}
	for i, want := range []int{2, 1, 1} {
		cc.n = 0
		res, err := h.complete(context.Background(), f, "test", pipeline.Stream{})
		if err != nil {
			t.Fatal(err)
		}
		if cc.n != want {
			t.Errorf("request %d: %d pipeline calls, want %d", i, cc.n, want)
		}
		if !slices.ContainsFunc(res.Manifest.Sources, func(s contextpack.Source) bool {
			return s.Included && s.Path != cursor && s.Kind != contextpack.SourcePrefix && s.Kind != contextpack.SourceSuffix
		}) {
			t.Errorf("request %d: no cross-file context from the workspace: %+v", i, res.Manifest.Sources)
		}
		f.Prefix += "t" // a keystroke
	}

	// A file saved after start is in the next prompt's context.
	repofstest.WriteFiles(t, root, map[string]string{"late/extra.py": "def func_19_3_helper(value):\n    return value\n"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := h.ws.Default().Snapshot().File("late/extra.py"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("late/extra.py not picked up within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cc.n = 0
	f.Prefix = text[:off] + "    helper = func_19_3_helper(value)\n" // the line above the cursor's
	res, err := h.complete(context.Background(), f, "test", pipeline.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	if cc.n != 2 || !slices.ContainsFunc(res.Manifest.Sources, func(s contextpack.Source) bool { return s.Path == "late/extra.py" && s.Included }) {
		t.Errorf("%d calls (want 2: its content is new to the builder); late/extra.py not in the context: %+v", cc.n, res.Manifest.Sources)
	}
}

// BenchmarkWorkspaceKeystroke types one character per request into a
// 36 KB file of a 500-file workspace, through complete, the real pipeline
// and builder, and a backend that answers at once: what workspace mode
// costs per keystroke (the 500 other files go by digest). "content" sends
// every file's content on every request instead, for comparison.
func BenchmarkWorkspaceKeystroke(b *testing.B) {
	for _, mode := range []string{"digests", "content"} {
		b.Run(mode, func(b *testing.B) {
			root, cursor, text := wsRepo(b, 500)
			text = strings.Repeat(text, 36<<10/len(text)+1)
			repofstest.WriteFiles(b, root, map[string]string{cursor: text})
			set := wsOpen(b, root)
			p, err := pipeline.New(pipeline.DefaultConfig(), wsBuilder(b, 8192), &instantBackend{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			h := wsHandler(b, p, set)
			off := strings.Index(text, "    total")
			f := &fimRequest{Prefix: text[:off], Suffix: text[off:], Path: filepath.Join(root, cursor)}
			ctx := context.Background()
			call := func() error {
				_, err := h.complete(ctx, f, "bench", pipeline.Stream{})
				return err
			}
			if mode == "content" {
				call = func() error {
					req, snap, err := h.toPipeline(f, "bench")
					if err != nil {
						return err
					}
					for i := range req.Context.Files {
						if wf, ok := snap.File(req.Context.Files[i].Path); ok && !req.Context.Files[i].HasContent {
							req.Context.Files[i] = contextpack.File{Path: wf.Path, Content: wf.Content, HasContent: true}
						}
					}
					_, err = p.Complete(ctx, req, pipeline.Stream{})
					return err
				}
			}
			if err := call(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f.Prefix += string(rune('a' + i%26))
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWorkspaceToPipeline is workspace mode's own share of a
// keystroke: resolving the path and listing 500 files by digest around the
// cursor file's text.
func BenchmarkWorkspaceToPipeline(b *testing.B) {
	root, cursor, text := wsRepo(b, 500)
	h := wsHandler(b, &wsRecorder{}, wsOpen(b, root))
	f := &fimRequest{Prefix: text[:100], Suffix: text[100:], Path: filepath.Join(root, cursor)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := h.toPipeline(f, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// A request that names no file (llama.vim sends none, nor a language)
// still gets the workspace's similar code, found from its text alone.
func TestCompleteWorkspaceNoPath(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root, _, _ := wsRepo(t, 20)
	p, err := pipeline.New(pipeline.DefaultConfig(), wsBuilder(t, 8192), &instantBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := wsHandler(t, p, wsOpen(t, root))
	for _, lang := range []string{"", "python"} {
		f := &fimRequest{Prefix: "def func_7_3(value, scale=4):\n    total = mod10.func_10_3(value) * scale\n    if total > 30:\n        return ",
			Suffix: "\n", Language: lang}
		res, err := h.complete(context.Background(), f, "test", pipeline.Stream{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Manifest.Sources, func(s contextpack.Source) bool {
			return s.Included && s.Kind == contextpack.SourceSimilar && strings.HasPrefix(s.Path, "pkg")
		}) {
			t.Errorf("language %q: no similar code from the workspace: %+v", lang, res.Manifest.Sources)
		}
	}
}

// BenchmarkWorkspaceFirstRequest is the first request in a 500-file
// workspace. "cold": the builder holds nothing yet, so every digest misses,
// the 500 files go again with content, and all are analysed and indexed.
// "warmed": the server warmed the builder at start (Set.Warm, not timed).
func BenchmarkWorkspaceFirstRequest(b *testing.B) {
	root, cursor, text := wsRepo(b, 500)
	set := wsOpen(b, root)
	off := strings.Index(text, "    total")
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warmed"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				builder := wsBuilder(b, 8192)
				if warm {
					set.Warm(context.Background(), builder, nil)
				}
				p, err := pipeline.New(pipeline.DefaultConfig(), builder, &instantBackend{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				h := wsHandler(b, p, set)
				f := &fimRequest{Prefix: text[:off], Suffix: text[off:], Path: filepath.Join(root, cursor)}
				b.StartTimer()
				if _, err := h.complete(context.Background(), f, "bench", pipeline.Stream{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A workspace the server warmed sends digests only from the first
// request on.
func TestWarmedWorkspaceSendsDigestsOnly(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root, cursor, text := wsRepo(t, 20)
	set := wsOpen(t, root)
	builder := wsBuilder(t, 8192)
	set.Warm(context.Background(), builder, zaptest.NewLogger(t))
	p, err := pipeline.New(pipeline.DefaultConfig(), builder, &instantBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingCompleter{Completer: p}
	h := wsHandler(t, cc, set)
	off := strings.Index(text, "    total")
	for _, path := range []string{filepath.Join(root, cursor), ""} {
		cc.n = 0
		f := &fimRequest{Prefix: text[:off] + "x", Suffix: text[off:], Path: path}
		if _, err := h.complete(context.Background(), f, "test", pipeline.Stream{}); err != nil || cc.n != 1 {
			t.Errorf("path %q: %d pipeline calls (want 1: no resend), %v", path, cc.n, err)
		}
	}
}

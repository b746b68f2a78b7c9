package contextpack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A list made from the one before it is the list made from scratch: same
// snapshot ID and languages, whatever changed; and no two different lists
// share an ID.
func TestNextListMatchesFresh(t *testing.T) {
	t.Parallel()
	var files []File
	var digests []string
	for i := range 100 { // four chunks, the last one short
		files = append(files, File{Path: fmt.Sprintf("p/f%02d.py", i)})
		digests = append(digests, fmt.Sprintf("d%02d", i))
	}
	steps := []struct {
		name string
		edit func()
	}{
		{"first", func() {}},
		{"one digest", func() { digests[40] = "d40'" }},
		{"digests in two chunks", func() { digests[0], digests[99] = "d00'", "d99'" }},
		{"a digest back", func() { digests[40] = "d40" }},
		{"nothing again", func() {}},
		{"a language", func() { files[7].Language = "go" }},
		{"the language back", func() { files[7].Language = "" }},
		{"a path", func() { files[64].Path = "p/renamed.py" }},
		{"a file added", func() {
			files = append(files, File{Path: "p/new.go"})
			digests = append(digests, "dnew")
		}},
		{"a file removed", func() { files, digests = files[1:], digests[1:] }},
		{"two swapped", func() {
			files[3], files[4] = files[4], files[3]
			digests[3], digests[4] = digests[4], digests[3]
		}},
		{"a path and a digest moved across a field", func() { files[5].Path += "x"; digests[5] = digests[5][1:] }},
	}
	lists := map[string]string{} // snapshot ID → the list it names
	var prev *fileList
	for _, s := range steps {
		s.edit()
		ds := slices.Clone(digests) // a request's digests are its own
		same := prev.samePaths(files)
		got := nextList(prev, same, files, ds, true)
		want := nextList(nil, false, files, ds, true)
		if got.id != want.id || !slices.Equal(got.ids, want.ids) || !slices.Equal(got.paths, want.paths) ||
			!slices.Equal(got.langs, want.langs) || !slices.Equal(got.digests, want.digests) {
			t.Fatalf("%s: list after the previous one differs from one made from scratch", s.name)
		}
		if same && got != prev {
			var edits []int
			for i := range ds {
				if ds[i] != prev.digests[i] {
					edits = append(edits, i)
				}
			}
			if !slices.Equal(got.edits, edits) {
				t.Fatalf("%s: edits %v, want %v", s.name, got.edits, edits)
			}
		}
		if strings.HasPrefix(s.name, "nothing") && got != prev {
			t.Fatalf("%s: an unchanged list was made again", s.name)
		}
		var sb strings.Builder
		for i, f := range files {
			fmt.Fprintf(&sb, "%q %q %q\n", f.Path, ds[i], f.Language)
		}
		if l, ok := lists[got.id]; ok && l != sb.String() {
			t.Fatalf("%s: two different lists got snapshot %s", s.name, got.id)
		}
		lists[got.id] = sb.String()
		prev = got
	}
	if len(lists) < len(steps)-3 { // "nothing again", two steps back to earlier lists
		t.Fatalf("%d distinct IDs over %d steps", len(lists), len(steps))
	}

	off := nextList(nil, false, files, digests, false)
	if off.id != "" || off.chunks != nil || !slices.Equal(off.ids, prev.ids) {
		t.Fatal("without snapshots a list has an ID or hashes, or other languages")
	}
}

// A request whose list differs from the repository's last one is checked
// in full; one with the same paths still needs content or a digest for
// each file, and a new language for a path is used.
func TestBuildChecksListAfterMemo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := NewBuilder(DefaultConfig(), byteTok{}, nil) // as coldBuild's
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a := File{Path: "a.py", Content: "import b\n\nx = b.y\n", HasContent: true}
	bf := File{Path: "b.py", Content: "y = 1\n", HasContent: true}
	cur := Cursor{Path: "a.py", Line: 2}
	if _, err := b.Build(ctx, Request{RepoName: "r", Files: []File{a, bf}, Cursor: cur}); err != nil {
		t.Fatal(err)
	}
	bare := File{Path: "b.py"}
	for name, tc := range map[string]struct {
		files  []File
		reason string
	}{
		"neither content nor digest": {[]File{a, bare}, "neither content nor digest"},
		"duplicate path":             {[]File{a, a}, "duplicate path"},
		"line break in a path":       {[]File{a, {Path: "b\n.py", Content: "", HasContent: true}}, "line break"},
		"empty path":                 {[]File{a, {Content: "", HasContent: true}}, "empty"},
	} {
		_, err := b.Build(ctx, Request{RepoName: "r", Files: tc.files, Cursor: cur})
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tc.reason) {
			t.Errorf("%s: err = %v, want an ArgumentError saying %q", name, err, tc.reason)
		}
	}

	// The same paths with a language for b.py: analysed as Go, as a fresh
	// Builder does.
	asGo := File{Path: "b.py", Language: "go", Content: "package b\n\nfunc Y() int { return 1 }\n", HasContent: true}
	req := Request{RepoName: "r", Files: []File{a, asGo}, Cursor: cur}
	got, err := b.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := coldBuild(t, byteTok{}, req)
	if got.Text != want.Text || got.Snapshot != want.Snapshot {
		t.Fatalf("after a language change the prompt or snapshot differs from a fresh Builder's:\n%q\n%q", got.Text, want.Text)
	}
}

// A request repeating the list the repository's index was last updated
// from skips the store, analyses and index update (buildListed); one whose
// list differs from it only in a few digests resolves, analyses and
// re-indexes only those (buildEdited). Their prompts and errors are those
// of a fresh Builder, and any other list goes the whole way.
func TestListedBuildMatchesCold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core, logs := observer.New(zap.DebugLevel)
	cfg := DefaultConfig()
	cfg.MaxRepositories = 1
	b, err := NewBuilder(cfg, byteTok{}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	edit := func(fs []File, i int, text string) []File {
		out := slices.Clone(fs)
		out[i].Content += text
		return out
	}
	// send sends fs as digests but for the files at keep, with content.
	send := func(fs []File, keep ...int) []File {
		out := asDigests(fs, -1)
		for _, i := range keep {
			out[i] = fs[i]
		}
		return out
	}
	fs := pyRepo(8, "listed")
	cursorEdit := edit(fs, 3, "\ndef extra(z):\n    return helper_4(z)\n")
	other := edit(fs, 5, "\nOTHER = 5\n")
	two := edit(edit(other, 6, "\nSIX = 6\n"), 0, "\nZERO = 0\n")
	plus := append(slices.Clone(two), File{Path: "p/new.py", Content: "def new_one(v):\n    return v\n", HasContent: true})
	unsent := edit(plus, 3, "\nUNSENT = 1\n") // m3.py goes as a digest the server has not seen first
	again := edit(unsent, 3, "\nAGAIN = 2\n")
	lacks := edit(again, 4, "\ndef helper_extra(q):\n    return q\n") // m4.py, which m3.py imports, unsent
	lacksEdited := edit(lacks, 5, "\nFIVE = 5\n")
	// A call typed in the cursor file, key by key: a syntax error for
	// two versions (the analysis goes by segments), then none.
	typing1 := edit(lacksEdited, 3, "\ndef typed(z):\n    return helper_4(z, ")
	typing2 := edit(typing1, 3, "1")
	typed := edit(typing2, 3, ")\n")
	reqAt := func(repo string, files []File, path string, line int) Request {
		return Request{RepoName: repo, Files: files, MaxNewTokens: 32, Cursor: Cursor{Path: path, Line: line}}
	}
	req := func(repo string, files []File, line int) Request { return reqAt(repo, files, "p/m3.py", line) }
	steps := []struct {
		name  string
		req   Request
		whole []File // the same files, all with content, for a fresh Builder
		path  string // whole, listed, edited, or missing (a MissingContentError)
	}{
		// The cursor file's typing view (view.go) follows the cursor's
		// line: the same list with the cursor on another line updates
		// the index for the new view (edited), the same line is listed.
		{"first", req("r", fs, 3), fs, "whole"},
		{"same list as digests, another cursor line", req("r", send(fs), 5), fs, "edited"},
		{"again", req("r", send(fs), 5), fs, "listed"},
		{"cursor file edited", req("r", send(cursorEdit, 3), 5), cursorEdit, "edited"},
		{"the edit repeated, another line", req("r", send(cursorEdit), 6), cursorEdit, "edited"},
		{"the edit repeated, the same line", req("r", send(cursorEdit), 6), cursorEdit, "listed"},
		{"back to the first list", req("r", send(fs), 5), fs, "edited"},
		{"and again, another line", req("r", send(fs), 2), fs, "edited"},
		// Another cursor file: the index gives the last one its text
		// back, on the whole path.
		{"the cursor in another file", reqAt("r", send(fs), "p/m4.py", 4), fs, "whole"},
		{"and back", req("r", send(fs), 2), fs, "whole"},
		{"and again", req("r", send(fs), 2), fs, "listed"},
		{"another file edited", req("r", send(other, 5), 2), other, "edited"},
		{"two more files edited", req("r", send(two, 0, 6), 4), two, "edited"},
		{"a file added", req("r", send(plus, 8), 4), plus, "whole"},
		{"a digest the server lacks", req("r", send(unsent), 2), unsent, "missing"},
		{"the same list with that content", req("r", send(unsent, 3), 2), unsent, "whole"},
		{"and as digests", req("r", send(unsent), 2), unsent, "listed"},
		{"another repository evicts r's index", req("s", cursorEdit, 1), cursorEdit, "whole"},
		{"r after its index went", req("r", send(unsent), 2), unsent, "whole"},
		{"an edit after that", req("r", send(again, 3), 2), again, "edited"},
		{"an imported file's digest the server lacks", req("r", send(lacks), 2), lacks, "missing"},
		{"another edit, with that file's content", req("r", send(lacksEdited, 4, 5), 2), lacksEdited, "whole"},
		{"a call half typed in the cursor file", req("r", send(typing1, 3), 5), typing1, "edited"},
		{"its next key", req("r", send(typing2, 3), 5), typing2, "edited"},
		{"the call closed", req("r", send(typed, 3), 5), typed, "edited"},
	}
	for _, s := range steps {
		logs.TakeAll()
		got, err := b.Build(ctx, s.req)
		var me *MissingContentError
		if s.path == "missing" {
			if !errors.As(err, &me) || len(me.Paths) != 1 {
				t.Fatalf("%s: err = %v, want MissingContentError for one file", s.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		full := s.req
		full.Files = s.whole
		if want := coldBuild(t, byteTok{}, full); got.Text != want.Text || got.Tokens != want.Tokens || got.Snapshot != want.Snapshot {
			t.Fatalf("%s: prompt differs from a fresh Builder's:\n%q\n%q", s.name, got.Text, want.Text)
		}
		built := logs.FilterMessage("contextpack: prompt built").All()
		if len(built) != 1 {
			t.Fatalf("%s: logged %v", s.name, built)
		}
		m := built[0].ContextMap()
		path := "whole"
		if m["listed"] == true {
			path = "listed"
		}
		if m["edited"] == true {
			path = "edited"
		}
		if path != s.path {
			t.Fatalf("%s: took the %s path, want %s", s.name, path, s.path)
		}
	}

	// Errors on the short paths are the whole path's.
	last := edit(lacksEdited, 3, "\nLAST = 3\n")
	for name, tc := range map[string]struct {
		req   Request
		whole []File
		is    error
	}{
		"listed, cursor past the end": {req("r", send(lacksEdited), 99), lacksEdited, ErrInvalidArgument},
		"listed, budget": {Request{RepoName: "r", Files: send(lacksEdited), Cursor: Cursor{Path: "p/m3.py"},
			TokenBudget: 100, MaxNewTokens: 95}, lacksEdited, ErrBudget},
		"edited, cursor past the end": {req("r", send(last, 3), 99), last, ErrInvalidArgument},
	} {
		_, err := b.Build(ctx, tc.req)
		cold := tc.req
		cold.Files = tc.whole
		_, coldErr := freshBuilder(t).Build(ctx, cold)
		if !errors.Is(err, tc.is) || coldErr == nil || err.Error() != coldErr.Error() {
			t.Errorf("%s: err = %v, want %v (a fresh Builder's)", name, err, coldErr)
		}
	}
}

func freshBuilder(t *testing.T) *Builder {
	t.Helper()
	b, err := NewBuilder(DefaultConfig(), byteTok{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// Requests alternating between two lists of one repository, from several
// goroutines, each get a fresh Builder's prompt, whichever path they take.
func TestConcurrentListedBuilds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := freshBuilder(t)
	a := pyRepo(6, "conc")
	e := slices.Clone(a)
	e[2].Content += "\ndef more(q):\n    return helper_3(q)\n"
	var reqs []Request
	var want []string
	for _, fs := range [][]File{a, e} {
		if _, err := b.Build(ctx, Request{RepoName: "r", Files: fs, Cursor: Cursor{Path: "p/m2.py"}}); err != nil {
			t.Fatal(err) // the server now holds every content
		}
		for _, line := range []int{1, 4} {
			r := Request{RepoName: "r", Files: fs, MaxNewTokens: 16, Cursor: Cursor{Path: "p/m2.py", Line: line}}
			want = append(want, coldBuild(t, byteTok{}, r).Text)
			r.Files = asDigests(fs, -1)
			reqs = append(reqs, r)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				k := (g + i/3) % len(reqs) // each request a few times in a row
				p, err := b.Build(ctx, reqs[k])
				if err == nil && p.Text != want[k] {
					err = fmt.Errorf("request %d: prompt differs from a fresh Builder's", k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The memo holds at most maxFiles files of lists in all: a new list drops
// other repositories' lists until it fits, and a list over the bound is
// not held (nor is the repository's older one).
func TestListMemoBounded(t *testing.T) {
	t.Parallel()
	list := func(n int) *fileList {
		files := make([]File, n)
		for i := range files {
			files[i].Path = fmt.Sprint(i)
		}
		return nextList(nil, false, files, make([]string, n), false)
	}
	m := newListMemo(10)
	a, b := list(6), list(4)
	m.put("a", a)
	m.put("b", b)
	if m.get("a") != a || m.get("b") != b || m.files != 10 {
		t.Fatalf("two lists of 10 files in all not both held (%d files)", m.files)
	}
	c := list(5)
	m.put("c", c)
	if m.get("c") != c || m.files > 10 || m.files != len(m.get("c").paths)+heldFiles(m, "a", "b") {
		t.Fatalf("over the bound after a third list: %d files", m.files)
	}
	m.put("c", list(11))
	if m.get("c") != nil || m.files != heldFiles(m, "a", "b") {
		t.Fatalf("a list over the bound is held, or c's old list stayed (%d files)", m.files)
	}
}

func heldFiles(m *listMemo, repos ...string) int {
	n := 0
	for _, r := range repos {
		if l := m.get(r); l != nil {
			n += len(l.paths)
		}
	}
	return n
}

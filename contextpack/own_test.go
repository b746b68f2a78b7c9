package contextpack

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// borrow returns r with every string in one new buffer, as the server's
// decoder delivers a request (infillv1.Codec), and a channel closed once
// that buffer has been collected.
func borrow(r Request) (Request, <-chan struct{}) {
	size := 64 // not a tiny allocation, whose cleanups may never run
	each := func(f func(*string)) {
		f(&r.RepoName)
		f(&r.Base)
		f(&r.Cursor.Path)
		for i := range r.Removed {
			f(&r.Removed[i])
		}
		for i := range r.Files {
			fl := &r.Files[i]
			f(&fl.Path)
			f(&fl.Content)
			f(&fl.Digest)
			f(&fl.Language)
			for k := range fl.Edits {
				f(&fl.Edits[k].Text)
			}
		}
	}
	r.Removed = append([]string(nil), r.Removed...)
	r.Files = append([]File(nil), r.Files...)
	for i := range r.Files {
		r.Files[i].Edits = append([]Edit(nil), r.Files[i].Edits...)
	}
	each(func(s *string) { size += len(*s) })
	buf := make([]byte, size)
	off := 0
	each(func(s *string) {
		if *s == "" {
			return
		}
		n := copy(buf[off:], *s)
		*s = unsafe.String(&buf[off], n)
		off += n
	})
	freed := make(chan struct{})
	runtime.AddCleanup(&buf[0], func(ch chan struct{}) { close(ch) }, freed)
	return r, freed
}

// collected reports whether freed is closed within a few collections.
func collected(freed <-chan struct{}, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		runtime.GC()
		select {
		case <-freed:
			return true
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestBuildKeepsNoRequestString builds a sequence of requests whose
// strings share one buffer each, as the server decodes them, and checks
// that no buffer outlives its Build: a string the Builder kept (a path in
// the index, a text in the store, a digest in the list memo or a
// snapshot, the repository's name) would keep the whole request alive.
// The same requests with ordinary strings, on a second Builder, give the
// same prompts.
func TestBuildKeepsNoRequestString(t *testing.T) {
	t.Parallel()
	mod := func(i int, body string) string {
		return fmt.Sprintf("from pkg import m%d\n\n\ndef f%d(x):\n    %s\n    return m%d.f%d(x)\n", (i+1)%4, i, body, (i+1)%4, (i+1)%4)
	}
	files := func(n int, body string) []File {
		fs := make([]File, n)
		for i := range fs {
			fs[i] = File{Path: fmt.Sprintf("pkg/m%d.py", i), Content: mod(i, body), HasContent: true}
		}
		return fs
	}
	cursor := Cursor{Path: "pkg/m0.py", Line: 4, Column: 4}
	base := Request{RepoName: "own", Files: files(4, "y = x"), Cursor: cursor, MaxNewTokens: 16}
	digests := func(r Request) Request {
		r.Files = append([]File(nil), r.Files...)
		for i := range r.Files[1:] {
			f := &r.Files[i+1]
			f.Digest, f.Content, f.HasContent = Digest(f.Content), "", false
		}
		return r
	}
	var steps []Request
	steps = append(steps, base)          // the first request: every file new
	steps = append(steps, digests(base)) // the same list again, as digests
	changed := digests(base)             // one file's text changes
	changed.Files[2] = File{Path: "pkg/m2.py", Content: mod(2, "z = x * 2"), HasContent: true}
	steps = append(steps, changed)
	grown := digests(base) // a new file and a language
	grown.Files = append(grown.Files, File{Path: "pkg/new.py", Content: "def g():\n    return 1\n", HasContent: true, Language: "python"})
	steps = append(steps, grown)
	edited := digests(base) // the cursor file as an edit
	edited.Files[0] = File{Path: "pkg/m0.py", Digest: Digest(mod(0, "y = x")),
		Edits: []Edit{{Start: len(mod(0, "y = x")) - 1, End: len(mod(0, "y = x")) - 1, Text: "  # ü"}}}
	steps = append(steps, edited)
	steps = append(steps, Request{RepoName: "other", Files: files(2, "w = 1"), Cursor: cursor, MaxNewTokens: 16})

	// Last, on the snapshot of the "own" list: one file changed, one removed.
	steps = append(steps, Request{RepoName: "own", Removed: []string{"pkg/m3.py"}, Cursor: cursor, MaxNewTokens: 16,
		Files: []File{{Path: "pkg/m0.py", Content: mod(0, "v = 0"), HasContent: true}}})

	b, ref := newTestBuilder(t, 4096), newTestBuilder(t, 4096)
	snaps := map[string]string{}
	for i, r := range steps {
		if len(r.Removed) > 0 {
			r.Base = snaps[r.RepoName]
		}
		want, err := ref.Build(context.Background(), r)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, freed := func() (*Prompt, <-chan struct{}) {
			br, freed := borrow(r)
			p, err := b.Build(context.Background(), br)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			return p, freed
		}()
		if got.Text != want.Text || got.Snapshot != want.Snapshot || got.Snapshot == "" {
			t.Fatalf("step %d: prompt differs from a Builder given ordinary strings", i)
		}
		if !collected(freed, 5*time.Second) {
			t.Fatalf("step %d: the request's buffer is still alive after Build (a string of it was kept)", i)
		}
		snaps[r.RepoName] = got.Snapshot
		runtime.KeepAlive(got)
	}

	// The check itself: a buffer whose string is still held is not collected.
	keep, freed := func() (string, <-chan struct{}) {
		br, freed := borrow(base)
		return br.Files[1].Path, freed
	}()
	if collected(freed, 200*time.Millisecond) {
		t.Fatal("a buffer was collected while one of its strings was held")
	}
	runtime.KeepAlive(keep)
}

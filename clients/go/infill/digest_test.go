package infill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// contentStore plays the server's side of the digest contract: it keeps
// content by digest and fails with FAILED_PRECONDITION listing the paths
// whose digest it does not hold.
type contentStore struct {
	mu sync.Mutex
	m  map[string]string
	// listMax > 0 lists at most that many paths, then a
	// MISSING_CONTENT_MORE violation, as the server does for long lists.
	listMax int
}

func (s *contentStore) resolve(repo *infillv1.Repository) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []*errdetails.PreconditionFailure_Violation
	for _, f := range repo.GetFiles() {
		base, held := s.m[f.GetDigest()]
		switch {
		case f.Content != nil:
			s.m[Digest(f.GetContent())] = f.GetContent()
		case len(f.GetEdits()) > 0 && held:
			text := applyEdits(base, f.GetEdits())
			s.m[Digest(text)] = text
		default:
			if _, ok := s.m[f.GetDigest()]; !ok {
				missing = append(missing, &errdetails.PreconditionFailure_Violation{
					Type: MissingContentType, Subject: f.GetPath(), Description: "content not held; resend it"})
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	n := len(missing)
	if s.listMax > 0 && n > s.listMax {
		missing = append(missing[:s.listMax], &errdetails.PreconditionFailure_Violation{Type: MissingContentMoreType})
	}
	st, err := status.New(codes.FailedPrecondition, fmt.Sprintf("%d files sent as digests are not held", n)).
		WithDetails(&errdetails.PreconditionFailure{Violations: missing})
	if err != nil {
		return err
	}
	return st.Err()
}

func (s *contentStore) evict(content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, Digest(content))
}

// shape describes how each file was sent: "path=content" or "path=digest".
func shape(repo *infillv1.Repository) string {
	var parts []string
	for _, f := range repo.GetFiles() {
		kind := "content"
		if f.GetDigest() != "" {
			kind = "digest"
		}
		parts = append(parts, f.GetPath()+"="+kind)
	}
	return strings.Join(parts, " ")
}

func TestDigest(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hello\n"))
	if got, want := Digest("hello\n"), "sha256:"+hex.EncodeToString(sum[:]); got != want || len(got) != digestLen {
		t.Errorf("Digest = %q; want %q", got, want)
	}
}

func TestDigestsSentAndMissingContentResent(t *testing.T) {
	t.Parallel()
	store := &contentStore{m: map[string]string{}}
	srv := &fakeServer{unary: func(_ int, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		if err := store.resolve(req.GetRepository()); err != nil {
			return nil, err
		}
		return &infillv1.CompleteResponse{}, nil
	}}
	c, sleeps := newTestClient(t, srv, Config{Transfer: TransferDigests})
	a := strings.Repeat("a = 1\n", 20)
	b := strings.Repeat("b = 2\n", 20)
	req := &infillv1.CompleteRequest{Repository: &infillv1.Repository{Name: "r", Files: []*infillv1.File{
		{Path: "a.py", Content: proto.String(a)},
		{Path: "b.py", Content: proto.String(b)},
		{Path: "tiny.py", Content: proto.String("t = 3\n")},
	}}}
	call := func() {
		t.Helper()
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	call() // first time: everything as content
	call() // then digests, except a file shorter than its digest
	store.evict(a)
	call() // a is missing: one FAILED_PRECONDITION, then a resent
	want := []string{
		"a.py=content b.py=content tiny.py=content",
		"a.py=digest b.py=digest tiny.py=content",
		"a.py=digest b.py=digest tiny.py=content",
		"a.py=content b.py=digest tiny.py=content",
	}
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, shape(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("requests as sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(*sleeps) != 0 {
		t.Errorf("a resend must not wait: %v", *sleeps)
	}
	if req.GetRepository().GetFiles()[0].GetContent() != a {
		t.Error("the caller's request was modified")
	}

	// A server that lists only some of the missing paths (a list too long
	// for one error) and says there are more gets every digest's content
	// in one resend.
	store.listMax = 1
	store.evict(a)
	store.evict(b)
	call()
	got = nil
	for _, r := range srv.Requests()[len(want):] {
		got = append(got, shape(r))
	}
	if want := []string{"a.py=digest b.py=digest tiny.py=content", "a.py=content b.py=content tiny.py=content"}; !slices.Equal(got, want) {
		t.Errorf("with a truncated list, requests as sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStreamResendsMissingContent(t *testing.T) {
	t.Parallel()
	store := &contentStore{m: map[string]string{}}
	srv := &fakeServer{stream: func(_ int, req *infillv1.StreamCompleteRequest, st streamSrv) error {
		if err := store.resolve(req.GetRepository()); err != nil {
			return err
		}
		return sendAll(st, start("m"), delta("ok"), done("ok"))
	}}
	c, _ := newTestClient(t, srv, Config{Transfer: TransferDigests})
	content := strings.Repeat("def f():\n    pass\n", 10)
	req := &infillv1.StreamCompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{
		{Path: "m.py", Content: proto.String(content)}}}}
	for i := range 2 {
		if i == 1 {
			store.evict(content)
		}
		got := collect(c.Stream(t.Context(), req))
		if got.err != nil || got.text != "ok" || got.starts != 1 {
			t.Fatalf("call %d: %+v", i, got)
		}
	}
	var shapes []string
	for _, r := range srv.Requests() {
		shapes = append(shapes, shape(r))
	}
	if want := []string{"m.py=content", "m.py=digest", "m.py=content"}; !slices.Equal(shapes, want) {
		t.Errorf("sent %v; want %v", shapes, want)
	}
}

func TestCallerDigestMissingIsReturned(t *testing.T) {
	t.Parallel()
	store := &contentStore{m: map[string]string{}}
	srv := &fakeServer{unary: func(_ int, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return &infillv1.CompleteResponse{}, store.resolve(req.GetRepository())
	}}
	c, _ := newTestClient(t, srv, Config{Transfer: TransferDigests})
	req := &infillv1.CompleteRequest{Repository: &infillv1.Repository{Files: []*infillv1.File{
		{Path: "x.py", Digest: Digest("unknown")},
		{Path: "y.py", Digest: Digest("unknown too")},
	}}}
	_, err := c.Complete(t.Context(), req)
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("err %v; want FAILED_PRECONDITION", err)
	}
	if got, more := MissingContent(err); !slices.Equal(got, []string{"x.py", "y.py"}) || more {
		t.Errorf("MissingContent = %v, %v", got, more)
	}
	if srv.Attempts() != 1 {
		t.Errorf("attempts %d; content the client does not have cannot be resent", srv.Attempts())
	}
}

func TestMissingContentIgnoresOtherErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		nil,
		context.Canceled,
		status.Error(codes.FailedPrecondition, "prompt does not fit"),
		status.Error(codes.InvalidArgument, "bad"),
	} {
		if got, more := MissingContent(err); got != nil || more {
			t.Errorf("MissingContent(%v) = %v, %v", err, got, more)
		}
	}
}

func TestDigestSetBounded(t *testing.T) {
	t.Parallel()
	s := newDigestSet(3)
	s.add([]string{"a", "b"})
	s.add([]string{"c"})
	if !s.has("a") || !s.has("c") {
		t.Fatal("lost digests below the bound")
	}
	s.add([]string{"d"})
	if s.has("a") || !s.has("d") || len(s.m) > 3 {
		t.Errorf("set over its bound: %v", s.m)
	}
	s.add([]string{"1", "2", "3", "4", "5"})
	if len(s.m) > 3 {
		t.Errorf("set over its bound: %v", s.m)
	}
}

// digestMemo gives each file's digest whether its content is the string
// it saw before, an equal copy or new text under the same path, and stays
// within its bound.
func TestDigestMemo(t *testing.T) {
	t.Parallel()
	dm := &digestMemo{max: 100}
	file := func(path, content string) *infillv1.File {
		return &infillv1.File{Path: path, Content: proto.String(content)}
	}
	check := func(step string, files ...*infillv1.File) {
		t.Helper()
		got := dm.digests(files)
		for i, f := range files {
			want := ""
			if f.Content != nil {
				want = Digest(f.GetContent())
			}
			if got[i] != want {
				t.Errorf("%s: file %d (%s) digest %q; want %q", step, i, f.GetPath(), got[i], want)
			}
		}
		if dm.bytes > dm.max {
			t.Errorf("%s: memo holds %d bytes, over its bound %d", step, dm.bytes, dm.max)
		}
	}
	a := strings.Repeat("a", 30)
	check("first", file("a", a), file("b", "bb"), &infillv1.File{Path: "d", Digest: "sha256:x"})
	check("same strings", file("a", a), file("b", "bb"))
	check("equal copy", file("a", strings.Clone(a)), file("b", "bb"))
	check("new text, same path", file("a", a+"x"), file("b", "bb"))
	check("back to the old text", file("a", a), file("b", "b"))
	if e := dm.m["a"]; e.content != a || e.digest != Digest(a) {
		t.Errorf("memo for a holds %q, %q", e.content, e.digest)
	}
	check("past the bound", file("c", strings.Repeat("c", 60)), file("e", strings.Repeat("e", 60)))
	check("larger than the bound", file("f", strings.Repeat("f", 101)))
	if _, ok := dm.m["f"]; ok {
		t.Error("memo kept content larger than its bound")
	}
	check("empty content", file("g", ""), file("a", a))
}

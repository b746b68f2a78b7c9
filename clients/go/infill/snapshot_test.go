package infill

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// snapServer keeps file lists by snapshot id as infill-server does: it
// expands a request on a base, fails an unknown base with a SNAPSHOT
// violation and names each request's whole list in its response.
type snapServer struct {
	infillv1.UnimplementedCompletionServiceServer

	mu    sync.Mutex
	lists map[string]map[string]string // id → path → content or digest
	seen  []*infillv1.Repository
	whole []map[string]string
	texts map[string]string // digest → content, for edits
}

// applyEdits applies a file's edits to text, as the server does.
func applyEdits(text string, edits []*infillv1.Edit) string {
	for _, e := range edits {
		text = text[:e.GetStart()] + e.GetText() + text[e.GetEnd():]
	}
	return text
}

func (s *snapServer) resolve(repo *infillv1.Repository) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, repo)
	list := map[string]string{}
	if b := repo.GetBase(); b != "" {
		base, ok := s.lists[b]
		if !ok {
			st, _ := status.New(codes.FailedPrecondition, "snapshot not held").WithDetails(&errdetails.PreconditionFailure{
				Violations: []*errdetails.PreconditionFailure_Violation{{Type: SnapshotType, Subject: b}}})
			return "", st.Err()
		}
		for p, v := range base {
			list[p] = v
		}
	}
	if s.texts == nil {
		s.texts = map[string]string{}
	}
	for _, f := range repo.GetFiles() {
		switch {
		case f.Content != nil:
			list[f.GetPath()] = Digest(f.GetContent())
			s.texts[Digest(f.GetContent())] = f.GetContent()
		case len(f.GetEdits()) > 0:
			text := applyEdits(s.texts[f.GetDigest()], f.GetEdits())
			list[f.GetPath()] = Digest(text)
			s.texts[Digest(text)] = text
		default:
			list[f.GetPath()] = f.GetDigest()
		}
	}
	for _, p := range repo.GetRemoved() {
		delete(list, p)
	}
	keys := make([]string, 0, len(list))
	for p := range list {
		keys = append(keys, p+"="+list[p])
	}
	sort.Strings(keys)
	id := fmt.Sprintf("snap:%x", strings.Join(keys, ","))
	if s.lists == nil {
		s.lists = map[string]map[string]string{}
	}
	s.lists[id] = list
	s.whole = append(s.whole, list)
	return id, nil
}

func (s *snapServer) Complete(_ context.Context, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	id, err := s.resolve(req.GetRepository())
	if err != nil {
		return nil, err
	}
	return &infillv1.CompleteResponse{RepositorySnapshot: id, Candidates: []*infillv1.Candidate{{Text: "x"}}}, nil
}

func (s *snapServer) StreamComplete(req *infillv1.StreamCompleteRequest, st grpc.ServerStreamingServer[infillv1.StreamCompleteResponse]) error {
	id, err := s.resolve(req.GetRepository())
	if err != nil {
		return err
	}
	return sendAll(st, &infillv1.StreamCompleteResponse{Event: &infillv1.StreamCompleteResponse_Start{
		Start: &infillv1.StreamStart{RepositorySnapshot: id}}}, delta("x"), done("x"))
}

func (s *snapServer) forgetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = nil
}

func repoOf(files map[string]string) *infillv1.Repository {
	r := &infillv1.Repository{Name: "r"}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		r.Files = append(r.Files, &infillv1.File{Path: p, Content: proto.String(files[p])})
	}
	return r
}

func sentPaths(r *infillv1.Repository) []string {
	var out []string
	for _, f := range r.GetFiles() {
		out = append(out, f.GetPath())
	}
	sort.Strings(out)
	return out
}

// By default (TransferDeltas), the second request sends only what changed on the
// first response's snapshot; the server sees the same whole list.
func TestSnapshotsSendOnlyChanges(t *testing.T) {
	t.Parallel()
	srv := &snapServer{}
	c, _ := newTestClient(t, srv, Config{})
	ctx := t.Context()
	files := map[string]string{"a.py": strings.Repeat("a", 200), "b.py": strings.Repeat("b", 200), "c.py": strings.Repeat("c", 200)}
	req := &infillv1.CompleteRequest{Repository: repoOf(files), Cursor: &infillv1.Cursor{Path: "a.py"}}
	if _, err := c.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	files["a.py"] += "typed"
	delete(files, "c.py")
	files["d.py"] = "new"
	req.Repository = repoOf(files)
	// The stream records its snapshot from the start as well.
	for _, err := range c.Stream(ctx, StreamRequest(req)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Complete(ctx, req); err != nil { // a cursor move: nothing changed
		t.Fatal(err)
	}
	srv.mu.Lock()
	seen, whole := srv.seen, srv.whole
	srv.mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d requests", len(seen))
	}
	if seen[0].GetBase() != "" || !slices.Equal(sentPaths(seen[0]), []string{"a.py", "b.py", "c.py"}) {
		t.Errorf("first request: base %q, files %v", seen[0].GetBase(), sentPaths(seen[0]))
	}
	if seen[1].GetBase() == "" || !slices.Equal(sentPaths(seen[1]), []string{"a.py", "d.py"}) || !slices.Equal(seen[1].GetRemoved(), []string{"c.py"}) {
		t.Errorf("after an edit: base %q, files %v, removed %v; want the edit, the new file and c.py removed",
			seen[1].GetBase(), sentPaths(seen[1]), seen[1].GetRemoved())
	}
	if seen[2].GetBase() == "" || len(seen[2].GetFiles()) != 0 || len(seen[2].GetRemoved()) != 0 {
		t.Errorf("no change: base %q, files %v, removed %v; want the base alone", seen[2].GetBase(), sentPaths(seen[2]), seen[2].GetRemoved())
	}
	want := map[string]string{}
	for p, v := range files {
		want[p] = Digest(v)
	}
	for i := 1; i < 3; i++ {
		if fmt.Sprint(whole[i]) != fmt.Sprint(want) {
			t.Errorf("request %d: the server's whole list %v, want %v", i, whole[i], want)
		}
	}
}

// A base the server no longer holds costs one more attempt with the whole
// list.
func TestSnapshotsResendWholeListWhenBaseUnknown(t *testing.T) {
	t.Parallel()
	srv := &snapServer{}
	c, _ := newTestClient(t, srv, Config{Transfer: TransferDeltas})
	ctx := t.Context()
	req := &infillv1.CompleteRequest{Repository: repoOf(map[string]string{"a.py": "1", "b.py": "2"}), Cursor: &infillv1.Cursor{Path: "a.py"}}
	if _, err := c.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	srv.forgetAll() // a restarted server
	if _, err := c.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	seen := srv.seen
	srv.mu.Unlock()
	if len(seen) != 3 || seen[1].GetBase() == "" || seen[2].GetBase() != "" || len(seen[2].GetFiles()) != 2 {
		t.Fatalf("requests %v; want: whole list, base alone (refused), whole list", seen)
	}
}

func TestUnknownSnapshotOnlyForSnapshotViolations(t *testing.T) {
	t.Parallel()
	st, _ := status.New(codes.FailedPrecondition, "x").WithDetails(&errdetails.PreconditionFailure{
		Violations: []*errdetails.PreconditionFailure_Violation{{Type: MissingContentType, Subject: "a.py"}}})
	for _, err := range []error{nil, fmt.Errorf("plain"), status.Error(codes.FailedPrecondition, "no details"), st.Err()} {
		if UnknownSnapshot(err) {
			t.Errorf("UnknownSnapshot(%v) = true", err)
		}
	}
}

// TransferWhole sends every request as it is: no base, no digests.
func TestTransferWholeSendsRequestsAsTheyAre(t *testing.T) {
	t.Parallel()
	srv := &snapServer{}
	c, _ := newTestClient(t, srv, Config{Transfer: TransferWhole})
	ctx := t.Context()
	files := map[string]string{"a.py": strings.Repeat("a", 200), "b.py": strings.Repeat("b", 200)}
	req := &infillv1.CompleteRequest{Repository: repoOf(files), Cursor: &infillv1.Cursor{Path: "a.py"}}
	for i := 0; i < 2; i++ {
		if _, err := c.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	srv.mu.Lock()
	seen := srv.seen
	srv.mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d requests", len(seen))
	}
	for i, r := range seen {
		if r.GetBase() != "" || !proto.Equal(r, req.GetRepository()) {
			t.Errorf("request %d: %v; want the repository as given", i, r)
		}
	}
}

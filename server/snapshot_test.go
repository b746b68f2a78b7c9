package server_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// realBuilder is the contextpack Builder infill-server runs (default
// configuration, Qwen2.5 tokenizer, no logs), closed when the test ends.
func realBuilder(t testing.TB) *contextpack.Builder {
	t.Helper()
	tok, err := tokenizer.Qwen25()
	if err != nil {
		t.Fatal(err)
	}
	b, err := contextpack.NewBuilder(contextpack.DefaultConfig(), tok, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// A response names its file list; a later request sends only what changed
// on that base, and an unknown base asks for the whole list.
func TestRepositorySnapshots(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, realBuilder(t), &fakeBackend{})
	ctx := context.Background()

	req := request(8)
	req.Repository.Files = append(req.Repository.Files, &infillv1.File{Path: "geo/util.py",
		Content: proto.String("def area(r):\n    return 3.14159 * r * r\n")})
	first, err := client.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.GetRepositorySnapshot(), "snap:") {
		t.Fatalf("repository_snapshot %q", first.GetRepositorySnapshot())
	}

	// A cursor move sends no file at all.
	moved := request(8)
	moved.Repository = &infillv1.Repository{Name: "geo", Base: first.GetRepositorySnapshot()}
	moved.Cursor.Line, moved.Cursor.Column = 2, 0
	start, _ := streamEnds(t, client, streamRequest(moved))
	if start.GetRepositorySnapshot() != first.GetRepositorySnapshot() {
		t.Fatalf("cursor move on the base: snapshot %q, want %q", start.GetRepositorySnapshot(), first.GetRepositorySnapshot())
	}

	// An edit sends the one file; util.py leaves.
	edited := request(8)
	edited.Repository = &infillv1.Repository{Name: "geo", Base: first.GetRepositorySnapshot(), Removed: []string{"geo/util.py"},
		Files: []*infillv1.File{{Path: "geo/circle.py", Content: proto.String(pySource + "\n# edited\n")}}}
	resp, err := client.Complete(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	if s := resp.GetRepositorySnapshot(); s == "" || s == first.GetRepositorySnapshot() {
		t.Fatalf("edit on the base: snapshot %q", s)
	}

	unknown := request(8)
	unknown.Repository = &infillv1.Repository{Name: "geo", Base: "snap:" + strings.Repeat("ab", 32)}
	_, err = client.Complete(ctx, unknown)
	s := status.Convert(err)
	var violation *errdetails.PreconditionFailure_Violation
	for _, d := range s.Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok && len(pf.GetViolations()) == 1 {
			violation = pf.GetViolations()[0]
		}
	}
	if s.Code() != codes.FailedPrecondition || violation.GetType() != "SNAPSHOT" || violation.GetSubject() != unknown.Repository.Base {
		t.Fatalf("unknown base: %v, violation %v; want FAILED_PRECONDITION with a SNAPSHOT violation", err, violation)
	}

	bad := request(8)
	bad.Repository.Removed = []string{"geo/util.py"}
	if _, err := client.Complete(ctx, bad); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "repository.removed") {
		t.Fatalf("removed without base: %v", err)
	}
}

// A file sent as edits to a digest is the content they make: its response
// names the snapshot the content names. Edits to a text the server does not
// hold ask for the file's content; bad ranges are INVALID_ARGUMENT.
func TestFileEdits(t *testing.T) {
	t.Parallel()
	client, _ := startFake(t, realBuilder(t), &fakeBackend{})
	ctx := context.Background()

	first, err := client.Complete(ctx, request(8))
	if err != nil {
		t.Fatal(err)
	}
	typed := strings.Replace(pySource, "import math\n", "import math\nx = 1\n", 1)
	at := uint64(strings.Index(pySource, "import math\n") + len("import math\n"))
	edited := request(8)
	edited.Repository = &infillv1.Repository{Name: "geo", Base: first.GetRepositorySnapshot(),
		Files: []*infillv1.File{{Path: "geo/circle.py", Digest: contextpack.Digest(pySource),
			Edits: []*infillv1.Edit{{Start: at, End: at, Text: "x = "}, {Start: at + 4, End: at + 4, Text: "1\n"}}}}}
	got, err := client.Complete(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	whole := request(8)
	whole.Repository.Files[0].Content = proto.String(typed)
	want, err := client.Complete(ctx, whole)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetRepositorySnapshot() == first.GetRepositorySnapshot() || got.GetRepositorySnapshot() != want.GetRepositorySnapshot() {
		t.Fatalf("edits named snapshot %q, the content %q (first %q)", got.GetRepositorySnapshot(), want.GetRepositorySnapshot(), first.GetRepositorySnapshot())
	}

	missing := request(8)
	missing.Repository.Files[0] = &infillv1.File{Path: "geo/circle.py", Digest: contextpack.Digest("never sent"),
		Edits: []*infillv1.Edit{{Text: "x"}}}
	_, err = client.Complete(ctx, missing)
	var subjects []string
	for _, d := range status.Convert(err).Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok {
			for _, v := range pf.GetViolations() {
				subjects = append(subjects, v.GetType()+" "+v.GetSubject())
			}
		}
	}
	if status.Code(err) != codes.FailedPrecondition || len(subjects) != 1 || subjects[0] != "MISSING_CONTENT geo/circle.py" {
		t.Fatalf("edits to an unknown text: %v, violations %v", err, subjects)
	}

	bad := request(8)
	bad.Repository.Files[0] = &infillv1.File{Path: "geo/circle.py", Digest: contextpack.Digest(pySource),
		Edits: []*infillv1.Edit{{Start: 1 << 40, End: 1 << 40}}}
	if _, err := client.Complete(ctx, bad); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "repository.files[0].edits[0]") {
		t.Fatalf("edit past the end: %v", err)
	}
}

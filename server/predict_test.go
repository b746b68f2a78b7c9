package server_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/inference"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server"
	"github.com/infill-dev/infill/server/workspace"
)

// A PredictEdit that brings no recent edits, in a repository the server
// reads as a workspace (its name), gets the workspace's recent changes on
// disk as its history; ranges come back in the cursor's encoding.
func TestPredictEditWorkspaceHistory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(root, "cart.py"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("def total(items):\n    return 0\n")
	cfg := workspace.DefaultConfig()
	cfg.Quiet, cfg.MaxDelay = 20*time.Millisecond, 200*time.Millisecond
	set, err := workspace.OpenSet([]string{root}, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	write("def total(items):\n    return sum(items)\n")
	for deadline := time.Now().Add(10 * time.Second); len(set.Default().RecentEdits()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the change was not recorded")
		}
	}
	be := &recordingBackend{}
	scfg := server.DefaultConfig()
	scfg.ShutdownGrace = 200 * time.Millisecond
	srv, err := server.New(scfg, server.Deps{Builder: realBuilder(t), Backend: be, Workspaces: set}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := infillv1.NewCompletionServiceClient(conn)
	text := "def total(items):\n    return sum(items) # 😀 x\n"
	req := &infillv1.PredictEditRequest{
		Repository: &infillv1.Repository{Name: "shop", Files: []*infillv1.File{{Path: "cart.py", Content: proto.String(text)}}},
		Cursor:     &infillv1.Cursor{Path: "cart.py", Line: 1, Column: 26, Encoding: infillv1.PositionEncoding_POSITION_ENCODING_UTF16},
	}
	resp, err := client.PredictEdit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p := be.prompt(); !strings.Contains(p, "User edited cart.py:\n```diff\n@@ -1,2 +1,2 @@") || !strings.Contains(p, "-    return 0\n+    return sum(items)") {
		t.Errorf("the prompt lacks the workspace's change:\n%s", p)
	}
	// The region is the whole file: lines 0-1, the second ending after
	// "x", 28 UTF-16 units (the emoji counts two).
	if r := resp.GetEditableRegion(); r.GetStartLine() != 0 || r.GetEndLine() != 1 || r.GetEndColumn() != 28 ||
		r.GetEndOffset() != uint64(len(text)-1) {
		t.Errorf("region %v", r)
	}
	// Another repository name: no history.
	req.Repository.Name = "other"
	if _, err := client.PredictEdit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if p := be.prompt(); strings.Contains(p, "User edited") {
		t.Errorf("a repository that is not the workspace got its history:\n%s", p)
	}
}

// recordingBackend answers at once and keeps the last prompt.
type recordingBackend struct {
	fakeBackend
	mu   sync.Mutex
	last string
}

func (r *recordingBackend) Generate(ctx context.Context, req inference.Request, d inference.DeltaFunc) (*inference.Result, error) {
	r.mu.Lock()
	r.last = req.Prompt
	r.mu.Unlock()
	return r.fakeBackend.Generate(ctx, req, d)
}

func (r *recordingBackend) prompt() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

package evaluator_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
)

func TestClientMessage(t *testing.T) {
	_, statErr := os.Stat("/srv/infill/repos/nope")
	_, lookErr := exec.LookPath("/opt/tools/bin/missing-tool")
	for name, tc := range map[string]struct {
		err        error
		want       string
		notVisible string
	}{
		"path error":     {statErr, "stat …/nope: no such file or directory", "/srv"},
		"wrapped":        {fmt.Errorf("task t: %w", statErr), "task t: stat …/nope: no such file or directory", "/srv"},
		"joined":         {errors.Join(errors.New("a"), statErr), "a\nstat …/nope: no such file or directory", "/srv"},
		"two %w":         {fmt.Errorf("%w: %w", evaluator.ErrInvalidTask, statErr), "evaluator: invalid task: stat …/nope: no such file or directory", "/srv"},
		"link error":     {&os.LinkError{Op: "rename", Old: "/a/b/c", New: "/d/e", Err: fs.ErrExist}, "rename …/c …/e: file already exists", "/a/"},
		"exec error":     {lookErr, "exec: \"…/missing-tool\"", "/opt"},
		"bare name kept": {&fs.PathError{Op: "open", Path: "a.py", Err: fs.ErrNotExist}, "open a.py: file does not exist", ""},
		"hidden detail": {fmt.Errorf("run 3: %w", &evaluator.HiddenError{Public: "setup failed", Err: errors.New("bwrap: can't mount /tmp/x")}),
			"run 3: setup failed", "/tmp"},
		"no path": {errors.New("plain"), "plain", ""},
	} {
		got := evaluator.ClientMessage(tc.err)
		if !strings.HasPrefix(got, tc.want) || tc.notVisible != "" && strings.Contains(got, tc.notVisible) {
			t.Errorf("%s: ClientMessage = %q, want %q without %q", name, got, tc.want, tc.notVisible)
		}
	}
	if evaluator.ClientMessage(nil) != "" {
		t.Error("ClientMessage(nil) not empty")
	}
}

// TestDatasetErrorsHidePaths: the loaders' errors name the server's files
// in PathErrors, so what a client is shown names none of its directories.
func TestDatasetErrorsHidePaths(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() error{
		"missing HumanEval file": func() error {
			_, err := dataset.Catalog{HumanEvalDir: dir}.Load(string(dataset.HumanEvalSingleLine))
			return err
		},
		"corrupt HumanEval file": func() error { _, err := dataset.LoadHumanEval(bad, dataset.HumanEvalSingleLine); return err },
		"missing repositories": func() error {
			_, err := dataset.LoadExecRepoBench(bad, dataset.ExecRepoBenchOptions{ReposDir: filepath.Join(dir, "repos")})
			return err
		},
		"corrupt ExecRepoBench": func() error {
			_, err := dataset.LoadExecRepoBench(bad, dataset.ExecRepoBenchOptions{ReposDir: dir})
			return err
		},
		"journal on a directory": func() error {
			_, _, err := evaluator.OpenJournal(dir)
			return err
		},
	} {
		err := load()
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if msg := evaluator.ClientMessage(err); strings.Contains(msg, dir) {
			t.Errorf("%s: client message %q shows the server's directory", name, msg)
		}
		if !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: the error itself (for the log) lost its path: %v", name, err)
		}
	}
}

// TestSandboxSetupErrorHidden: a sample whose sandbox cannot be set up
// (the real sandbox: the completion's file is a directory in the
// repository) reports a fixed message; the log keeps the detail.
func TestSandboxSetupErrorHidden(t *testing.T) {
	sb := newSandbox(t)
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "a.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	r, err := evaluator.NewRunner(evaluator.Config{Workers: 1, AllowedRepoRoots: []string{repo}}, sb, nil, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	task := evaluator.Task{ID: "t", Benchmark: "b", Path: "a.py", Prefix: "x = ", Suffix: "\n",
		Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repo,
			Test: evaluator.TestSpec{Kind: evaluator.TestCommand, Command: []string{"true"}}}}
	res, err := r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != evaluator.VerdictError || !strings.HasPrefix(res.Error, "sandbox: setup failed") || strings.Contains(res.Error, "/") {
		t.Fatalf("result %s %q, want an error verdict with the fixed setup message", res.Verdict, res.Error)
	}
	if logs.FilterMessageSnippet("without the server's detail").Len() != 1 {
		t.Errorf("the detail was not logged: %v", logs.All())
	}

	// A repository outside the roots is named by its last element only.
	task.Exec.RepoDir = filepath.Join(t.TempDir(), "elsewhere")
	res, _ = r.Grade(context.Background(), task, 0, &evaluator.Completion{Text: "1"})
	if !strings.Contains(res.Error, "…/elsewhere") || strings.Contains(res.Error, filepath.Dir(task.Exec.RepoDir)) {
		t.Errorf("repository outside the roots: %q", res.Error)
	}
}

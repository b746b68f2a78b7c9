package evaluator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/internal/errkind"
)

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
		if msg := errkind.ClientMessage(err); strings.Contains(msg, dir) {
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

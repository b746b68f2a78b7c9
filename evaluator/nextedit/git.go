package nextedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// repo is a git repository read with the git command (a work tree or a
// bare repository): the history, a commit's diff and files, and a commit's
// tree written out for its tests. git is what every such repository comes
// with; a Go reimplementation of it would add a large dependency for what
// these few commands do.
type repo struct{ dir string }

// git runs git in the repository and returns its standard output.
func (r repo) git(ctx context.Context, args ...string) (string, error) {
	return r.gitEnv(ctx, nil, args...)
}

func (r repo) gitEnv(ctx context.Context, env []string, args ...string) (string, error) {
	full := append([]string{"-C", r.dir, "-c", "core.quotePath=false", "-c", "diff.noprefix=false",
		"-c", "core.hooksPath=/dev/null"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("nextedit: the git command is needed to read a repository's history: %w", err)
		}
		return "", fmt.Errorf("nextedit: git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// commit is one commit of the history and its parents.
type commit struct {
	id      string
	parents []string
}

// commits lists up to n commits reachable from rev, newest first.
func (r repo) commits(ctx context.Context, rev string, n int) ([]commit, error) {
	out, err := r.git(ctx, "rev-list", "--parents", fmt.Sprintf("--max-count=%d", n), rev, "--")
	if err != nil {
		return nil, err
	}
	var cs []commit
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			cs = append(cs, commit{id: f[0], parents: f[1:]})
		}
	}
	return cs, nil
}

// diff is the diff from parent to c, three lines of context, renames
// found.
func (r repo) diff(ctx context.Context, parent, c string) ([]*fileDiff, error) {
	out, err := r.git(ctx, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "-U3",
		"--src-prefix=a/", "--dst-prefix=b/", parent, c, "--")
	if err != nil {
		return nil, err
	}
	return parseDiff(out)
}

// file is the contents of path at commit c.
func (r repo) file(ctx context.Context, c, path string) (string, error) {
	return r.git(ctx, "cat-file", "blob", c+":"+path)
}

// files lists the files of commit c's tree.
func (r repo) files(ctx context.Context, c string) ([]string, error) {
	out, err := r.git(ctx, "ls-tree", "-r", "--name-only", "-z", c)
	if err != nil {
		return nil, err
	}
	return strings.FieldsFunc(out, func(r rune) bool { return r == 0 }), nil
}

// checkout writes commit c's tree into dir (made; it must not exist),
// with an index of its own so that the repository is left as it was.
func (r repo) checkout(ctx context.Context, c, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".checkout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "tree")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	_, err = r.gitEnv(ctx, []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")},
		"--work-tree="+work, "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process=", "-c", "filter.lfs.required=false",
		"checkout", "-f", c, "--", ".")
	if err != nil {
		return err
	}
	return os.Rename(work, dir)
}

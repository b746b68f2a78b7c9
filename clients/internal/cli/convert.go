package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/internal/evalwire"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// repoMap rewrites local repository directories into the server's paths
// (--repo-map LOCAL=REMOTE), for a server that sees the repositories
// elsewhere.
type repoMap struct{ local, remote string }

func parseRepoMap(s string) (*repoMap, error) {
	if s == "" {
		return nil, nil
	}
	local, remote, ok := strings.Cut(s, "=")
	if !ok || local == "" || remote == "" {
		return nil, fmt.Errorf("--repo-map %q: want LOCAL=REMOTE", s)
	}
	abs, err := filepath.Abs(local)
	if err != nil {
		return nil, err
	}
	return &repoMap{local: abs, remote: remote}, nil
}

func (m *repoMap) apply(dir string) string {
	if m == nil {
		return dir
	}
	rel, err := filepath.Rel(m.local, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return dir
	}
	return strings.TrimSuffix(m.remote, "/") + "/" + filepath.ToSlash(rel)
}

// taskToProto converts a task loaded on this machine for Evaluate, its
// repository named as the server sees it (--repo-map).
func taskToProto(t *evaluator.Task, m *repoMap) *infillv1.EvalTask {
	return evalwire.Task(t, m.apply(t.Exec.RepoDir))
}

package dataset

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/infill-dev/infill/evaluator"
)

// ExecRepoBenchName is the default benchmark name of ExecRepoBench tasks.
const ExecRepoBenchName = "execrepobench"

// ExecRepoBenchOptions configures LoadExecRepoBench.
type ExecRepoBenchOptions struct {
	// ReposDir holds one directory per repo_name (required).
	ReposDir string
	// Benchmark names the tasks (default "execrepobench").
	Benchmark string
	// Test is each repository's test entry point (default: the script
	// evaluate_repo.py at the repository root, as ExecRepoBench runs it).
	Test *evaluator.TestSpec
}

// fillTypes maps ExecRepoBench's fill_type labels to levels.
var fillTypes = map[string]evaluator.Level{
	"Random Span Completion":        evaluator.LevelRandomSpan,
	"Random Single-line Completion": evaluator.LevelSingleLine,
	"Random Multi-line Completion":  evaluator.LevelMultiLine,
	"grammar-based: expression":     evaluator.LevelExpression,
	"grammar-based: statement":      evaluator.LevelStatement,
	"grammar-based: statment":       evaluator.LevelStatement, // spelling used by the generator for comments
	"grammar-based: block":          evaluator.LevelBlock,
}

// ExecRepoBenchLevel maps a fill_type label to a level.
func ExecRepoBenchLevel(fillType string) (evaluator.Level, error) {
	if l, ok := fillTypes[strings.TrimSpace(fillType)]; ok {
		return l, nil
	}
	return "", fmt.Errorf("%w: unknown fill_type %q", ErrInvalidData, fillType)
}

type execRepoBenchRecord struct {
	RepoName    string            `json:"repo_name"`
	FileName    string            `json:"file_name"`
	PrefixCode  *string           `json:"prefix_code"`
	SuffixCode  *string           `json:"suffix_code"`
	MiddleCode  *string           `json:"middle_code"`
	ContextCode []json.RawMessage `json:"context_code"`
	FillType    string            `json:"fill_type"`
}

// LoadExecRepoBench loads ExecRepoBench JSON lines. Paths in file_name and
// context_code ("/repo/pkg/mod.py") are resolved under opts.ReposDir with the
// first element naming the repository; absolute host paths are never used
// and any ".." escape is rejected. Task IDs are "<repo_name>/<line>".
func LoadExecRepoBench(jsonlPath string, opts ExecRepoBenchOptions) ([]evaluator.Task, error) {
	if opts.ReposDir == "" {
		return nil, fmt.Errorf("%w: ExecRepoBench needs a repositories directory", ErrInvalidData)
	}
	repos, err := filepath.Abs(opts.ReposDir)
	if err != nil {
		return nil, err
	}
	if err := isDir(repos); err != nil {
		return nil, fmt.Errorf("%w: repositories directory: %w", ErrInvalidData, err)
	}
	bench := opts.Benchmark
	if bench == "" {
		bench = ExecRepoBenchName
	}
	test := evaluator.TestSpec{Kind: evaluator.TestScript, Script: "evaluate_repo.py"}
	if opts.Test != nil {
		test = *opts.Test
	}
	f, err := os.Open(jsonlPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tasks []evaluator.Task
	checkedRepos := map[string]error{}
	err = eachLine(bufio.NewReader(f), func(n int, line []byte) error {
		var rec execRepoBenchRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrInvalidData, n, err)
		}
		t, err := execRepoBenchTask(&rec, repos, bench, test, checkedRepos)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		t.ID = rec.RepoName + "/" + strconv.Itoa(n-1)
		tasks = append(tasks, t)
		return nil
	})
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: jsonlPath, Err: err}
	}
	return tasks, nil
}

func execRepoBenchTask(rec *execRepoBenchRecord, repos, bench string, test evaluator.TestSpec, checked map[string]error) (evaluator.Task, error) {
	if rec.PrefixCode == nil || rec.SuffixCode == nil || rec.MiddleCode == nil {
		return evaluator.Task{}, fmt.Errorf("%w: prefix_code, suffix_code and middle_code are required", ErrInvalidData)
	}
	if !validRepoName(rec.RepoName) {
		return evaluator.Task{}, fmt.Errorf("%w: bad repo_name %q", ErrInvalidData, rec.RepoName)
	}
	rel, err := repoRelative(rec.RepoName, rec.FileName)
	if err != nil {
		return evaluator.Task{}, err
	}
	level, err := ExecRepoBenchLevel(rec.FillType)
	if err != nil {
		return evaluator.Task{}, err
	}
	repoDir := filepath.Join(repos, rec.RepoName)
	cerr, done := checked[rec.RepoName]
	if !done {
		cerr = checkRepo(repoDir, test)
		checked[rec.RepoName] = cerr
	}
	if cerr != nil {
		return evaluator.Task{}, cerr
	}
	var ctx []evaluator.ContextFile
	for i, raw := range rec.ContextCode {
		var pair []string
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return evaluator.Task{}, fmt.Errorf("%w: context_code[%d] is not a [path, content] pair", ErrInvalidData, i)
		}
		p, err := repoRelative(rec.RepoName, pair[0])
		if err != nil {
			return evaluator.Task{}, fmt.Errorf("context_code[%d]: %w", i, err)
		}
		ctx = append(ctx, evaluator.ContextFile{Path: p, Content: pair[1]})
	}
	return evaluator.Task{
		Benchmark: bench, Level: level, FillType: rec.FillType, Language: "python",
		RepoName: rec.RepoName, Path: rel,
		Prefix: *rec.PrefixCode, Suffix: *rec.SuffixCode, Reference: *rec.MiddleCode,
		Context: ctx,
		Exec:    evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repoDir, Test: test},
	}, nil
}

// repoRelative turns "/repo/pkg/mod.py" (or "repo/pkg/mod.py") into
// "pkg/mod.py", requiring the first element to be the repository and the
// rest to stay inside it.
func repoRelative(repo, p string) (string, error) {
	if strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: path %q", ErrInvalidData, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: path %q escapes the repository", ErrInvalidData, p)
		}
	}
	clean := strings.TrimPrefix(path.Clean("/"+p), "/")
	rest, ok := strings.CutPrefix(clean, repo+"/")
	if !ok || rest == "" || !filepath.IsLocal(rest) {
		return "", fmt.Errorf("%w: path %q is not a file under repository %q", ErrInvalidData, p, repo)
	}
	return rest, nil
}

func validRepoName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// checkRepo verifies the repository directory and its test entry point.
func checkRepo(dir string, test evaluator.TestSpec) error {
	if err := isDir(dir); err != nil {
		return fmt.Errorf("%w: repository missing: %w", ErrInvalidData, err)
	}
	if err := evaluator.CheckTestEntry(dir, test); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: repository %s has no test entry point %s", ErrInvalidData, filepath.Base(dir), filepath.ToSlash(pe.Path))
		}
		return fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	return nil
}

// isDir is nil when dir is a directory, else an *fs.PathError (which keeps
// the server's path out of what a client is shown: errkind.ClientMessage).
func isDir(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = &fs.PathError{Op: "stat", Path: dir, Err: syscall.ENOTDIR}
	}
	return err
}

package dataset

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator"
)

var update = flag.Bool("update", false, "rewrite golden sections of testdata/*.txtar")

// TestLoaders runs testdata/loaders/*.txtar. The archive comment names the
// loader ("humaneval SET", "execrepobench", "infill"); the files are
// extracted to a temporary directory; the "want" section is the golden
// rendering of the loaded tasks, or "error: ..." for rejected input.
func TestLoaders(t *testing.T) {
	files, err := filepath.Glob("testdata/loaders/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var want *txtar.File
			for i := range ar.Files {
				f := &ar.Files[i]
				if f.Name == "want" {
					want = f
					continue
				}
				p := filepath.Join(dir, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := runLoader(t, strings.TrimSpace(string(ar.Comment)), dir)
			if *update {
				if want == nil {
					ar.Files = append(ar.Files, txtar.File{Name: "want"})
					want = &ar.Files[len(ar.Files)-1]
				}
				want.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want == nil {
				t.Fatalf("no want section; run with -update")
			}
			if got != string(want.Data) {
				t.Errorf("loaded tasks differ from golden (run with -update after checking)\n--- got\n%s\n--- want\n%s", got, want.Data)
			}
		})
	}
}

func runLoader(t *testing.T, cmd, dir string) string {
	t.Helper()
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		t.Fatal("archive comment must name the loader")
	}
	var tasks []evaluator.Task
	var err error
	switch fields[0] {
	case "humaneval":
		var set HumanEvalSet
		set, err = ParseHumanEvalSet(fields[1])
		if err == nil {
			tasks, err = LoadHumanEval(filepath.Join(dir, "data.jsonl"), set)
		}
	case "execrepobench":
		tasks, err = LoadExecRepoBench(filepath.Join(dir, "data.jsonl"), ExecRepoBenchOptions{ReposDir: filepath.Join(dir, "repos")})
	case "infill":
		tasks, err = LoadInfill(filepath.Join(dir, "data.jsonl"))
	default:
		t.Fatalf("unknown loader %q", fields[0])
	}
	if err != nil {
		if !strings.Contains(fmt.Sprint(err), ErrInvalidData.Error()) {
			t.Errorf("error does not wrap ErrInvalidData: %v", err)
		}
		return "error: " + strings.ReplaceAll(err.Error(), dir, "$DIR") + "\n"
	}
	return renderTasks(tasks, dir)
}

// renderTasks is the golden form of loaded tasks.
func renderTasks(tasks []evaluator.Task, dir string) string {
	type view struct {
		ID, Benchmark, Level, FillType, RepoName, Path string
		Prefix, Reference, Suffix                      string
		Context                                        []string `json:",omitempty"`
		Exec                                           string
		RepoDir                                        string              `json:",omitempty"`
		Test                                           *evaluator.TestSpec `json:",omitempty"`
		Epilogue                                       string              `json:",omitempty"`
		Timeout                                        string              `json:",omitempty"`
	}
	var buf bytes.Buffer
	for _, t := range tasks {
		v := view{ID: t.ID, Benchmark: t.Benchmark, Level: string(t.Level), FillType: t.FillType,
			RepoName: t.RepoName, Path: t.Path, Prefix: t.Prefix, Reference: t.Reference, Suffix: t.Suffix,
			Exec: string(t.Exec.Kind), Epilogue: t.Exec.Epilogue}
		for _, c := range t.Context {
			v.Context = append(v.Context, fmt.Sprintf("%s (%d bytes)", c.Path, len(c.Content)))
		}
		if t.Exec.Kind == evaluator.ExecRepository {
			v.RepoDir = strings.Replace(t.Exec.RepoDir, dir, "$DIR", 1)
			ts := t.Exec.Test
			v.Test = &ts
		}
		if t.Exec.Timeout > 0 {
			v.Timeout = t.Exec.Timeout.String()
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.String()
}

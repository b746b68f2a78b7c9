package masking

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/infill-dev/infill/evaluator/dataset"
)

var update = flag.Bool("update", false, "rewrite golden sections of testdata/*.txtar")

// TestGolden runs testdata/*.txtar: the files form a repository; the comment
// holds "seed N per-level M"; golden sections "candidates" (every grammar
// candidate of every included file) and "selected" (Select's records with
// their middles) are compared, or rewritten with -update.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			golden := map[string]*txtar.File{}
			for i := range ar.Files {
				f := &ar.Files[i]
				if f.Name == "candidates" || f.Name == "selected" {
					golden[f.Name] = f
					continue
				}
				p := filepath.Join(dir, filepath.FromSlash(f.Name))
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			opts := parseOptions(t, string(ar.Comment))
			got := map[string]string{
				"candidates": renderCandidates(t, dir),
				"selected":   renderSelected(t, dir, opts),
			}
			// Determinism: a second selection is identical.
			if again := renderSelected(t, dir, opts); again != got["selected"] {
				t.Fatal("Select is not deterministic")
			}
			changed := false
			for _, name := range []string{"candidates", "selected"} {
				f := golden[name]
				if *update {
					if f == nil {
						ar.Files = append(ar.Files, txtar.File{Name: name})
						f = &ar.Files[len(ar.Files)-1]
						golden[name] = f
					}
					f.Data = []byte(got[name])
					changed = true
					continue
				}
				if f == nil {
					t.Fatalf("missing %s section; run with -update", name)
				}
				if string(f.Data) != got[name] {
					t.Errorf("%s differs from golden (run with -update after checking)\n--- got\n%s\n--- want\n%s", name, got[name], f.Data)
				}
			}
			if changed {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func parseOptions(t *testing.T, comment string) Options {
	o := Options{}
	first, _, _ := strings.Cut(comment, "\n")
	f := strings.Fields(first)
	for i := 0; i+1 < len(f); i += 2 {
		n, err := strconv.Atoi(f[i+1])
		if err != nil {
			t.Fatalf("bad option %q", f[i+1])
		}
		switch f[i] {
		case "seed":
			o.Seed = uint64(n)
		case "per-level":
			o.PerLevel = n
		default:
			t.Fatalf("unknown option %q", f[i])
		}
	}
	return o
}

func renderCandidates(t *testing.T, dir string) string {
	var buf bytes.Buffer
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if languageOfFile(rel) == nil {
			return nil
		}
		src, _ := os.ReadFile(p)
		cands, err := GrammarCandidates(context.Background(), rel, src)
		if err != nil {
			fmt.Fprintf(&buf, "%s: %v\n", rel, err)
			return nil
		}
		for _, c := range cands {
			fmt.Fprintf(&buf, "%s %s %s [%d,%d) %q\n", rel, c.Level, c.NodeType, c.Start, c.End, src[c.Start:c.End])
		}
		return nil
	})
	return buf.String()
}

func renderSelected(t *testing.T, dir string, o Options) string {
	o.Repository = "repo"
	recs, stats, err := Select(context.Background(), dir, o)
	if err != nil {
		return "error: " + strings.ReplaceAll(err.Error(), dir, "$DIR") + "\n"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "files %d candidates %v kept %v\n", stats.Files, stats.Candidates, stats.Kept)
	if len(stats.Skipped) > 0 {
		fmt.Fprintf(&buf, "skipped %q\n", stats.Skipped)
	}
	if len(stats.Excluded) > 0 {
		fmt.Fprintf(&buf, "excluded %q\n", stats.Excluded)
	}
	for _, r := range recs {
		tk, err := r.Task(filepath.Dir(dir))
		if err != nil {
			// records name "repo"; resolve against dir itself
			r.Repository = dir
			tk, err = r.Task("")
		}
		if err != nil {
			t.Fatalf("record %s does not load: %v", r.ID, err)
		}
		if tk.Prefix+tk.Reference+tk.Suffix == "" {
			t.Fatalf("empty file for %s", r.ID)
		}
		fmt.Fprintf(&buf, "%s %s %q\n", r.ID, r.NodeType, tk.Reference)
	}
	var out bytes.Buffer
	if err := dataset.WriteInfill(&out, recs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

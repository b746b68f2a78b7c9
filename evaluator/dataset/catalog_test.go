package dataset

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

func TestCatalog(t *testing.T) {
	c := Catalog{
		ExecRepoBench: &ExecRepoBenchSource{
			JSONL:    filepath.Join("..", "testdata", "execrepobench", "samples.jsonl"),
			ReposDir: filepath.Join("..", "testdata", "execrepobench", "repos"),
		},
	}
	if got := c.Names(); !slices.Equal(got, []string{"execrepobench"}) {
		t.Fatalf("names %v", got)
	}
	tasks, err := c.Load("execrepobench")
	if err != nil || len(tasks) != 9 {
		t.Fatalf("%d tasks, %v", len(tasks), err)
	}
	if _, err := c.Load("humaneval"); !errors.Is(err, ErrUnknownBenchmark) {
		t.Fatalf("unknown: %v", err)
	}
}

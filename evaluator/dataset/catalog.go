package dataset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/internal/errkind"
)

// ErrUnknownBenchmark is returned by Catalog.Load for a name it does not know.
var ErrUnknownBenchmark = errkind.New(errkind.NotFound, "dataset: unknown benchmark")

// ExecRepoBenchSource locates an ExecRepoBench copy.
type ExecRepoBenchSource struct {
	JSONL    string
	ReposDir string
}

// Catalog maps benchmark names to data on the server's disk, for running a
// whole named benchmark server-side.
type Catalog struct {
	// HumanEvalDir holds the four human-eval-infilling files; it enables
	// "humaneval" (all four sets) and each set's own name.
	HumanEvalDir string
	// ExecRepoBench enables "execrepobench".
	ExecRepoBench *ExecRepoBenchSource
	// Infill maps further names to infill-format JSON-lines files.
	Infill map[string]string
}

// Names lists the benchmarks the catalog can load, sorted.
func (c Catalog) Names() []string {
	var names []string
	if c.HumanEvalDir != "" {
		names = append(names, "humaneval")
		for _, s := range HumanEvalSets() {
			names = append(names, string(s))
		}
	}
	if c.ExecRepoBench != nil {
		names = append(names, ExecRepoBenchName)
	}
	for n := range c.Infill {
		names = append(names, n)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Load loads the named benchmark's tasks.
func (c Catalog) Load(name string) ([]evaluator.Task, error) {
	switch {
	case c.HumanEvalDir != "" && name == "humaneval":
		return LoadHumanEvalDir(c.HumanEvalDir)
	case c.HumanEvalDir != "" && strings.HasPrefix(name, "humaneval-"):
		set, err := ParseHumanEvalSet(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownBenchmark, name)
		}
		return LoadHumanEvalDir(c.HumanEvalDir, set)
	case c.ExecRepoBench != nil && name == ExecRepoBenchName:
		return LoadExecRepoBench(c.ExecRepoBench.JSONL, ExecRepoBenchOptions{ReposDir: c.ExecRepoBench.ReposDir})
	}
	if p, ok := c.Infill[name]; ok {
		tasks, err := LoadInfill(p)
		if err != nil {
			return nil, err
		}
		for i := range tasks {
			if tasks[i].Benchmark == InfillName {
				tasks[i].Benchmark = name
			}
		}
		return tasks, nil
	}
	return nil, fmt.Errorf("%w: %q (known: %s)", ErrUnknownBenchmark, name, strings.Join(c.Names(), ", "))
}

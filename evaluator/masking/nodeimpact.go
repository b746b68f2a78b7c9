package masking

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
)

//go:embed node_impact.cjs
var nodeImpactProbe string

// nodeImpactFile is the probe's name in the private copy.
const nodeImpactFile = ".infill-impact.cjs"

// nodeImpactScript runs one test file ($1; node's options after it) under
// V8 coverage, then the probe.
const nodeImpactScript = `f=$1; shift; NODE_V8_COVERAGE=/tmp/infill-cov node "$@" --test "$f" >/dev/null 2>&1; exec node ` + nodeImpactFile + ` /tmp/infill-cov`

// Selection says how the tests that reach each sample were chosen
// (Options.SelectNodeTests).
type Selection struct {
	// TestFiles is the number of test files traced.
	TestFiles int `json:"test_files"`
	// Samples run only the test files that execute their span, SelectedFiles
	// of them in all; Whole run the whole suite (no test file executes the
	// span, or the selected files did not give the whole suite's verdicts).
	Samples       int `json:"samples"`
	SelectedFiles int `json:"selected_files"`
	Whole         int `json:"whole_suite"`
}

// selectNodeTests sets, on each record of a JavaScript repository tested by
// node's built-in runner, the test files that execute its span on the
// pristine code (TestSpec.Tests) and the tests those pass
// (ExpectedTests). Each test file runs twice in the sandbox: once for its
// count of passing tests, once under NODE_V8_COVERAGE with a probe that
// says which spans its processes executed. A record keeps the whole suite
// when no test file executes its span, or when the selected files do not
// give the whole suite's verdicts on its reference (pass) and empty middle
// (fail, with RequireEmptyFails). It selects nothing (nil) for another
// test command (vitest, a command of the user's).
func selectNodeTests(ctx context.Context, g Grader, repoDir string, recs []dataset.InfillRecord, test evaluator.TestSpec, o Options, log *zap.Logger) (*Selection, error) {
	if test.Kind != evaluator.TestNode || test.NodeRunner() != evaluator.NodeRunnerBuiltin {
		return nil, nil
	}
	files := test.Tests
	if len(files) == 0 {
		for _, f := range nodeTestFiles(repoDir) {
			if slices.Contains(jsExtensions, path.Ext(f)) {
				files = append(files, f)
			}
		}
	}
	sel := &Selection{TestFiles: len(files)}
	if len(files) == 0 || len(recs) == 0 {
		return sel, nil
	}
	type span struct {
		File  string `json:"file"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	}
	spans := make([]span, len(recs))
	for i, r := range recs {
		spans[i] = span{File: r.Target, Start: r.Span.Start, End: r.Span.End}
	}
	js, err := json.Marshal(spans)
	if err != nil {
		return nil, err
	}
	probe := "const SPANS = " + string(js) + ";\n" + nodeImpactProbe
	task := func(t evaluator.TestSpec) evaluator.Task {
		return evaluator.Task{ID: "impact", Benchmark: o.Benchmark, Language: "javascript", Path: nodeImpactFile,
			Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: repoDir, Test: t, Timeout: o.Timeout}}
	}
	counts := map[string]int{}
	reaches := map[int][]string{}
	for _, f := range files {
		one := test
		one.Tests, one.ExpectedTests = []string{f}, 0
		res, err := g.Grade(ctx, task(one), 0, &evaluator.Completion{})
		if err != nil {
			return nil, err
		}
		if !res.Passed() || res.Tests == nil {
			return nil, fmt.Errorf("masking: test file %s alone does not pass on the unmodified repository: %s", f, firstNonEmpty(res.Error, res.Reason, string(res.Verdict)))
		}
		counts[f] = res.Tests.Passed
		cov := evaluator.TestSpec{Kind: evaluator.TestCommand, Command: append([]string{"sh", "-c", nodeImpactScript, "sh", f}, test.Args...)}
		res, err = g.Grade(ctx, task(cov), 0, &evaluator.Completion{Text: probe})
		if err != nil {
			return nil, err
		}
		idx, ok := impactLine(res.StdoutTail)
		if !res.Passed() || !ok {
			return nil, fmt.Errorf("masking: tracing test file %s: %s", f, firstNonEmpty(res.Error, res.Reason, lastLines(res.StderrTail, 3), "no report"))
		}
		for _, i := range idx {
			reaches[i] = append(reaches[i], f)
		}
		log.Debug("masking: traced test file", zap.String("file", f), zap.Int("tests", counts[f]), zap.Int("spans", len(idx)))
	}
	for i := range recs {
		rec := &recs[i]
		chosen := reaches[i]
		if len(chosen) == 0 {
			sel.Whole++
			continue
		}
		try := rec.Test
		try.Tests, try.ExpectedTests = chosen, 0
		for _, f := range chosen {
			try.ExpectedTests += counts[f]
		}
		ok, err := sameVerdicts(ctx, g, repoDir, *rec, try, o.RequireEmptyFails)
		if err != nil {
			return nil, err
		}
		if !ok {
			sel.Whole++
			continue
		}
		rec.Test = try
		sel.Samples++
		sel.SelectedFiles += len(chosen)
	}
	return sel, nil
}

// sameVerdicts grades rec with the tests try: its reference must pass and,
// with emptyFails, its empty middle fail, as they do on the whole suite.
func sameVerdicts(ctx context.Context, g Grader, repoDir string, rec dataset.InfillRecord, try evaluator.TestSpec, emptyFails bool) (bool, error) {
	rec.Test = try
	t, err := taskOf(rec, repoDir)
	if err != nil {
		return false, err
	}
	res, err := g.Grade(ctx, t, 0, &evaluator.Completion{Text: t.Reference})
	if err != nil || !res.Passed() {
		return false, err
	}
	if !emptyFails {
		return true, nil
	}
	res, err = g.Grade(ctx, t, 0, &evaluator.Completion{})
	return err == nil && !res.Passed() && res.Verdict != evaluator.VerdictError, err
}

// impactLine reads the probe's line: the indices of the spans reached.
func impactLine(out string) ([]int, bool) {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "INFILL-IMPACT")
		if !ok {
			continue
		}
		var idx []int
		for _, f := range strings.Fields(rest) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, false
			}
			idx = append(idx, n)
		}
		return idx, true
	}
	return nil, false
}

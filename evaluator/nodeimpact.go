package evaluator

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/infill-dev/infill/evaluator/impact"
)

//go:embed node_impact.cjs
var nodeImpactProbe string

// nodeImpactFile is the probe's name in the private copy.
const nodeImpactFile = ".infill-impact.cjs"

// nodeImpactScript runs one test file ($1; node's options after it) under
// V8 coverage, then the probe.
const nodeImpactScript = `f=$1; shift; NODE_V8_COVERAGE=/tmp/infill-cov node "$@" --test "$f" >/dev/null 2>&1; exec node ` + nodeImpactFile + ` /tmp/infill-cov`

// nodeSelector finds, for a JavaScript repository tested by node's
// built-in runner, the test files that execute each span on the pristine
// code, when asked for (opt-in: eval mask --node-select-tests). Each test
// file runs twice in the sandbox: once for its count of passing tests,
// once under NODE_V8_COVERAGE with a probe (node_impact.cjs) that says
// which of the spans its processes executed. The selection is confirmed
// per sample (TestSelection.Confirm): a sample keeps the whole suite when
// no test file executes its span, or when the selected files do not give
// the whole suite's verdicts on it. It traces nothing for vitest, a
// command of the user's, or TypeScript (the coverage is of the
// transformed code, not of the source's spans).
type nodeSelector struct{}

func (nodeSelector) optIn() bool { return true }

func (nodeSelector) trace(_ context.Context, r *Runner, base Task, o TraceOptions) (*TestSelection, error) {
	test := base.Exec.Test
	if test.NodeRunner() != NodeRunnerBuiltin {
		return nil, fmt.Errorf("%w: %s", ErrNoTracer, test.NodeRunner())
	}
	if !slices.Contains(JavaScriptExtensions, path.Ext(base.Path)) {
		return nil, fmt.Errorf("%w: %s is not JavaScript", ErrNoTracer, base.Path)
	}
	files := test.Tests
	if len(files) == 0 {
		for _, f := range nodeTestFiles(base.Exec.RepoDir) {
			if slices.Contains(JavaScriptExtensions, path.Ext(f)) {
				files = append(files, f)
			}
		}
	}
	return &TestSelection{TestFiles: len(files), Spans: func(ctx context.Context, spans []Span) (impact.Reach, error) {
		return nodeTrace(ctx, r, base, files, spans, o)
	}}, nil
}

// nodeTrace runs each test file alone and under coverage, for spans.
func nodeTrace(ctx context.Context, r *Runner, base Task, files []string, spans []Span, o TraceOptions) (impact.Reach, error) {
	test := base.Exec.Test
	reach := nodeReach{spans: map[Span][]string{}, counts: map[string]int{}}
	if len(files) == 0 || len(spans) == 0 {
		return reach, nil
	}
	type span struct {
		File  string `json:"file"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	}
	js := make([]span, len(spans))
	for i, s := range spans {
		js[i] = span{File: s.File, Start: s.Start, End: s.End}
	}
	list, err := json.Marshal(js)
	if err != nil {
		return nil, err
	}
	probe := "const SPANS = " + string(list) + ";\n" + nodeImpactProbe
	task := func(t TestSpec) Task {
		return Task{ID: "impact", Benchmark: o.Benchmark, Language: "javascript", Path: nodeImpactFile,
			Exec: Exec{Kind: ExecRepository, RepoDir: base.Exec.RepoDir, Test: t, Timeout: base.Exec.Timeout}}
	}
	for _, f := range files {
		one := test
		one.Tests, one.ExpectedTests = []string{f}, 0
		res, err := r.Grade(ctx, task(one), 0, &Completion{})
		if err != nil {
			return nil, err
		}
		if !res.Passed() || res.Tests == nil {
			return nil, fmt.Errorf("masking: test file %s alone does not pass on the unmodified repository: %s", f, firstNonEmpty(res.Error, res.Reason, string(res.Verdict)))
		}
		reach.counts[f] = res.Tests.Passed
		cov := TestSpec{Kind: TestCommand, Command: append([]string{"sh", "-c", nodeImpactScript, "sh", f}, test.Args...)}
		res, err = r.Grade(ctx, task(cov), 0, &Completion{Text: probe})
		if err != nil {
			return nil, err
		}
		idx, ok := impactLine(res.StdoutTail)
		if !res.Passed() || !ok {
			return nil, fmt.Errorf("masking: tracing test file %s: %s", f, firstNonEmpty(res.Error, res.Reason, lastLines(res.StderrTail, 3), "no report"))
		}
		for _, i := range idx {
			if i >= 0 && i < len(spans) && !slices.Contains(reach.spans[spans[i]], f) {
				reach.spans[spans[i]] = append(reach.spans[spans[i]], f)
			}
		}
	}
	return reach, nil
}

// nodeReach is the test files executing each traced span, and what each
// file passes on the pristine code.
type nodeReach struct {
	spans  map[Span][]string
	counts map[string]int
}

// Span implements impact.Reach: the files that execute the span and the
// tests they pass; the whole suite where none does (or the span was not
// traced).
func (n nodeReach) Span(file string, _ []byte, start, end int) (impact.Selection, error) {
	files := n.spans[Span{File: file, Start: start, End: end}]
	if len(files) == 0 {
		return impact.Selection{Whole: true}, nil
	}
	sel := impact.Selection{Tests: slices.Clone(files)}
	for _, f := range files {
		sel.Passing += n.counts[f]
	}
	return sel, nil
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

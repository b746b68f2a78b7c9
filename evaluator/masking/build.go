package masking

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/impact"
)

// Options configures benchmark construction.
type Options struct {
	// Seed makes the selection deterministic: the same repository, options
	// and seed give the same samples.
	Seed uint64
	// PerLevel is the number of samples wanted per level (default 5).
	PerLevel int
	// Levels to produce (default: all eight).
	Levels []evaluator.Level
	// MinMiddle and MaxMiddle bound the stripped middle's length in bytes
	// (defaults 3 and 1500).
	MinMiddle, MaxMiddle int
	// MaxLines bounds multi-line masks (default 10 lines, at least 2).
	MaxLines int
	// MaxSpan bounds random spans in bytes (default 30).
	MaxSpan int
	// Language is the language masked (one of Languages(); default: the
	// one with the most files to mask in the repository).
	Language string
	// Include selects the files to mask, by slash-separated path relative
	// to the repository (default: the language's own rule; Python's is
	// DefaultInclude).
	Include func(rel string) bool
	// Test is the repository's test entry point (default: the language's;
	// for Python, script evaluate_repo.py when the repository has one, else
	// pytest -q).
	Test *evaluator.TestSpec
	// Benchmark names the records (default "infill").
	Benchmark string
	// Repository is written to each record's repository field (default: the
	// repository's absolute path).
	Repository string
	// RequireEmptyFails keeps only samples whose tests fail when the span is
	// left empty, i.e. samples the tests actually exercise.
	RequireEmptyFails bool
	// MaxAttempts bounds the candidates validated per level (default
	// 10 × PerLevel).
	MaxAttempts int
	// Timeout is each test run's wall-clock limit (default: the sandbox's).
	Timeout time.Duration
	// SelectOptIn also selects the tests of the test runners whose
	// selection runs only when asked for (node's built-in runner on a
	// JavaScript repository: the test files that execute each span, found
	// with NODE_V8_COVERAGE), with Tracer, or without one with the Grader
	// when it traces (*evaluator.Runner does).
	SelectOptIn bool
	// Python is the interpreter the tests run with (absolute; one inside
	// the repository is recorded relative to it). Default: the
	// repository's own virtual environment (.venv/ or venv/), if any.
	Python string
	// Tracer, when set, finds once on the pristine repository which tests
	// execute each span (Build only), with the test runner's selection
	// (evaluator.Runner.TraceTests): every record names them
	// (TestSpec.Tests, ExpectedTests their pristine pass count). A trusted
	// selection (pytest's) checks each sample with just its tests and
	// drops a span no test executes (Stats.Unreached); a confirmed one
	// (node's files, SelectOptIn) keeps the whole suite for a sample its
	// files do not give the whole suite's verdicts on (Stats.Selection).
	// Test kinds it cannot trace keep the whole suite.
	Tracer Tracer
	// TraceTimeout bounds the trace run (default 30 minutes; the sandbox's
	// CPU-time limit applies too).
	TraceTimeout time.Duration
}

// Tracer finds the tests that reach each span; *evaluator.Runner
// implements it.
type Tracer interface {
	TraceTests(ctx context.Context, base evaluator.Task, o evaluator.TraceOptions) (*evaluator.TestSelection, error)
}

// DefaultTraceTimeout is Options.TraceTimeout's default.
const DefaultTraceTimeout = 30 * time.Minute

// Grader grades one completion; *evaluator.Runner implements it.
type Grader interface {
	Grade(ctx context.Context, t evaluator.Task, sample int, c *evaluator.Completion) (evaluator.Result, error)
}

// Stats describes a build.
type Stats struct {
	Files      int                     `json:"files"`
	Skipped    []string                `json:"skipped_files,omitempty"` // do not parse, or are not UTF-8 text
	Candidates map[evaluator.Level]int `json:"candidates"`
	Kept       map[evaluator.Level]int `json:"kept"`
	// Language is the language masked.
	Language string `json:"language,omitempty"`
	// Uncovered counts samples dropped because the tests still passed with
	// the span left empty (RequireEmptyFails).
	Uncovered map[evaluator.Level]int `json:"uncovered"`
	// BaselineTests is the pytest pass count of the unmodified repository.
	BaselineTests int `json:"baseline_tests,omitempty"`
	// Selection says how the tests each sample runs were chosen by a
	// confirmed selection (SelectOptIn); nil when there was none.
	Selection *Selection `json:"selection,omitempty"`
	// Fixes are the changes made to the pytest command so that the
	// unmodified repository's tests run here (CheckBaseline), in words.
	Fixes []string `json:"fixes,omitempty"`
	// Excluded are files and packages the language's rule left out, with
	// why ("package cmd/x: no tests", "x.go: generated").
	Excluded []string `json:"excluded,omitempty"`
	// Packages counts the units checked one by one (Go packages) whose
	// unmodified tests pass; FailingPackages are those whose do not, with
	// why: their files give no samples.
	Packages        int      `json:"packages,omitempty"`
	FailingPackages []string `json:"failing_packages,omitempty"`
	// Unreached counts samples dropped because no test executes their span
	// on the pristine code (Options.Tracer): no test can fail on them.
	Unreached map[evaluator.Level]int `json:"unreached,omitempty"`
	// Traced says the records name the tests that reach their spans; Trace
	// is the trace run's wall time; TraceNote says why there was none.
	Traced    bool          `json:"traced,omitempty"`
	Trace     time.Duration `json:"trace_ns,omitempty"`
	TraceNote string        `json:"trace_note,omitempty"`
}

// Selection says how a confirmed selection chose the tests that reach
// each sample (Options.SelectOptIn).
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

// Errors.
var (
	ErrInvalidOptions = errors.New("masking: invalid options")
	ErrNoFiles        = errors.New("masking: no files to mask")
	ErrBaselineFails  = errors.New("masking: the unmodified repository does not pass its tests")
)

func (o Options) withDefaults() Options {
	if o.PerLevel == 0 {
		o.PerLevel = 5
	}
	if len(o.Levels) == 0 {
		o.Levels = evaluatorLevels()
	}
	if o.MinMiddle == 0 {
		o.MinMiddle = 3
	}
	if o.MaxMiddle == 0 {
		o.MaxMiddle = 1500
	}
	if o.MaxLines == 0 {
		o.MaxLines = 10
	}
	if o.MaxSpan == 0 {
		o.MaxSpan = 30
	}
	if o.Benchmark == "" {
		o.Benchmark = dataset.InfillName
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 10 * o.PerLevel
	}
	if o.TraceTimeout == 0 {
		o.TraceTimeout = DefaultTraceTimeout
	}
	return o
}

func evaluatorLevels() []evaluator.Level {
	return []evaluator.Level{evaluator.LevelExpression, evaluator.LevelStatement, evaluator.LevelBlock,
		evaluator.LevelFunction, evaluator.LevelClass, evaluator.LevelSingleLine, evaluator.LevelMultiLine,
		evaluator.LevelRandomSpan}
}

func (o Options) validate() error {
	switch {
	case o.PerLevel < 1 || o.MaxAttempts < 1:
		return fmt.Errorf("%w: PerLevel and MaxAttempts must be positive", ErrInvalidOptions)
	case o.MinMiddle < 1 || o.MaxMiddle < o.MinMiddle:
		return fmt.Errorf("%w: need 1 <= MinMiddle <= MaxMiddle", ErrInvalidOptions)
	case o.MaxLines < 2 || o.MaxSpan < 1:
		return fmt.Errorf("%w: MaxLines must be at least 2 and MaxSpan positive", ErrInvalidOptions)
	}
	for _, l := range o.Levels {
		if !l.Valid() {
			return fmt.Errorf("%w: unknown level %q", ErrInvalidOptions, l)
		}
	}
	return nil
}

// source is one file of the repository.
type source struct {
	rel string
	src []byte
	sum string
}

// plan lists, per level, the candidates in the order they are tried.
type plan struct {
	repo    string
	lang    *Language
	include func(rel string) bool
	files   map[string]*source
	byLevel map[evaluator.Level][]Candidate
	stats   Stats
}

func makePlan(ctx context.Context, repoDir string, o Options, log *zap.Logger) (*plan, error) {
	p := &plan{repo: repoDir, files: map[string]*source{}, byLevel: map[evaluator.Level][]Candidate{},
		stats: Stats{Candidates: map[evaluator.Level]int{}, Kept: map[evaluator.Level]int{}, Uncovered: map[evaluator.Level]int{},
			Unreached: map[evaluator.Level]int{}}}
	var err error
	if o.Language != "" {
		p.lang, err = LanguageNamed(o.Language)
	} else {
		p.lang, err = DetectLanguage(repoDir)
	}
	if err != nil {
		return nil, err
	}
	p.stats.Language = p.lang.Name
	p.include = o.Include
	if p.include == nil {
		p.include = p.lang.include
	}
	if p.lang.repoInclude != nil {
		var excluded func() []string
		p.include, excluded = p.lang.repoInclude(repoDir, p.include)
		defer func() { p.stats.Excluded = excluded() }()
	}
	var rels []string
	err = walkFiles(repoDir, func(rel string) {
		if p.include(rel) {
			rels = append(rels, rel)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(rels)
	all := map[evaluator.Level][]Candidate{}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(repoDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		// A task carries its file as UTF-8 text under its path: a file that
		// is not UTF-8 (a latin-1 source) or whose name is not could be
		// masked but never loaded back.
		if !utf8.Valid(data) || !utf8.ValidString(rel) || strings.ContainsAny(rel, "\r\n") {
			p.stats.Skipped = append(p.stats.Skipped, strings.ToValidUTF8(rel, "\uFFFD"))
			log.Debug("masking: skipping file that is not UTF-8 text", zap.String("file", rel))
			continue
		}
		grammar, err := p.lang.candidates(ctx, rel, data)
		if err != nil {
			if errors.Is(err, ErrSyntax) {
				p.stats.Skipped = append(p.stats.Skipped, rel)
				log.Debug("masking: skipping file that does not parse", zap.String("file", rel))
				continue
			}
			return nil, err
		}
		sum := sha256.Sum256(data)
		p.files[rel] = &source{rel: rel, src: data, sum: hex.EncodeToString(sum[:])}
		p.stats.Files++
		for _, c := range grammar {
			all[c.Level] = append(all[c.Level], c)
		}
		all[evaluator.LevelSingleLine] = append(all[evaluator.LevelSingleLine], LineCandidates(rel, data)...)
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("%w in %s (language %s)", ErrNoFiles, repoDir, p.lang.Name)
	}
	for _, level := range o.Levels {
		rng := rand.New(rand.NewPCG(o.Seed, levelSalt(level)))
		var cands []Candidate
		switch level {
		case evaluator.LevelMultiLine:
			cands = multiLineCandidates(p, rels, o, rng)
		case evaluator.LevelRandomSpan:
			cands = spanCandidates(p, rels, o, rng)
		default:
			cands = slices.Clone(all[level])
		}
		rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		seen := map[string]bool{}
		var kept []Candidate
		for _, c := range cands {
			mid := strings.TrimSpace(string(p.files[c.Path].src[c.Start:c.End]))
			if len(mid) < o.MinMiddle || len(mid) > o.MaxMiddle || seen[mid] {
				continue
			}
			seen[mid] = true
			kept = append(kept, c)
		}
		p.byLevel[level] = kept
		p.stats.Candidates[level] = len(kept)
	}
	return p, nil
}

func levelSalt(l evaluator.Level) uint64 {
	h := fnv.New64a()
	h.Write([]byte(l))
	return h.Sum64()
}

// multiLineCandidates draws, for each non-blank starting line in file
// order, a block of 2..MaxLines lines.
func multiLineCandidates(p *plan, rels []string, o Options, rng *rand.Rand) []Candidate {
	var out []Candidate
	for _, rel := range rels {
		f := p.files[rel]
		if f == nil {
			continue
		}
		starts := lineStarts(f.src)
		for i := range starts {
			if len(bytes.TrimSpace(lineAt(f.src, starts, i))) == 0 {
				continue
			}
			n := 2 + rng.IntN(o.MaxLines-1)
			last := min(i+n-1, len(starts)-1)
			if last == i {
				continue
			}
			end := lineEnd(f.src, starts, last)
			out = append(out, Candidate{Path: rel, Start: starts[i], End: end, Level: evaluator.LevelMultiLine, NodeType: fmt.Sprintf("lines:%d", last-i+1)})
		}
	}
	return out
}

// spanCandidates draws random byte spans of 1..MaxSpan bytes on character
// boundaries, about one per 40 bytes of source.
func spanCandidates(p *plan, rels []string, o Options, rng *rand.Rand) []Candidate {
	var out []Candidate
	for _, rel := range rels {
		f := p.files[rel]
		if f == nil || len(f.src) < 2 {
			continue
		}
		for range max(1, len(f.src)/40) {
			start := runeBoundary(f.src, rng.IntN(len(f.src)))
			end := runeBoundary(f.src, min(len(f.src), start+1+rng.IntN(o.MaxSpan)))
			if end <= start {
				continue
			}
			out = append(out, Candidate{Path: rel, Start: start, End: end, Level: evaluator.LevelRandomSpan, NodeType: "span"})
		}
	}
	return out
}

func lineAt(src []byte, starts []int, i int) []byte { return src[starts[i]:lineEnd(src, starts, i)] }

func lineEnd(src []byte, starts []int, i int) int {
	if i+1 < len(starts) {
		return starts[i+1] - 1
	}
	if n := len(src); n > 0 && src[n-1] == '\n' {
		return n - 1
	}
	return len(src)
}

func (p *plan) record(c Candidate, o Options, test evaluator.TestSpec) dataset.InfillRecord {
	f := p.files[c.Path]
	repo := o.Repository
	if repo == "" {
		repo = p.repo
	}
	r := dataset.InfillRecord{
		ID:           fmt.Sprintf("%s/%s:%d-%d", c.Level, c.Path, c.Start, c.End),
		Benchmark:    o.Benchmark,
		Repository:   repo,
		RepoName:     path.Base(filepath.ToSlash(p.repo)),
		Target:       c.Path,
		Span:         &dataset.Span{Start: c.Start, End: c.End},
		TargetSHA256: f.sum,
		Level:        c.Level,
		Language:     p.lang.Name,
		NodeType:     c.NodeType,
		Test:         test,
	}
	if o.Timeout > 0 {
		r.TimeoutS = o.Timeout.Seconds()
	}
	return r
}

// Select picks samples without running any test: the first PerLevel
// candidates of each level in seeded order.
func Select(ctx context.Context, repoDir string, o Options) ([]dataset.InfillRecord, Stats, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, Stats{}, err
	}
	repoDir, err := filepath.Abs(repoDir)
	if err != nil {
		return nil, Stats{}, err
	}
	p, err := makePlan(ctx, repoDir, o, zap.NewNop())
	if err != nil {
		return nil, Stats{}, err
	}
	test := p.lang.defaultTest(repoDir, o)
	var out []dataset.InfillRecord
	for _, level := range o.Levels {
		for _, c := range p.byLevel[level][:min(o.PerLevel, len(p.byLevel[level]))] {
			out = append(out, p.record(c, o, test))
			p.stats.Kept[level]++
		}
	}
	return out, p.stats, nil
}

// Build selects samples like Select but keeps only those that pass the
// checks in the sandbox: the unmodified repository must pass its tests
// (once; every sample's reference restores exactly that file, so its
// verdict is the same), and with RequireEmptyFails the tests must fail
// when the span is left empty. For pytest the baseline's passed-test count
// becomes each record's expected_tests.
func Build(ctx context.Context, repoDir string, o Options, g Grader, log *zap.Logger) ([]dataset.InfillRecord, Stats, error) {
	if log == nil {
		log = zap.NewNop()
	}
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, Stats{}, err
	}
	if g == nil {
		return nil, Stats{}, fmt.Errorf("%w: nil Grader", ErrInvalidOptions)
	}
	repoDir, err := filepath.Abs(repoDir)
	if err != nil {
		return nil, Stats{}, err
	}
	p, err := makePlan(ctx, repoDir, o, log)
	if err != nil {
		return nil, Stats{}, err
	}
	test := p.lang.defaultTest(repoDir, o)
	runner, ok := evaluator.TestRunnerFor(test.Kind)
	if !ok {
		return nil, p.stats, fmt.Errorf("%w: unknown test kind %q", ErrInvalidOptions, test.Kind)
	}
	testOf := func(Candidate) (evaluator.TestSpec, bool, error) { return test, true, nil }
	var sel *evaluator.TestSelection
	if _, perUnit := runner.Unit("."); perUnit { // checked unit by unit (Go packages): the unit is the selection
		testOf = p.unitBaselines(ctx, g, runner, repoDir, o, test)
	} else {
		if test, err = p.repositoryBaseline(ctx, g, runner, repoDir, o, test); err != nil {
			return nil, p.stats, err
		}
		if sel, err = p.trace(ctx, o, g, repoDir, test, log); err != nil {
			return nil, p.stats, err
		}
	}
	var trusted impact.Reach
	if sel != nil && !sel.Confirm() {
		trusted = sel.Reach
	}
	var out []dataset.InfillRecord
	for _, level := range o.Levels {
		kept, tried := 0, 0
		for _, c := range p.byLevel[level] {
			if kept == o.PerLevel || tried == o.MaxAttempts {
				break
			}
			test, ok, err := testOf(c)
			if err != nil {
				return nil, p.stats, err
			}
			if !ok {
				continue
			}
			rec := p.record(c, o, test)
			if trusted != nil {
				sel, err := trusted.Span(c.Path, p.files[c.Path].src, c.Start, c.End)
				if err != nil {
					return nil, p.stats, fmt.Errorf("masking: the tests reaching %s: %w", rec.ID, err)
				}
				if sel.Empty() {
					p.stats.Unreached[level]++
					continue
				}
				if !sel.Whole {
					rec.Test.Tests, rec.Test.ExpectedTests, rec.Test.SuiteTests = sel.Tests, sel.Passing, test.ExpectedTests
				}
			}
			if o.RequireEmptyFails {
				tried++
				t, err := taskOf(rec, repoDir)
				if err != nil {
					return nil, p.stats, err
				}
				r, err := g.Grade(ctx, t, 0, &evaluator.Completion{Text: ""})
				if err != nil {
					return nil, p.stats, err
				}
				if r.Verdict == evaluator.VerdictError {
					return nil, p.stats, fmt.Errorf("masking: grading %s: %s", rec.ID, r.Error)
				}
				if r.Passed() {
					p.stats.Uncovered[level]++
					continue
				}
			}
			out = append(out, rec)
			kept++
		}
		p.stats.Kept[level] = kept
		log.Info("masking: level done", zap.String("level", string(level)), zap.Int("kept", kept),
			zap.Int("candidates", len(p.byLevel[level])), zap.Int("uncovered", p.stats.Uncovered[level]))
	}
	if sel != nil && sel.Confirm() {
		if err := p.confirmSelection(ctx, g, repoDir, sel, out, o); err != nil {
			return nil, p.stats, err
		}
	}
	return out, p.stats, nil
}

// Prepare makes, on the host and before any sandbox (which has no
// network), what the repository's tests need: its test runner's Prepare
// (Go: go mod download into the module cache the sandbox binds). It
// returns what it did, in words; a repository masking cannot read is
// Build's to report.
func Prepare(ctx context.Context, repoDir string, o Options, tc evaluator.Toolchains) ([]string, error) {
	var lang *Language
	var err error
	if o.Language != "" {
		lang, err = LanguageNamed(o.Language)
	} else {
		lang, err = DetectLanguage(repoDir)
	}
	if err != nil {
		return nil, nil // Build says why
	}
	runner, ok := evaluator.TestRunnerFor(lang.defaultTest(repoDir, o).Kind)
	if !ok {
		return nil, nil
	}
	return runner.Prepare(ctx, repoDir, tc)
}

// repositoryBaseline checks the unmodified repository once (its first
// file restored exactly) and returns the test spec that passed, with the
// runner's pass count as its ExpectedTests.
func (p *plan) repositoryBaseline(ctx context.Context, g Grader, runner evaluator.TestRunner, repoDir string, o Options, test evaluator.TestSpec) (evaluator.TestSpec, error) {
	bt, err := p.baseTask(o, repoDir, test, nil)
	if err != nil {
		return test, err
	}
	test, res, fixes, err := CheckBaseline(ctx, g, repoDir, bt)
	p.stats.Fixes = fixes
	if err != nil {
		return test, err
	}
	if runner.Counts() && test.ExpectedTests == 0 && res.Tests != nil {
		test.ExpectedTests = res.Tests.Passed
		p.stats.BaselineTests = res.Tests.Passed
	}
	return test, nil
}

// unitBaselines checks the unmodified repository per unit (a Go package)
// on first need: the unit's first file restored exactly, its tests run.
// A unit that passes gives its samples its pass count as ExpectedTests
// (tests and subtests that passed, as the runner counts them); one whose
// tests fail, or that has none, gives none (Stats.FailingPackages says
// why). A unit that cannot be judged (VerdictError: the toolchain or the
// module cache lacks something) stops the build.
func (p *plan) unitBaselines(ctx context.Context, g Grader, runner evaluator.TestRunner, repoDir string, o Options, test evaluator.TestSpec) func(Candidate) (evaluator.TestSpec, bool, error) {
	type unit struct {
		test evaluator.TestSpec
		ok   bool
	}
	unitOf := func(rel string) string { u, _ := runner.Unit(rel); return u }
	units := map[string]*unit{}
	return func(c Candidate) (evaluator.TestSpec, bool, error) {
		key := unitOf(c.Path)
		if u := units[key]; u != nil {
			return u.test, u.ok, nil
		}
		bt, err := p.baseTask(o, repoDir, test, func(rel string) bool { return unitOf(rel) == key })
		if err != nil {
			return test, false, err
		}
		t, res, _, err := CheckBaseline(ctx, g, repoDir, bt)
		u := &unit{test: t}
		units[key] = u
		var be *BaselineError
		switch {
		case errors.As(err, &be) && res.Verdict != evaluator.VerdictError:
			p.stats.FailingPackages = append(p.stats.FailingPackages, key+": "+firstNonEmpty(res.Reason, string(res.Verdict)))
			return t, false, nil
		case err != nil:
			if be != nil {
				be.Unit = key
			}
			return t, false, err
		case res.Tests == nil || res.Tests.Passed == 0:
			p.stats.FailingPackages = append(p.stats.FailingPackages, key+": no test passed")
			return t, false, nil
		}
		if u.test.ExpectedTests == 0 {
			u.test.ExpectedTests = res.Tests.Passed
		}
		u.ok = true
		p.stats.Packages++
		p.stats.BaselineTests += res.Tests.Passed
		return u.test, true, nil
	}
}

// baseTask is the unmodified repository as a task: its first file (the
// first that in accepts, unless in is nil) restored exactly.
func (p *plan) baseTask(o Options, repoDir string, test evaluator.TestSpec, in func(rel string) bool) (evaluator.Task, error) {
	var first *source
	for _, f := range p.files {
		if (in == nil || in(f.rel)) && (first == nil || f.rel < first.rel) {
			first = f
		}
	}
	return taskOf(p.record(Candidate{Path: first.rel, Start: 0, End: len(first.src), Level: evaluator.LevelRandomSpan}, o, test), repoDir)
}

// trace runs o.Tracer's selection on the unmodified repository (with
// test, the spec the baseline passed); nil without a Tracer or for a test
// kind it cannot trace (the records then run the whole suite, and
// Stats.TraceNote says so).
func (p *plan) trace(ctx context.Context, o Options, g Grader, repoDir string, test evaluator.TestSpec, log *zap.Logger) (*evaluator.TestSelection, error) {
	tracer, optInOnly := o.Tracer, false
	if tracer == nil {
		tg, ok := g.(Tracer)
		if !ok || !o.SelectOptIn {
			return nil, nil
		}
		tracer, optInOnly = tg, true
	}
	base, err := p.baseTask(o, repoDir, test, nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	sel, err := tracer.TraceTests(ctx, base, evaluator.TraceOptions{Timeout: o.TraceTimeout, OptIn: o.SelectOptIn,
		OptInOnly: optInOnly, Benchmark: o.Benchmark})
	if errors.Is(err, evaluator.ErrNoTracer) {
		if !optInOnly {
			p.stats.TraceNote = fmt.Sprintf("%s tests cannot be traced: every sample runs the whole suite", test.Kind)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("masking: finding the tests that reach each span: %w", err)
	}
	if !sel.Confirm() {
		p.stats.Trace = time.Since(start)
		p.stats.Traced = true
		log.Info("masking: traced the tests", zap.Duration("took", p.stats.Trace))
	}
	return sel, nil
}

// confirmSelection traces a confirmed selection for the records' spans
// and gives each record the tests that reach its span where they give the
// whole suite's verdicts on it (sameVerdicts); the others keep the whole
// suite. Stats.Selection counts both.
func (p *plan) confirmSelection(ctx context.Context, g Grader, repoDir string, sel *evaluator.TestSelection, recs []dataset.InfillRecord, o Options) error {
	spans := make([]evaluator.Span, len(recs))
	for i, r := range recs {
		spans[i] = evaluator.Span{File: r.Target, Start: r.Span.Start, End: r.Span.End}
	}
	reach, err := sel.Spans(ctx, spans)
	if err != nil {
		return err
	}
	stats := &Selection{TestFiles: sel.TestFiles}
	for i := range recs {
		rec := &recs[i]
		chosen, err := reach.Span(rec.Target, p.files[rec.Target].src, rec.Span.Start, rec.Span.End)
		if err != nil {
			return err
		}
		if chosen.Whole || len(chosen.Tests) == 0 {
			stats.Whole++
			continue
		}
		try := rec.Test
		try.Tests, try.ExpectedTests = chosen.Tests, chosen.Passing
		ok, err := sameVerdicts(ctx, g, repoDir, *rec, try, o.RequireEmptyFails)
		if err != nil {
			return err
		}
		if !ok {
			stats.Whole++
			continue
		}
		rec.Test = try
		stats.Samples++
		stats.SelectedFiles += len(chosen.Tests)
	}
	p.stats.Selection, p.stats.TraceNote = stats, ""
	return nil
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// taskOf converts a record whose repository field may be relative to the
// output file into a task on the repository at repoDir.
func taskOf(rec dataset.InfillRecord, repoDir string) (evaluator.Task, error) {
	rec.Repository = repoDir
	return rec.Task(repoDir)
}

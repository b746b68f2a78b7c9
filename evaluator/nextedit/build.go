package nextedit

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/infill-dev/infill/evaluator/masking"
	"github.com/infill-dev/infill/internal/editregion"
)

// Options configures a build.
type Options struct {
	// Rev is the newest commit examined (default HEAD); the history is
	// walked from it, newest first.
	Rev string
	// MaxCommits bounds the commits examined (default 200).
	MaxCommits int
	// Samples is the number of executable samples wanted: the walk stops
	// once it has them (default 20).
	Samples int
	// PerCommit bounds the targets of one commit checked in the sandbox
	// (default 4), so that a benchmark spreads over the history.
	PerCommit int
	// Language is the repository's language (one of masking.Languages();
	// default: the one with the most files to mask at Rev). Its rule of
	// source files chooses the target edits.
	Language string
	// Test is the test entry point (default: the language's, as eval mask
	// chooses it, per commit).
	Test *evaluator.TestSpec
	// Python is the interpreter the tests run with (absolute; default:
	// the commit's own virtual environment, else the sandbox's).
	Python string
	// Benchmark names the records (default "nextedit").
	Benchmark string
	// RepoName is the records' repo_name (default: the repository
	// directory's name, without .git).
	RepoName string
	// Timeout is each test run's wall-clock limit (default: the
	// sandbox's), written into the records.
	Timeout time.Duration
	// Shape places the editable region (default editregion.Zeta: the
	// server's default format's).
	Shape editregion.Shape
	// WorkDir is where the commits with executable samples are written
	// out, one directory per commit (required when checking).
	WorkDir string
	// Name is how a record names a commit's directory (default: its
	// absolute path); eval nextedit makes it relative to the output file.
	Name func(dir string) string
	// Toolchains are given to the test runner's Prepare (Go's modules).
	Toolchains evaluator.Toolchains
}

// Record is one sample as written: an infill-format next-edit record
// (dataset.InfillRecord, which eval run and grade load) and where it came
// from. A record that is not executable has no test and no repository:
// it is scored by exact match and edit similarity only, and NotExecutable
// says why.
type Record struct {
	dataset.InfillRecord
	Commit string `json:"commit"`
	// Hunk is the target's position among the commit's hunks (1-based),
	// Hunks their number; the hunks before it are the recent edits.
	Hunk  int `json:"hunk"`
	Hunks int `json:"hunks"`
	// Cursor says where the cursor was put: "last-edit" (the end of the
	// last recent edit, in the target's file) or "target" (the start of
	// the target's change).
	Cursor        string `json:"cursor"`
	Executable    bool   `json:"executable"`
	NotExecutable string `json:"not_executable,omitempty"`
}

// Stats counts what a build examined and why hunks are not executable
// samples.
type Stats struct {
	Language string `json:"language"`
	// Commits examined (non-merge commits with a parent), and commits
	// passed over (merges, the root commit), by reason.
	Commits        int            `json:"commits"`
	SkippedCommits map[string]int `json:"skipped_commits,omitempty"`
	// Hunks of the examined commits (a binary file counts as one), how
	// many became samples, executable ones, and why each of the others
	// is not executable (every hunk has one outcome).
	Hunks      int            `json:"hunks"`
	Samples    int            `json:"samples"`
	Executable int            `json:"executable"`
	Reasons    map[string]int `json:"reasons"`
	// CommitFailures are the commits (or Go packages at a commit) whose
	// own tests do not pass here, with why.
	CommitFailures []string `json:"commit_failures,omitempty"`
}

// Why a hunk is not an executable sample.
const (
	ReasonFirst         = "first hunk of its commit (a recent edit only)"
	ReasonAdded         = "in a new file"
	ReasonDeleted       = "in a deleted file"
	ReasonRenamed       = "in a renamed or copied file"
	ReasonBinary        = "binary file"
	ReasonOddPath       = "a path git quotes"
	ReasonNotSource     = "not in a source file of the language (tests, docs, configuration)"
	ReasonNotText       = "the file is not UTF-8 text"
	ReasonOutside       = "the edit does not fit the editable region"
	ReasonNoTestChange  = "its commit changes no test file"
	ReasonPerCommit     = "not checked: its commit's limit of targets"
	ReasonCommitFails   = "its commit's tests do not pass here"
	ReasonOmittedPasses = "the tests pass without the hunk"
	ReasonOmittedError  = "no verdict without the hunk"
	ReasonRefFails      = "the tests fail with the reference edit (the file's later hunks are not applied)"
	ReasonRefError      = "no verdict with the reference edit"
)

// Grader grades one completion; *evaluator.Runner implements it.
type Grader = masking.Grader

// ErrInvalidOptions wraps the errors of options that cannot work.
var ErrInvalidOptions = errors.New("nextedit: invalid options")

func (o Options) withDefaults() Options {
	if o.Rev == "" {
		o.Rev = "HEAD"
	}
	if o.MaxCommits == 0 {
		o.MaxCommits = 200
	}
	if o.Samples == 0 {
		o.Samples = 20
	}
	if o.PerCommit == 0 {
		o.PerCommit = 4
	}
	if o.Benchmark == "" {
		o.Benchmark = "nextedit"
	}
	if o.Shape == (editregion.Shape{}) {
		o.Shape = editregion.Zeta
	}
	if o.Name == nil {
		o.Name = func(dir string) string { return dir }
	}
	return o
}

func (o Options) validate(check bool) error {
	switch {
	case o.MaxCommits < 1 || o.Samples < 1 || o.PerCommit < 1:
		return fmt.Errorf("%w: MaxCommits, Samples and PerCommit must be positive", ErrInvalidOptions)
	case check && (o.WorkDir == "" || !filepath.IsAbs(o.WorkDir)):
		return fmt.Errorf("%w: WorkDir %q must be an absolute directory", ErrInvalidOptions, o.WorkDir)
	case o.Shape.RegionAbove < 0 || o.Shape.RegionBelow < 0:
		return fmt.Errorf("%w: a region shape of negative lines", ErrInvalidOptions)
	}
	return nil
}

// Build walks the history of the git repository at gitDir (a work tree
// or a bare repository) from o.Rev, newest first, and makes a next-edit
// sample of every hunk after the first of a non-merge commit that lies in
// a source file of the language and fits the editable region: the state
// before the commit with the hunks before it applied is the workspace,
// those hunks are the recent edits, it is the target. A sample is
// executable when its commit changes a test file, the commit's own tests
// pass here (in the sandbox, through g: the runner table's runner of the
// language, per Go package), they fail with the hunk left out (the
// region unchanged) and pass with it (the reference); its record then
// names the commit's tree, written out under o.WorkDir, and the test,
// expecting the commit's pass count. Every other sample is written too,
// scored by text only, with its reason; Stats counts every hunk's
// outcome. The walk stops at o.Samples executable samples or o.MaxCommits
// commits. With g nil nothing runs: every sample is text-only.
func Build(ctx context.Context, gitDir string, o Options, g Grader, log *zap.Logger) ([]Record, Stats, error) {
	if log == nil {
		log = zap.NewNop()
	}
	o = o.withDefaults()
	if err := o.validate(g != nil); err != nil {
		return nil, Stats{}, err
	}
	gitDir, err := filepath.Abs(gitDir)
	if err != nil {
		return nil, Stats{}, err
	}
	b := &builder{r: repo{gitDir}, o: o, g: g, log: log,
		stats: Stats{SkippedCommits: map[string]int{}, Reasons: map[string]int{}}}
	if o.RepoName == "" {
		b.o.RepoName = strings.TrimSuffix(filepath.Base(gitDir), ".git")
		if b.o.RepoName == "repo" { // the fetch tool's OWNER+NAME/repo
			b.o.RepoName = filepath.Base(filepath.Dir(gitDir))
		}
	}
	if err := b.language(ctx); err != nil {
		return nil, b.stats, err
	}
	commits, err := b.r.commits(ctx, o.Rev, o.MaxCommits)
	if err != nil {
		return nil, b.stats, err
	}
	for _, c := range commits {
		if b.stats.Executable >= o.Samples {
			break
		}
		switch len(c.parents) {
		case 0:
			b.stats.SkippedCommits["root commit (no parent to diff against)"]++
			continue
		case 1:
		default:
			b.stats.SkippedCommits["merge commit"]++
			continue
		}
		if err := b.commit(ctx, c); err != nil {
			return nil, b.stats, err
		}
	}
	return b.out, b.stats, nil
}

type builder struct {
	r     repo
	o     Options
	g     Grader
	log   *zap.Logger
	lang  *masking.Language
	stats Stats
	out   []Record
}

// language is o.Language, else the one with the most files at o.Rev.
func (b *builder) language(ctx context.Context) error {
	var err error
	if b.o.Language != "" {
		b.lang, err = masking.LanguageNamed(b.o.Language)
	} else {
		var files []string
		if files, err = b.r.files(ctx, b.o.Rev); err != nil {
			return err
		}
		b.lang, err = masking.LanguageOfFiles(files)
	}
	if err != nil {
		return err
	}
	b.stats.Language = b.lang.Name
	return nil
}

// sample is one target of a commit before its check.
type sample struct {
	rec Record
	// last says the target is its file's last hunk: the reference file is
	// the commit's, whose tests the commit's check ran.
	last bool
}

// commit makes the samples of commit c and checks them.
func (b *builder) commit(ctx context.Context, c commit) error {
	b.stats.Commits++
	files, err := b.r.diff(ctx, c.parents[0], c.id)
	if err != nil {
		return err
	}
	var hunks []*hunk
	tests := false
	for _, f := range files {
		if isTestFile(f.path) || isTestFile(f.oldPath) {
			tests = true
		}
		if f.kind == binary || len(f.hunks) == 0 && f.kind == oddPath {
			b.stats.Hunks++
			b.stats.Reasons[ReasonBinary]++
			continue
		}
		hunks = append(hunks, f.hunks...)
	}
	b.stats.Hunks += len(hunks)
	var samples []*sample
	parents := map[string]string{}
	for i, h := range hunks {
		reason := ""
		switch f := h.file; {
		case i == 0:
			reason = ReasonFirst
		case f.kind == oddPath:
			reason = ReasonOddPath
		case f.kind == added:
			reason = ReasonAdded
		case f.kind == deleted:
			reason = ReasonDeleted
		case f.kind == renamed:
			reason = ReasonRenamed
		case !b.lang.Source(f.path):
			reason = ReasonNotSource
		}
		if reason != "" {
			b.stats.Reasons[reason]++
			continue
		}
		parent, ok := parents[h.file.path]
		if !ok {
			if parent, err = b.r.file(ctx, c.parents[0], h.file.oldPath); err != nil {
				return err
			}
			parents[h.file.path] = parent
		}
		s, reason, err := b.sample(c, hunks, i, parent)
		if err != nil {
			return fmt.Errorf("nextedit: commit %s, hunk %d: %w", c.id, i+1, err)
		}
		if reason != "" {
			b.stats.Reasons[reason]++
			continue
		}
		samples = append(samples, s)
	}
	b.stats.Samples += len(samples)
	var check []*sample
	for _, s := range samples {
		switch {
		case b.g == nil:
		case !tests:
			s.rec.NotExecutable = ReasonNoTestChange
		case len(check) == b.o.PerCommit || b.stats.Executable+len(check) >= b.o.Samples:
			s.rec.NotExecutable = ReasonPerCommit
		default:
			check = append(check, s)
		}
	}
	if len(check) > 0 {
		if err := b.check(ctx, c, check); err != nil {
			return err
		}
	}
	for _, s := range samples {
		if s.rec.Executable {
			b.stats.Executable++
		} else {
			if s.rec.NotExecutable == "" {
				s.rec.NotExecutable = "not checked (no sandbox)"
			}
			b.stats.Reasons[s.rec.NotExecutable]++
			s.rec.Repository, s.rec.Test, s.rec.TimeoutS = "", evaluator.TestSpec{}, 0
		}
		b.out = append(b.out, s.rec)
	}
	return nil
}

// sample makes the sample whose target is hunks[i] of a file whose text
// before the commit is parent: the workspace's file (the file's hunks
// before it applied), the region around the cursor, the reference (the
// region with the target made) and the recent edits. A reason says why
// the hunk makes none.
func (b *builder) sample(c commit, hunks []*hunk, i int, parent string) (*sample, string, error) {
	h := hunks[i]
	if !utf8.ValidString(parent) || !utf8.ValidString(h.new) {
		return nil, ReasonNotText, nil
	}
	var before []*hunk // the file's hunks before the target
	later := false
	for j, o := range hunks {
		if o.file == h.file && j < i {
			before = append(before, o)
		}
		if o.file == h.file && j > i {
			later = true
		}
	}
	work, at, err := applied(parent, before)
	if err != nil {
		return nil, "", err
	}
	off, err := h.offsetIn(parent)
	if err != nil {
		return nil, "", err
	}
	for _, o := range before {
		off += len(o.new) - len(o.old)
	}
	ref := work[:off] + h.new + work[off+len(h.old):]

	// The cursor: where the user left it after the last edit, when that
	// edit is in this file and the target fits the region around it;
	// else at the target's change, as when the user moved there.
	cursors := []struct {
		at   int
		name string
	}{}
	if prev := hunks[i-1]; prev.file == h.file {
		p := at[len(at)-1] + len(prev.new) - len(prev.trail)
		if changed := prev.new[len(prev.lead) : len(prev.new)-len(prev.trail)]; strings.HasSuffix(changed, "\n") {
			p-- // the end of the last line typed, before its line break
		}
		cursors = append(cursors, struct {
			at   int
			name string
		}{p, "last-edit"})
	}
	cursors = append(cursors, struct {
		at   int
		name string
	}{off + len(h.lead), "target"})
	for _, cur := range cursors {
		region, _ := b.o.Shape.Around(work, cur.at)
		tail := len(work) - region.End
		if len(ref)-tail < region.Start || !strings.HasPrefix(ref, work[:region.Start]) || !strings.HasSuffix(ref, work[region.End:]) {
			continue
		}
		// A cursor after the region's last line (an insertion at the end
		// of the file) stands at its end, where the region holds it.
		at := min(max(cur.at, region.Start), region.End)
		return b.record(c, hunks, i, work, region, ref[region.Start:len(ref)-tail], at, cur.name, later), "", nil
	}
	return nil, ReasonOutside, nil
}

// record is the sample's record before its check.
func (b *builder) record(c commit, hunks []*hunk, i int, work string, region editregion.Span, refRegion string, cursor int, cursorName string, later bool) *sample {
	h := hunks[i]
	prefix, suffix := work[:region.Start], work[region.End:]
	n := &evaluator.NextEdit{Region: work[region.Start:region.End], Cursor: cursor}
	for _, e := range hunks[:i] {
		p := e.file.path
		if e.file.kind == deleted {
			p = e.file.oldPath
		}
		n.RecentEdits = append(n.RecentEdits, evaluator.RecentEdit{Path: p, Diff: "--- a/" + e.file.oldPath + "\n+++ b/" + p + "\n" + e.text})
	}
	short := c.id[:min(12, len(c.id))]
	rec := Record{
		InfillRecord: dataset.InfillRecord{
			ID:        fmt.Sprintf("%s/%s/%d:%s", evaluator.LevelNextEdit, short, i+1, h.file.path),
			Benchmark: b.o.Benchmark, RepoName: b.o.RepoName, Target: h.file.path,
			Prefix: &prefix, Suffix: &suffix, Middle: &refRegion,
			Level: evaluator.LevelNextEdit, Language: b.lang.Name, NodeType: "hunk",
			NextEdit: n,
		},
		Commit: c.id, Hunk: i + 1, Hunks: len(hunks), Cursor: cursorName,
	}
	return &sample{rec: rec, last: !later}
}

// check writes commit c's tree out, runs the commit's own tests there
// (per Go package), and for each sample grades the region unchanged (the
// hunk left out: must fail) and the reference (must pass; a target that
// is its file's last hunk makes the commit's own file, whose run passed).
func (b *builder) check(ctx context.Context, c commit, samples []*sample) error {
	dir := filepath.Join(b.o.WorkDir, c.id[:min(12, len(c.id))])
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := b.r.checkout(ctx, c.id, dir); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	mo := masking.Options{Test: b.o.Test, Python: b.o.Python}
	test := b.lang.DefaultTest(dir, mo)
	runner, ok := evaluator.TestRunnerFor(test.Kind)
	if !ok {
		return fmt.Errorf("%w: unknown test kind %q", ErrInvalidOptions, test.Kind)
	}
	notes, err := runner.Prepare(ctx, dir, b.o.Toolchains)
	if err != nil {
		for _, s := range samples {
			s.rec.NotExecutable = ReasonCommitFails
		}
		b.stats.CommitFailures = append(b.stats.CommitFailures, c.id[:12]+": preparing its tests: "+err.Error())
		return nil
	}
	for _, n := range notes {
		b.log.Info("nextedit: prepared", zap.String("commit", c.id), zap.String("what", n))
	}
	units := map[string]*evaluator.TestSpec{} // the commit's passing spec per unit; nil: fails
	for _, s := range samples {
		rec := &s.rec
		unit, _ := runner.Unit(rec.Target)
		spec, seen := units[unit]
		if !seen {
			spec, err = b.baseline(ctx, c, dir, rec.Target, unit, test, runner)
			if err != nil {
				return err
			}
			units[unit] = spec
		}
		if spec == nil {
			rec.NotExecutable = ReasonCommitFails
			continue
		}
		rec.Repository, rec.Test = b.o.Name(dir), *spec
		if b.o.Timeout > 0 {
			rec.TimeoutS = b.o.Timeout.Seconds()
		}
		t, err := rec.taskAt(dir)
		if err != nil {
			return err
		}
		res, err := b.g.Grade(ctx, t, 0, &evaluator.Completion{Text: t.NextEdit.Region})
		if err != nil {
			return err
		}
		switch {
		case res.Verdict == evaluator.VerdictError:
			rec.NotExecutable = ReasonOmittedError
			b.log.Info("nextedit: no verdict without the hunk", zap.String("sample", rec.ID), zap.String("error", res.Error))
			continue
		case res.Passed():
			rec.NotExecutable = ReasonOmittedPasses
			continue
		}
		if !s.last {
			res, err := b.g.Grade(ctx, t, 0, &evaluator.Completion{Text: t.Reference})
			if err != nil {
				return err
			}
			switch {
			case res.Verdict == evaluator.VerdictError:
				rec.NotExecutable = ReasonRefError
				continue
			case !res.Passed():
				rec.NotExecutable = ReasonRefFails
				continue
			}
		}
		rec.Executable, keep = true, true
	}
	return nil
}

// baseline runs the commit's own tests of unit (Go: the target's package)
// with the commit's file target as it is, and returns the spec that
// passed with its pass count expected; nil when they do not pass.
func (b *builder) baseline(ctx context.Context, c commit, dir, target, unit string, test evaluator.TestSpec, runner evaluator.TestRunner) (*evaluator.TestSpec, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(target)))
	if err != nil {
		return nil, err
	}
	base := evaluator.Task{ID: "baseline/" + c.id[:12] + "/" + target, Benchmark: b.o.Benchmark, Path: target,
		Prefix: string(data), Language: b.lang.Name, RepoName: b.o.RepoName,
		Exec: evaluator.Exec{Kind: evaluator.ExecRepository, RepoDir: dir, Test: test, Timeout: b.o.Timeout}}
	spec, res, _, err := masking.CheckBaseline(ctx, b.g, dir, base)
	what := c.id[:12]
	if unit != "" {
		what += " package " + unit
	}
	var be *masking.BaselineError
	switch {
	case errors.As(err, &be):
		b.stats.CommitFailures = append(b.stats.CommitFailures, what+": "+firstLine(res.Error, res.Reason, string(res.Verdict)))
		return nil, nil
	case err != nil:
		return nil, err
	case runner.Counts() && (res.Tests == nil || res.Tests.Passed == 0):
		b.stats.CommitFailures = append(b.stats.CommitFailures, what+": no test passed")
		return nil, nil
	}
	if runner.Counts() && spec.ExpectedTests == 0 {
		spec.ExpectedTests = res.Tests.Passed
	}
	return &spec, nil
}

// taskAt is the record's task on the commit's tree at dir.
func (rec *Record) taskAt(dir string) (evaluator.Task, error) {
	r := rec.InfillRecord
	r.Repository = dir
	return r.Task(dir)
}

func firstLine(s ...string) string {
	for _, x := range s {
		if x = strings.TrimSpace(x); x != "" {
			l, _, _ := strings.Cut(x, "\n")
			return l
		}
	}
	return ""
}

// isTestFile reports a path that holds tests by the usual conventions:
// test_*.py, *_test.py, *_test.go, *.test.js and *.spec.ts and their
// kin, conftest.py, or a file under a test, tests, testing, __tests__ or
// spec directory.
func isTestFile(rel string) bool {
	if rel == "" {
		return false
	}
	base := path.Base(rel)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch {
	case base == "conftest.py", strings.HasPrefix(base, "test_"), strings.HasSuffix(stem, "_test"),
		strings.HasSuffix(stem, ".test"), strings.HasSuffix(stem, ".spec"):
		return true
	}
	dirs := strings.Split(path.Dir(rel), "/")
	return slices.ContainsFunc(dirs, func(d string) bool {
		switch d {
		case "test", "tests", "testing", "__tests__", "spec":
			return true
		}
		return false
	})
}

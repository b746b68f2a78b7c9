// Command cpquality measures, without a model, how much of what a masked
// middle needs the assembled context makes available.
//
// Over masked samples from repositories on this machine (each sample's true
// middle is known) it builds prompts with every context strategy at
// several budgets and reports, per language and repository:
//
//   - code-identifier recall (the headline): of the middle's code
//     identifiers (identifier nodes of a tree-sitter parse of the file, not
//     words of comments or string literals, not names the language
//     predeclares) that do not occur as a word in the cursor file's part of
//     the prompt, the share that occurs as a code identifier in the
//     cross-file context — with the paired bootstrap 95% interval of the
//     difference between the fused strategy and each baseline;
//   - prose recall, apart: the same for the words of the middle's comments
//     and strings, found as words anywhere in the context;
//   - what the context is made of (imports resolved, candidates included,
//     test files, duplicated windows, documentation), for diagnosis.
//
// docs/context-quality.md defines the measures and says how to read the
// report. Usage:
//
//	go run ./contextpack/cmd/cpquality -samples 120 -md report.md
//	go run ./contextpack/cmd/cpquality -dir ~/src/myrepo -samples 360 -md myrepo.md
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
)

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// options are the command's settings.
type options struct {
	shared     string
	samples    int
	budgets    []int
	gen        int
	seed       uint64
	strategies []contextpack.Strategy
	onlyRepo   string
	dirs       []string
	builtin    bool
	boot       int
	maxFiles   int
	set        string
	args       string // the command line, for the report
}

func main() {
	var o options
	var dirs listFlag
	flag.StringVar(&o.shared, "shared", "../shared", "the shared data directory (built-in HumanEval repository)")
	flag.IntVar(&o.samples, "samples", 120, "samples per repository")
	budgetsFlag := flag.String("budgets", "1024,2048,4096,8192", "total token budgets")
	flag.IntVar(&o.gen, "gen", 64, "generation tokens reserved in each budget")
	flag.Uint64Var(&o.seed, "seed", 1, "sampling and bootstrap seed")
	stratFlag := flag.String("strategies", "none,execrepobench,jaccard,fused,imports,definitions,similar", "strategies")
	flag.StringVar(&o.onlyRepo, "repo", "", "only repositories whose name contains this")
	flag.Var(&dirs, "dir", "a local repository to measure, `[name=]path` (repeatable or a comma list); "+
		"with -dir the built-in repositories are left out unless -builtin is given")
	builtin := flag.Bool("builtin", true, "measure the built-in repositories (default true without -dir, false with it)")
	flag.IntVar(&o.boot, "boot", 1000, "bootstrap resamples for the 95% intervals")
	flag.IntVar(&o.maxFiles, "max-files", 4000, "files read per repository (in path order)")
	mdOut := flag.String("md", "", "write the markdown report here (default: standard output)")
	jsonOut := flag.String("json", "", "write the aggregated results (per language, strategy, budget) here as JSON")
	manifests := flag.String("manifests", "", "write one JSON line per prompt (sample, scores, manifest) here; gzip if it ends in .gz")
	flag.StringVar(&o.set, "set", "", "config overrides, e.g. LocalShare=0.4,ImportShare=0.3")
	flag.Parse()

	o.dirs = dirs
	o.builtin = *builtin
	builtinSet := false
	flag.Visit(func(f *flag.Flag) { builtinSet = builtinSet || f.Name == "builtin" })
	if len(dirs) > 0 && !builtinSet {
		o.builtin = false
	}
	o.args = strings.Join(os.Args[1:], " ")
	for _, s := range strings.Split(*budgetsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatal(fmt.Errorf("bad budget %q", s))
		}
		o.budgets = append(o.budgets, n)
	}
	for _, s := range strings.Split(*stratFlag, ",") {
		st, err := contextpack.ParseStrategy(strings.TrimSpace(s))
		if err != nil {
			fatal(err)
		}
		o.strategies = append(o.strategies, st)
	}
	var specs []repoSpec
	if o.builtin {
		specs = defaultRepos(o.shared)
	}
	ds, err := dirRepos(o.dirs)
	if err != nil {
		fatal(err)
	}
	specs = append(specs, ds...)

	var mw *manifestWriter
	if *manifests != "" {
		if mw, err = newManifestWriter(*manifests); err != nil {
			fatal(err)
		}
	}
	res, err := run(context.Background(), o, specs, mw, os.Stderr)
	if err == nil && mw != nil {
		err = mw.Close()
	}
	if err != nil {
		fatal(err)
	}
	md := report(res)
	if *mdOut != "" {
		if err := writeFile(*mdOut, []byte(md)); err != nil {
			fatal(err)
		}
	} else {
		fmt.Print(md)
	}
	if *jsonOut != "" {
		j, _ := json.MarshalIndent(aggregate(res), "", " ")
		if err := writeFile(*jsonOut, j); err != nil {
			fatal(err)
		}
	}
}

// writeFile writes through a temporary file, so a failure leaves no
// half-written report.
func writeFile(name string, data []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// record is one sample's results.
type record struct {
	repo    int // index into results.repos
	lang    string
	test    bool // the cursor file is a test file
	imports importCounts
	cells   [][]cell // [strategy][budget]
}

type importCounts struct {
	All      int `json:"all"`
	Relative int `json:"relative"`
	Own      int `json:"own"`
}

// repoRow describes a measured repository.
type repoRow struct {
	Name, Lang, Commit string
	Files, Bytes       int
	Samples            int
	Langs              map[string]int
}

// results is a run's records with what the report needs to name.
type results struct {
	opts    options
	repos   []repoRow
	records []record
	elapsed time.Duration
	load    string
}

func run(ctx context.Context, o options, specs []repoSpec, mw *manifestWriter, logw io.Writer) (*results, error) {
	tok, err := tokenizer.Qwen25()
	if err != nil {
		return nil, err
	}
	cfg := contextpack.DefaultConfig()
	if err := applySet(&cfg, o.set); err != nil {
		return nil, err
	}
	cfg.ContextTokens = max(cfg.ContextTokens, o.budgets[len(o.budgets)-1])
	// A parse past ParseTimeout makes the file plain text, so on a busy
	// machine the same sample can get other context: two runs of the
	// held-out set on this shared machine differed in 16 of jq's 10,080
	// prompts (execrepobench chose src/lexer.h in one, src/parser.h in the
	// other, next to a 73 KB generated lexer). A measurement must not
	// depend on the machine's load, so parses here always finish.
	cfg.ParseTimeout = max(cfg.ParseTimeout, 10*time.Minute)
	b, err := contextpack.NewBuilder(cfg, tok, nil)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	res := &results{opts: o, load: loadAverage()}
	start := time.Now()
	for ri, spec := range specs {
		if o.onlyRepo != "" && !strings.Contains(spec.name, o.onlyRepo) {
			continue
		}
		rng := rand.New(rand.NewPCG(o.seed, uint64(ri)))
		var r *repository
		var samples []sample
		if spec.group == "HumanEval" {
			r, samples, err = humanEvalSamples(spec, ri, o.samples, rng)
		} else {
			var files []contextpack.File
			if files, err = loadFiles(spec, o.maxFiles); err == nil {
				r = newRepository(spec, ri, files)
				samples = repoSamples(r, o.samples, rng)
			}
		}
		if err != nil {
			fmt.Fprintln(logw, "skip:", err)
			continue
		}
		if spec.dir {
			r.commit = gitCommit(spec.root)
		}
		row := repoRow{Name: spec.name, Lang: spec.group, Commit: r.commit, Files: len(r.files), Bytes: r.bytes,
			Samples: len(samples), Langs: map[string]int{}}
		repoIdx := len(res.repos)
		t0 := time.Now()
		imps := newRepoImports(r)
		imports := map[int]importCounts{}
		for si := range samples {
			s := &samples[si]
			row.Langs[s.lang]++
			rec := record{repo: repoIdx, lang: s.lang, test: isTestPath(s.path)}
			ic, ok := imports[s.file]
			if !ok {
				for _, spec := range fileImports(s.full, s.syntax.lang) {
					ic.All++
					switch imps.classify(s.syntax.lang, spec) {
					case importRelative:
						ic.Relative++
					case importOwn:
						ic.Own++
					}
				}
				imports[s.file] = ic
			}
			rec.imports = ic
			sc := newScorer(s)
			files := s.requestFiles()
			rec.cells = make([][]cell, len(o.strategies))
			for sti, st := range o.strategies {
				rec.cells[sti] = make([]cell, len(o.budgets))
				for bi, bud := range o.budgets {
					req := contextpack.Request{RepoName: spec.name, Files: files, TokenBudget: bud, MaxNewTokens: o.gen,
						Cursor: contextpack.Cursor{Path: s.path, Offset: s.start, Encoding: contextpack.EncodingByteOffset}}
					t := time.Now()
					p, err := b.BuildStrategy(ctx, req, st)
					el := time.Since(t)
					if err != nil {
						return nil, fmt.Errorf("%s %s %s@%d budget %d: %w", spec.name, st, s.path, s.start, bud, err)
					}
					c, needed, found := sc.score(p)
					c.Nanos = el.Nanoseconds()
					rec.cells[sti][bi] = c
					if mw != nil {
						if err := mw.write(s, si, rec, st, bud, p, c, needed, found); err != nil {
							return nil, err
						}
					}
				}
			}
			res.records = append(res.records, rec)
		}
		if row.Lang == "" {
			row.Lang = mainLang(row.Langs)
		}
		res.repos = append(res.repos, row)
		fmt.Fprintf(logw, "%-22s %4d files %6.1f MB  %d samples  %v\n", spec.name, row.Files, float64(row.Bytes)/1e6,
			len(samples), time.Since(t0).Round(time.Millisecond))
	}
	res.elapsed = time.Since(start)
	fmt.Fprintf(logw, "total %v\n", res.elapsed.Round(time.Second))
	return res, nil
}

func mainLang(m map[string]int) string {
	best, n := "", -1
	for l, c := range m {
		if c > n || c == n && l < best {
			best, n = l, c
		}
	}
	return best
}

// loadAverage is /proc/loadavg's first three fields, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cpquality:", err)
	os.Exit(1)
}

// manifestWriter writes one JSON line per prompt.
type manifestWriter struct {
	f   *os.File
	gz  *gzip.Writer
	w   *bufio.Writer
	enc *json.Encoder
}

func newManifestWriter(name string) (*manifestWriter, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	m := &manifestWriter{f: f}
	var w io.Writer = f
	if strings.HasSuffix(name, ".gz") {
		m.gz = gzip.NewWriter(f)
		w = m.gz
	}
	m.w = bufio.NewWriterSize(w, 1<<20)
	m.enc = json.NewEncoder(m.w)
	return m, nil
}

func (m *manifestWriter) Close() error {
	err := m.w.Flush()
	if m.gz != nil {
		if e := m.gz.Close(); err == nil {
			err = e
		}
	}
	if e := m.f.Close(); err == nil {
		err = e
	}
	return err
}

// manifestSource is a manifest entry as the JSON lines carry it.
type manifestSource struct {
	Kind     string  `json:"kind"`
	Path     string  `json:"path"`
	Start    int     `json:"start,omitempty"`
	End      int     `json:"end,omitempty"`
	Tokens   int     `json:"tokens"`
	Included bool    `json:"included"`
	Reason   string  `json:"reason"`
	Score    float64 `json:"score,omitempty"`
	Test     bool    `json:"test,omitempty"`
}

type manifestLine struct {
	Repo       string           `json:"repo"`
	Sample     int              `json:"sample"` // index in the repository's samples
	Lang       string           `json:"lang"`
	Path       string           `json:"path"`
	Kind       string           `json:"kind"`
	Start      int              `json:"start"`
	End        int              `json:"end"`
	Middle     string           `json:"middle"`
	TestFile   bool             `json:"test_file"`
	Imports    importCounts     `json:"imports"`
	Strategy   string           `json:"strategy"`
	Budget     int              `json:"budget"`
	CodeNeeded []string         `json:"code_needed"`
	CodeFound  []string         `json:"code_found"`
	Cell       cell             `json:"scores"`
	Sources    []manifestSource `json:"sources"`
	// DroppedSimilar counts dropped similar windows by reason (up to ';').
	DroppedSimilar map[string]int `json:"dropped_similar,omitempty"`
	Warnings       []string       `json:"warnings,omitempty"`
}

func (m *manifestWriter) write(s *sample, index int, rec record, st contextpack.Strategy, budget int,
	p *contextpack.Prompt, c cell, needed, found []string) error {
	ml := manifestLine{Repo: s.repo.spec.name, Sample: index, Lang: s.lang, Path: s.path, Kind: s.kind, Start: s.start, End: s.end,
		Middle: s.middle(), TestFile: rec.test, Imports: rec.imports, Strategy: st.String(), Budget: budget,
		CodeNeeded: needed, CodeFound: found, Cell: c, Warnings: p.Manifest.Warnings}
	for _, src := range p.Manifest.Sources {
		if src.Kind == contextpack.SourceSimilar && !src.Included {
			if ml.DroppedSimilar == nil {
				ml.DroppedSimilar = map[string]int{}
			}
			why, _, _ := strings.Cut(src.Reason, ";")
			ml.DroppedSimilar[why]++
			continue
		}
		ml.Sources = append(ml.Sources, manifestSource{Kind: src.Kind.String(), Path: src.Path, Start: src.StartLine,
			End: src.EndLine, Tokens: src.Tokens, Included: src.Included, Reason: src.Reason, Score: src.Score,
			Test: isTestPath(src.Path)})
	}
	return m.enc.Encode(ml)
}

// applySet parses "Name=value,..." overrides of float and int fields.
func applySet(cfg *contextpack.Config, s string) error {
	if s == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("bad override %q", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("override %q: %w", kv, err)
		}
		switch k {
		case "LocalShare":
			cfg.LocalShare = f
		case "SuffixShare":
			cfg.SuffixShare = f
		case "ImportShare":
			cfg.ImportShare = f
		case "RRFK":
			cfg.RRFK = f
		case "DefinitionWeight":
			cfg.DefinitionWeight = f
		case "SimilarWeight":
			cfg.SimilarWeight = f
		case "ImportWeight":
			cfg.ImportWeight = f
		case "FileWeight":
			cfg.FileWeight = f
		case "OffTopicWeight":
			cfg.OffTopicWeight = f
		case "Diversity":
			cfg.Diversity = f
		case "MaxSnippetsPerFile":
			cfg.MaxSnippetsPerFile = int(f)
		case "MaxSnippetTokens":
			cfg.MaxSnippetTokens = int(f)
		case "MaxImportFileTokens":
			cfg.MaxImportFileTokens = int(f)
		case "QueryLines":
			cfg.QueryLines = int(f)
		case "MaxCandidates":
			cfg.MaxCandidates = int(f)
		case "WindowLines":
			cfg.WindowLines = int(f)
		case "WindowStride":
			cfg.WindowStride = int(f)
		default:
			return fmt.Errorf("unknown override %q", k)
		}
	}
	return cfg.Validate()
}

// Command cpquality measures, without a model, how much of a masked
// middle's vocabulary the assembled context makes available.
//
// Over masked samples from repositories on this machine (each sample's
// true middle is known) it builds prompts with every context strategy at
// several budgets and reports, per language group:
//
//   - identifier recall: of the middle's identifiers that are absent from
//     the cursor file's part of the prompt (prefix, suffix, scope headers,
//     same-file excerpts), the fraction present in the cross-file context;
//   - coverage: of all the middle's identifiers, the fraction present
//     anywhere in the prompt (comparable across strategies, including
//     prefix/suffix only).
//
// Identifiers are counted per sample (distinct) and summed over samples.
// Usage:
//
//	go run ./contextpack/cmd/cpquality -md scripts/contextpack/QUALITY.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/contextpack/tokenizer"
)

type sample struct {
	repo   string
	group  string
	path   string
	kind   string // line, multiline, span, humaneval-single, humaneval-multi
	middle string
	files  []contextpack.File // with the target's middle removed
	offset int
}

type counts struct {
	RecallNum, RecallDen int
	CovNum, CovDen       int
	Tokens               int
	CtxTokens, CtxBudget int
	Prompts              int
	Nanos                int64
}

func (c *counts) add(o counts) {
	c.RecallNum += o.RecallNum
	c.RecallDen += o.RecallDen
	c.CovNum += o.CovNum
	c.CovDen += o.CovDen
	c.Tokens += o.Tokens
	c.CtxTokens += o.CtxTokens
	c.CtxBudget += o.CtxBudget
	c.Prompts += o.Prompts
	c.Nanos += o.Nanos
}

func pct(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

func main() {
	shared := flag.String("shared", "../shared", "the shared data directory")
	nSamples := flag.Int("samples", 120, "samples per repository")
	budgetsFlag := flag.String("budgets", "1024,2048,4096,8192", "total token budgets")
	gen := flag.Int("gen", 64, "generation tokens reserved in each budget")
	seed := flag.Uint64("seed", 1, "sampling seed")
	stratFlag := flag.String("strategies", "none,execrepobench,jaccard,fused,imports,definitions,similar", "strategies")
	onlyRepo := flag.String("repo", "", "only repositories whose name contains this")
	mdOut := flag.String("md", "", "write the markdown report here")
	jsonOut := flag.String("json", "", "write raw results here")
	set := flag.String("set", "", "config overrides, e.g. LocalShare=0.4,ImportShare=0.3")
	flag.Parse()

	var budgets []int
	for _, s := range strings.Split(*budgetsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fatal(err)
		}
		budgets = append(budgets, n)
	}
	var strategies []contextpack.Strategy
	for _, s := range strings.Split(*stratFlag, ",") {
		st, err := contextpack.ParseStrategy(strings.TrimSpace(s))
		if err != nil {
			fatal(err)
		}
		strategies = append(strategies, st)
	}
	tok, err := tokenizer.Qwen25()
	if err != nil {
		fatal(err)
	}
	cfg := contextpack.DefaultConfig()
	if err := applySet(&cfg, *set); err != nil {
		fatal(err)
	}
	cfg.ContextTokens = max(cfg.ContextTokens, budgets[len(budgets)-1])
	b, err := contextpack.NewBuilder(cfg, tok, nil)
	if err != nil {
		fatal(err)
	}
	defer b.Close()

	// results[group][strategy][budget]
	results := map[string]map[string]map[int]*counts{}
	get := func(g, s string, bud int) *counts {
		if results[g] == nil {
			results[g] = map[string]map[int]*counts{}
		}
		if results[g][s] == nil {
			results[g][s] = map[int]*counts{}
		}
		if results[g][s][bud] == nil {
			results[g][s][bud] = &counts{}
		}
		return results[g][s][bud]
	}
	var repoRows []string
	ctx := context.Background()
	start := time.Now()
	for ri, spec := range defaultRepos(*shared) {
		if *onlyRepo != "" && !strings.Contains(spec.name, *onlyRepo) {
			continue
		}
		rng := rand.New(rand.NewPCG(*seed, uint64(ri)))
		var samples []sample
		var nFiles, nBytes int
		if spec.group == "HumanEval" {
			samples, nFiles, nBytes, err = humanEvalSamples(spec, *nSamples, rng)
		} else {
			var files []contextpack.File
			files, err = loadFiles(spec, 4000)
			if err == nil {
				samples = repoSamples(spec, files, *nSamples, rng)
				nFiles = len(files)
				for _, f := range files {
					nBytes += len(f.Content)
				}
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "skip:", err)
			continue
		}
		t0 := time.Now()
		for _, s := range samples {
			midIDs := contextpack.Identifiers(s.middle, s.path, "")
			for _, st := range strategies {
				for _, bud := range budgets {
					req := contextpack.Request{RepoName: s.repo, Files: s.files, TokenBudget: bud, MaxNewTokens: *gen,
						Cursor: contextpack.Cursor{Path: s.path, Offset: s.offset, Encoding: contextpack.EncodingByteOffset}}
					t := time.Now()
					p, err := b.BuildStrategy(ctx, req, st)
					el := time.Since(t)
					if err != nil {
						fatal(fmt.Errorf("%s %s %s@%d budget %d: %w", spec.name, st, s.path, s.offset, bud, err))
					}
					c := score(p.Text, s.path, midIDs)
					c.Tokens, c.Prompts, c.Nanos = p.Tokens, 1, el.Nanoseconds()
					c.CtxTokens, c.CtxBudget = p.Manifest.ContextTokens, p.Manifest.ContextBudget
					get(spec.group, st.String(), bud).add(c)
					get("All", st.String(), bud).add(c)
				}
			}
		}
		repoRows = append(repoRows, fmt.Sprintf("| %s | %s | %d | %.1f MB | %d |", spec.name, spec.group, nFiles,
			float64(nBytes)/1e6, len(samples)))
		fmt.Fprintf(os.Stderr, "%-22s %4d files %6.1f MB  %d samples  %v\n", spec.name, nFiles, float64(nBytes)/1e6,
			len(samples), time.Since(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(os.Stderr, "total %v\n", time.Since(start).Round(time.Second))
	md := report(results, strategies, budgets, repoRows, *nSamples, *gen, *seed, *set)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			fatal(err)
		}
	} else {
		fmt.Print(md)
	}
	if *jsonOut != "" {
		j, _ := json.MarshalIndent(results, "", " ")
		if err := os.WriteFile(*jsonOut, j, 0o644); err != nil {
			fatal(err)
		}
	}
}

var specials = strings.NewReplacer(contextpack.FIMPrefix, "\n", contextpack.FIMSuffix, "\n", contextpack.FIMMiddle, "\n",
	contextpack.FileSep, "\n", contextpack.RepoName, "\n")

// score splits a prompt into cross-file context and the cursor file's part
// (after the last file separator) and counts the middle's identifiers.
func score(text, path string, mid []string) counts {
	ctxText, win := "", text
	if i := strings.LastIndex(text, contextpack.FileSep); i >= 0 {
		ctxText, win = text[:i], text[i:]
	}
	inWin := set(contextpack.Identifiers(specials.Replace(win), path, ""))
	inCtx := set(contextpack.Identifiers(specials.Replace(ctxText), path, ""))
	var c counts
	for _, id := range mid {
		c.CovDen++
		if inWin[id] || inCtx[id] {
			c.CovNum++
		}
		if !inWin[id] {
			c.RecallDen++
			if inCtx[id] {
				c.RecallNum++
			}
		}
	}
	return c
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cpquality:", err)
	os.Exit(1)
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

func report(results map[string]map[string]map[int]*counts, strategies []contextpack.Strategy, budgets []int,
	repoRows []string, n, gen int, seed uint64, set string) string {
	var sb strings.Builder
	groups := make([]string, 0, len(results))
	for g := range results {
		if g != "All" {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	groups = append(groups, "All")
	fmt.Fprintf(&sb, "Generated by `go run ./contextpack/cmd/cpquality` (samples per repository %d, seed %d, "+
		"generation %d tokens reserved in each budget", n, seed, gen)
	if set != "" {
		fmt.Fprintf(&sb, ", overrides %s", set)
	}
	sb.WriteString(").\n\n")
	sb.WriteString("| repository | group | files | size | samples |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range repoRows {
		sb.WriteString(r + "\n")
	}
	for _, g := range groups {
		fmt.Fprintf(&sb, "\n#### %s: identifier recall %% / coverage %%\n\n| strategy |", g)
		for _, bud := range budgets {
			fmt.Fprintf(&sb, " %d |", bud)
		}
		sb.WriteString("\n| --- |")
		for range budgets {
			sb.WriteString(" --- |")
		}
		sb.WriteString("\n")
		for _, st := range strategies {
			fmt.Fprintf(&sb, "| %s |", st)
			for _, bud := range budgets {
				c := results[g][st.String()][bud]
				if c == nil {
					sb.WriteString(" – |")
					continue
				}
				fmt.Fprintf(&sb, " %.1f / %.1f |", pct(c.RecallNum, c.RecallDen), pct(c.CovNum, c.CovDen))
			}
			sb.WriteString("\n")
		}
		c := results[g][strategies[0].String()][budgets[0]]
		if c != nil {
			fmt.Fprintf(&sb, "\n%d prompts per cell; %d middle identifiers in all.\n", c.Prompts, c.CovDen)
		}
	}
	allTable := func(title string, cell func(c *counts) string) {
		sb.WriteString(title + "\n\n| strategy |")
		for _, bud := range budgets {
			fmt.Fprintf(&sb, " %d |", bud)
		}
		sb.WriteString("\n| --- |")
		for range budgets {
			sb.WriteString(" --- |")
		}
		sb.WriteString("\n")
		for _, st := range strategies {
			fmt.Fprintf(&sb, "| %s |", st)
			for _, bud := range budgets {
				c := results["All"][st.String()][bud]
				if c == nil || c.Prompts == 0 {
					sb.WriteString(" – |")
					continue
				}
				sb.WriteString(cell(c))
			}
			sb.WriteString("\n")
		}
	}
	allTable("\nAll groups: mean prompt tokens, and context tokens used / context budget:", func(c *counts) string {
		return fmt.Sprintf(" %d, %d / %d |", c.Tokens/c.Prompts, c.CtxTokens/c.Prompts, c.CtxBudget/c.Prompts)
	})
	allTable("\nMean build time per prompt (ms, warm index, this machine):", func(c *counts) string {
		return fmt.Sprintf(" %.2f |", float64(c.Nanos)/float64(c.Prompts)/1e6)
	})
	return sb.String()
}

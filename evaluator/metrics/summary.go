package metrics

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Sample is one graded completion as the aggregation sees it.
type Sample struct {
	TaskID    string `json:"task_id"`
	Benchmark string `json:"benchmark"`
	Level     string `json:"level"`
	// Language is the task's source language ("python", "go", ...); empty
	// when unknown.
	Language       string `json:"language,omitempty"`
	Passed         bool   `json:"passed"`
	Verdict        string `json:"verdict"`
	ExactMatch     bool   `json:"exact_match"`
	EditSimilarity int    `json:"edit_similarity"`
	// TTFT and Total are the completion's latencies, without QueueWait;
	// zero when unknown (for example a completion supplied by the
	// harness).
	TTFT  time.Duration `json:"ttft_ns"`
	Total time.Duration `json:"total_ns"`
	// QueueWait is the generation's wait for a backend slot.
	QueueWait time.Duration `json:"queue_ns,omitempty"`
}

// VerdictSkipped marks samples that were not executed (no tests); they
// count for exact match and edit similarity but not for pass@k.
const VerdictSkipped = "skipped"

// Latency summarises durations of the samples that reported one.
type Latency struct {
	Count int           `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Group holds the scores of one slice of the samples.
type Group struct {
	// Benchmark, Level and Language name the slice; empty means "all".
	Benchmark string `json:"benchmark,omitempty"`
	Level     string `json:"level,omitempty"`
	Language  string `json:"language,omitempty"`
	Tasks     int    `json:"tasks"`
	Samples   int    `json:"samples"`
	// PassAtK maps k to the mean unbiased pass@k over the group's executed
	// tasks, in 0..1. A k is present only when every such task has at least
	// k executed samples.
	PassAtK map[int]float64 `json:"pass_at_k"`
	// ExactMatch is the fraction of samples that match exactly, 0..1.
	ExactMatch float64 `json:"exact_match"`
	// EditSimilarity is the mean edit similarity, 0..100.
	EditSimilarity float64        `json:"edit_similarity"`
	Verdicts       map[string]int `json:"verdicts"`
	TTFT           Latency        `json:"ttft"`
	Total          Latency        `json:"total"`
	// QueueWait summarises the generated samples' waits for a backend
	// slot (those that reported a TTFT).
	QueueWait Latency `json:"queue_wait"`
}

// Summary is the aggregate of a run.
type Summary struct {
	Overall     Group   `json:"overall"`
	ByBenchmark []Group `json:"by_benchmark"`
	// ByLevel has one group per (benchmark, level).
	ByLevel []Group `json:"by_level"`
	// ByLanguage has one group per language across benchmarks (samples
	// without one are under ""), and ByLanguageLevel one per (language,
	// level): pass@k per level and language.
	ByLanguage      []Group `json:"by_language,omitempty"`
	ByLanguageLevel []Group `json:"by_language_level,omitempty"`
}

// Aggregator accumulates samples; it is safe for concurrent use.
type Aggregator struct {
	mu      sync.Mutex
	ks      []int
	samples []Sample
}

// NewAggregator reports pass@k for each k in ks (values < 1 are ignored).
func NewAggregator(ks ...int) *Aggregator {
	var clean []int
	for _, k := range ks {
		if k >= 1 && !slices.Contains(clean, k) {
			clean = append(clean, k)
		}
	}
	slices.Sort(clean)
	return &Aggregator{ks: clean}
}

// Add records one sample.
func (a *Aggregator) Add(s Sample) {
	a.mu.Lock()
	a.samples = append(a.samples, s)
	a.mu.Unlock()
}

// Summary computes the scores of everything added so far.
func (a *Aggregator) Summary() Summary {
	a.mu.Lock()
	samples := slices.Clone(a.samples)
	a.mu.Unlock()
	return Summarize(samples, a.ks...)
}

// Summarize scores samples overall, per benchmark, per (benchmark, level),
// per language and per (language, level).
func Summarize(samples []Sample, ks ...int) Summary {
	type key struct{ b, l string }
	byBench := map[string][]Sample{}
	byLevel := map[key][]Sample{}
	byLang := map[string][]Sample{}
	byLangLevel := map[key][]Sample{}
	for _, s := range samples {
		byBench[s.Benchmark] = append(byBench[s.Benchmark], s)
		byLevel[key{s.Benchmark, s.Level}] = append(byLevel[key{s.Benchmark, s.Level}], s)
		byLang[s.Language] = append(byLang[s.Language], s)
		byLangLevel[key{s.Language, s.Level}] = append(byLangLevel[key{s.Language, s.Level}], s)
	}
	sum := Summary{Overall: group(samples, ks)}
	for b, ss := range byBench {
		g := group(ss, ks)
		g.Benchmark = b
		sum.ByBenchmark = append(sum.ByBenchmark, g)
	}
	for k, ss := range byLevel {
		g := group(ss, ks)
		g.Benchmark, g.Level = k.b, k.l
		sum.ByLevel = append(sum.ByLevel, g)
	}
	for lang, ss := range byLang {
		g := group(ss, ks)
		g.Language = lang
		sum.ByLanguage = append(sum.ByLanguage, g)
	}
	for k, ss := range byLangLevel {
		g := group(ss, ks)
		g.Language, g.Level = k.b, k.l
		sum.ByLanguageLevel = append(sum.ByLanguageLevel, g)
	}
	order := func(x, y Group) int {
		return cmp.Or(cmp.Compare(x.Benchmark, y.Benchmark), cmp.Compare(x.Language, y.Language), cmp.Compare(x.Level, y.Level))
	}
	slices.SortFunc(sum.ByBenchmark, order)
	slices.SortFunc(sum.ByLevel, order)
	slices.SortFunc(sum.ByLanguage, order)
	slices.SortFunc(sum.ByLanguageLevel, order)
	return sum
}

func group(samples []Sample, ks []int) Group {
	g := Group{Samples: len(samples), PassAtK: map[int]float64{}, Verdicts: map[string]int{}}
	type tally struct{ n, c int }
	tasks := map[string]*tally{}
	var ttft, total, queue []time.Duration
	es := 0
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.TaskID] = true
		if s.Verdict != VerdictSkipped {
			t := tasks[s.TaskID]
			if t == nil {
				t = &tally{}
				tasks[s.TaskID] = t
			}
			t.n++
			if s.Passed {
				t.c++
			}
		}
		if s.ExactMatch {
			g.ExactMatch++
		}
		es += s.EditSimilarity
		if s.Verdict != "" {
			g.Verdicts[s.Verdict]++
		}
		if s.TTFT > 0 {
			ttft = append(ttft, s.TTFT)
			queue = append(queue, s.QueueWait)
		}
		if s.Total > 0 {
			total = append(total, s.Total)
		}
	}
	g.Tasks = len(seen)
	if g.Samples > 0 {
		g.ExactMatch /= float64(g.Samples)
		g.EditSimilarity = float64(es) / float64(g.Samples)
	}
	for _, k := range ks {
		sum, ok := 0.0, len(tasks) > 0
		for _, t := range tasks {
			p, err := PassAtK(t.n, t.c, k)
			if err != nil {
				ok = false
				break
			}
			sum += p
		}
		if ok {
			g.PassAtK[k] = sum / float64(len(tasks))
		}
	}
	g.TTFT = latency(ttft)
	g.Total = latency(total)
	g.QueueWait = latency(queue)
	return g
}

func latency(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	q := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.5) - 1
		return d[max(0, min(len(d)-1, i))]
	}
	return Latency{Count: len(d), Mean: sum / time.Duration(len(d)), P50: q(0.5), P95: q(0.95), Max: d[len(d)-1]}
}

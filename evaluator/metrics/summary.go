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
	return Summary{
		Overall:         group(samples, ks),
		ByBenchmark:     groupsBy(samples, ks, func(s Sample) Group { return Group{Benchmark: s.Benchmark} }),
		ByLevel:         groupsBy(samples, ks, func(s Sample) Group { return Group{Benchmark: s.Benchmark, Level: s.Level} }),
		ByLanguage:      groupsBy(samples, ks, func(s Sample) Group { return Group{Language: s.Language} }),
		ByLanguageLevel: groupsBy(samples, ks, func(s Sample) Group { return Group{Language: s.Language, Level: s.Level} }),
	}
}

// groupsBy scores samples in groups named by slice (the names a sample's
// group has: benchmark, level, language), ordered by name.
func groupsBy(samples []Sample, ks []int, slice func(Sample) Group) []Group {
	type name struct{ benchmark, level, language string }
	members := map[name][]Sample{}
	for _, s := range samples {
		g := slice(s)
		n := name{g.Benchmark, g.Level, g.Language}
		members[n] = append(members[n], s)
	}
	var out []Group
	for n, ss := range members {
		g := group(ss, ks)
		g.Benchmark, g.Level, g.Language = n.benchmark, n.level, n.language
		out = append(out, g)
	}
	slices.SortFunc(out, func(x, y Group) int {
		return cmp.Or(cmp.Compare(x.Benchmark, y.Benchmark), cmp.Compare(x.Language, y.Language), cmp.Compare(x.Level, y.Level))
	})
	return out
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

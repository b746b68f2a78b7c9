package evaluator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"": {}, "0/1": {0, 1}, "0/2": {0, 2}, "1/2": {1, 2}, "6/7": {6, 7}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "" && got.String() != in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), in)
		}
	}
	for _, in := range []string{"x", "3/2", "2/2", "0/0", "-1/2", "1", "1/", "/2", "1/2/3", "a/b", " 1/2", "+1/2", "0x1/2"} {
		if got, err := ParseShard(in); !errors.Is(err, ErrInvalidShard) {
			t.Errorf("ParseShard(%q) = %v, %v; want ErrInvalidShard", in, got, err)
		}
	}
}

// TestShardSelect: for every n, shards 0/n..n-1/n are disjoint, cover the
// list, keep its order and differ in size by at most one.
func TestShardSelect(t *testing.T) {
	for _, size := range []int{0, 1, 2, 7, 40} {
		var list []Task
		for i := range size {
			list = append(list, Task{ID: fmt.Sprint(i)})
		}
		if got := (Shard{}).Select(list); len(got) != size {
			t.Errorf("whole: %d tasks of %d", len(got), size)
		}
		for n := 1; n <= 5; n++ {
			seen := map[string]int{}
			lo, hi := size, 0
			for i := range n {
				part := Shard{i, n}.Select(list)
				lo, hi = min(lo, len(part)), max(hi, len(part))
				if !slices.IsSortedFunc(part, func(a, b Task) int { return indexOf(list, a) - indexOf(list, b) }) {
					t.Errorf("%d/%d of %d: not in list order", i, n, size)
				}
				for _, task := range part {
					seen[task.ID]++
					if indexOf(list, task)%n != i {
						t.Errorf("%d/%d of %d holds task %s", i, n, size, task.ID)
					}
				}
			}
			if len(seen) != size || hi-lo > 1 {
				t.Errorf("n=%d of %d: %d distinct tasks, sizes %d..%d", n, size, len(seen), lo, hi)
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("n=%d: task %s in %d shards", n, id, c)
				}
			}
		}
	}
}

func indexOf(list []Task, t Task) int {
	return slices.IndexFunc(list, func(x Task) bool { return x.ID == t.ID })
}

// TestMergeResults: the shards of a run merge into its results, in the
// parts' order; a sample found again the same is kept once, one with
// another verdict or completion is a conflict.
func TestMergeResults(t *testing.T) {
	r := func(task string, sample int, v Verdict, c string) Result {
		return Result{Benchmark: "b", TaskID: task, Sample: sample, Verdict: v, Completion: c}
	}
	s0 := []Result{r("0", 0, VerdictPassed, "x"), r("0", 1, VerdictFailed, "y"), r("2", 0, VerdictTimeout, "z")}
	s1 := []Result{r("1", 0, VerdictFailed, "w"), r("1", 1, VerdictPassed, "v")}
	got, dropped, err := MergeResults(s0, s1, s0[1:2])
	if err != nil || dropped != 1 || !slices.Equal(got, slices.Concat(s0, s1)) {
		t.Fatalf("MergeResults = %v, %d, %v", got, dropped, err)
	}
	if got, _, err := MergeResults(); err != nil || got != nil {
		t.Errorf("no parts: %v, %v", got, err)
	}
	for name, other := range map[string]Result{
		"verdict":    r("0", 1, VerdictPassed, "y"),
		"completion": r("0", 1, VerdictFailed, "y2"),
	} {
		if _, _, err := MergeResults(s0, []Result{other}); !errors.Is(err, ErrResultConflict) || !strings.Contains(err.Error(), "b 0 sample 1") {
			t.Errorf("another %s: %v", name, err)
		}
	}
	// Another benchmark's task of the same id and sample is another sample.
	o := r("0", 0, VerdictFailed, "q")
	o.Benchmark = "c"
	if got, dropped, err := MergeResults(s0, []Result{o}); err != nil || dropped != 0 || len(got) != 4 {
		t.Errorf("another benchmark: %d results, %d dropped, %v", len(got), dropped, err)
	}
}

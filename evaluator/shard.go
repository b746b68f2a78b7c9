package evaluator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of Count disjoint parts of a benchmark's task list, so that
// several runs (on several servers) can each grade a part and their
// results be merged into the whole run's: shard i/n holds the tasks at
// positions i, i+n, i+2n, ... of the list (0-based; after any limit, so
// that the shards of the first N tasks together are those N tasks).
//
// The partition is by position, not by a hash of the task id: shard sizes
// differ by at most one, and each shard gets every n-th task, so the
// levels and problems a benchmark lists together are spread over all the
// shards. Positions are the benchmark's own order (its data file's lines):
// servers holding the same files make the same shards.
//
// The zero Shard (Count 0) is the whole list.
type Shard struct {
	Index, Count int
}

// ErrInvalidShard is wrapped by every error of ParseShard.
var ErrInvalidShard = errors.New("invalid shard")

// ParseShard parses "i/n" (e.g. "0/2": the first of two shards); "" is
// the whole list. Its errors say what is wrong with s.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || ierr != nil || nerr != nil || strings.ContainsAny(s, "+ "):
		return Shard{}, fmt.Errorf("%w %q: want i/n, two whole numbers with 0 <= i < n (0/2 and 1/2 are the halves)", ErrInvalidShard, s)
	case n < 1:
		return Shard{}, fmt.Errorf("%w %q: n (the number of shards) must be at least 1", ErrInvalidShard, s)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("%w %q: i counts from 0, so with n = %d it must be 0 to %d", ErrInvalidShard, s, n, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// Whole reports whether the shard is the whole list.
func (s Shard) Whole() bool { return s.Count <= 1 }

// String is "i/n", or "" for the whole list.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Select returns the shard's tasks of list, in list order (list itself
// when the shard is the whole list).
func (s Shard) Select(list []Task) []Task {
	if s.Whole() {
		return list
	}
	out := make([]Task, 0, (len(list)+s.Count-1-s.Index)/s.Count)
	for i := s.Index; i < len(list); i += s.Count {
		out = append(out, list[i])
	}
	return out
}

// ErrResultConflict is returned by MergeResults when two parts hold the
// same sample with different outcomes: they are not parts of one run.
var ErrResultConflict = errors.New("results of the same sample differ")

// MergeResults joins the results of the parts of one run (the shards of a
// benchmark, or the results files of a run and of its resumption) into
// one list, in the parts' order: scored with metrics, it gives what a
// single run of the whole gives, since every metric is computed from the
// samples and a task's samples are all in one part. A sample found again
// with the same completion and verdict (a part run twice) is kept once and
// counted in dropped; one with another completion or verdict is an
// ErrResultConflict naming it.
func MergeResults(parts ...[]Result) (merged []Result, dropped int, err error) {
	seen := map[string]*Result{}
	for _, part := range parts {
		for i := range part {
			r := &part[i]
			key := resultKey(r.Benchmark, r.TaskID, r.Sample)
			if prev := seen[key]; prev != nil {
				switch {
				case prev.Verdict != r.Verdict:
					return nil, 0, fmt.Errorf("%w: %s %s sample %d is %s in one part and %s in another",
						ErrResultConflict, r.Benchmark, r.TaskID, r.Sample, prev.Verdict, r.Verdict)
				case prev.Completion != r.Completion:
					return nil, 0, fmt.Errorf("%w: %s %s sample %d has another completion in each part (runs of other settings?)",
						ErrResultConflict, r.Benchmark, r.TaskID, r.Sample)
				}
				dropped++
				continue
			}
			seen[key] = r
			merged = append(merged, *r)
		}
	}
	return merged, dropped, nil
}

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

// ErrInvalidShard wraps the reasons ParseShard refuses a shard.
var ErrInvalidShard = errors.New("want i/n: two whole numbers with 0 <= i < n")

// ParseShard parses "i/n" (e.g. "0/2"); "" is the whole list.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || ierr != nil || nerr != nil || strings.ContainsAny(s, "+ "):
		return Shard{}, fmt.Errorf("%q: %w", s, ErrInvalidShard)
	case n < 1:
		return Shard{}, fmt.Errorf("%q: n must be at least 1: %w", s, ErrInvalidShard)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("%q: i must be at least 0 and below n (%d): %w", s, n, ErrInvalidShard)
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

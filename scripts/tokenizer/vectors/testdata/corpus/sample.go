// Package sample is Go source for tokenizer reference vectors.
package sample

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned when a key is missing.
var ErrNotFound = errors.New("sample: not found")

type Store[K comparable, V any] struct {
	mu    sync.RWMutex
	items map[K]V
	ttl   time.Duration
}

func NewStore[K comparable, V any](ttl time.Duration) *Store[K, V] {
	return &Store[K, V]{items: make(map[K]V), ttl: ttl}
}

func (s *Store[K, V]) Get(ctx context.Context, k K) (V, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		var zero V
		return zero, fmt.Errorf("get %v: %w", k, err)
	}
	v, ok := s.items[k]
	if !ok {
		return v, ErrNotFound
	}
	return v, nil
}

func (s *Store[K, V]) Put(k K, v V) {
	s.mu.Lock()
	s.items[k] = v
	s.mu.Unlock()
}

type byLen []string

func (b byLen) Len() int           { return len(b) }
func (b byLen) Less(i, j int) bool { return len(b[i]) < len(b[j]) }
func (b byLen) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }

func Words(text string) []string {
	ws := strings.Fields(text)
	sort.Sort(byLen(ws))
	for i := 0; i < len(ws); i++ {
		switch w := ws[i]; {
		case strings.HasPrefix(w, "//"):
			ws[i] = "<comment>"
		case w == "":
			continue
		default:
			ws[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return ws
}

func worker(ctx context.Context, in <-chan int, out chan<- int, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-in:
			if !ok {
				return
			}
			out <- n * n
		}
	}
}

const (
	KB = 1 << (10 * (iota + 1))
	MB
	GB
)

var table = [...]struct {
	name  string
	value float64
}{
	{"pi", 3.141592653589793},
	{"e", 2.718281828459045},
	{"avogadro", 6.02214076e23},
	{"hex", 0x1p-2},
}

func init() {
	_ = table
	_ = fmt.Sprintf("%-10s|%5.2f|%#x|%q", "name", 1.5, 255, `raw "string"`)
}

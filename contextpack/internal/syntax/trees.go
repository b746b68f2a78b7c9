package syntax

import (
	"container/list"
	"strings"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
)

// TreeCache keeps the syntax trees of the few files edited most recently,
// keyed by repository and path, so that the next version of such a file
// (the next keystroke) is parsed incrementally from its old tree. A tree
// is taken out while one goroutine uses it (trees are not safe for
// concurrent use) and closed when it falls out of the cache.
type TreeCache struct {
	max int

	mu    sync.Mutex
	byKey map[string]*list.Element
	order list.List // *cachedTree, front = most recent
	done  bool
}

type cachedTree struct {
	key       string
	lang      Lang
	content   string
	tree      *sitter.Tree
	analysis  *Analysis // of content, complete (for incremental analysis); nil when tree has an error
	top       []span    // the tree's top-level nodes (without node pointers)
	segmented *Analysis // the file's last version, when it has a syntax error (segmented)
}

// NewTreeCache keeps the trees of up to max files; 0 keeps none.
func NewTreeCache(max int) *TreeCache {
	return &TreeCache{max: max, byKey: map[string]*list.Element{}}
}

func (c *TreeCache) take(key string) *cachedTree {
	if c == nil || c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil
	}
	delete(c.byKey, key)
	c.order.Remove(el)
	return el.Value.(*cachedTree)
}

func (c *TreeCache) put(t *cachedTree) {
	if c == nil || c.max <= 0 {
		t.tree.Close()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		t.tree.Close()
		return
	}
	if el := c.byKey[t.key]; el != nil {
		el.Value.(*cachedTree).tree.Close()
		c.order.Remove(el)
	}
	c.byKey[t.key] = c.order.PushFront(t)
	for c.order.Len() > c.max {
		el := c.order.Back()
		old := el.Value.(*cachedTree)
		c.order.Remove(el)
		delete(c.byKey, old.key)
		old.tree.Close()
	}
}

// Close frees every tree kept; trees put afterwards are freed at once.
func (c *TreeCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	for el := c.order.Front(); el != nil; el = el.Next() {
		el.Value.(*cachedTree).tree.Close()
	}
	c.order.Init()
	c.byKey = map[string]*list.Element{}
}

// editBetween describes old → new as one tree-sitter edit: the common
// prefix and suffix are kept, the middle replaced. It runs on every
// keystroke over the whole file, so it compares 64 bytes at a time
// (string equality is vectorised) before going byte by byte.
func editBetween(old, new string) sitter.EditInput {
	const chunk = 64
	n := min(len(old), len(new))
	p := 0
	for p+chunk <= n && old[p:p+chunk] == new[p:p+chunk] {
		p += chunk
	}
	for p < n && old[p] == new[p] {
		p++
	}
	s := 0
	for s+chunk <= n-p && old[len(old)-s-chunk:len(old)-s] == new[len(new)-s-chunk:len(new)-s] {
		s += chunk
	}
	for s < n-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	return sitter.EditInput{
		StartIndex:  uint32(p),
		OldEndIndex: uint32(len(old) - s),
		NewEndIndex: uint32(len(new) - s),
		StartPoint:  pointAt(old, p),
		OldEndPoint: pointAt(old, len(old)-s),
		NewEndPoint: pointAt(new, len(new)-s),
	}
}

// pointAt is tree-sitter's point for byte offset off of s: the row and the
// column in bytes.
func pointAt(s string, off int) sitter.Point {
	s = s[:off]
	row := strings.Count(s, "\n")
	col := len(s) - (strings.LastIndexByte(s, '\n') + 1)
	return sitter.Point{Row: uint32(row), Column: uint32(col)}
}

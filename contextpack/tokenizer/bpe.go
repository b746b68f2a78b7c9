package tokenizer

// Byte-level BPE, as Hugging Face's tokenizers crate does it: start from one
// symbol per byte, then repeatedly merge the adjacent pair with the lowest
// merge rank, the leftmost one on ties, until no pair has a merge. Merge rank r
// produces token id 256+r.

// linearMax is the piece length (bytes) up to which the quadratic scan is
// cheaper than the heap.
const linearMax = 32

type scratch struct {
	ids   []int32
	ranks []int32
	syms  []sym
	heap  []uint64
}

type sym struct {
	id         int32 // -1 once merged into its left neighbour
	prev, next int32
}

func (t *Tokenizer) getScratch() *scratch { return t.scratch.Get().(*scratch) }

func (t *Tokenizer) isRegular(id int32) bool { return t.regular[id>>6]&(1<<(id&63)) != 0 }

// encodeNormalized pre-tokenizes and encodes NFC text. With count set it only
// counts and leaves out untouched.
func (t *Tokenizer) encodeNormalized(text string, sc *scratch, out []int, count bool) ([]int, int) {
	n := 0
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		p := text[i:j]
		i = j
		if id, ok := t.vocab[p]; ok && t.isRegular(id) {
			if !count {
				out = append(out, int(id))
			}
			n++
			continue
		}
		var ids []int32
		if len(p) <= linearMax {
			ids = t.bpeLinear(p, sc)
		} else {
			ids = t.bpeHeap(p, sc)
		}
		n += len(ids)
		if !count {
			for _, id := range ids {
				out = append(out, int(id))
			}
		}
	}
	return out, n
}

// bpeLinear merges by scanning all pair ranks each round: O(n²), fastest for
// short pieces.
func (t *Tokenizer) bpeLinear(p string, sc *scratch) []int32 {
	ids := sc.ids[:0]
	for i := 0; i < len(p); i++ {
		ids = append(ids, t.byteID[p[i]])
	}
	ranks := sc.ranks[:0]
	for i := 0; i+1 < len(ids); i++ {
		ranks = append(ranks, t.merges.get(ids[i], ids[i+1]))
	}
	for {
		best, at := noMerge, -1
		for i, r := range ranks {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = 256 + best
		copy(ids[at+1:], ids[at+2:])
		ids = ids[:len(ids)-1]
		copy(ranks[at:], ranks[at+1:])
		ranks = ranks[:len(ranks)-1]
		if at > 0 {
			ranks[at-1] = t.merges.get(ids[at-1], ids[at])
		}
		if at < len(ranks) {
			ranks[at] = t.merges.get(ids[at], ids[at+1])
		}
	}
	sc.ids, sc.ranks = ids, ranks
	return ids
}

// bpeHeap merges with a min-heap of (rank, position) over a linked list of
// symbols: O(n log n), so long runs of one character stay cheap.
func (t *Tokenizer) bpeHeap(p string, sc *scratch) []int32 {
	n := len(p)
	syms := sc.syms[:0]
	for i := 0; i < n; i++ {
		syms = append(syms, sym{id: t.byteID[p[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[n-1].next = -1
	h := sc.heap[:0]
	for i := 0; i+1 < n; i++ {
		if r := t.merges.get(syms[i].id, syms[i+1].id); r != noMerge {
			h = append(h, uint64(r)<<32|uint64(i))
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for len(h) > 0 {
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		if last > 0 {
			siftDown(h, 0)
		}
		rank, pos := int32(top>>32), int32(uint32(top))
		s := &syms[pos]
		if s.id < 0 || s.next < 0 {
			continue
		}
		nx := s.next
		if t.merges.get(s.id, syms[nx].id) != rank {
			continue // stale entry: a neighbour changed since it was pushed
		}
		s.id = 256 + rank
		syms[nx].id = -1
		s.next = syms[nx].next
		if s.next >= 0 {
			syms[s.next].prev = pos
		}
		if s.prev >= 0 {
			if r := t.merges.get(syms[s.prev].id, s.id); r != noMerge {
				h = pushHeap(h, uint64(r)<<32|uint64(s.prev))
			}
		}
		if s.next >= 0 {
			if r := t.merges.get(s.id, syms[s.next].id); r != noMerge {
				h = pushHeap(h, uint64(r)<<32|uint64(pos))
			}
		}
	}
	ids := sc.ids[:0]
	for i := int32(0); i >= 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	sc.ids, sc.syms, sc.heap = ids, syms, h
	return ids
}

func pushHeap(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent] <= v {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = v
	return h
}

func siftDown(h []uint64, i int) {
	n := len(h)
	v := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if v <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = v
}

// noMerge is the rank of a pair that has no merge.
const noMerge = int32(1<<31 - 1)

// mergeTable maps a pair of ids to its merge rank: open addressing with
// linear probing, built once and read-only afterwards.
type mergeTable struct {
	keys  []uint64
	ranks []int32
	shift uint
}

const emptyKey = ^uint64(0)

func newMergeTable(n int) mergeTable {
	size, shift := 1, uint(64)
	for size < 2*n+1 {
		size <<= 1
		shift--
	}
	m := mergeTable{keys: make([]uint64, size), ranks: make([]int32, size), shift: shift}
	for i := range m.keys {
		m.keys[i] = emptyKey
	}
	return m
}

func (m *mergeTable) slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> m.shift }

func (m *mergeTable) put(l, r, rank int32) {
	k := uint64(uint32(l))<<32 | uint64(uint32(r))
	mask := uint64(len(m.keys) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		if m.keys[i] == emptyKey || m.keys[i] == k {
			m.keys[i], m.ranks[i] = k, rank
			return
		}
	}
}

func (m *mergeTable) get(l, r int32) int32 {
	k := uint64(uint32(l))<<32 | uint64(uint32(r))
	mask := uint64(len(m.keys) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		switch m.keys[i] {
		case k:
			return m.ranks[i]
		case emptyKey:
			return noMerge
		}
	}
}

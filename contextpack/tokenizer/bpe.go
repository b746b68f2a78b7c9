package tokenizer

import (
	"math/bits"
	"slices"
)

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
	queue radixQueue
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
		j := t.runes.nextPiece(text, i)
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

// bpeHeap merges with a priority queue of (rank, position) over a linked list
// of symbols: O(n log n), so long runs of one character stay cheap.
func (t *Tokenizer) bpeHeap(p string, sc *scratch) []int32 {
	n := len(p)
	syms := sc.syms[:0]
	for i := 0; i < n; i++ {
		syms = append(syms, sym{id: t.byteID[p[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[n-1].next = -1
	q := &sc.queue
	q.reset()
	for i := 0; i+1 < n; i++ {
		if r := t.merges.get(syms[i].id, syms[i+1].id); r != noMerge {
			q.push(uint64(r)<<32 | uint64(i))
		}
	}
	for {
		top, ok := q.pop()
		if !ok {
			break
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
		// A pair containing the new token 256+rank always has a higher
		// rank than rank, so keys only grow: the queue is monotone.
		if s.prev >= 0 {
			if r := t.merges.get(syms[s.prev].id, s.id); r != noMerge {
				q.push(uint64(r)<<32 | uint64(s.prev))
			}
		}
		if s.next >= 0 {
			if r := t.merges.get(s.id, syms[s.next].id); r != noMerge {
				q.push(uint64(r)<<32 | uint64(pos))
			}
		}
	}
	ids := sc.ids[:0]
	for i := int32(0); i >= 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	sc.ids, sc.syms = ids, syms
	return ids
}

// radixQueue is a monotone priority queue of (rank<<32 | position) keys: a
// radix heap on the rank, where every pushed rank must be greater than the
// rank last popped (true for BPE, see bpeHeap). Keys of the current rank sit
// in bucket 0, sorted by position once when the rank becomes current. push is
// O(1); pop is amortised O(log maxRank) plus the sort, with sequential memory
// access, and hostile inputs (few distinct ranks) cost almost nothing.
type radixQueue struct {
	last    uint32 // rank of bucket 0
	head    int    // next key of bucket 0
	n       int
	buckets [33][]uint64 // bucket b > 0: highest bit where the rank differs from last is b-1
}

func (q *radixQueue) reset() {
	q.last, q.head, q.n = 0, 0, 0
	for i := range q.buckets {
		q.buckets[i] = q.buckets[i][:0]
	}
}

func (q *radixQueue) push(k uint64) {
	b := bits.Len32(uint32(k>>32) ^ q.last)
	q.buckets[b] = append(q.buckets[b], k)
	q.n++
}

func (q *radixQueue) pop() (uint64, bool) {
	if q.n == 0 {
		return 0, false
	}
	if q.head == len(q.buckets[0]) {
		q.buckets[0], q.head = q.buckets[0][:0], 0
		i := 1
		for len(q.buckets[i]) == 0 {
			i++
		}
		bk := q.buckets[i]
		m := uint32(bk[0] >> 32)
		for _, k := range bk[1:] {
			m = min(m, uint32(k>>32))
		}
		q.last = m
		for _, k := range bk {
			b := bits.Len32(uint32(k>>32) ^ m)
			q.buckets[b] = append(q.buckets[b], k)
		}
		q.buckets[i] = bk[:0]
		slices.Sort(q.buckets[0])
	}
	k := q.buckets[0][q.head]
	q.head++
	q.n--
	return k, true
}

// noMerge is the rank of a pair that has no merge.
const noMerge = int32(1<<31 - 1)

// mergeTable maps a pair of ids to its merge rank: open addressing with
// linear probing, built once and read-only afterwards. Each slot packs
// left id, right id and rank (idBits each) into one uint64, so a probe touches
// a single cache line.
type mergeTable struct {
	slots []uint64
	shift uint
}

// idBits bounds token ids and ranks: 2^18 = 262,144 > 151,665.
const idBits = 18

const (
	idMask    = 1<<idBits - 1
	emptySlot = ^uint64(0) // its key part (2^46-1) is no valid pair
)

func newMergeTable(n int) mergeTable {
	size, shift := 1, uint(64)
	for size < 2*n+1 {
		size <<= 1
		shift--
	}
	m := mergeTable{slots: make([]uint64, size), shift: shift}
	for i := range m.slots {
		m.slots[i] = emptySlot
	}
	return m
}

func (m *mergeTable) slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> m.shift }

// put requires 0 <= l, r, rank < 2^idBits.
func (m *mergeTable) put(l, r, rank int32) {
	k := uint64(l)<<idBits | uint64(r)
	mask := uint64(len(m.slots) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		if e := m.slots[i]; e == emptySlot || e>>idBits == k {
			m.slots[i] = k<<idBits | uint64(rank)
			return
		}
	}
}

func (m *mergeTable) get(l, r int32) int32 {
	k := uint64(l)<<idBits | uint64(r)
	mask := uint64(len(m.slots) - 1)
	for i := m.slot(k); ; i = (i + 1) & mask {
		e := m.slots[i]
		if e>>idBits == k {
			return int32(e & idMask)
		}
		if e == emptySlot {
			return noMerge
		}
	}
}

package replicaset

import (
	"container/heap"
	"slices"
)

// keyColumns is how many sort columns a victim has: marked, then the four
// elements of its Rank.
const keyColumns = 1 + len(Rank{})

// column returns v's sort column c as an unsigned key that orders as the
// deletion order does: marked replicas (0) before the rest (1), and rank
// elements with the sign bit flipped, so that int64 order is uint64 order.
func (v *victim) column(c int) uint64 {
	if c == 0 {
		if v.marked {
			return 0
		}
		return 1
	}
	return uint64(v.rank[c-1]) ^ 1<<63
}

// inOrder returns the first n of vs in deletion order (compareVictims).
//
// It sorts indices with a stable least-significant-digit radix sort over
// the columns that vary among vs, least significant column first, skipping
// bytes no two keys differ in, then orders runs of equal keys by identity.
// That is O(len(vs)) per varying byte: a policy such as Random varies in one
// column, so ordering costs eight linear passes, where a comparison sort of
// the 48-byte victims took O(n log n) indirect comparisons and was most of
// Compute's time.
func inOrder(vs []victim, n int) []Replica {
	idx := make([]int32, len(vs))
	for i := range idx {
		idx[i] = int32(i)
	}
	if len(vs) > 1 {
		idx = radixSort(vs, idx)
	}
	out := make([]Replica, n)
	for i := range out {
		out[i] = *vs[idx[i]].r
	}
	return out
}

// radixSort sorts idx, indices into vs, by vs' keys and then identity,
// and returns it (in idx's array or one of its own).
func radixSort(vs []victim, idx []int32) []int32 {
	keys := make([]uint64, len(vs))
	tmp := make([]int32, len(vs))
	var varying [keyColumns]bool
	for c := keyColumns - 1; c >= 0; c-- {
		var diff uint64
		first := vs[0].column(c)
		for i := range vs {
			keys[i] = vs[i].column(c)
			diff |= keys[i] ^ first
		}
		if diff == 0 {
			continue
		}
		varying[c] = true
		for shift := uint(0); shift < 64; shift += 8 {
			if diff>>shift&0xff == 0 {
				continue
			}
			var count [257]int
			for _, i := range idx {
				count[keys[i]>>shift&0xff+1]++
			}
			for d := 1; d < len(count); d++ {
				count[d] += count[d-1]
			}
			for _, i := range idx {
				d := keys[i] >> shift & 0xff
				tmp[count[d]] = i
				count[d]++
			}
			idx, tmp = tmp, idx
		}
	}
	sameKey := func(a, b *victim) bool {
		for c := range keyColumns {
			if varying[c] && a.column(c) != b.column(c) {
				return false
			}
		}
		return true
	}
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && sameKey(&vs[idx[start]], &vs[idx[end]]) {
			end++
		}
		if end-start > 1 {
			slices.SortFunc(idx[start:end], func(a, b int32) int { return compareIdentity(*vs[a].r, *vs[b].r) })
		}
		start = end
	}
	return idx
}

// victimHeap is a max-heap in deletion order: its root is the candidate that
// would be deleted last among those kept.
type victimHeap []victim

func (h victimHeap) Len() int           { return len(h) }
func (h victimHeap) Less(i, j int) bool { return compareVictims(h[i], h[j]) > 0 }
func (h victimHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *victimHeap) Push(x any)        { *h = append(*h, x.(victim)) }
func (h *victimHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// keep adds v to h, a max-heap of at most k victims in deletion order,
// dropping the one deleted last when full.
func (h *victimHeap) keep(v victim, k int) {
	if len(*h) < k {
		*h = append(*h, v)
		if len(*h) == k {
			heap.Init(h)
		}
		return
	}
	if compareVictims(v, (*h)[0]) < 0 {
		(*h)[0] = v
		heap.Fix(h, 0)
	}
}

package replicaset

import "slices"

// keyColumns is how many sort columns a victim has: its tier, then the
// four elements of its Rank.
const keyColumns = 1 + len(Rank{})

// column returns v's sort column c as an unsigned key that orders as the
// deletion order does: the tier, and rank elements with the sign bit
// flipped, so that int64 order is uint64 order.
func (v *victim) column(c int) uint64 {
	if c == 0 {
		return uint64(v.tier)
	}
	return uint64(v.rank[c-1]) ^ 1<<63
}

// sortFirst orders idx, positions in vs (len(idx) == len(vs)), so that
// its first n are vs's first n in deletion order: by tier, then policy
// rank, then identity (compareVictims, in the tests, says it as a
// comparison); the rest it leaves in no order.
//
// It packs each victim's key into the words of the columns that vary
// among vs (one word for a policy such as Random), then runs a most
// significant digit radix sort on indices, one byte at a time, that
// recurses only into the buckets holding some of the first n: a capped
// scale-down orders its victims and leaves the rest unsorted. Buckets of
// a few entries are finished by insertion sort on the whole key and then
// identity. A comparison sort of the 48-byte victims took O(n log n)
// indirect comparisons and was most of Compute's time; a least
// significant digit sort took eight passes over every victim for a
// 64-bit rank, where this takes about log256(n) and stops at n.
func sortFirst(vs []victim, idx []int32, n int, w *scratch) {
	s := newKeySort(vs, idx, w)
	s.sort(0, len(vs), 0, n)
}

// queue yields victims in deletion order, sorting only as far as it is
// read: a pass that takes few of many orders few.
type queue struct {
	vs     []victim
	idx    []int32
	sorted int // idx[:sorted] is in order
	next   int
}

// pop returns the next victim's position in q.vs, or -1 when none is
// left; hint is how many more the caller expects to read.
func (q *queue) pop(hint int, w *scratch) int {
	if q.next == len(q.vs) {
		return -1
	}
	if q.next == q.sorted {
		// The order is total, so sorting more keeps the prefix read.
		q.sorted = min(len(q.vs), max(q.next+hint, 2*q.sorted, 16))
		sortFirst(q.vs, q.idx, q.sorted, w)
	}
	q.next++
	return int(q.idx[q.next-1])
}

// keySort sorts indices into vs by their packed keys.
type keySort struct {
	vs    []victim
	words int      // key words per victim: the varying columns
	keys  []uint64 // victim i's key is keys[i*words : (i+1)*words]
	idx   []int32  // the order, sorted in place
	tmp   []int32  // scratch for a bucket's scatter
}

// smallBucket is the size below which a bucket is insertion sorted.
const smallBucket = 24

func newKeySort(vs []victim, idx []int32, w *scratch) *keySort {
	s := &keySort{vs: vs, idx: idx, tmp: w.int32s(intsScatter, len(vs))}
	if len(vs) == 0 {
		return s
	}
	for i := range s.idx {
		s.idx[i] = int32(i)
	}
	var cols []int
	for c := range keyColumns {
		first := vs[0].column(c)
		for i := 1; i < len(vs); i++ {
			if vs[i].column(c) != first {
				cols = append(cols, c)
				break
			}
		}
	}
	s.words = len(cols)
	s.keys = w.uint64s(wordsKeys, len(vs)*len(cols))
	for i := range vs {
		for w, c := range cols {
			s.keys[i*len(cols)+w] = vs[i].column(c)
		}
	}
	return s
}

// sort orders idx[lo:hi], whose keys agree before byte b (counted from
// the most significant byte of the first word), as far as the first n
// positions of idx need.
func (s *keySort) sort(lo, hi, b, n int) {
	for hi-lo > smallBucket && b < 8*s.words && lo < n {
		w, shift := b/8, uint(56-8*(b%8))
		digit := func(i int32) int { return int(s.keys[int(i)*s.words+w] >> shift & 0xff) }
		var count [257]int
		for _, i := range s.idx[lo:hi] {
			count[digit(i)+1]++
		}
		if count[digit(s.idx[lo])+1] == hi-lo {
			b++ // every key has this byte: on to the next
			continue
		}
		for d := 1; d < len(count); d++ {
			count[d] += count[d-1]
		}
		starts := count
		for _, i := range s.idx[lo:hi] {
			d := digit(i)
			s.tmp[lo+count[d]] = i
			count[d]++
		}
		copy(s.idx[lo:hi], s.tmp[lo:hi])
		for d := range 256 {
			from, to := lo+starts[d], lo+starts[d+1]
			if to-from > 1 && from < n {
				s.sort(from, to, b+1, n)
			}
		}
		return
	}
	switch {
	case hi-lo <= 1 || lo >= n:
	case hi-lo <= smallBucket:
		s.insertion(lo, hi, b/8)
	default: // whole keys alike: by identity alone
		slices.SortFunc(s.idx[lo:hi], func(a, b int32) int { return compareIdentity(s.vs[a].r, s.vs[b].r) })
	}
}

// insertion sorts idx[lo:hi], whose keys agree before word w, by the rest
// of their keys and then identity.
func (s *keySort) insertion(lo, hi, w int) {
	less := func(a, b int32) bool {
		ka := s.keys[int(a)*s.words+w : (int(a)+1)*s.words]
		kb := s.keys[int(b)*s.words+w : (int(b)+1)*s.words]
		for k := range ka {
			if ka[k] != kb[k] {
				return ka[k] < kb[k]
			}
		}
		return compareIdentity(s.vs[a].r, s.vs[b].r) < 0
	}
	idx := s.idx[lo:hi]
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && less(idx[j], idx[j-1]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

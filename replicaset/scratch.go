package replicaset

import "sync"

// scratch is the working memory of one Compute call: validation's hash
// tables and the victims' keys and order. Compute takes one from a pool
// and returns it, so a controller planning pass after pass allocates it
// once per size rather than on every call. Allocated afresh, it was a
// large object per call to clear and then to collect: at 10,000 replicas
// the pool halved Compute's time. Only the plan itself is allocated.
type scratch struct {
	words  [2][]uint64
	ints   [3][]int32
	victim []victim
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// put returns w to the pool, first dropping its victims' pointers into the
// caller's replicas so that the pool keeps none of them alive.
func (w *scratch) put() {
	clear(w.victim[:cap(w.victim)])
	w.victim = w.victim[:0]
	scratchPool.Put(w)
}

// uint64s returns buffer k with length n, its contents undefined.
func (w *scratch) uint64s(k, n int) []uint64 {
	if cap(w.words[k]) < n {
		w.words[k] = make([]uint64, n)
	}
	return w.words[k][:n]
}

// int32s returns buffer k with length n, its contents undefined.
func (w *scratch) int32s(k, n int) []int32 {
	if cap(w.ints[k]) < n {
		w.ints[k] = make([]int32, n)
	}
	return w.ints[k][:n]
}

// victims returns an empty slice with room for n victims.
func (w *scratch) victims(n int) []victim {
	if cap(w.victim) < n {
		w.victim = make([]victim, 0, n)
	}
	return w.victim[:0]
}

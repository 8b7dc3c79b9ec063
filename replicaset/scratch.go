package replicaset

import "sync"

// scratch is the working memory of one Compute call: validation's hash
// tables, each replica's flags and zone, the victims with their keys and
// order, and the table that finds a zone by its key.
// Compute takes one from a pool and returns it, so a controller planning
// pass after pass allocates it once per size rather than on every call.
// Allocated afresh, it was a large object per call to clear and then to
// collect. Each buffer is written before it is read, so one left dirty by
// an earlier call is fine; the victims, which point into the caller's
// replicas, are cleared as far as they were used before the pool takes
// them back, so that it keeps no replica alive. A pooled scratch holds
// about 100 to 160 bytes per replica of the largest set it served, until the
// garbage collector empties the pool.
type scratch struct {
	words  [2][]uint64 // by wordsSlots, wordsKeys
	ints   [3][]int32  // by intsOrder, intsScatter, intsZones
	flags  []flags
	victim [2][]victim // the candidates, and the same in buckets (pass.each)
	used   int         // victims handed out since the scratch left the pool
	// zoneKeys finds a listed zone by its key (zoneIndex, zoneIndexOf).
	zoneKeys [256]int8
}

// The buffers by name, each holding one kind of data in a call, so that
// no user overwrites another's while it is still read.
const (
	wordsSlots = iota // validation's two hash sets (newIndexSets)
	wordsKeys         // the victims' packed sort keys (newKeySort)
)

const (
	intsOrder   = iota // the victims' order (queue.idx)
	intsScatter        // a radix pass's scatter (keySort.tmp)
	intsZones          // each replica's zone (pass.zoneOf)
)

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// put returns w to the pool, reset.
func (w *scratch) put() {
	w.reset()
	scratchPool.Put(w)
}

// reset drops the pointers into the caller's replicas of the victims w
// handed out.
func (w *scratch) reset() {
	for k := range w.victim {
		clear(w.victim[k][:min(w.used, cap(w.victim[k]))])
	}
	w.used = 0
}

// sized returns the buffer *b with length n, its contents undefined,
// allocating a larger one when it has no room.
func sized[T any](b *[]T, n int) []T {
	if cap(*b) < n {
		*b = make([]T, n)
	}
	return (*b)[:n]
}

// uint64s returns buffer k with length n, its contents undefined.
func (w *scratch) uint64s(k, n int) []uint64 { return sized(&w.words[k], n) }

// int32s returns buffer k with length n, its contents undefined.
func (w *scratch) int32s(k, n int) []int32 { return sized(&w.ints[k], n) }

// flagsFor returns the flags buffer with length n, its contents undefined.
func (w *scratch) flagsFor(n int) []flags { return sized(&w.flags, n) }

// victims returns victim buffer k, empty, with room for n victims, to be
// filled within that room.
func (w *scratch) victims(k, n int) []victim {
	w.used = max(w.used, n)
	return sized(&w.victim[k], n)[:0]
}

package deletionpolicy

import (
	"math"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// Pin each shipped policy to the interface.
var (
	_ Policy = Random{}
	_ Policy = Oldest{}
	_ Policy = Newest{}
	_ Policy = UnhealthyFirst{}
	_ Policy = HighestOrdinal{}
)

// Random gives every replica equal weight, as the VirtualMachineReplicaSet
// this library grew from does, yet is reproducible: a replica's place is a
// hash of the seed and the replica's name, so the same replica keeps its
// place across passes, restarts and stale caches, and a retried pass never
// picks a different victim. Different seeds give independent orders.
//
// The seed is Seed combined with (a scrambling of) the owner's seed that
// Compute passes in Env.Seed (replicaset.Spec.Seed), so one Random value in
// a registry built once serves every owner, each in an order of its own.
//
// Order, inside replicaset.Compute's tiers: lower deletion cost;
// hash of (Seed, Env.Seed, Name).
type Random struct {
	// Seed selects the order together with Env.Seed. Zero is a fine
	// value when each owner has a seed of its own in its Spec.
	Seed uint64
}

// Rank implements Policy.
func (p Random) Rank(r replicaset.Replica, env replicaset.Env) replicaset.Rank {
	return replicaset.Rank{r.DeletionCost, int64(hashName(p.Seed^mixSeed(env.Seed), r.Name))}
}

// mixSeed scrambles an owner's seed before it is combined with Random.Seed,
// so that equal seeds do not cancel out. It is a bijection with
// mixSeed(0) == 0: without an owner seed, Random{Seed: s} orders as it
// always did.
func mixSeed(s uint64) uint64 {
	s *= 0x9e3779b97f4a7c15 // odd: a bijection
	return s ^ s>>29
}

// hashName mixes seed and name with FNV-1a and a SplitMix64 finalizer, so
// that ranks are uniform even for names that differ in one character.
func hashName(seed uint64, name string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := range 8 {
		h ^= (seed >> (8 * i)) & 0xff
		h *= prime
	}
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Oldest deletes the oldest replicas first, as Cluster API's Oldest policy.
//
// Order, inside replicaset.Compute's tiers: lower deletion cost;
// earlier creation time (unknown first).
type Oldest struct{}

// Rank implements Policy.
func (Oldest) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	return replicaset.Rank{r.DeletionCost, unixNano(r.CreatedAt)}
}

// Newest deletes the newest replicas first, as Cluster API's Newest policy.
//
// Order, inside replicaset.Compute's tiers: lower deletion cost;
// later creation time (unknown last).
type Newest struct{}

// Rank implements Policy.
func (Newest) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	return replicaset.Rank{r.DeletionCost, ^unixNano(r.CreatedAt)}
}

// UnhealthyFirst deletes the replicas that serve least first, in the spirit
// of the Kubernetes ReplicaSet controller's ranking: a replica that does not
// work yet is cheaper to lose than one that does, and among healthy ones the
// newest has proven itself least.
//
// Order, inside replicaset.Compute's tiers: not provisioned or
// failed (PhasePending, PhaseFailed); not ready (including PhaseUnknown);
// ready but not yet available (Env.MinReady); available; then lower deletion
// cost; later creation time (unknown last).
type UnhealthyFirst struct{}

// Health tiers of UnhealthyFirst, lowest deleted first.
const (
	tierNotProvisioned = iota
	tierNotReady
	tierNotAvailable
	tierAvailable
)

// Rank implements Policy.
func (UnhealthyFirst) Rank(r replicaset.Replica, env replicaset.Env) replicaset.Rank {
	var tier int64
	switch {
	case r.Phase == replicaset.PhasePending || r.Phase == replicaset.PhaseFailed:
		tier = tierNotProvisioned
	case !r.Ready:
		tier = tierNotReady
	case !r.Available(env.MinReady, env.Now):
		tier = tierNotAvailable
	default:
		tier = tierAvailable
	}
	return replicaset.Rank{tier, r.DeletionCost, ^unixNano(r.CreatedAt)}
}

// HighestOrdinal deletes the replica with the highest ordinal first, so an
// ordinally named set (web-0, web-1, …) shrinks from the top, as a
// StatefulSet does. Among replicas of equal deletion cost, those without an
// ordinal are outside the sequence and go first. It needs a caller that sets
// Replica.Ordinal (see [UsesOrdinals]); with none set it orders by name.
//
// Order, inside replicaset.Compute's tiers: lower deletion cost;
// no ordinal; higher ordinal.
type HighestOrdinal struct{}

// UsesOrdinals reports true: this policy orders by Replica.Ordinal.
func (HighestOrdinal) UsesOrdinals() bool { return true }

// Rank implements Policy.
func (HighestOrdinal) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	if !r.HasOrdinal {
		return replicaset.Rank{r.DeletionCost, 0}
	}
	return replicaset.Rank{r.DeletionCost, 1, -int64(r.Ordinal)}
}

// unixNano maps t to an int64 that orders as t does, with the zero time (and
// any time before 1678, where UnixNano is undefined) as the minimum and times
// after 2262 as the maximum. Policies that want later times first use its
// bitwise complement, which reverses the order without overflowing.
func unixNano(t time.Time) int64 {
	switch {
	case t.IsZero() || t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

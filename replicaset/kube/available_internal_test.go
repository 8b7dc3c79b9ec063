package kube

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// TestNextAvailable: a replica ready for 10 of the 30 seconds a spec asks
// before it counts as available is looked at again in 20 seconds.
func TestNextAvailable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ready := func(name string, since time.Duration) replicaset.Replica {
		return replicaset.Replica{Name: name, Ready: true, ReadySince: now.Add(-since)}
	}
	tests := []struct {
		desc     string
		minReady time.Duration
		replicas []replicaset.Replica
		want     time.Duration
		wantOK   bool
	}{
		{"no window", 0, []replicaset.Replica{ready("a", 0)}, 0, false},
		{"the next replica becomes available in exactly 20s", 30 * time.Second,
			[]replicaset.Replica{ready("a", time.Hour), ready("b", 10*time.Second)}, 20 * time.Second, true},
		{"ready since unknown never becomes available by waiting", 30 * time.Second,
			[]replicaset.Replica{{Name: "u", Ready: true}}, 0, false},
	}
	for _, tt := range tests {
		if got, ok := nextAvailable(tt.replicas, tt.minReady, now); got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: nextAvailable = (%v, %v), want (%v, %v)", tt.desc, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestNextAvailable_Exact: requeueing after nextAvailable is exact: one
// nanosecond earlier nothing has changed, at that moment one more replica
// is available.
func TestNextAvailable_Exact(t *testing.T) {
	now := replicagen.Now()
	rapid.Check(t, func(t *rapid.T) {
		rs := replicagen.Replicas(30).Draw(t, "replicas")
		minReady := time.Duration(rapid.IntRange(0, 120).Draw(t, "minReady")) * time.Second
		avail := func(at time.Time) int { return replicaset.Summarize(rs, minReady, at).Available }
		after, ok := nextAvailable(rs, minReady, now)
		switch {
		case !ok && avail(now.Add(1000*time.Hour)) != avail(now):
			t.Fatalf("nextAvailable says none pending, but later %d are available, now %d", avail(now.Add(1000*time.Hour)), avail(now))
		case !ok:
		case after <= 0:
			t.Fatalf("nextAvailable = %v, want > 0", after)
		case avail(now.Add(after-1)) != avail(now):
			t.Fatalf("1ns before nextAvailable: %d available, want %d", avail(now.Add(after-1)), avail(now))
		case avail(now.Add(after)) <= avail(now):
			t.Fatalf("at nextAvailable (%v): %d available, want more than %d", after, avail(now.Add(after)), avail(now))
		}
	})
}

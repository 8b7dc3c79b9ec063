package replicaset_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

func TestSummarize(t *testing.T) {
	ready := func(name string, since time.Duration) replicaset.Replica {
		return replicaset.Replica{Name: name, Ready: true, ReadySince: now.Add(-since)}
	}
	notReady := replicaset.Replica{Name: "n"}
	unknownSince := replicaset.Replica{Name: "u", Ready: true}
	tests := []struct {
		desc     string
		minReady time.Duration
		replicas []replicaset.Replica
		want     replicaset.Status
	}{{
		desc:     "no window: ready is available",
		minReady: 0,
		replicas: []replicaset.Replica{ready("a", 0), notReady, deleting(ready("d", time.Hour))},
		want:     replicaset.Status{Replicas: 2, Ready: 1, Available: 1, Terminating: 1},
	}, {
		desc:     "window: the next replica (c) becomes available in exactly 5s",
		minReady: 30 * time.Second,
		replicas: []replicaset.Replica{ready("a", 10*time.Second), ready("b", 30*time.Second), ready("c", 25*time.Second)},
		want:     replicaset.Status{Replicas: 3, Ready: 3, Available: 1},
	}, {
		desc:     "ready since unknown never becomes available by waiting",
		minReady: 30 * time.Second,
		replicas: []replicaset.Replica{unknownSince},
		want:     replicaset.Status{Replicas: 1, Ready: 1},
	}, {
		desc:     "terminating replicas are never ready or available",
		minReady: 0,
		replicas: []replicaset.Replica{deleting(ready("a", time.Hour)), deleting(notReady)},
		want:     replicaset.Status{Terminating: 2},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, replicaset.Summarize(tt.replicas, tt.minReady, now)); diff != "" {
				t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarize_Properties checks the status arithmetic.
func TestSummarize_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := replicagen.Replicas(30).Draw(t, "replicas")
		minReady := time.Duration(rapid.IntRange(0, 120).Draw(t, "minReady")) * time.Second
		s := replicaset.Summarize(rs, minReady, now)
		if s.Replicas+s.Terminating != len(rs) || s.Available > s.Ready || s.Ready > s.Replicas {
			t.Fatalf("Summarize = %+v for %d replicas: counts inconsistent", s, len(rs))
		}
	})
}

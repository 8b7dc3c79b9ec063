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
		wantNext time.Duration
		wantOK   bool
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
		wantNext: 5 * time.Second,
		wantOK:   true,
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
			next, ok := replicaset.NextAvailable(tt.replicas, tt.minReady, now)
			if next != tt.wantNext || ok != tt.wantOK {
				t.Errorf("NextAvailable = (%v, %v), want (%v, %v)", next, ok, tt.wantNext, tt.wantOK)
			}
		})
	}
}

// TestSummarize_Properties checks the status arithmetic and that requeueing
// after NextAvailable is exact: one nanosecond earlier nothing has changed,
// at that moment one more replica is available.
func TestSummarize_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := replicagen.Replicas(30).Draw(t, "replicas")
		minReady := time.Duration(rapid.IntRange(0, 120).Draw(t, "minReady")) * time.Second
		s := replicaset.Summarize(rs, minReady, now)
		if s.Replicas+s.Terminating != len(rs) || s.Available > s.Ready || s.Ready > s.Replicas {
			t.Fatalf("Summarize = %+v for %d replicas: counts inconsistent", s, len(rs))
		}
		after, ok := replicaset.NextAvailable(rs, minReady, now)
		if !ok {
			if later := replicaset.Summarize(rs, minReady, now.Add(1000*time.Hour)); later.Available != s.Available {
				t.Fatalf("NextAvailable says none pending, but later %d are available, now %d", later.Available, s.Available)
			}
			return
		}
		if after <= 0 {
			t.Fatalf("NextAvailable = %v, want > 0", after)
		}
		if before := replicaset.Summarize(rs, minReady, now.Add(after-1)); before.Available != s.Available {
			t.Fatalf("1ns before NextAvailable: %d available, want %d", before.Available, s.Available)
		}
		if at := replicaset.Summarize(rs, minReady, now.Add(after)); at.Available <= s.Available {
			t.Fatalf("at NextAvailable (%v): %d available, want more than %d", after, at.Available, s.Available)
		}
	})
}

func TestSlowStart(t *testing.T) {
	tests := []struct {
		total, initial int
		want           []int
	}{
		{0, 1, nil},
		{1, 1, []int{1}},
		{10, 1, []int{1, 2, 4, 3}},
		{500, 1, []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
		{7, 0, []int{1, 2, 4}},
		{5, 4, []int{4, 1}},
	}
	for _, tt := range tests {
		if got := replicaset.SlowStart(tt.total, tt.initial); !cmp.Equal(got, tt.want) {
			t.Errorf("SlowStart(%d, %d) = %v, want %v", tt.total, tt.initial, got, tt.want)
		}
	}
}

func TestSlowStart_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(-5, 1<<20).Draw(t, "total")
		initial := rapid.IntRange(-2, 1<<10).Draw(t, "initial")
		batches := replicaset.SlowStart(total, initial)
		sum := 0
		for i, b := range batches {
			sum += b
			switch {
			case b < 1:
				t.Fatalf("SlowStart(%d, %d) = %v: batch %d is empty", total, initial, batches, i)
			case i == 0 && b != min(total, max(initial, 1)):
				t.Fatalf("SlowStart(%d, %d) = %v: first batch %d", total, initial, batches, b)
			case i > 0 && i < len(batches)-1 && b != 2*batches[i-1]:
				t.Fatalf("SlowStart(%d, %d) = %v: batch %d does not double", total, initial, batches, i)
			case i > 0 && b > 2*batches[i-1]:
				t.Fatalf("SlowStart(%d, %d) = %v: last batch grows more than double", total, initial, batches)
			}
		}
		if sum != max(total, 0) {
			t.Fatalf("SlowStart(%d, %d) sums to %d", total, initial, sum)
		}
	})
}

// The allowance is the batches' bound: when a batch starts, every create
// before it has succeeded, and the creates started so far (that batch
// included) are exactly the allowance, unless the last batch is short.
func TestSlowStartAllowance_MatchesBatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(1, 1<<20).Draw(t, "total")
		initial := rapid.IntRange(-2, 1<<10).Draw(t, "initial")
		done := 0
		for i, b := range replicaset.SlowStart(total, initial) {
			allowed := replicaset.SlowStartAllowance(initial, done)
			if done+b > allowed || (done+b < allowed && done+b != total) {
				t.Fatalf("batch %d of %d after %d successes: allowance %d", i, b, done, allowed)
			}
			done += b
		}
	})
}

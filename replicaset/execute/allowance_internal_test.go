package execute

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// batches splits total creates into the Kubernetes ReplicaSet
// controller's slow-start batches: starting at initial (1 when initial <
// 1) and doubling after each batch, the last holding what remains. It is
// the model allowance is checked against.
func batches(total, initial int) []int {
	size := max(initial, 1)
	var out []int
	for total > 0 {
		n := min(size, total)
		out = append(out, n)
		total -= n
		if size <= total {
			size *= 2
		}
	}
	return out
}

func TestBatches(t *testing.T) {
	tests := []struct {
		total, initial int
		want           []int
	}{
		{0, 1, nil},
		{1, 1, []int{1}},
		{10, 1, []int{1, 2, 4, 3}},
		{20, 1, []int{1, 2, 4, 8, 5}},
		{7, 0, []int{1, 2, 4}},
		{5, 4, []int{4, 1}},
	}
	for _, tt := range tests {
		if got := batches(tt.total, tt.initial); !cmp.Equal(got, tt.want) {
			t.Errorf("batches(%d, %d) = %v, want %v", tt.total, tt.initial, got, tt.want)
		}
	}
}

// The allowance is the batches' bound: when a batch starts, every create
// before it has succeeded, and the creates started so far (that batch
// included) are exactly the allowance, unless the last batch is short.
func TestAllowance_MatchesBatches(t *testing.T) {
	if got := allowance(1, 3); got != 7 {
		t.Errorf("allowance(1, 3) = %d, want 7", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(1, 1<<20).Draw(t, "total")
		initial := rapid.IntRange(-2, 1<<10).Draw(t, "initial")
		done := 0
		for i, b := range batches(total, initial) {
			allowed := allowance(initial, done)
			if done+b > allowed || (done+b < allowed && done+b != total) {
				t.Fatalf("batch %d of %d after %d successes: allowance %d", i, b, done, allowed)
			}
			done += b
		}
	})
}

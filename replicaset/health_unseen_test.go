package replicaset_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// TestHealth_Unseen: a pass that could not see a replica ends its
// unhealthy spell, starts its start-up window again at now unless it has
// been healthy, and keeps the rest.
func TestHealth_Unseen(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		at := func(label string) time.Time {
			return now.Add(-time.Duration(rapid.IntRange(0, 3600).Draw(t, label)) * time.Second)
		}
		h := replicaset.Health{Unhealthy: rapid.Bool().Draw(t, "unhealthy"), Healthy: rapid.Bool().Draw(t, "healthy"),
			Restarted: rapid.Bool().Draw(t, "restarted"), HealthyBefore: rapid.Bool().Draw(t, "before"), Skip: rapid.Bool().Draw(t, "skip"),
			Since: at("since"), Reason: "HeartbeatRed", Started: at("started")}
		want := h
		if h.Unhealthy {
			want.Unhealthy, want.Since, want.Reason = false, time.Time{}, ""
		}
		if !h.Healthy {
			want.Started = now
		}
		if got := h.Unseen(now); got != want {
			t.Fatalf("Unseen(%+v) = %+v, want %+v", h, got, want)
		}
	})
}

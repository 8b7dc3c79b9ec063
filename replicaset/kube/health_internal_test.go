package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// healthAdapter is an Adapter of Pods for checkHealth, whose health check
// says ok, why not, and whose start it reports (startingHealthAdapter).
type healthAdapter struct {
	ok      bool
	reason  string
	started bool
	at      time.Time
}

func (healthAdapter) Spec(*corev1.Pod) (Spec, error)                    { return Spec{}, nil }
func (healthAdapter) NewChild(*corev1.Pod) (*corev1.Pod, error)         { return &corev1.Pod{}, nil }
func (healthAdapter) Describe(*corev1.Pod, *replicaset.Replica)         {}
func (healthAdapter) SetStatus(*corev1.Pod, Status)                     {}
func (a healthAdapter) CheckHealth(*corev1.Pod) (bool, string)          { return a.ok, a.reason }
func (a startingHealthAdapter) StartedAt(*corev1.Pod) (time.Time, bool) { return a.at, a.started }

// startingHealthAdapter is a healthAdapter that is a Starter.
type startingHealthAdapter struct{ healthAdapter }

// TestCheckHealth_ReadinessAndCheck: a child is healthy when it is Ready
// and the HealthChecker says ok; not Ready, it is unhealthy with the
// check's reason when the check fails, and NotReady when it passes. Its
// start is its creation, or what a Starter says.
func TestCheckHealth_ReadinessAndCheck(t *testing.T) {
	created := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		a := healthAdapter{ok: rapid.Bool().Draw(t, "ok"), reason: rapid.SampledFrom([]string{"", "CrashLoopBackOff"}).Draw(t, "reason"),
			started: rapid.Bool().Draw(t, "started"), at: created.Add(time.Duration(rapid.IntRange(0, 100).Draw(t, "atMinutes")) * time.Minute)}
		ready := rapid.Bool().Draw(t, "ready")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		var got healthCheck
		starter := rapid.Bool().Draw(t, "starter")
		if starter {
			got = (&Reconciler[*corev1.Pod, *corev1.Pod]{Adapter: startingHealthAdapter{a}}).checkHealth(pod, replicaset.Replica{Ready: ready})
		} else {
			got = (&Reconciler[*corev1.Pod, *corev1.Pod]{Adapter: a}).checkHealth(pod, replicaset.Replica{Ready: ready})
		}
		want := healthCheck{checked: true, ok: a.ok && ready, started: true, at: created}
		switch {
		case !a.ok && a.reason == "":
			want.reason = reasonCheckFailed
		case !a.ok:
			want.reason = a.reason
		case !ready:
			want.reason = reasonNotReady
		}
		if starter {
			want.started, want.at = a.started, a.at
		}
		if got != want {
			t.Fatalf("check %v %q, ready %v, starter %v: got %+v, want %+v", a.ok, a.reason, ready, starter, got, want)
		}
	})
}

// TestCheckHealth_OutOfService: readiness is left out of a child that
// prepares to leave (the check alone judges it); a child being deleted is
// not checked, and one unreachable is unseen, whatever the check says.
func TestCheckHealth_OutOfService(t *testing.T) {
	created := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	r := &Reconciler[*corev1.Pod, *corev1.Pod]{Adapter: healthAdapter{ok: true}}
	for _, tt := range []struct {
		desc string
		rep  replicaset.Replica
		want healthCheck
	}{
		{"preparing", replicaset.Replica{Preparing: &replicaset.Preparing{Since: created}}, healthCheck{checked: true, ok: true, started: true, at: created}},
		{"deleting", replicaset.Replica{Deleting: true}, healthCheck{ok: true, started: true, at: created}},
		{"unreachable", replicaset.Replica{Unreachable: true}, healthCheck{ok: true, unseen: true, started: true, at: created}},
	} {
		if got := r.checkHealth(pod, tt.rep); got != tt.want {
			t.Errorf("%s, not ready: %+v, want %+v", tt.desc, got, tt.want)
		}
	}
}

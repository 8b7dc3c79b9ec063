package kube

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// TestIdle: a pass waiting for the cache skips its children only when
// decide would hold it for waiting alone; whatever decide reports without
// looking at the children (a paused or deleted owner, an unusable spec, a
// policy it cannot use, a spec the planner refuses) still takes a whole
// pass, which reports it as before.
func TestIdle(t *testing.T) {
	random := rules{policies: deletionpolicy.Default(), naming: RandomNames}
	waiting := func(o *observation) { o.waiting = true }
	tests := []struct {
		name   string
		change func(*observation)
		rules  rules
		want   bool
	}{
		{"waiting", nil, ordinal, true},
		{"not waiting", func(o *observation) { o.waiting = false }, ordinal, false},
		{"paused", func(o *observation) { o.spec.Paused = true }, ordinal, false},
		{"owner being deleted", func(o *observation) { o.owner.SetDeletionTimestamp(&metav1.Time{Time: testNow}) }, ordinal, false},
		{"spec unusable", func(o *observation) { o.specErr = errors.New("bad") }, ordinal, false},
		{"template unusable", func(o *observation) { o.templateErr = errors.New("bad") }, ordinal, false},
		{"selector does not match the template", func(o *observation) { o.template = labels.Set{"app": "other"} }, ordinal, false},
		{"unknown policy", func(o *observation) { o.spec.DeletePolicy = "NoSuchPolicy" }, ordinal, false},
		{"HighestOrdinal with random names", func(o *observation) { o.spec.DeletePolicy = deletionpolicy.NameHighestOrdinal }, random, false},
		{"a spec the planner refuses", func(o *observation) { o.spec.Replicas = -1 }, ordinal, false},
		{"Restart from an Adapter that is no Restarter", func(o *observation) {
			o.spec.Remediation = &replicaset.Remediation{Restart: true}
		}, ordinal, false},
		{"a rollout the planner refuses", func(o *observation) {
			o.spec.Rollout = &replicaset.Strategy{Type: replicaset.RollingUpdate, MaxSurge: replicaset.Count(-1)}
			o.revision = "r1"
		}, ordinal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := []func(*observation){waiting}
			if tt.change != nil {
				changes = append(changes, tt.change)
			}
			o := observed(3, kids(kid("web-0")), changes...)
			if got := idle(o, tt.rules); got != tt.want {
				t.Errorf("idle = %v, want %v", got, tt.want)
			}
			// The premise: a pass idle skips would have held for waiting
			// and published nothing; one it does not skip is decided.
			if d := decide(o, tt.rules); tt.want && d.hold != holdWaiting {
				t.Errorf("idle, yet decide holds with %v (%v)", d.hold, d.failure)
			} else if !tt.want && tt.name != "not waiting" && d.hold == holdWaiting {
				t.Errorf("not idle, yet decide holds only for waiting")
			}
		})
	}
}

package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/replicakit/replicakit/replicaset"
)

// podAdapter is an Adapter for Pods with no zone methods of its own.
type podAdapter struct{}

func (podAdapter) Spec(*corev1.ConfigMap) (Spec, error)            { return Spec{}, nil }
func (podAdapter) NewChild(*corev1.ConfigMap) (*corev1.Pod, error) { return &corev1.Pod{}, nil }
func (podAdapter) Describe(*corev1.Pod, *replicaset.Replica)       {}
func (podAdapter) SetStatus(*corev1.ConfigMap, Status)             {}
func (podAdapter) Zone(p *corev1.Pod) string                       { return p.Annotations["zone"] }
func (podAdapter) SetZone(p *corev1.Pod, zone string) {
	p.Annotations = map[string]string{"zone": zone}
}
func (podAdapter) Revision(*corev1.ConfigMap) (string, error)          { return "r", nil }
func (podAdapter) UpdateInPlace(*corev1.ConfigMap, *corev1.Pod) bool   { return false }
func (podAdapter) MatchesTemplate(*corev1.ConfigMap, *corev1.Pod) bool { return true }

// withPodZones embeds PodZones in an Adapter that has no Zoner methods.
type withPodZones struct {
	PodZones
	plain
}

type plain struct{}

func (plain) Spec(*corev1.ConfigMap) (Spec, error)            { return Spec{}, nil }
func (plain) NewChild(*corev1.ConfigMap) (*corev1.Pod, error) { return &corev1.Pod{}, nil }
func (plain) Describe(*corev1.Pod, *replicaset.Replica)       {}
func (plain) SetStatus(*corev1.ConfigMap, Status)             {}

// TestCheckZones_PodZones: zones that are no label value are refused for
// an Adapter without a Zoner and for one embedding PodZones, which writes
// them into a node selector and a label; a Zoner of its own may keep
// them anywhere.
func TestCheckZones_PodZones(t *testing.T) {
	zones := []string{"eu-west-1a", "not a label value!"}
	tests := []struct {
		desc    string
		adapter Adapter[*corev1.ConfigMap, *corev1.Pod]
		refused bool
	}{
		{"no Zoner: the zone label", plain{}, true},
		{"PodZones: a node selector and a label", withPodZones{}, true},
		{"a Zoner of its own", podAdapter{}, false},
	}
	for _, tt := range tests {
		r := &Reconciler[*corev1.ConfigMap, *corev1.Pod]{Adapter: tt.adapter}
		if err := r.checkZones(zones); (err != nil) != tt.refused {
			t.Errorf("%s: checkZones(%q) = %v, want refused %v", tt.desc, zones, err, tt.refused)
		}
		if err := r.checkZones(zones[:1]); err != nil {
			t.Errorf("%s: checkZones(%q) = %v, want nil", tt.desc, zones[:1], err)
		}
	}
}

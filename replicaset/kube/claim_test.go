package kube_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/replicakit/replicakit/replicaset/kube"
)

func TestClaimFor(t *testing.T) {
	const me, them types.UID = "owner-uid", "other-uid"
	ref := func(uid types.UID, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Set", Name: "x", UID: uid, Controller: ptr.To(controller)}}
	}
	now := metav1.Now()
	tests := []struct {
		desc     string
		refs     []metav1.OwnerReference
		deleting bool
		matches  bool
		want     kube.Claim
	}{
		{"mine and matching", ref(me, true), false, true, kube.Keep},
		{"mine, labels changed", ref(me, true), false, false, kube.Release},
		{"mine, labels changed, being deleted", ref(me, true), true, false, kube.Keep},
		{"orphan that matches", nil, false, true, kube.Adopt},
		{"orphan that matches, being deleted", nil, true, true, kube.Ignore},
		{"orphan that does not match", nil, false, false, kube.Ignore},
		{"another controller's, matching", ref(them, true), false, true, kube.Ignore},
		{"mine but not as controller: an orphan for controllers", ref(me, false), false, true, kube.Adopt},
	}
	for _, tt := range tests {
		child := &metav1.ObjectMeta{Name: "c", OwnerReferences: tt.refs}
		if tt.deleting {
			child.DeletionTimestamp = &now
		}
		if got := kube.ClaimFor(me, tt.matches, child); got != tt.want {
			t.Errorf("%s: ClaimFor = %v, want %v", tt.desc, got, tt.want)
		}
	}
}

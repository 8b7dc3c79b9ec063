package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
		want     claim
	}{
		{"mine and matching", ref(me, true), false, true, claimKeep},
		{"mine, labels changed", ref(me, true), false, false, claimRelease},
		{"mine, labels changed, being deleted", ref(me, true), true, false, claimKeep},
		{"orphan that matches", nil, false, true, claimAdopt},
		{"orphan that matches, being deleted", nil, true, true, claimIgnore},
		{"orphan that does not match", nil, false, false, claimIgnore},
		{"another controller's, matching", ref(them, true), false, true, claimIgnore},
		{"mine but not as controller: an orphan for controllers", ref(me, false), false, true, claimAdopt},
	}
	for _, tt := range tests {
		child := &metav1.ObjectMeta{Name: "c", OwnerReferences: tt.refs}
		if tt.deleting {
			child.DeletionTimestamp = &now
		}
		if got := claimFor(me, tt.matches, child); got != tt.want {
			t.Errorf("%s: ClaimFor = %v, want %v", tt.desc, got, tt.want)
		}
	}
}

package kube_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestReplicaOf(t *testing.T) {
	created := metav1.NewTime(t0)
	deleted := metav1.NewTime(t0.Add(1))
	tests := []struct {
		desc    string
		meta    metav1.ObjectMeta
		want    replicaset.Replica
		wantErr bool
	}{{
		desc: "plain",
		meta: metav1.ObjectMeta{Name: "web-1", UID: "u1", CreationTimestamp: created},
		want: replicaset.Replica{Name: "web-1", UID: "u1", CreatedAt: t0},
	}, {
		desc: "being deleted, marked, protected, with a cost",
		meta: metav1.ObjectMeta{Name: "web-2", UID: "u2", CreationTimestamp: created, DeletionTimestamp: &deleted,
			Annotations: map[string]string{kube.AnnotationDeleteFirst: "", kube.AnnotationScaleInProtection: "true", kube.AnnotationDeletionCost: "-5"}},
		want: replicaset.Replica{Name: "web-2", UID: "u2", CreatedAt: t0, Deleting: true, MarkedForDeletion: true, Protected: true, DeletionCost: -5},
	}, {
		desc: "delete-first=false and protection other than true do nothing",
		meta: metav1.ObjectMeta{Name: "web-3", Annotations: map[string]string{kube.AnnotationDeleteFirst: "false", kube.AnnotationScaleInProtection: "yes"}},
		want: replicaset.Replica{Name: "web-3"},
	}, {
		desc:    "a cost that is not an integer is ignored, with an error",
		meta:    metav1.ObjectMeta{Name: "web-4", Annotations: map[string]string{kube.AnnotationDeletionCost: "cheap"}},
		want:    replicaset.Replica{Name: "web-4"},
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := kube.ReplicaOf(&tt.meta)
			if (err != nil) != tt.wantErr {
				t.Errorf("Replica error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Replica mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

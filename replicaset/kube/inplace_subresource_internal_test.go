package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestPatchSubresource_Errors: a subresource patch that fails is wrapped
// naming the child and the subresource; a change that names no
// subresource is refused before anything is sent.
func TestPatchSubresource_Errors(t *testing.T) {
	refused := errors.New("refused")
	sent := 0
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			sent++
			return refused
		},
	})
	r := &Reconciler[client.Object, client.Object]{Client: c}
	from := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
	tests := []struct {
		sub  string
		is   error
		text string
		sent int
	}{
		{"resize", refused, "update web-0 in place through subresource resize: refused", 1},
		{"", nil, "update web-0 in place: ApplyInPlaceSubresource changed it but named no subresource", 0},
	}
	for _, tt := range tests {
		sent = 0
		err := r.patchSubresource(context.Background(), "web-0", &subresourceChange{name: tt.sub, from: from, to: from.DeepCopy()})
		if err == nil || err.Error() != tt.text || (tt.is != nil && !errors.Is(err, tt.is)) || sent != tt.sent {
			t.Errorf("patchSubresource(%q) = %v after %d patches, want %q (wrapping %v) after %d", tt.sub, err, sent, tt.text, tt.is, tt.sent)
		}
	}
}

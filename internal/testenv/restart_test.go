package testenv_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRestart restarts kube-apiserver, then etcd, and checks that the same
// client reaches the API server again each time and that what etcd held
// before is still there: the same ports, certificates and data.
func TestRestart(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before-restarts"}, Data: map[string]string{"k": "v"}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		begin := time.Now()
		if err := e.Restart(name, 500*time.Millisecond); err != nil {
			t.Fatalf("%v\n%s", err, e.RestartLog(name))
		}
		t.Logf("%s restarted and the API server ready in %v", name, time.Since(begin).Round(time.Millisecond))
		var got corev1.ConfigMap
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
			t.Fatalf("after restarting %s: %v", name, err)
		}
		if got.UID != cm.UID || got.Data["k"] != "v" {
			t.Errorf("after restarting %s the ConfigMap is %+v, want the one created before (UID %s)", name, got, cm.UID)
		}
	}
	if err := e.Restart("kube-controller-manager", 0); err == nil {
		t.Error("Restart of kube-controller-manager: no error, want one (only kube-apiserver and etcd)")
	}
}

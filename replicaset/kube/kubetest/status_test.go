package kubetest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// poolOmits are the kube.Status fields the Pool kind leaves out: it
// publishes Replicas, ReadyReplicas, Selector and Conditions alone.
var poolOmits = []string{"FullyLabeledReplicas", "AvailableReplicas", "TerminatingReplicas", "UnknownReplicas", "ObservedGeneration",
	"Zones", "UpdatedReplicas", "UpdatedReadyReplicas", "UpdatedAvailableReplicas", "UpdateRevision", "CurrentRevision",
	"UnhealthyReplicas", "RemediationsAllowed", "PreparingReplicas"}

// TestCheckStatus_SetStatusDrops: on the fake client, CheckStatus names
// each field the Adapter's SetStatus does not copy, and only those, and
// passes once they are omitted on purpose.
func TestCheckStatus_SetStatusDrops(t *testing.T) {
	ctx := t.Context()
	r := newReconciler(newScheme())
	pool := newPool("web", 1)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		t.Fatal(err)
	}
	err = kubetest.CheckStatus(ctx, c, poolAdapter{}, pool, kubetest.StatusFields{})
	if err == nil {
		t.Fatal("CheckStatus passed a Pool that publishes 4 of the binding's fields")
	}
	for _, f := range []string{"status.availableReplicas: the Adapter's SetStatus does not copy kube.Status.AvailableReplicas", "status.unhealthyReplicas", "status.zones"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("the error does not name %q: %v", f, err)
		}
	}
	for _, f := range []string{"status.replicas:", "status.readyReplicas:", "status.selector:", "status.conditions:"} {
		if strings.Contains(err.Error(), f) {
			t.Errorf("the error names %q, which SetStatus copies: %v", f, err)
		}
	}
	if err := kubetest.CheckStatus(ctx, c, poolAdapter{}, pool, kubetest.StatusFields{Omit: poolOmits}); err != nil {
		t.Errorf("with the Pool's omissions: %v", err)
	}
	paths := kubetest.StatusFields{Omit: poolOmits[1:], Paths: map[string]string{"FullyLabeledReplicas": "status.replicas"}}
	if err := kubetest.CheckStatus(ctx, c, poolAdapter{}, pool, paths); err == nil || !strings.Contains(err.Error(), "status.replicas: the Adapter's SetStatus does not copy kube.Status.FullyLabeledReplicas") {
		t.Errorf("FullyLabeledReplicas looked for at status.replicas, which holds Replicas: %v", err)
	}
}

// TestCheckStatus_CRDPrunes: on a real API server whose CRD has no
// readyReplicas in its status schema, CheckStatus says the API server
// dropped it, although SetStatus copies it.
func TestCheckStatus_CRDPrunes(t *testing.T) {
	raw, err := os.ReadFile("testdata/example.com_pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The status schema of a CRD generated before readyReplicas existed.
	structural := `          status:
            type: object
            properties:
              replicas: {type: integer, format: int32}
              selector: {type: string}
              conditions:
                type: array
                items: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	old := "          status:\n            type: object\n            x-kubernetes-preserve-unknown-fields: true\n"
	if !strings.Contains(string(raw), old) {
		t.Fatal("testdata's Pool CRD has changed: update this test's edit of it")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pools.yaml"), []byte(strings.Replace(string(raw), old, structural, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := startEnv(t, dir)
	ctx := t.Context()
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool("web", 1)
	if err := c.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	err = kubetest.CheckStatus(ctx, c, poolAdapter{}, pool, kubetest.StatusFields{Omit: poolOmits})
	want := "status.readyReplicas: SetStatus copies kube.Status.ReadyReplicas, but the API server did not keep it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckStatus = %v, want it to say %q", err, want)
	}
	if strings.Contains(err.Error(), "status.replicas:") || strings.Contains(err.Error(), "status.selector:") {
		t.Errorf("CheckStatus names fields the CRD keeps: %v", err)
	}
}

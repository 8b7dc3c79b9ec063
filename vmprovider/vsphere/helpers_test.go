package vsphere_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/vim25"

	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
)

// simulatorClient logs in to the simulator as a separate administrator, to
// act behind the provider's back.
func simulatorClient(ctx context.Context, sim *vcsimtest.Sim) (*vim25.Client, error) {
	u, err := url.Parse(sim.URL)
	if err != nil {
		return nil, err
	}
	u.User = url.UserPassword(vcsimtest.Username, vcsimtest.Password)
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		return nil, err
	}
	return c.Client, nil
}

// terminateAll ends every session but its own, as an administrator or an
// idle timeout would.
func terminateAll(t *testing.T, sim *vcsimtest.Sim) {
	t.Helper()
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := simgate.EndSessions(ctx, c); err != nil {
		t.Fatal(err)
	}
}

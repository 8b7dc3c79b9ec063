package vsphere_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"

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
	sm := session.NewManager(c)
	own, err := sm.UserSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m mo.SessionManager
	if err := property.DefaultCollector(c).RetrieveOne(ctx, sm.Reference(), []string{"sessionList"}, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range m.SessionList {
		if s.Key != own.Key {
			keys = append(keys, s.Key)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no other session to terminate")
	}
	if err := sm.TerminateSession(ctx, keys); err != nil {
		t.Fatal(err)
	}
}

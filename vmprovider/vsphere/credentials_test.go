package vsphere_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestCredentials_Rotated: vCenter's password is rotated and its sessions
// end (it expired): the provider's next call logs in again with what
// Config.Credentials gives then, with no new Provider, and its watch comes
// back on the new session. While Credentials still gives the old password,
// the call fails as a refused login.
func TestCredentials_Rotated(t *testing.T) {
	sim := vcsimtest.Start(t)
	ctx := context.Background()
	var mu sync.Mutex
	password := sim.Password
	cfg := sim.Config()
	cfg.Username, cfg.Password = "", ""
	cfg.Credentials = func(context.Context) (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		return sim.Username, password, nil
	}
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	w := vsphere.NewWatch(p)
	events := make(chan event, 64)
	w.OnChange(func(vm vmprovider.VM, gone bool) { events <- event{vm, gone} })
	runWatch(t, w)
	<-w.Synced()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}

	const rotated = "vcsim-Rotated-pw-2"
	if err := sim.SetPassword(rotated); err != nil {
		t.Fatal(err)
	}
	admin := sim.Config()
	c, logout, err := vsphere.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("log in with the rotated password: %v", err)
	}
	defer func() { _ = logout(ctx) }()
	if _, err := simgate.EndSessions(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(ctx, ownerA.UID); !errors.Is(err, vsphere.ErrLogin) {
		t.Fatalf("List with the old password = %v, want ErrLogin", err)
	}
	mu.Lock()
	password = rotated
	mu.Unlock()
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 1 {
		t.Fatalf("List after the rotation = %v, %v; want web-0", vms, err)
	}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "web-1, on the new session", func(e event) bool { return e.vm.Name == "web-1" && !e.gone })
}

package vmprovidertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

func TestVerify_Fake(t *testing.T) {
	if err := vmprovidertest.Verify(context.Background(), &vmprovidertest.Fake{}, vmprovider.Spec{Name: "conf"}); err != nil {
		t.Errorf("Verify(Fake):\n%v", err)
	}
}

// careless deletes any VM, whoever owns it.
type careless struct{ *vmprovidertest.Fake }

func (c careless) Delete(ctx context.Context, name, _ string) error {
	vm, err := c.Get(ctx, name)
	if err != nil {
		return nil
	}
	return c.Fake.Delete(ctx, name, vm.Owner)
}

// duplicating creates a new VM on every call.
type duplicating struct{ *vmprovidertest.Fake }

func (d duplicating) Create(ctx context.Context, s vmprovider.Spec) (vmprovider.VM, error) {
	_ = d.Fake.Delete(ctx, s.Name, s.Owner.UID)
	return d.Fake.Create(ctx, s)
}

// forgetful records no revision.
type forgetful struct{ *vmprovidertest.Fake }

func (f forgetful) Create(ctx context.Context, s vmprovider.Spec) (vmprovider.VM, error) {
	s.Revision = ""
	return f.Fake.Create(ctx, s)
}

// reckless resets any VM, whoever owns it.
type reckless struct{ *vmprovidertest.Fake }

func (r reckless) Reset(ctx context.Context, name, _ string) error {
	vm, err := r.Get(ctx, name)
	if err != nil {
		return err
	}
	return r.Fake.Reset(ctx, name, vm.Owner)
}

func TestVerify_CatchesBrokenProviders(t *testing.T) {
	for name, p := range map[string]vmprovider.Provider{
		"deletes another owner's VM": careless{&vmprovidertest.Fake{}},
		"creates twice":              duplicating{&vmprovidertest.Fake{}},
		"records no revision":        forgetful{&vmprovidertest.Fake{}},
		"resets another owner's VM":  reckless{&vmprovidertest.Fake{}},
	} {
		if err := vmprovidertest.Verify(context.Background(), p, vmprovider.Spec{Name: "conf"}); err == nil {
			t.Errorf("Verify(%s) = nil, want violations", name)
		}
	}
}

// TestFake_Reset: a reset boots a VM that is on again and powers on one
// that is off, keeps the heartbeat SetHeartbeat gave it, is recorded, and
// refuses another owner's VM; a lost answer still records the reset.
func TestFake_Reset(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lose := false
	f := &vmprovidertest.Fake{Now: func() time.Time { return at }, Lose: func(op, _ string) error {
		if lose && op == "reset" {
			return errors.New("read tcp: i/o timeout")
		}
		return nil
	}}
	owner := vmprovider.Owner{UID: "uid-r"}
	for _, s := range []vmprovider.Spec{{Name: "on", Owner: owner, PowerOn: true}, {Name: "off", Owner: owner}} {
		if _, err := f.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetHeartbeat("on", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	at = at.Add(time.Minute)
	for _, name := range []string{"on", "off"} {
		if err := f.Reset(ctx, name, owner.UID); err != nil {
			t.Fatalf("Reset(%s): %v", name, err)
		}
	}
	on, _ := f.Get(ctx, "on")
	off, _ := f.Get(ctx, "off")
	if on.Power != vmprovider.PoweredOn || !on.BootedAt.Equal(at) || on.Heartbeat != vmprovider.HeartbeatRed {
		t.Errorf("after Reset the VM that was on is %+v: want it booted at %v, the heartbeat still red", on, at)
	}
	if off.Power != vmprovider.PoweredOn || !off.BootedAt.Equal(at) {
		t.Errorf("after Reset the VM that was off is %+v: want it powered on at %v", off, at)
	}
	if err := f.Reset(ctx, "on", "someone-else"); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("Reset by another owner: %v, want ErrNotOwned", err)
	}
	lose = true
	if err := f.Reset(ctx, "on", owner.UID); err == nil {
		t.Error("Reset whose answer is lost succeeded")
	}
	if diff := cmp.Diff([]string{"on", "off", "on"}, f.Resets()); diff != "" {
		t.Errorf("Resets (-want +got):\n%s", diff)
	}
	if err := f.SetHeartbeat("gone", vmprovider.HeartbeatGreen); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("SetHeartbeat of a VM that does not exist: %v, want ErrNotFound", err)
	}
}

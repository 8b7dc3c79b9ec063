package vmprovidertest_test

import (
	"context"
	"testing"

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

func TestVerify_CatchesBrokenProviders(t *testing.T) {
	for name, p := range map[string]vmprovider.Provider{
		"deletes another owner's VM": careless{&vmprovidertest.Fake{}},
		"creates twice":              duplicating{&vmprovidertest.Fake{}},
		"records no revision":        forgetful{&vmprovidertest.Fake{}},
	} {
		if err := vmprovidertest.Verify(context.Background(), p, vmprovider.Spec{Name: "conf"}); err == nil {
			t.Errorf("Verify(%s) = nil, want violations", name)
		}
	}
}

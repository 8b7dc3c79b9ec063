package vmprovider_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// resizingFake is a Fake that is a Resizer, recording each resize.
type resizingFake struct {
	*vmprovidertest.Fake
	resized []string
}

func (r *resizingFake) Resize(ctx context.Context, name, owner string, to vmprovider.Resize) error {
	if _, err := r.Get(ctx, name); err != nil {
		return err
	}
	r.resized = append(r.resized, name)
	return nil
}

// TestEndpoints_Resize: Endpoints resizes a VM on the endpoint that holds
// it, or on the one On names, and refuses with ErrInvalidSpec where
// the endpoint's provider cannot resize or the endpoint is unknown.
func TestEndpoints_Resize(t *testing.T) {
	ctx := context.Background()
	east := &resizingFake{Fake: &vmprovidertest.Fake{}}
	west := &vmprovidertest.Fake{}
	e := &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{"east": east, "west": west}, Default: "east"}
	owner := vmprovider.Owner{UID: "u"}
	for _, s := range []vmprovider.Spec{
		{Name: "e-0", Owner: owner},
		{Name: "w-0", Owner: owner, Placement: vmprovider.Placement{Endpoint: "west"}},
	} {
		if _, err := e.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	to := vmprovider.Resize{MemoryMiB: 4096}
	if err := e.Resize(ctx, "e-0", owner.UID, to); err != nil {
		t.Errorf("Resize(e-0) = %v, want it resized on east", err)
	}
	if err := e.On("east").(vmprovider.Resizer).Resize(ctx, "e-0", owner.UID, to); err != nil {
		t.Errorf("On(east).Resize(e-0) = %v, want it resized", err)
	}
	if diff := cmp.Diff([]string{"e-0", "e-0"}, east.resized); diff != "" {
		t.Errorf("east's resizes (-want +got):\n%s", diff)
	}
	if err := e.Resize(ctx, "w-0", owner.UID, to); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("Resize(w-0) on a provider that cannot resize = %v, want ErrInvalidSpec", err)
	}
	if err := e.On("north").(vmprovider.Resizer).Resize(ctx, "e-0", owner.UID, to); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("On(north).Resize = %v, want ErrInvalidSpec", err)
	}
	if err := e.Resize(ctx, "gone-0", owner.UID, to); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Resize(gone-0) = %v, want ErrNotFound", err)
	}
}

package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// twoEndpoints returns Endpoints over two fakes, "east" (the default) and
// "west", and a switch that cuts an endpoint off: every call to it fails
// as a lost connection would.
func twoEndpoints() (e *vmprovider.Endpoints, fakes map[string]*vmprovidertest.Fake, cut map[string]bool) {
	cut = map[string]bool{}
	fakes = map[string]*vmprovidertest.Fake{}
	e = &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{}, Default: "east"}
	for _, name := range []string{"east", "west"} {
		f := &vmprovidertest.Fake{Fail: func(op, _ string) error {
			if cut[name] {
				return fmt.Errorf("%s: dial tcp: connection refused", op)
			}
			return nil
		}}
		fakes[name] = f
		e.Providers[name] = f
	}
	return e, fakes, cut
}

func TestEndpoints_Verify(t *testing.T) {
	e, _, _ := twoEndpoints()
	if err := vmprovidertest.Verify(context.Background(), e, vmprovider.Spec{Name: "conf"}); err != nil {
		t.Errorf("Verify(Endpoints):\n%v", err)
	}
}

// TestEndpoints_OnVerify: the Provider of one endpoint that On gives
// keeps the Provider contract, for the default endpoint and another.
func TestEndpoints_OnVerify(t *testing.T) {
	for _, ep := range []string{"", "west"} {
		e, _, _ := twoEndpoints()
		if err := vmprovidertest.Verify(context.Background(), e.On(ep), vmprovider.Spec{Name: "conf"}); err != nil {
			t.Errorf("Verify(On(%q)):\n%v", ep, err)
		}
	}
}

// TestEndpoints_On: the Provider On gives creates on its endpoint whatever
// the placement says, sees only that endpoint's VMs, and reports it as
// each VM's endpoint; an endpoint Providers does not hold is an invalid
// spec.
func TestEndpoints_On(t *testing.T) {
	ctx := context.Background()
	e, fakes, _ := twoEndpoints()
	owner := vmprovider.Owner{UID: "uid-1"}
	west := e.On("west")
	vm, err := west.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: owner, Placement: vmprovider.Placement{Endpoint: "east"}})
	if err != nil || vm.Endpoint != "west" {
		t.Fatalf("On(west).Create(placement east) = %+v, %v; want it on west", vm, err)
	}
	if _, err := fakes["west"].Get(ctx, "web-0"); err != nil {
		t.Errorf("web-0 is not on west's provider: %v", err)
	}
	if _, err := e.On("").Create(ctx, vmprovider.Spec{Name: "web-1", Owner: owner}); err != nil {
		t.Fatal(err)
	}
	vms, err := west.List(ctx, owner.UID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, vm := range vms {
		got = append(got, vm.Name+"@"+vm.Endpoint)
	}
	if diff := cmp.Diff([]string{"web-0@west"}, got); diff != "" {
		t.Errorf("On(west).List (-want +got):\n%s", diff)
	}
	if vm, err := e.On("east").Get(ctx, "web-1"); err != nil || vm.Endpoint != "east" {
		t.Errorf("On(east).Get(web-1) = %+v, %v; want it, on east", vm, err)
	}
	if _, err := e.On("east").Get(ctx, "web-0"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("On(east).Get(web-0, on west) = %v, want ErrNotFound", err)
	}
	if err := west.SetPower(ctx, "web-0", owner.UID, vmprovider.PoweredOn); err != nil {
		t.Errorf("On(west).SetPower(web-0) = %v", err)
	}
	if vm, err := fakes["west"].Get(ctx, "web-0"); err != nil || vm.Power != vmprovider.PoweredOn {
		t.Errorf("web-0 on west = %+v, %v; want it powered on", vm, err)
	}
	for op, call := range map[string]func() error{
		"Create": func() error {
			_, err := e.On("north").Create(ctx, vmprovider.Spec{Name: "x", Owner: owner})
			return err
		},
		"Get":      func() error { _, err := e.On("north").Get(ctx, "x"); return err },
		"List":     func() error { _, err := e.On("north").List(ctx, owner.UID); return err },
		"SetPower": func() error { return e.On("north").SetPower(ctx, "x", owner.UID, vmprovider.PoweredOff) },
	} {
		if err := call(); !errors.Is(err, vmprovider.ErrInvalidSpec) {
			t.Errorf("On(north).%s = %v, want ErrInvalidSpec", op, err)
		}
	}
}

// TestEndpoints_Routes: creates go where the placement says, and every
// other call reaches the VM wherever it is.
func TestEndpoints_Routes(t *testing.T) {
	ctx := context.Background()
	e, fakes, _ := twoEndpoints()
	owner := vmprovider.Owner{UID: "uid-1", Name: "ns/web"}
	for name, at := range map[string]string{"a": "", "b": "west", "c": "east"} {
		vm, err := e.Create(ctx, vmprovider.Spec{Name: name, Owner: owner, Placement: vmprovider.Placement{Endpoint: at}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"": "east"}[at]
		if want == "" {
			want = at
		}
		if vm.Endpoint != want {
			t.Errorf("Create(%s at %q).Endpoint = %q, want %q", name, at, vm.Endpoint, want)
		}
		if _, err := fakes[want].Get(ctx, name); err != nil {
			t.Errorf("%s is not on %s: %v", name, want, err)
		}
	}
	if _, err := e.Create(ctx, vmprovider.Spec{Name: "d", Owner: owner, Placement: vmprovider.Placement{Endpoint: "north"}}); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("Create on an endpoint not configured = %v, want ErrInvalidSpec", err)
	}
	l, err := e.List(ctx, owner.UID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, vm := range l {
		got = append(got, vm.Name+"@"+vm.Endpoint)
	}
	if diff := cmp.Diff([]string{"a@east", "b@west", "c@east"}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if err := e.SetPower(ctx, "b", owner.UID, vmprovider.PoweredOn); err != nil {
		t.Fatal(err)
	}
	if vm, err := e.Get(ctx, "b"); err != nil || vm.Power != vmprovider.PoweredOn || vm.Endpoint != "west" {
		t.Errorf("Get(b) = %+v, %v; want it on, on west", vm, err)
	}
	if err := e.SetPower(ctx, "b", "uid-2", vmprovider.PoweredOff); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("SetPower of another owner's VM = %v, want ErrNotOwned", err)
	}
	if err := e.MarkRevision(ctx, "b", owner.UID, "r2"); err != nil {
		t.Fatal(err)
	}
	if vm, _ := fakes["west"].Get(ctx, "b"); vm.Revision != "r2" {
		t.Errorf("b's revision on west = %q, want r2", vm.Revision)
	}
	if err := e.Delete(ctx, "b", owner.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := fakes["west"].Get(ctx, "b"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("b is still on west after Delete: %v", err)
	}
	if err := e.Delete(ctx, "b", owner.UID); err != nil {
		t.Errorf("Delete of a VM no endpoint holds = %v, want success", err)
	}
	if _, err := e.Get(ctx, "b"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Get of a VM no endpoint holds = %v, want ErrNotFound", err)
	}
}

// TestEndpoints_UnreachableIsNotGone: while an endpoint does not answer,
// List returns the others' VMs and names it; a VM there is neither found
// nor missing, and deleting it is not success.
func TestEndpoints_UnreachableIsNotGone(t *testing.T) {
	ctx := context.Background()
	e, _, cut := twoEndpoints()
	owner := vmprovider.Owner{UID: "uid-1"}
	for name, at := range map[string]string{"a": "east", "b": "west"} {
		if _, err := e.Create(ctx, vmprovider.Spec{Name: name, Owner: owner, Placement: vmprovider.Placement{Endpoint: at}}); err != nil {
			t.Fatal(err)
		}
	}
	cut["east"] = true
	l, err := e.List(ctx, owner.UID)
	var ue *vmprovider.UnreachableError
	if !errors.As(err, &ue) || !errors.Is(err, vmprovider.ErrUnreachable) {
		t.Fatalf("List with east cut off: %v, want an *UnreachableError", err)
	}
	if diff := cmp.Diff([]string{"east"}, ue.Endpoints); diff != "" {
		t.Errorf("unreachable endpoints (-want +got):\n%s", diff)
	}
	if !ue.Unreachable("") || !ue.Unreachable("east") || ue.Unreachable("west") {
		t.Errorf("Unreachable: default %v, east %v, west %v; want true, true, false", ue.Unreachable(""), ue.Unreachable("east"), ue.Unreachable("west"))
	}
	if len(l) != 1 || l[0].Name != "b" {
		t.Errorf("List with east cut off = %v, want west's b", l)
	}
	for op, call := range map[string]func() error{
		"Get":          func() error { _, err := e.Get(ctx, "a"); return err },
		"SetPower":     func() error { return e.SetPower(ctx, "a", owner.UID, vmprovider.PoweredOff) },
		"Delete":       func() error { return e.Delete(ctx, "a", owner.UID) },
		"MarkRevision": func() error { return e.MarkRevision(ctx, "a", owner.UID, "r") },
		"Get (never made)": func() error {
			_, err := e.Get(ctx, "zz")
			return err
		},
	} {
		if err := call(); !errors.Is(err, vmprovider.ErrUnreachable) || errors.Is(err, vmprovider.ErrNotFound) {
			t.Errorf("%s of a VM on the cut-off endpoint = %v, want ErrUnreachable (not ErrNotFound)", op, err)
		}
	}
	// What the endpoint that answers holds is served as ever.
	if err := e.SetPower(ctx, "b", owner.UID, vmprovider.PoweredOn); err != nil {
		t.Errorf("SetPower on west while east is cut off: %v", err)
	}
	cut["east"] = false
	if vm, err := e.Get(ctx, "a"); err != nil || vm.Endpoint != "east" {
		t.Errorf("Get(a) once east answers = %+v, %v", vm, err)
	}
}

// TestEndpoints_DuplicateName: with VMs of one name on both endpoints, an
// operation by name alone changes neither (ErrDuplicateName), and the same
// operations through On change the one copy named.
func TestEndpoints_DuplicateName(t *testing.T) {
	ctx := context.Background()
	e, fakes, _ := twoEndpoints()
	owner := vmprovider.Owner{UID: "uid-1"}
	for _, at := range []string{"east", "west"} {
		if _, err := e.Create(ctx, vmprovider.Spec{Name: "web-3", Owner: owner, PowerOn: true, Placement: vmprovider.Placement{Endpoint: at}}); err != nil {
			t.Fatal(err)
		}
	}
	for op, call := range map[string]func() error{
		"SetPower":     func() error { return e.SetPower(ctx, "web-3", owner.UID, vmprovider.PoweredOff) },
		"Delete":       func() error { return e.Delete(ctx, "web-3", owner.UID) },
		"MarkRevision": func() error { return e.MarkRevision(ctx, "web-3", owner.UID, "r2") },
		"Reset":        func() error { return e.Reset(ctx, "web-3", owner.UID) },
	} {
		if err := call(); !errors.Is(err, vmprovider.ErrDuplicateName) {
			t.Errorf("%s of a name on both endpoints = %v, want ErrDuplicateName", op, err)
		}
	}
	for _, at := range []string{"east", "west"} {
		if vm, err := fakes[at].Get(ctx, "web-3"); err != nil || vm.Power != vmprovider.PoweredOn || vm.Revision != "" {
			t.Errorf("web-3 on %s after refused calls = %+v, %v; want it on, with no revision", at, vm, err)
		}
	}

	if err := e.On("west").(vmprovider.RevisionMarker).MarkRevision(ctx, "web-3", owner.UID, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := e.On("west").(vmprovider.Resetter).Reset(ctx, "web-3", owner.UID); err != nil {
		t.Fatal(err)
	}
	if east, west := fakes["east"].Resets(), fakes["west"].Resets(); len(east) != 0 || len(west) != 1 {
		t.Errorf("after On(west).Reset: east reset %v, west %v; want west's copy reset, once", east, west)
	}
	if err := e.On("").Delete(ctx, "web-3", owner.UID); err != nil { // the default: east
		t.Fatal(err)
	}
	if _, err := fakes["east"].Get(ctx, "web-3"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("web-3 is still on east after On(default).Delete: %v", err)
	}
	if vm, err := fakes["west"].Get(ctx, "web-3"); err != nil || vm.Revision != "r2" {
		t.Errorf("web-3 on west = %+v, %v; want it kept, with revision r2", vm, err)
	}
	if err := e.On("east").Delete(ctx, "web-3", owner.UID); err != nil {
		t.Errorf("On(east).Delete of a VM gone from that endpoint = %v, want success", err)
	}
	if err := e.On("north").Delete(ctx, "web-3", owner.UID); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("On(north).Delete, an endpoint not configured, = %v, want ErrInvalidSpec", err)
	}
	if err := e.On("east").(vmprovider.RevisionMarker).MarkRevision(ctx, "web-3", owner.UID, "r3"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("On(east).MarkRevision of a VM gone from that endpoint = %v, want ErrNotFound", err)
	}
	// With one copy left, calls by name reach it as ever.
	if err := e.Delete(ctx, "web-3", owner.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := fakes["west"].Get(ctx, "web-3"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("web-3 is still on west after Delete: %v", err)
	}
}

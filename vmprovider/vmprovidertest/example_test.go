package vmprovidertest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// Run the conformance check from your own provider's tests; here against
// the Fake, which keeps the contract.
func ExampleVerify() {
	err := vmprovidertest.Verify(context.Background(), &vmprovidertest.Fake{}, vmprovider.Spec{Name: "conformance"})
	fmt.Println(err)
	// Output:
	// <nil>
}

// Test code that uses a provider against the Fake: it creates, powers and
// lists VMs as a real provider would, a Fail function injects the
// platform's faults, and Add puts in VMs someone else made.
func ExampleFake() {
	ctx := context.Background()
	f := &vmprovidertest.Fake{Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }}
	vm, err := f.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true})
	fmt.Println(vm.InstanceUUID, vm.Power, vm.BootedAt.Format(time.Kitchen), err)

	if err := f.SetPower(ctx, "web-0", "uid-web", vmprovider.PoweredOff); err != nil {
		fmt.Println(err)
		return
	}
	f.Add(vmprovider.VM{Name: "db-0", Power: vmprovider.PoweredOn}) // no owner mark
	vms, _ := f.List(ctx, "uid-web")
	fmt.Println(len(vms), vms[0].Name, vms[0].Power)

	f.Fail = func(op, name string) error {
		if op == "create" {
			return errors.New("datastore full")
		}
		return nil
	}
	_, err = f.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: vmprovider.Owner{UID: "uid-web"}})
	fmt.Println(err)
	// Output:
	// fake-00000001 PoweredOn 12:00PM <nil>
	// 1 web-0 PoweredOff
	// datastore full
}

// Lose plays an answer lost on its way back: the create is made, but the
// caller is told it failed, as a clone whose connection broke after
// vCenter took the task.
func ExampleFake_lose() {
	ctx := context.Background()
	f := &vmprovidertest.Fake{Lose: func(op, name string) error {
		if op == "create" {
			return errors.New("read tcp: i/o timeout")
		}
		return nil
	}}
	_, err := f.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: vmprovider.Owner{UID: "uid-web"}})
	fmt.Println(err)
	vm, err := f.Get(ctx, "web-0")
	fmt.Println(vm.Name, vm.Owner, err)
	// Output:
	// read tcp: i/o timeout
	// web-0 uid-web <nil>
}

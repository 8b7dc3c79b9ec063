package vsphere

import (
	"reflect"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestSameVM_EveryField: a change of any one field of a VM is a change the
// watch reports (sameVM false), so a field added to vmprovider.VM cannot
// be forgotten there.
func TestSameVM_EveryField(t *testing.T) {
	var a vmprovider.VM
	typ := reflect.TypeFor[vmprovider.VM]()
	for i := range typ.NumField() {
		b := a
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Interface().(type) {
		case time.Time:
			f.Set(reflect.ValueOf(time.Unix(5, 0)))
		case []string:
			f.Set(reflect.ValueOf([]string{"10.0.0.1"}))
		default:
			switch f.Kind() {
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int32, reflect.Int64:
				f.SetInt(7)
			default:
				t.Fatalf("field %s of kind %s: teach the test to change it", typ.Field(i).Name, f.Kind())
			}
		}
		if sameVM(a, b) {
			t.Errorf("sameVM(a, a with %s changed) = true, want false", typ.Field(i).Name)
		}
	}
}

// TestWatch_ResizePinnedUntilAgreed: a resize written through Cached
// (put) outlives an update from before it, of the old size and revision
// in the same power state, and ends with the update that reports the new
// ones.
func TestWatch_ResizePinnedUntilAgreed(t *testing.T) {
	w := NewWatch(nil)
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"}
	update := func(kind types.ObjectUpdateKind, memory int32, revision string) types.ObjectUpdate {
		return types.ObjectUpdate{Kind: kind, Obj: ref, ChangeSet: []types.PropertyChange{
			{Name: "name", Val: "web-0"},
			{Name: "config.instanceUuid", Val: "uuid-1"},
			{Name: "runtime.powerState", Val: types.VirtualMachinePowerStatePoweredOn},
			{Name: "config.hardware.numCPU", Val: int32(2)},
			{Name: "config.hardware.memoryMB", Val: memory},
			{Name: "config.extraConfig", Val: []types.BaseOptionValue{&types.OptionValue{Key: KeyRevision, Value: revision}}},
		}}
	}
	w.apply([]types.ObjectUpdate{update(types.ObjectUpdateKindEnter, 2048, "r1")})
	resized := vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-1", Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 4096,
		Revision: "r2", Heartbeat: vmprovider.HeartbeatGray}
	w.put(resized)
	w.apply([]types.ObjectUpdate{update(types.ObjectUpdateKindModify, 2048, "r1")})
	if vm, ok := w.Get("web-0"); !ok || vm.MemoryMiB != 4096 || vm.Revision != "r2" {
		t.Fatalf("after an update from before the resize: Get = %+v, %v; want the resized 4096 MiB on r2", vm, ok)
	}
	w.apply([]types.ObjectUpdate{update(types.ObjectUpdateKindModify, 4096, "r2")})
	if _, pinned := w.written["web-0"]; pinned {
		t.Errorf("the update reporting the resize left the write's pin in place")
	}
}

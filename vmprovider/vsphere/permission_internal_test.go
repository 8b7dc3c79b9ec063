package vsphere

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25/types"
)

// TestWithPrivileges: the privileges a NoPermission fault lists are said
// first, in either of vCenter's forms, whether the fault came back from a
// task or sits in any branch of a joined error; an error without one, a
// NotAuthenticated among them, is returned as it was.
func TestWithPrivileges(t *testing.T) {
	folder := types.ManagedObjectReference{Type: "Folder", Value: "group-v3"}
	inTask := func(f types.BaseMethodFault) error {
		return task.Error{LocalizedMethodFault: &types.LocalizedMethodFault{Fault: f, LocalizedMessage: "Permission to perform this operation was denied."}}
	}
	older := &types.NoPermission{Object: &folder, PrivilegeId: "VirtualMachine.Inventory.CreateFromExisting"}
	newer := &types.NoPermission{MissingPrivileges: []types.NoPermissionEntityPrivileges{
		{Entity: folder, PrivilegeIds: []string{"VirtualMachine.Inventory.CreateFromExisting"}},
		{Entity: types.ManagedObjectReference{Type: "Datastore", Value: "datastore-1"}}, // no IDs: said not at all
	}}
	const want = "the account lacks VirtualMachine.Inventory.CreateFromExisting on Folder group-v3: "
	for _, c := range []struct {
		desc string
		err  error
		want string
	}{
		{"an older vCenter's fault, from a task", fmt.Errorf("clone: %w", inTask(older)), want + "clone: Permission to perform this operation was denied."},
		{"vSphere 8's fault, from a task", inTask(newer), want + "Permission to perform this operation was denied."},
		{"in the second branch of a joined error", fmt.Errorf("create: %w", errors.Join(errors.New("clone failed"), fmt.Errorf("remove: %w", inTask(older)))),
			want + "create: clone failed\nremove: Permission to perform this operation was denied."},
		{"a NotAuthenticated", inTask(&types.NotAuthenticated{NoPermission: *older}), "Permission to perform this operation was denied."},
		{"no fault", errors.New("plain"), "plain"},
	} {
		got := withPrivileges(c.err)
		if got.Error() != c.want {
			t.Errorf("%s: withPrivileges gave %q, want %q", c.desc, got.Error(), c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: withPrivileges(err) no longer wraps err", c.desc)
		}
		if again := withPrivileges(got); again.Error() != got.Error() {
			t.Errorf("%s: withPrivileges twice gave %q", c.desc, again.Error())
		}
	}
	if got := withPrivileges(inTask(newer)); !fault.Is(got, &types.NoPermission{}) {
		t.Errorf("withPrivileges(%v) lost the fault", got)
	}
	if withPrivileges(nil) != nil {
		t.Error("withPrivileges(nil) is not nil")
	}
}

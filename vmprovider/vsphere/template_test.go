package vsphere_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// rebuildTemplate replaces the VM tmpl with a new one of the same name and
// folder, as Packer's -force or an image pipeline does: a clone with
// memoryMiB of memory under a passing name, the old one destroyed, the new
// one renamed. It returns the new template.
func rebuildTemplate(t *testing.T, sim *vcsimtest.Sim, tmpl *object.VirtualMachine, memoryMiB int32) *object.VirtualMachine {
	t.Helper()
	ctx := context.Background()
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"name", "parent"}, &m); err != nil {
		t.Fatal(err)
	}
	folder := object.NewFolder(tmpl.Client(), *m.Parent)
	task, err := tmpl.Clone(ctx, folder, m.Name+"-build", types.VirtualMachineCloneSpec{
		Config: &types.VirtualMachineConfigSpec{MemoryMB: int64(memoryMiB)},
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		t.Fatalf("clone the new template: %v", err)
	}
	built := object.NewVirtualMachine(tmpl.Client(), info.Result.(types.ManagedObjectReference))
	run(t, "power off the old template", tmpl.PowerOff)
	run(t, "destroy the old template", tmpl.Destroy)
	run(t, "rename the new template", func(ctx context.Context) (*object.Task, error) { return built.Rename(ctx, m.Name) })
	return built
}

// TestCreate_TemplateRebuilt: a template rebuilt under the same name (the
// old VM destroyed, a new one in its place) is picked up by the next
// create: the provider looks the name up again when vCenter says the
// template it had is gone, instead of failing every clone until it is
// restarted. While no VM has the name, creates fail as an invalid spec.
func TestCreate_TemplateRebuilt(t *testing.T) {
	for _, linked := range []bool{false, true} {
		t.Run(fmt.Sprintf("linked=%t", linked), func(t *testing.T) {
			faults, sim, p := startCounted(t)
			ctx := context.Background()
			tmpl, _ := templateVM(t, sim) // the provider's default template
			if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: linked}); err != nil {
				t.Fatalf("Create(web-0) from the first template: %v", err)
			}

			built := rebuildTemplate(t, sim, tmpl, 2048)
			clones := faults.Record("CloneVM_Task")
			vm, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA, LinkedClone: linked})
			if err != nil {
				t.Fatalf("Create(web-1) after the template was rebuilt under its name: %v", err)
			}
			if vm.MemoryMiB != 2048 {
				t.Errorf("web-1 has %d MiB of memory, want the rebuilt template's 2048", vm.MemoryMiB)
			}
			if got := len(clones.Bodies()); got > 2 {
				t.Errorf("%d CloneVM_Task calls for one create over a rebuilt template, want at most 2 (the stale template refused, then the new one)", got)
			}
			if linked {
				if names, _ := snapshots(t, built); len(names) != 1 {
					t.Errorf("the rebuilt template has snapshots %q, want the one its first linked clone took", names)
				}
			}

			// The template gone, none in its place: an invalid spec.
			run(t, "destroy the template", built.Destroy)
			if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-2", Owner: ownerA, LinkedClone: linked}); !errors.Is(err, vmprovider.ErrInvalidSpec) || !errors.Is(err, vsphere.ErrTemplateNotFound) {
				t.Fatalf("Create(web-2) with no template of the name: %v, want ErrInvalidSpec and ErrTemplateNotFound", err)
			}
			if n := count(t, sim, "web-2"); n != 0 {
				t.Errorf("%d VMs web-2 after the failed create, want none", n)
			}
		})
	}
}

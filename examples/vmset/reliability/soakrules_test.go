package reliability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// TestSoakWatch_Rules feeds the soak's watch changes on a clock of the
// test's own: it must report a set that made a VM above its count plus
// maxSurge and one that deleted an available VM below its count minus
// maxUnavailable, and nothing when a scale seen late explains the change,
// or when the set is being deleted.
func TestSoakWatch_Rules(t *testing.T) {
	cases := []struct {
		name  string
		steps func(f *feed)
		want  string // in the first breach; empty for none
	}{
		{"create within the surge", func(f *feed) { f.scale(3); f.create(4) }, ""},
		{"create above the surge", func(f *feed) { f.scale(3); f.create(5) }, "5 VMs once web-4 appeared, above 4"},
		{"a scale-up seen after the creates", func(f *feed) { f.scale(3); f.create(6); f.tick(time.Second); f.scale(6) }, ""},
		{"a scale-up seen long after", func(f *feed) { f.scale(3); f.create(6); f.tick(2 * grace); f.scale(6) }, "above 4"},
		{"delete within maxUnavailable", func(f *feed) { f.scale(3); f.create(3); f.ready(3); f.delete(1) }, ""},
		{"delete below maxUnavailable", func(f *feed) { f.scale(3); f.create(3); f.ready(3); f.delete(2) }, "leaving 1 available, below 2"},
		{"a scale-down seen after the deletes", func(f *feed) {
			f.scale(3)
			f.create(3)
			f.ready(3)
			f.tick(2 * lag)
			f.delete(2)
			f.scale(1)
		}, ""},
		{"the set deleted, its VMs going", func(f *feed) { f.scale(3); f.create(3); f.ready(3); f.delete(3); f.deleteSet() }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFeed()
			c.steps(f)
			f.tick(2 * grace)
			_, n, first := f.w.report()
			switch {
			case c.want == "" && n > 0:
				t.Errorf("breaches %v, want none", first)
			case c.want != "" && (n == 0 || !strings.Contains(first[0], c.want)):
				t.Errorf("breaches %v, want one saying %q", first, c.want)
			}
		})
	}
}

// feed plays changes of one set "web" and its VMs into a soakWatch.
type feed struct {
	w   *soakWatch
	at  time.Time
	set *vmv1.VirtualMachineReplicaSet
	vms []*vmv1.VirtualMachine
}

func newFeed() *feed {
	f := &feed{at: time.Unix(1_000_000, 0)}
	f.w = newSoakWatch()
	f.w.now = func() time.Time { return f.at }
	f.set = &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "set"}}
	return f
}

// tick moves the clock on, and lets the watch judge what is due.
func (f *feed) tick(d time.Duration) {
	f.at = f.at.Add(d)
	f.w.mu.Lock()
	f.w.judge(f.at)
	f.w.mu.Unlock()
}

// scale sets spec.replicas, a tenth of a second on.
func (f *feed) scale(n int32) {
	f.tick(100 * time.Millisecond)
	f.set = f.set.DeepCopy()
	f.set.Spec.Replicas = ptr.To(n)
	f.w.set(f.set, false)
}

// deleteSet deletes the set.
func (f *feed) deleteSet() {
	f.tick(100 * time.Millisecond)
	f.w.set(f.set, true)
}

// create makes VMs until the set has n, not ready.
func (f *feed) create(n int) {
	for len(f.vms) < n {
		f.tick(100 * time.Millisecond)
		i := len(f.vms)
		vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprint("vm-", i)),
			OwnerReferences: []metav1.OwnerReference{{Kind: "VirtualMachineReplicaSet", Name: "web", UID: "set", Controller: ptr.To(true)}},
		}}
		f.vms = append(f.vms, vm)
		f.w.vm(vm, false)
	}
}

// ready makes the first n VMs Ready.
func (f *feed) ready(n int) {
	for i := range n {
		f.tick(100 * time.Millisecond)
		vm := f.vms[i].DeepCopy()
		vm.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
		f.vms[i] = vm
		f.w.vm(vm, false)
	}
}

// delete marks the first n VMs not yet deleted as being deleted.
func (f *feed) delete(n int) {
	for i := 0; i < len(f.vms) && n > 0; i++ {
		if f.vms[i].DeletionTimestamp != nil {
			continue
		}
		f.tick(100 * time.Millisecond)
		vm := f.vms[i].DeepCopy()
		vm.DeletionTimestamp = &metav1.Time{Time: f.at}
		f.vms[i] = vm
		f.w.vm(vm, false)
		n--
	}
}

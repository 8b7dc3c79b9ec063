package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// sizeWatch checks, from outside the operator, that no VM of a set is
// recorded on a revision vCenter does not show: a watch of its own of the
// set's VirtualMachines (resumed where it stopped) keeps each one's
// revision label and spec.memoryMiB, and a poll of vCenter (one session,
// every 100 ms) reads every VM's memory and the revision recorded in its
// ExtraConfig. At each read it checks, of every VM of the set:
//
//   - labelled with revision L before the read (the watch's picture just
//     before it) and still asking for L's memory after it (just after
//     it: no later change was asked for meanwhile), vCenter shows L's
//     memory: the binding moves the label only once vCenter shows the
//     change, so a VM labelled with the new revision while vCenter shows
//     the old size is a breach, whenever it is seen;
//   - recorded in vCenter on revision R (vsphere.KeyRevision), vCenter
//     shows R's memory: the provider sets both in one reconfigure, so a
//     VM on R with another size is half-changed;
//
// and that vCenter never holds more of the set's VMs than bound. Every
// move of a label the watch sees (one VM, one UID, from one revision to
// another) is checked by the first read after it, or overtaken (the VM
// gone, or asked for another size, before a read could check it). The
// memory of each revision is what the test says it is (revision) before
// the set's VMs can move to it.
type sizeWatch struct {
	owner  ktypes.UID
	ns     string
	prefix string // the vSphere names of the set's VMs start with it
	bound  int
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch and the poll have ended

	mu      sync.Mutex
	seq     int                   // changes the watch has delivered
	vms     map[string]sizeVM     // the set's VirtualMachines as last seen, by name
	memory  map[string]int64      // each revision's memory, as the test said
	moves   map[string]labelMove  // label moves not yet checked by a read, by name
	failed  map[string][]int64    // VMs seen refused (Resized False, ResizeFailed): the memory each refusal was for
	movedTo map[string][]string   // the revisions each VM's label was seen moving to, by name
	report  sizeReport            //
	ended   string                // why the watch ended before stop, if it did
	shows   map[string]vcsimShows // each VM as the last full read of vCenter showed it, by name
}

// sizeVM is what sizeWatch keeps of one VirtualMachine of the set.
type sizeVM struct {
	uid      ktypes.UID
	revision string
	memory   int64
}

// labelMove is a VM's revision label moved to revision, seen as the
// watch's seq-th change.
type labelMove struct {
	uid      ktypes.UID
	revision string
	seq      int
}

// vcsimShows is what a read of vCenter showed of one VM.
type vcsimShows struct {
	memory   int64
	revision string
	power    types.VirtualMachinePowerState
}

// sizeReport is what sizeWatch saw.
type sizeReport struct {
	// Reads counts the reads of vCenter it checked, Failed those that
	// failed (a VM destroyed between a read's two calls); Checked the
	// VMs it checked labelled with a revision whose memory is known.
	Reads, Failed, Checked int
	// Moves counts the label moves the watch saw; Confirmed those a
	// read after them checked, Overtaken those it could not.
	Moves, Confirmed, Overtaken int
	// MostVCenter is the most of the set's VMs one read saw.
	MostVCenter int
	// Breaches counts the breaches, First describes the first few.
	Breaches int
	First    []string
}

// watchSizes starts a sizeWatch of set, whose VMs vCenter must never hold
// more than bound of; stop it when the scenario ends.
func watchSizes(t *seeded, e *testenv.Env, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet, bound int) *sizeWatch {
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	s := &sizeWatch{owner: set.UID, ns: set.Namespace, prefix: set.Namespace + "-" + set.Name + "-", bound: bound,
		done: make(chan struct{}), vms: map[string]sizeVM{}, memory: map[string]int64{}, moves: map[string]labelMove{},
		failed: map[string][]int64{}, movedTo: map[string][]string{}, shows: map[string]vcsimShows{}}
	var l vmv1.VirtualMachineList
	if err := c.List(context.Background(), &l, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		s.put(watch.Added, &l.Items[i])
	}
	vc, logout, err := vsphere.Connect(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	folder, err := vcsim.VMFolder(context.Background(), vc, sim.Config())
	if err != nil {
		_ = logout(context.Background())
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	rw, err := toolswatch.NewRetryWatcherWithContext(ctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &vmv1.VirtualMachineList{}, client.InNamespace(s.ns), &client.ListOptions{Raw: &o})
		}})
	if err != nil {
		cancel()
		_ = logout(context.Background())
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer rw.Stop()
		for ev := range rw.ResultChan() {
			if vm, ok := ev.Object.(*vmv1.VirtualMachine); ok {
				s.put(ev.Type, vm)
			} else if ev.Type == watch.Error && ctx.Err() == nil {
				s.mu.Lock()
				s.ended = fmt.Sprintf("the watch ended: %v", apierrors.FromObject(ev.Object))
				s.mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		defer func() { _ = logout(context.Background()) }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			before := s.snapshot()
			vms, err := vcsim.ChildVMs(ctx, vc, folder, "name", "summary.config", "config.extraConfig", "runtime.powerState")
			if ctx.Err() != nil {
				return
			}
			s.judge(before, vms, err)
		}
	}()
	go func() {
		wg.Wait()
		close(s.done)
	}()
	t.Cleanup(s.stop)
	return s
}

// revision tells s that revision's VMs have memory MiB; tell it before
// any VM can move onto the revision.
func (s *sizeWatch) revision(revision string, memory int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memory[revision] = memory
}

// put records vm as a change of type typ shows it.
func (s *sizeWatch) put(typ watch.EventType, vm *vmv1.VirtualMachine) {
	if controllerOf(vm) != s.owner {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if typ == watch.Deleted {
		delete(s.vms, vm.Name)
		return
	}
	cur := sizeVM{uid: vm.UID, revision: vm.Labels[kube.RevisionLabel], memory: vm.Spec.MemoryMiB}
	if prev, ok := s.vms[vm.Name]; ok && prev.uid == cur.uid && prev.revision != "" && prev.revision != cur.revision {
		s.moves[vm.Name] = labelMove{uid: cur.uid, revision: cur.revision, seq: s.seq}
		s.movedTo[vm.Name] = append(s.movedTo[vm.Name], cur.revision)
		s.report.Moves++
	}
	s.vms[vm.Name] = cur
	if c := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionResized); c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason == controllers.ReasonResizeFailed && c.ObservedGeneration == vm.Generation && !slices.Contains(s.failed[vm.Name], vm.Spec.MemoryMiB) {
		s.failed[vm.Name] = append(s.failed[vm.Name], vm.Spec.MemoryMiB)
	}
}

// sizeSnapshot is the watch's picture at a moment: the set's
// VirtualMachines and the number of changes seen until then.
type sizeSnapshot struct {
	seq int
	vms map[string]sizeVM
}

func (s *sizeWatch) snapshot() sizeSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sizeSnapshot{seq: s.seq, vms: maps.Clone(s.vms)}
}

// judge checks a read of vCenter (vms, or the error that ended it) made
// between the picture before and the watch's picture now.
func (s *sizeWatch) judge(before sizeSnapshot, vms []mo.VirtualMachine, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.report.Failed++
		return
	}
	s.report.Reads++
	after := s.vms
	ok := map[string]bool{} // VMs whose label this read checked, and found shown
	var names []string
	shows := map[string]vcsimShows{}
	for _, vm := range vms {
		if !strings.HasPrefix(vm.Name, s.prefix) {
			continue
		}
		names = append(names, vm.Name)
		name := strings.TrimPrefix(vm.Name, s.ns+"-")
		got := vcsimShows{revision: extraConfig(vm, vsphere.KeyRevision), power: vm.Runtime.PowerState}
		if vm.Summary.Config.MemorySizeMB != 0 {
			got.memory = int64(vm.Summary.Config.MemorySizeMB)
		}
		shows[name] = got
		if m, known := s.memory[got.revision]; known && got.memory != m {
			s.breach("vCenter records revision %s (%d MiB) on %s, which has %d MiB: half-changed", got.revision, m, name, got.memory)
		}
		b, inBefore := before.vms[name]
		a, inAfter := after[name]
		m, known := s.memory[b.revision]
		if !inBefore || !inAfter || b.uid != a.uid || !known || a.memory != m {
			continue
		}
		s.report.Checked++
		if got.memory != m {
			s.breach("%s is labelled with revision %s (%d MiB, and still asks for it) while vCenter shows %d MiB", name, b.revision, m, got.memory)
			continue
		}
		ok[name] = true
	}
	s.shows = shows
	s.report.MostVCenter = max(s.report.MostVCenter, len(names))
	if len(names) > s.bound {
		slices.Sort(names)
		s.breach("%d of the set's VMs in vCenter, above %d: %v", len(names), s.bound, names)
	}
	for name, mv := range s.moves {
		if mv.seq > before.seq {
			continue // after the picture this read is judged against: the next read checks it
		}
		if b, in := before.vms[name]; in && b.uid == mv.uid && b.revision == mv.revision && ok[name] {
			s.report.Confirmed++
		} else {
			s.report.Overtaken++
		}
		delete(s.moves, name)
	}
}

// breach records a breach, the first few described.
func (s *sizeWatch) breach(format string, args ...any) {
	s.report.Breaches++
	if len(s.report.First) < 5 {
		s.report.First = append(s.report.First, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

// extraConfig is the value of key in vm's ExtraConfig, "" when it has none.
func extraConfig(vm mo.VirtualMachine, key string) string {
	if vm.Config == nil {
		return ""
	}
	for _, o := range vm.Config.ExtraConfig {
		if v := o.GetOptionValue(); v != nil && v.Key == key {
			s, _ := v.Value.(string)
			return s
		}
	}
	return ""
}

// refused returns the VMs the watch has seen refused a resize to memory
// MiB (Resized False with the reason ResizeFailed, for their spec then).
func (s *sizeWatch) refused(memory int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, ms := range s.failed {
		if slices.Contains(ms, memory) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// moved reports whether the watch has seen name's revision label move
// to revision: the VM was updated in place, not replaced.
func (s *sizeWatch) moved(name, revision string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.movedTo[name], revision)
}

// poweredOff returns the set's VMs the last read of vCenter showed
// powered off.
func (s *sizeWatch) poweredOff() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, vm := range s.shows {
		if vm.power == types.VirtualMachinePowerStatePoweredOff {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// reads returns how many reads of vCenter s has checked so far.
func (s *sizeWatch) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report.Reads
}

// stop ends the watch and the poll.
func (s *sizeWatch) stop() {
	s.cancel()
	<-s.done
}

// check stops s and fails on what it saw: a breach, a label move no read
// checked, a watch that ended, or no read at all.
func (s *sizeWatch) check(t *seeded) sizeReport {
	t.Helper()
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.report
	if r.Breaches > 0 {
		t.Errorf("the size watch saw %d breaches:\n%s", r.Breaches, strings.Join(r.First, "\n"))
	}
	if s.ended != "" || r.Reads == 0 {
		t.Errorf("the size watch lost track (%s) or never read vCenter (%d reads, %d failed)", s.ended, r.Reads, r.Failed)
	}
	return r
}

func (r sizeReport) String() string {
	return fmt.Sprintf("%d reads of vCenter (%d failed), %d labelled VMs checked, %d breaches; %d label moves, %d checked by the next read, %d overtaken",
		r.Reads, r.Failed, r.Checked, r.Breaches, r.Moves, r.Confirmed, r.Overtaken)
}

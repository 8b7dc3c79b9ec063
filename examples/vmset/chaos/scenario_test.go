package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// scenario is one kind of trouble; the random ones are seeded with the
// scenario's seed.
type scenario struct {
	name    string
	api     bool // 20% of the operator's API writes fail
	lag     bool // its cache lags, each watch read waiting up to 300 ms
	vcenter bool // 20% of vCenter's clone, power-on and destroy tasks fail
	restart bool // restart the operator mid-scale
	foreign bool // plant foreign objects and VMs first
}

// vcFaults are the vCenter methods that fail in the scenarios with
// vCenter faults.
var vcFaults = []string{"CloneVM_Task", "PowerOnVM_Task", "Destroy_Task"}

// row is one line of the printed table.
type row struct {
	name, steps, injected, final    string
	maxChildren, leaked, duplicates int
	foreignChanged                  int
	took                            time.Duration
}

const setName = "chaos-rs"

func (sc scenario) run(t *seeded, e *testenv.Env, n, cycles int) row {
	begin := time.Now()
	var api *faults.Injector
	if sc.api {
		api = faults.New(0.2, t.seed)
	}
	var lag *faults.Lag
	if sc.lag {
		lag = faults.NewLag(300*time.Millisecond, t.seed)
	}
	ctx := context.Background()
	ns := namespace(t, e, "chaos-"+sc.name)
	var sim *vcsimtest.Sim
	var vcf *vcsim.Faults
	if sc.vcenter {
		vcf = &vcsim.Faults{Methods: vcFaults, Seed: t.seed, FailFirst: true}
		sim = vcsimtest.StartFaulty(t, vcf)
	} else {
		sim = vcsimtest.Start(t)
	}
	var planted *foreignObjects
	if sc.foreign {
		planted = plantForeign(t, e, sim, ns)
	}
	if vcf != nil {
		vcf.SetProbability(0.2)
	}
	op := &operator{t: t, e: e, ns: ns, sim: sim, api: api, lag: lag}
	op.start()

	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				// Networks and cloud-init on every VM, as people run them.
				Spec: vmv1.VirtualMachineSpec{
					CPUs: 1, MemoryMiB: 256,
					Network: &vmv1.VirtualMachineNetwork{Interfaces: []vmv1.NetworkInterface{{Network: "DC0_DVPG0"}, {Network: "VM Network"}}},
					Bootstrap: &vmv1.VirtualMachineBootstrap{CloudInit: &vmv1.CloudInitBootstrap{
						UserData: "#cloud-config\npackages: [nginx]\n",
						MetaData: "network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n",
					}},
				},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	w := watchChildren(e, ns, set.UID)
	prev := 0
	var restarts []string
	for range cycles {
		for _, desired := range []int{n, 0} {
			w.bound.Store(int64(max(prev, desired)))
			patch := client.MergeFrom(set.DeepCopy())
			set.Spec.Replicas = ptr.To(int32(desired))
			if err := e.Client.Patch(ctx, set, patch); err != nil {
				t.Fatal(err)
			}
			if sc.restart {
				restarts = append(restarts, op.restartMidway(ns, set.UID, prev, desired))
			}
			converge(t, e, sim, ns, desired)
			w.bound.Store(int64(desired)) // settled: nothing beyond it from now on
			prev = desired
		}
	}
	w.stop()
	if planted != nil {
		planted.reported(t, e)
	}
	op.stop()

	r := row{name: sc.name, steps: fmt.Sprintf("%d × 0→%d→0", cycles, n), maxChildren: int(w.max.Load()), final: "converged"}
	r.leaked, r.duplicates = leaksAndDuplicates(t, e, sim, ns)
	if planted != nil {
		r.foreignChanged = planted.changed(t, e)
	}
	var inj []string
	if api != nil {
		inj = append(inj, api.String())
		if api.Injected() == 0 {
			t.Errorf("no API fault was injected: the scenario exercised nothing")
		}
	}
	if lag != nil {
		inj = append(inj, fmt.Sprintf("%d lagging watch reads", lag.Reads.Load()))
		if lag.Reads.Load() == 0 {
			t.Errorf("the cache never lagged: the scenario exercised nothing")
		}
	}
	if vcf != nil {
		got := vcf.Injected()
		inj = append(inj, fmt.Sprintf("%d vCenter task failures", got))
		if got == 0 {
			t.Errorf("no vCenter fault was injected: the scenario exercised nothing")
		}
	}
	if sc.restart {
		inj = append(inj, fmt.Sprintf("%d restarts at (live,deleting) %s", len(restarts), strings.Join(restarts, " ")))
	}
	if planted != nil {
		inj = append(inj, "3 foreign objects")
	}
	if len(inj) == 0 {
		inj = []string{"none"}
	}
	r.injected = strings.Join(inj, "; ")
	if over := w.over.Load(); over > 0 {
		t.Errorf("a watcher saw %d more live children than desired", over)
	}
	if r.leaked+r.duplicates+r.foreignChanged > 0 {
		t.Errorf("%d leaked vSphere VMs, %d duplicates, %d foreign objects changed", r.leaked, r.duplicates, r.foreignChanged)
	}
	if t.Failed() {
		r.final = "FAILED"
	}
	r.took = time.Since(begin)
	return r
}

// operator is the example operator's manager, in process, restartable.
type operator struct {
	t    testing.TB
	e    *testenv.Env
	ns   string // the only namespace it sees (testenv.OnlyNamespace)
	sim  *vcsimtest.Sim
	api  *faults.Injector
	lag  *faults.Lag
	stop func()
	// zones are the operator's zone placements, zoneBackoff how long a
	// set's new VMs avoid a zone whose clone failed (zero: the default).
	zones       map[string]vmprovider.Placement
	zoneBackoff time.Duration
	// config, when set, edits the provider's configuration (its
	// credentials, say) at each start.
	config func(*vsphere.Config)
}

// start runs a fresh manager: new caches, expectations and vCenter session.
func (o *operator) start() {
	cfg := o.sim.Config()
	if o.config != nil {
		o.config(&cfg)
	}
	p, err := vsphere.New(context.Background(), cfg)
	if err != nil {
		o.t.Fatal(err)
	}
	edit := []func(*ctrl.Options){testenv.OnlyNamespace(o.ns)}
	if o.api != nil {
		edit = append(edit, func(opts *ctrl.Options) { opts.NewClient = faults.NewClient(o.api.Funcs()) })
	}
	if o.lag != nil {
		edit = append(edit, func(opts *ctrl.Options) { opts.NewCache = o.lag.NewCache() })
	}
	stopMgr := o.e.StartManager(o.t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconciler(p)
		r.Zones = o.zones
		return controllers.Setup(mgr, r, func(rs *kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]) {
			rs.ZoneBackoff = o.zoneBackoff
		})
	}, edit...)
	var once sync.Once
	o.stop = func() {
		once.Do(func() {
			stopMgr()
			_ = p.Close(context.Background())
		})
	}
	o.t.Cleanup(o.stop)
}

// restartMidway waits until the set's children have moved away from prev
// toward desired, stops the operator, and starts a new one. It says where
// it stopped.
func (o *operator) restartMidway(ns string, uid types.UID, prev, desired int) string {
	live, deleting := -1, -1
	_ = wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		live, deleting, err = children(ctx, o.e.Client, ns, uid)
		return err == nil && live != prev, nil
	})
	o.stop()
	o.start()
	return fmt.Sprintf("(%d,%d)", live, deleting)
}

// converge waits until both sides hold exactly desired VMs.
func converge(t testing.TB, e *testenv.Env, sim *vcsimtest.Sim, ns string, desired int) {
	t.Helper()
	var st vmcheck.State
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		got, err := observeAll(e, []vsphere.Config{sim.Config()}, ns)
		if err != nil {
			last = err
			return false, nil
		}
		st, last = got, nil
		return st.Settled(desired), nil
	})
	if err != nil {
		t.Fatalf("not converged on %d in 3 minutes: last read %v (then a read failed: %v)%s%s", desired, st, last, unsettled(e, ns), stacks())
	}
}

// unsettled describes the namespace's VirtualMachines that are not powered
// on or prepare to leave, with their Ready condition and lifecycle
// annotations, for a failure message.
func unsettled(e *testenv.Env, ns string) string {
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		return fmt.Sprintf("; list VirtualMachines: %v", err)
	}
	var out strings.Builder
	for _, vm := range l.Items {
		since, leaving := vm.Annotations[kube.AnnotationPreparing]
		if vm.Status.PowerState == string(vmv1.PoweredOn) && vm.DeletionTimestamp == nil && !leaving {
			continue
		}
		fmt.Fprintf(&out, "\n  %s: power %q, deleting %v, generation %d observed %d", vm.Name, vm.Status.PowerState, vm.DeletionTimestamp != nil, vm.Generation, vm.Status.ObservedGeneration)
		if leaving {
			fmt.Fprintf(&out, ", preparing since %s, pre-delete hooks %v", since, kube.PreDeleteHooks(&vm, controllers.HookDomain))
		}
		for _, c := range vm.Status.Conditions {
			fmt.Fprintf(&out, "; %s=%s %s: %s (at %v)", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.Time.Format(time.TimeOnly))
		}
	}
	return out.String()
}

// children counts the VirtualMachines controlled by uid, live and being
// deleted, read from the API server.
func children(ctx context.Context, c client.Client, ns string, uid types.UID) (live, deleting int, err error) {
	var l vmv1.VirtualMachineList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	for _, vm := range l.Items {
		switch ref := metav1.GetControllerOfNoCopy(&vm); {
		case ref == nil || ref.UID != uid:
		case vm.DeletionTimestamp != nil:
			deleting++
		default:
			live++
		}
	}
	return live, deleting, nil
}

// watcher polls the API server for the set's live children and records the
// most it saw and the most beyond the bound in force.
type watcher struct {
	bound, max, over atomic.Int64
	done             chan struct{}
	stopped          chan struct{}
}

func watchChildren(e *testenv.Env, ns string, uid types.UID) *watcher {
	w := &watcher{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		for {
			select {
			case <-w.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			live, _, err := children(context.Background(), e.Client, ns, uid)
			if err != nil {
				continue
			}
			if int64(live) > w.max.Load() {
				w.max.Store(int64(live))
			}
			if over := int64(live) - w.bound.Load(); over > w.over.Load() {
				w.over.Store(over)
			}
		}
	}()
	return w
}

func (w *watcher) stop() {
	close(w.done)
	<-w.stopped
}

// leaksAndDuplicates counts the namespace's vSphere VMs that no
// VirtualMachine accounts for, and names held by more than one VM.
func leaksAndDuplicates(t testing.TB, e *testenv.Env, sim *vcsimtest.Sim, ns string) (leaked, dups int) {
	t.Helper()
	st, err := observeAll(e, []vsphere.Config{sim.Config()}, ns)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range st.VCenter {
		if i > 0 && st.VCenter[i-1] == name {
			dups++
		}
		if !slices.Contains(st.Want, name) {
			leaked++
			t.Errorf("leaked vSphere VM %s", name)
		}
	}
	return leaked, dups
}

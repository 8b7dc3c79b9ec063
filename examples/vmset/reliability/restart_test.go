package reliability

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// TestControlPlaneRestart restarts kube-apiserver, and then etcd, in the
// middle of a scale-up and of a rollout, with both replicas supervised
// (restarted when they exit, as a kubelet would: a leader that cannot
// renew its Lease for the renew deadline exits on purpose). The set must
// converge with nothing lost, leaked or made twice and no bound broken.
func TestControlPlaneRestart(t *testing.T) {
	f := startFleet(t, "-task-delay=200ms")
	for _, m := range f.ms {
		m.Supervise()
	}
	ns := f.namespace("restarts")
	set := newSet(ns, "web", 3)
	if err := f.e.Client.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	f.converge(ns, set.Name, 3, 2*time.Minute)

	type row struct {
		what           string
		down, converge time.Duration
		starts         int
		gaps           int
	}
	var rows []row
	n := 3
	for _, name := range []string{"kube-apiserver", "etcd"} {
		t.Run(name+"/scale-up", func(t *testing.T) {
			if name != "kube-apiserver" {
				fullOnly(t)
			}
			from := n
			n += 4
			b := rollwatch.Bounds{Desired: n}
			b.Limits.Unavailable = n - from
			// The watch starts before the change, so that the moment, a
			// second or two of clones, is not spent starting it.
			stopWatch := f.watchSet(t, set, b)
			f.setPatch(set, func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Replicas = ptr.To(int32(n)) })
			r := f.restartDuring(t, name, set, stopWatch, n, func(st counts) bool { return st.made > from && st.made < n })
			rows = append(rows, row{name + " mid-scale-up", r.down, r.converge, r.starts, r.gaps})
		})
		t.Run(name+"/rollout", func(t *testing.T) {
			fullOnly(t)
			toB := !onB(set.Spec.Template.Spec)
			spec := templateA
			if toB {
				spec = templateB
			}
			b, err := rollwatch.BoundsOf(set) // the template is not in the bounds
			if err != nil {
				t.Fatal(err)
			}
			stopWatch := f.watchSet(t, set, b)
			gen := set.Generation
			f.setPatch(set, func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec = spec })
			if set.Generation == gen {
				t.Fatalf("patching the template to %+v changed nothing: the set's template is %+v", spec, set.Spec.Template.Spec)
			}
			r := f.restartDuring(t, name, set, stopWatch, n, func(st counts) bool {
				on := st.onB
				if !toB {
					on = st.made - st.onB
				}
				return on >= 1 && on < n
			})
			rows = append(rows, row{name + " mid-rollout", r.down, r.converge, r.starts, r.gaps})
		})
	}
	var out strings.Builder
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "restart\tAPI server unready\tconverged after\tmanager processes started\twatch gaps\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%d\t%d\n", r.what, r.down.Round(10*time.Millisecond), r.converge.Round(10*time.Millisecond), r.starts, r.gaps)
	}
	_ = tw.Flush()
	t.Logf("control-plane restarts:\n%s", out.String())
}

// restarted is what one restart measured.
type restarted struct {
	down, converge time.Duration
	starts, gaps   int
}

// restartDuring restarts the control-plane process name once when holds
// of the set's VirtualMachines, while the watch stopWatch ends checks the
// set against its bounds, and waits for the set to converge on n.
func (f *fleet) restartDuring(t *testing.T, name string, set *vmv1.VirtualMachineReplicaSet, stopWatch func() rollwatch.Report, n int, when func(counts) bool) restarted {
	t.Helper()
	starts := 0
	for _, m := range f.ms {
		starts -= m.Starts()
	}
	seen := f.waitFor(t, name, set.Namespace, when)
	begin := time.Now()
	if err := f.e.Restart(name, time.Second); err != nil {
		t.Fatalf("%v\n%s", err, f.e.RestartLog(name))
	}
	var r restarted
	r.down = time.Since(begin)
	r.converge = f.converge(set.Namespace, set.Name, n, 3*time.Minute).Sub(begin)
	for _, m := range f.ms {
		starts += m.Starts()
	}
	r.starts = starts
	rep := stopWatch()
	r.gaps = rep.Gaps
	if rep.Breaches > 0 {
		t.Errorf("restart of %s at %+v: the watch saw the bounds broken %d times: %v", name, seen, rep.Breaches, rep.First)
	}
	if leaked, dups := f.leaksAndDuplicates(set.Namespace, set.Name); len(leaked)+len(dups) > 0 {
		t.Errorf("restart of %s: leaked vSphere VMs %v, names held twice %v", name, leaked, dups)
	}
	t.Logf("%s restarted at %+v; watch: %d changes, fewest available %d, most %d, %d gaps", name, seen, rep.Events, rep.FewestAvailable, rep.MostExisting, rep.Gaps)
	return r
}

// waitFor watches the namespace's VirtualMachines until when holds of
// their counts, and returns them; the moment is what a failure calls it.
// when is asked at every change and every 5 ms between (a moment may be
// a time). A watch, not a poll: a poll fast enough to catch a moment of a
// few hundred milliseconds loads a busy API server more than the fleet.
func (f *fleet) waitFor(t *testing.T, moment, ns string, when func(counts) bool) counts {
	t.Helper()
	var seen counts
	err := f.watchVMs(ns, 2*time.Minute, func(vms []*vmv1.VirtualMachine) bool {
		seen = countOf(vms)
		return when(seen)
	})
	if err != nil {
		t.Fatalf("%s: the moment never came (last seen %+v): %v", moment, seen, err)
	}
	return seen
}

// watchVMs watches the namespace's VirtualMachines until ok holds of them,
// asking it at every change and every 5 ms between, for up to within.
func (f *fleet) watchVMs(ns string, within time.Duration, ok func([]*vmv1.VirtualMachine) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	w, err := f.watcher.Watch(ctx, &vmv1.VirtualMachineList{}, client.InNamespace(ns))
	if err != nil {
		return err
	}
	defer w.Stop()
	byName := map[string]*vmv1.VirtualMachine{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v", within)
		case ev, open := <-w.ResultChan():
			if !open {
				return errors.New("the watch ended")
			}
			vm, isVM := ev.Object.(*vmv1.VirtualMachine)
			switch {
			case !isVM:
				continue
			case ev.Type == watch.Deleted:
				delete(byName, vm.Name)
			default:
				byName[vm.Name] = vm
			}
		case <-tick.C:
		}
		if ok(slices.Collect(maps.Values(byName))) {
			return nil
		}
	}
}

// countOf counts vms.
func countOf(vms []*vmv1.VirtualMachine) counts {
	var c counts
	for _, vm := range vms {
		if vm.DeletionTimestamp != nil {
			c.deleting++
			continue
		}
		if vm.Status.InstanceUUID != "" {
			c.made++
		}
		if onB(vm.Spec) {
			c.onB++
		}
	}
	return c
}

package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/procs"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// soakWork is the soak's random work.
type soakWork struct {
	t       *testing.T
	f       *fleet
	rng     *rand.Rand
	done    map[string]int
	outage  func(context.Context) error
	outages int
}

// run works until ctx ends: a random step every 2 to 6 s; in the first
// half, the leader killed every eighth of the run (at least 90 s apart,
// but at least every third: once or twice in a short soak) when one
// leads, and, in a judged soak, the API server restarted once at 7/16 of
// the run, between two kills.
func (s *soakWork) run(ctx context.Context, begin time.Time, total time.Duration) (kills, restarts int) {
	s.done = map[string]int{}
	for _, ns := range soakSets {
		s.create(ctx, ns)
	}
	killEvery := min(max(total/8, 90*time.Second), total/3)
	nextKill := begin.Add(killEvery)
	restartAt := begin.Add(total * 7 / 16)
	restarted := total < soakJudged
	for ctx.Err() == nil {
		now := time.Now()
		switch {
		case now.Before(begin.Add(total/2)) && now.After(nextKill):
			leader, err := procs.Leader(ctx, boundTakeover, s.f.ms...)
			if err == nil {
				leader.Kill()
				if err := leader.Start(); err != nil {
					s.t.Errorf("restart %s after killing it: %v", leader.Name, err)
				}
				kills++
			}
			nextKill = now.Add(killEvery)
		case !restarted && now.After(restartAt):
			if err := s.f.e.Restart("kube-apiserver", time.Second); err != nil {
				s.t.Errorf("%v\n%s", err, s.f.e.RestartLog("kube-apiserver"))
			}
			restarted = true
			restarts++
		default:
			s.step(ctx)
		}
		select {
		case <-ctx.Done():
		case <-time.After(2*time.Second + time.Duration(s.rng.Int64N(int64(4*time.Second)))):
		}
	}
	return kills, restarts
}

// step does one random thing to one random set.
func (s *soakWork) step(ctx context.Context) {
	ns := soakSets[s.rng.IntN(len(soakSets))]
	set := &vmv1.VirtualMachineReplicaSet{}
	err := s.f.e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, set)
	if apierrors.IsNotFound(err) {
		s.create(ctx, ns)
		return
	}
	if err != nil || set.DeletionTimestamp != nil {
		return // the API server restarting, or a set going
	}
	var what string
	patch := client.MergeFrom(set.DeepCopy())
	switch r := s.rng.IntN(20); {
	case r < 8:
		what = "scale"
		set.Spec.Replicas = ptr.To(int32(s.rng.IntN(6)))
	case r < 13:
		what = "template"
		if onB(set.Spec.Template.Spec) {
			set.Spec.Template.Spec = templateA
		} else {
			set.Spec.Template.Spec = templateB
		}
	case r < 15:
		what = "pause-resume"
		set.Spec.Strategy.Paused = !set.Spec.Strategy.Paused
	case r < 17:
		s.toggleOutage(ctx)
		return
	case r < 18:
		what = "vcenter-faults"
		rate := []float64{0, 0.05, 0.15}[s.rng.IntN(3)]
		if err := s.f.vc.SetFaultRate(ctx, rate); err != nil {
			s.t.Errorf("vCenter fault rate: %v", err)
		}
		s.done[what]++
		return
	default:
		what = "delete-set"
		if err := s.f.e.Client.Delete(ctx, set); err == nil {
			s.done[what]++
		}
		return
	}
	if err := s.f.e.Client.Patch(ctx, set, patch); err == nil {
		s.done[what]++
	}
}

// create makes the namespace's set "web" with a random count.
func (s *soakWork) create(ctx context.Context, ns string) {
	set := newSet(ns, "web", int32(s.rng.IntN(6)))
	if err := s.f.e.Client.Create(ctx, set); err == nil {
		s.done["create-set"]++
	}
}

// toggleOutage makes a random zone refuse clones, or ends the outage.
func (s *soakWork) toggleOutage(ctx context.Context) {
	if s.outage != nil {
		if err := s.outage(ctx); err != nil {
			s.t.Errorf("end a zone outage: %v", err)
			return
		}
		s.outage = nil
		return
	}
	pool := []string{"/DC0/host/DC0_C0/Resources", "/DC0/host/DC0_C1/Resources", "/DC0/host/DC0_C2/Resources"}[s.rng.IntN(3)]
	lift, err := s.f.vc.Refuse(ctx, "CloneVM_Task", pool)
	if err != nil {
		s.t.Errorf("zone outage: %v", err)
		return
	}
	s.outage = lift
	s.outages++
	s.done["zone-outage"]++
}

// calm ends the faults and outages, resumes every set and makes sure
// each exists.
func (s *soakWork) calm(ctx context.Context) {
	if err := s.f.vc.SetFaultRate(ctx, 0); err != nil {
		s.t.Fatal(err)
	}
	if s.outage != nil {
		if err := s.outage(ctx); err != nil {
			s.t.Fatal(err)
		}
	}
	for _, ns := range soakSets {
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			set := &vmv1.VirtualMachineReplicaSet{}
			err := s.f.e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, set)
			switch {
			case apierrors.IsNotFound(err):
				s.create(ctx, ns)
				return false, nil
			case err != nil || set.DeletionTimestamp != nil:
				return false, nil
			case !set.Spec.Strategy.Paused:
				return true, nil
			}
			patch := client.MergeFrom(set.DeepCopy())
			set.Spec.Strategy.Paused = false
			return s.f.e.Client.Patch(ctx, set, patch) == nil, nil
		})
		if err != nil {
			s.t.Fatalf("%s: the set could not be made or resumed: %v", ns, err)
		}
	}
}

// foreignObjects are a namespace's VirtualMachines that no set owns: one
// with a set's labels controlled by a ConfigMap, and a bystander.
type foreignObjects struct {
	owned, bystander *vmv1.VirtualMachine
	owner            *corev1.ConfigMap
}

// plantForeign makes them in ns.
func plantForeign(t *testing.T, f *fleet, ns string) *foreignObjects {
	t.Helper()
	ctx := context.Background()
	fo := &foreignObjects{owner: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-owner"}}}
	if err := f.e.Client.Create(ctx, fo.owner); err != nil {
		t.Fatal(err)
	}
	fo.owned = &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "foreign-owned", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: fo.owner.Name, UID: fo.owner.UID, Controller: ptr.To(true)}},
	}, Spec: templateA}
	fo.bystander = &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bystander", Labels: map[string]string{"app": "other"}}, Spec: templateA}
	for _, vm := range []*vmv1.VirtualMachine{fo.owned, fo.bystander} {
		if err := f.e.Client.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
	}
	return fo
}

// changed lists what differs from when they were planted: gone, another
// UID, being deleted, or other owners or labels.
func (fo *foreignObjects) changed(t *testing.T, f *fleet) []string {
	t.Helper()
	var out []string
	for _, want := range []*vmv1.VirtualMachine{fo.owned, fo.bystander} {
		got := &vmv1.VirtualMachine{}
		if err := f.e.Client.Get(context.Background(), client.ObjectKeyFromObject(want), got); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", want.Name, err))
			continue
		}
		if got.UID != want.UID || got.DeletionTimestamp != nil || !equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) || !equality.Semantic.DeepEqual(got.Labels, want.Labels) {
			out = append(out, fmt.Sprintf("%s: owners %v, labels %v, deleting %v", got.Name, got.OwnerReferences, got.Labels, got.DeletionTimestamp != nil))
		}
	}
	return out
}

package vmprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// vmsOn returns owner's VMs on endpoint ep, from the fake itself, cut off
// or not. Scale must not be running.
func (p *partitioned) vmsOn(t *rapid.T, ep, owner string) []vmprovider.VM {
	cut := p.isCut(ep)
	p.setCut(ep, false)
	defer p.setCut(ep, cut)
	vms, err := p.fakes[ep].List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return vms
}

// TestSet_HealingGuards runs a healing Set over two endpoints, pass after
// pass, while VMs hang and recover, either endpoint is cut off and comes
// back, and the count changes. At every pass:
//
//   - the remediations it starts (resets the fakes saw, replacements
//     deleted), with those under way (VMs reset, on an endpoint that
//     answers, not seen healthy since and in their start-up window), are
//     no more than MaxInFlight allows;
//   - nothing is asked of an endpoint that is cut off, and no VM on one
//     is restarted or replaced;
//   - a VM whose endpoint did not answer is remediated no sooner than the
//     shorter window after the last pass that could not see it: time
//     unseen counts toward no window.
//
// Once every endpoint answers and every guest is up, the Set ends at its
// count.
func TestSet_HealingGuards(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, c := clockedPartition()
		owner := vmprovider.Owner{UID: "uid-guards"}
		s := twoVCenters(p, owner, "web")
		rm := &replicaset.Remediation{
			Restart:         rapid.Bool().Draw(t, "restart"),
			StartupWindow:   time.Duration(rapid.IntRange(1, 6).Draw(t, "startupMinutes")) * time.Minute,
			UnhealthyWindow: time.Duration(rapid.IntRange(1, 6).Draw(t, "unhealthyMinutes")) * time.Minute,
		}
		maxInFlight := rapid.IntRange(0, 2).Draw(t, "maxInFlight") // 0: the default, 10%
		if maxInFlight > 0 {
			rm.MaxInFlight = replicaset.Count(maxInFlight)
		}
		s.Spec.Remediation = rm
		bound := func(desired int) int {
			if maxInFlight > 0 {
				return maxInFlight
			}
			return max((desired+9)/10, 1)
		}
		shortest := min(rm.StartupWindow, rm.UnhealthyWindow)
		endpoints := []string{"east", "west"}
		key := func(ep string, vm vmprovider.VM) string { return ep + "/" + vm.InstanceUUID }

		desired := rapid.IntRange(1, 8).Draw(t, "desired")
		restartedAt := map[string]time.Time{} // by key: reset, not seen healthy since
		unseenAt := map[string]time.Time{}    // by key: the last pass that could not see it
		resets := map[string]int{}            // by endpoint: the fake's resets so far
		steps := rapid.IntRange(10, 80).Draw(t, "steps")
		for step := range steps {
			world := map[string][]vmprovider.VM{}
			for _, ep := range endpoints {
				world[ep] = p.vmsOn(t, ep, owner.UID)
			}
			switch rapid.IntRange(0, 4).Draw(t, "action") {
			case 0, 1: // a guest hangs, or comes back
				var all []string
				var at []string
				for _, ep := range endpoints {
					for _, vm := range world[ep] {
						all, at = append(all, vm.Name), append(at, ep)
					}
				}
				if len(all) > 0 {
					i := rapid.IntRange(0, len(all)-1).Draw(t, "vm")
					h := vmprovider.HeartbeatRed
					if rapid.Bool().Draw(t, "recovers") {
						h = vmprovider.HeartbeatGreen
					}
					if err := p.fakes[at[i]].SetHeartbeat(all[i], h); err != nil {
						t.Fatal(err)
					}
				}
			case 2:
				ep := rapid.SampledFrom(endpoints).Draw(t, "toggle")
				p.setCut(ep, !p.isCut(ep))
			case 3:
				desired = rapid.IntRange(1, 8).Draw(t, "desired")
			}
			c.t = c.t.Add(time.Duration(rapid.IntRange(1, 8).Draw(t, "halfMinutes")) * 30 * time.Second)

			// What the pass will see, and the remediations under way in it.
			inFlight := 0
			exists := map[string]bool{}
			for _, ep := range endpoints {
				for _, vm := range p.vmsOn(t, ep, owner.UID) {
					k := key(ep, vm)
					exists[k] = true
					at, ok := restartedAt[k]
					switch {
					case !ok || p.isCut(ep):
					case vm.Heartbeat != vmprovider.HeartbeatRed || !c.t.Before(at.Add(rm.StartupWindow)):
						delete(restartedAt, k) // seen healthy by this pass, or its window over
					default:
						inFlight++
					}
				}
			}
			for k := range restartedAt {
				if !exists[k] {
					delete(restartedAt, k)
				}
			}

			plan, res, err := s.Scale(context.Background(), desired, c.t)
			if err != nil && !errors.Is(err, vmprovider.ErrUnreachable) {
				t.Fatalf("step %d at +%v: %v", step, c.t.Sub(now), err)
			}
			if len(p.changes) > 0 {
				t.Fatalf("step %d: changes asked of an endpoint cut off: %v", step, p.changes)
			}
			started := 0
			for _, r := range plan.Replace {
				if slices.Contains(res.Deleted, r.Name) {
					started++
				}
			}
			remediated := replicaNames(append(slices.Clone(plan.Restart), plan.Replace...))
			for _, ep := range endpoints {
				got := p.fakes[ep].Resets()
				for _, name := range got[resets[ep]:] {
					started++
					remediated = append(remediated, name)
					for _, vm := range world[ep] {
						if vm.Name == name {
							restartedAt[key(ep, vm)] = c.t
						}
					}
				}
				resets[ep] = len(got)
			}
			if started+inFlight > bound(desired) {
				t.Fatalf("step %d at +%v: %d remediations started (%v) with %d under way, over MaxInFlight %d: %v",
					step, c.t.Sub(now), started, remediated, inFlight, bound(desired), plan)
			}
			for _, ep := range endpoints {
				for _, vm := range world[ep] {
					if !slices.Contains(remediated, vm.Name) {
						continue
					}
					if p.isCut(ep) {
						t.Fatalf("step %d: %s remediated on %s, cut off: %v", step, vm.Name, ep, plan)
					}
					if u, ok := unseenAt[key(ep, vm)]; ok && c.t.Before(u.Add(shortest)) {
						t.Fatalf("step %d at +%v: %s remediated %v after the last pass that could not see it, within the shorter window %v: %v",
							step, c.t.Sub(now), vm.Name, c.t.Sub(u), shortest, plan)
					}
				}
			}
			for _, ep := range endpoints {
				if p.isCut(ep) {
					for _, vm := range p.vmsOn(t, ep, owner.UID) {
						unseenAt[key(ep, vm)] = c.t
					}
				}
			}
		}

		// Every endpoint answers, every guest is up: the Set ends at its count.
		for _, ep := range endpoints {
			p.setCut(ep, false)
			for _, vm := range p.vmsOn(t, ep, owner.UID) {
				if err := p.fakes[ep].SetHeartbeat(vm.Name, vmprovider.HeartbeatGreen); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 40 {
			c.t = c.t.Add(30 * time.Second)
			if _, _, err := s.Scale(context.Background(), desired, c.t); err != nil {
				t.Fatalf("healed pass: %v", err)
			}
		}
		if n := len(p.vmsOn(t, "east", owner.UID)) + len(p.vmsOn(t, "west", owner.UID)); n != desired {
			t.Fatalf("healed: %d VMs, want %d", n, desired)
		}
	})
}

// TestSet_HealStormHealsItself: more VMs than MaxUnhealthy hang at once,
// for any time, and recover one by one within 3 minutes of each other:
// nothing is reset or replaced, however long the storm, and the Set ends
// with the VMs it began with.
func TestSet_HealStormHealsItself(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := rapid.IntRange(3, 10).Draw(t, "desired")
		c := &clock{now}
		s, f := healSet(c, &replicaset.Remediation{Restart: rapid.Bool().Draw(t, "restart")})
		for range 2 {
			if _, _, err := s.Scale(context.Background(), desired, c.t); err != nil {
				t.Fatal(err)
			}
			c.t = c.t.Add(time.Minute)
		}
		before := names(t, f, "uid-heal")
		storm := rapid.IntRange(desired*40/100+1, desired).Draw(t, "storm")
		from := c.t.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "from")) * 30 * time.Second)
		to := from.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "length")) * 30 * time.Second)
		recovers := map[string]time.Time{}
		for _, n := range rapid.Permutation(before).Draw(t, "order")[:storm] {
			recovers[n] = to.Add(time.Duration(rapid.IntRange(0, 6).Draw(t, "jitter")) * 30 * time.Second)
		}
		for ; c.t.Before(to.Add(40 * time.Minute)); c.t = c.t.Add(30 * time.Second) {
			for n, at := range recovers {
				h := vmprovider.HeartbeatGray
				if !c.t.Before(from) && c.t.Before(at) {
					h = vmprovider.HeartbeatRed
				}
				if err := f.SetHeartbeat(n, h); err != nil {
					t.Fatal(err)
				}
			}
			plan, _, err := s.Scale(context.Background(), desired, c.t)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Replace)+len(plan.Restart)+len(plan.Delete) > 0 || len(f.Resets()) > 0 {
				t.Fatalf("at +%v, in a storm of %d of %d from +%v to +%v: %v, resets %v",
					c.t.Sub(now), storm, desired, from.Sub(now), to.Sub(now), plan, f.Resets())
			}
		}
		if after := names(t, f, "uid-heal"); !slices.Equal(before, after) {
			t.Fatalf("after the storm: VMs %v, want %v", after, before)
		}
	})
}

package replicaset

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultHookTimeout is how long pre-delete hooks may hold a replica when
// Lifecycle.Timeout is zero: 15 minutes. It is long enough for the drains
// hooks exist for (a Kubernetes node evicting its Pods at the pace their
// disruption budgets allow, a database replica handing over, a load
// balancer's connection draining, which defaults to 300 s on AWS and
// Google Cloud), and short enough that a drainer that crashed delays a
// scale-down by minutes rather than by the hour of AWS Auto Scaling's
// default HeartbeatTimeout (3600 s). Cluster API's hooks never time out,
// and its users' machines stay stuck deleting (cluster-api#11590).
const DefaultHookTimeout = 15 * time.Minute

// Lifecycle asks for lifecycle hooks (Spec.Lifecycle): a replica chosen
// to leave prepares first, and is deleted only once its pre-delete hooks
// released it or their timeout passed; and a new replica is ready only
// once its launch gates are open (Replica.LaunchGated). The package
// documentation's Lifecycle hooks section states the rules.
type Lifecycle struct {
	// Timeout is how long pre-delete hooks may hold a replica, from when
	// it began to prepare (Preparing.Since): they time out at
	// Preparing.Since plus Timeout, that instant included. Zero means
	// DefaultHookTimeout. It must not be negative.
	Timeout time.Duration
	// Abandon keeps a replica whose hooks still hold it when Timeout
	// passes: it stays, preparing and held (HoldHookAbandoned), until its
	// hooks release it or a scale-up takes it back, as AWS Auto Scaling's
	// DefaultResult ABANDON does. False (the default) deletes it anyway,
	// as CONTINUE does.
	Abandon bool
}

// ParseHookResult reads a hooks' default result by the name AWS Auto
// Scaling and the example operator's API give it, as Lifecycle.Abandon
// holds it: "Continue" (or "") is false, deleting a replica whose hooks
// timed out; "Abandon" is true, keeping it. Anything else is refused,
// with an error that wraps ErrInvalidSpec.
func ParseHookResult(s string) (abandon bool, err error) {
	switch s {
	case "", "Continue":
		return false, nil
	case "Abandon":
		return true, nil
	}
	return false, fmt.Errorf("hook result %q is neither Continue nor Abandon: %w", s, ErrInvalidSpec)
}

// Preparing is a replica's preparation to leave, as a binding keeps it on
// the replica (Replica.Preparing).
type Preparing struct {
	// Since is when the replica began to prepare: the pass that chose it
	// (Plan.Prepare). The hooks' timeout runs from it; it must not be
	// zero.
	Since time.Time
	// Hooks names the pre-delete hooks that still hold the replica;
	// empty once all of them released it.
	Hooks []string
	// Update says the replica prepares for an in-place update that powers
	// it off (Plan.PrepareUpdate), not to leave: once its hooks released
	// it (or timed out without Abandon) it is in Plan.Update, not
	// Plan.Delete, and the binding clears Preparing when it records the
	// replica's new revision.
	Update bool
}

// Hold says what holds a replica preparing as p at now, by the rules
// Compute and Drain apply, and when its hooks time out (Preparing.Since
// plus Timeout; they have timed out from that instant on): HoldPreDelete
// while hooks hold it before then; HoldHookAbandoned from then on, with
// Abandon; zero when nothing holds it and it goes, its hooks having
// released it (p.Hooks empty) or timed out. The time does not depend on
// now. A nil Lifecycle holds nothing, and gives no time. A binding that gates a deletion the planner
// did not decide (a child deleted by a person, say) asks it too.
func (l *Lifecycle) Hold(p Preparing, now time.Time) (HoldKind, time.Time) {
	if l == nil {
		return 0, time.Time{}
	}
	deadline := p.Since.Add(l.timeout())
	switch {
	case len(p.Hooks) == 0:
		return 0, deadline
	case now.Before(deadline):
		return HoldPreDelete, deadline
	case l.Abandon:
		return HoldHookAbandoned, deadline
	}
	return 0, deadline
}

func (l *Lifecycle) timeout() time.Duration { return cmp.Or(l.Timeout, DefaultHookTimeout) }

func (l *Lifecycle) validate(errs []error) []error {
	return append(errs, negative(l.Timeout < 0, "hook timeout", l.Timeout, DefaultHookTimeout))
}

// LifecycleStatus is what a pass found of its replicas' preparations to
// leave, with Spec.Lifecycle; zero without it.
type LifecycleStatus struct {
	// Preparing counts the replicas that prepare to leave once the plan
	// is carried out: those already preparing and not deleted by it, and
	// Plan.Prepare.
	Preparing int
	// Waiting lists the preparing replicas whose hooks still hold them
	// within their timeout (Lifecycle.Hold).
	Waiting []Replica
	// TimedOut lists the replicas in Plan.Delete (or, for a power cycle,
	// Plan.Update) whose hooks still held them when their timeout passed,
	// without Lifecycle.Abandon: a binding says so, in an event.
	TimedOut []Replica
	// Abandoned lists the preparing replicas whose hooks held them past
	// their timeout with Lifecycle.Abandon: nothing deletes them until their
	// hooks release them.
	Abandoned []Replica
	// NextCheck is when the first hooks time out, for the caller's
	// requeue: of the replicas in Waiting, and of those that begin to
	// prepare in this pass (Prepare, PrepareUpdate: now plus Timeout);
	// zero when none waits.
	NextCheck time.Time
}

// skipsGate reports whether r never ran (a clone in flight, PhasePending;
// or one that failed, PhaseFailed): the one definition of a broken
// replica (readyFlags), which leaves without preparing, as it has nothing
// to drain, and hooks that wait on a workload that never started would
// only run to their timeout.
func skipsGate(r *Replica) bool {
	return r.Phase == PhasePending || r.Phase == PhaseFailed
}

// settle decides what becomes of a replica that prepares to leave (or
// for a power cycle): it goes (deleted, or power-cycled) once its hooks
// released it, or they timed out without Abandon; else it stays,
// waiting or abandoned.
func (l *Lifecycle) settle(p *Plan, r Replica, now time.Time, goes func(Replica)) {
	switch by, deadline := l.Hold(*r.Preparing, now); by {
	case 0:
		goes(r)
		if len(r.Preparing.Hooks) > 0 {
			p.Lifecycle.TimedOut = append(p.Lifecycle.TimedOut, r)
		}
		return
	case HoldHookAbandoned:
		p.Lifecycle.Abandoned = append(p.Lifecycle.Abandoned, r)
	default:
		p.Lifecycle.Waiting = append(p.Lifecycle.Waiting, r)
		earliest(&p.Lifecycle.NextCheck, deadline)
	}
	p.Lifecycle.Preparing++
}

// hookHolds adds the holds of replicas that wait on their hooks, and
// counts in NextCheck the timeout of those that begin to prepare at now.
func (l *Lifecycle) hookHolds(p *Plan, now time.Time) {
	if len(p.Prepare)+len(p.PrepareUpdate) > 0 {
		earliest(&p.Lifecycle.NextCheck, now.Add(l.timeout()))
	}
	if n := len(p.Lifecycle.Waiting); n > 0 {
		p.Holds = append(p.Holds, Hold{By: HoldPreDelete, Waiting: n,
			Reason: fmt.Sprintf("%s on pre-delete hooks: %s",
				count(n, "replica waits", "replicas wait"), l.describe(p.Lifecycle.Waiting, "until"))})
	}
	if n := len(p.Lifecycle.Abandoned); n > 0 {
		p.Holds = append(p.Holds, Hold{By: HoldHookAbandoned, Waiting: n,
			Reason: count(n, "replica stays: pre-delete hooks held it past its timeout, and the default result is Abandon; release the hooks to delete it: ",
				"replicas stay: pre-delete hooks held them past their timeout, and the default result is Abandon; release the hooks to delete them: ") +
				l.describe(p.Lifecycle.Abandoned, "timed out at")})
	}
}

// describe names the first replicas of rs, each with its hooks and, after
// when, when they time out.
func (l *Lifecycle) describe(rs []Replica, when string) string {
	return firstFew(len(rs), func(k int) string {
		// To the second, rounded up: never a time before the deadline.
		_, until := l.Hold(*rs[k].Preparing, time.Time{})
		until = until.UTC()
		if t := until.Truncate(time.Second); !t.Equal(until) {
			until = t.Add(time.Second)
		}
		return fmt.Sprintf("%s on %s %s %s", rs[k].Name,
			strings.Join(rs[k].Preparing.Hooks, ", "), when, until.Format(time.RFC3339))
	})
}

// firstFew joins the descriptions (describe) of the first three of n
// items, and says how many more there are.
func firstFew(n int, describe func(k int) string) string {
	const most = 3
	var parts []string
	for k := range min(n, most) {
		parts = append(parts, describe(k))
	}
	if n > most {
		parts = append(parts, fmt.Sprintf("and %d more", n-most))
	}
	return strings.Join(parts, "; ")
}

// plural is the one formatter of plurals in hold reasons: one when n is
// 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count is plural with n first: "1 replica waits", "2 replicas wait".
func count(n int, one, many string) string { return strconv.Itoa(n) + " " + plural(n, one, many) }

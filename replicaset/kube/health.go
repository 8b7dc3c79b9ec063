package kube

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// HealthChecker is implemented by an Adapter that knows more of a child's
// health than its readiness: a guest's heartbeat, a VM's address, a Pod's
// container crash-looping ([PodHealth] is one for Pods). A child is
// healthy when it is Ready (as Describe made it) and CheckHealth says ok:
// readiness and the check together. A child that is not Ready is
// unhealthy with the reason "NotReady" when the check passes, with the
// check's reason when it fails. Without a HealthChecker, with
// Spec.Remediation, readiness alone judges. Check the signature at
// compile time:
//
//	var _ kube.HealthChecker[*corev1.Pod] = poolAdapter{}
type HealthChecker[C client.Object] interface {
	// CheckHealth reports whether child passes its health check now and,
	// when not, why, in one word for status and events ("HeartbeatRed").
	// The binding adds readiness to it: a child that is not Ready is
	// unhealthy whatever CheckHealth says. The child is the cache's own
	// object: read it, never modify it.
	CheckHealth(child C) (ok bool, reason string)
}

// Starter is implemented by an Adapter whose children start later than
// they are created, and which can tell when: a VM whose clone finishes
// minutes after its object exists. A child's start-up window
// (replicaset.Remediation.StartupWindow) runs from its start. Without a
// Starter it runs from the child's creation (its creationTimestamp), as
// Cluster API's nodeStartupTimeout runs from a Machine's creation: a Pod
// that never leaves Pending (an image that cannot be pulled, a Pod no
// node can take) is then remediated once the window ends, as one that
// started and hung is. Check the signature at compile time:
//
//	var _ kube.Starter[*vmv1.VirtualMachine] = vmAdapter{}
type Starter[C client.Object] interface {
	// StartedAt reports whether child has started and, when it knows,
	// when. started false: no start-up window runs yet, so a child that
	// never starts is never remediated for it (fail it instead:
	// replicaset.PhaseFailed is remediated at once). A zero at with
	// started true: the binding takes the first pass that sees it
	// started (the child's creation, when the binding had not seen the
	// child before). The binding keeps the start in AnnotationHealth:
	// StartedAt is asked on every pass, but its answer counts only until
	// the child has started; a restart (Restarter) and a power cycle of
	// an in-place update start the window again. It is asked only with
	// Spec.Remediation. The child is the cache's own object: read it,
	// never modify it.
	StartedAt(child C) (at time.Time, started bool)
}

// healthCheck is what a health check said of a child in the pass that
// read it (ok, reason), or that none was made (checked false: the owner
// has no Spec.Remediation, the pass only waits, or the child is being
// deleted); whether the child could not be seen (unseen: unreachable, so
// that time counts toward no window); and when the child started, as the
// Adapter's Starter says (started, at) or, without one, its creation.
type healthCheck struct {
	checked bool
	ok      bool
	reason  string
	unseen  bool
	started bool
	at      time.Time
}

// Health reasons the binding gives itself.
const (
	// reasonNotReady is the health reason of a child that is not ready
	// and whose HealthChecker, if any, finds nothing else against it.
	reasonNotReady = "NotReady"
	// reasonCheckFailed is the health reason of a child whose
	// HealthChecker failed it without saying why.
	reasonCheckFailed = "CheckFailed"
)

// checkHealth asks the Adapter's HealthChecker about c, if it is one, and
// adds rep's readiness; and reads when c started (Starter, or its
// creation). Readiness is left out while the binding itself takes the
// child out of service: while it prepares to leave (its drain may take
// it down); a power cycle of an in-place update, and a restart, start
// its start-up window again instead (inPlaceSteps, Health.Restart). A
// child being deleted is not checked (its health as it
// was counts, so that a terminating Pod, not ready, is no remediation
// under way), and one unreachable is unseen.
func (r *Reconciler[O, C]) checkHealth(c C, rep replicaset.Replica) healthCheck {
	hc := healthCheck{checked: true, ok: true, started: true, at: c.GetCreationTimestamp().Time}
	if s, ok := any(r.Adapter).(Starter[C]); ok {
		hc.at, hc.started = s.StartedAt(c)
	}
	switch {
	case rep.Deleting || c.GetDeletionTimestamp() != nil:
		hc.checked = false
		return hc
	case rep.Unreachable:
		hc.checked, hc.unseen = false, true
		return hc
	}
	if chk, ok := any(r.Adapter).(HealthChecker[C]); ok {
		hc.ok, hc.reason = chk.CheckHealth(c)
	}
	switch {
	case hc.ok && !rep.Ready && rep.Preparing == nil:
		hc.ok, hc.reason = false, reasonNotReady
	case hc.ok:
		hc.reason = ""
	case hc.reason == "":
		hc.reason = reasonCheckFailed
	}
	return hc
}

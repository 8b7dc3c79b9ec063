package replicaset

import (
	"cmp"
	"time"
)

// Health is what a health check says of a replica, as a binding keeps it
// (on the replica itself, so that a restarted controller does not restart
// the windows). Its flags come first, so that a pass reads one cache line
// of a healthy replica's Health. The zero Health is a replica with nothing known against
// it. Only a set with Spec.Remediation reads it; the package
// documentation's Self-healing section states the rules.
type Health struct {
	// Unhealthy reports that the replica's health check fails now: a
	// guest whose heartbeat stopped, a VM with no address, one powered off
	// by someone else. A replica that is not Ready is not unhealthy for
	// that alone: a binding that heals on readiness says so here.
	Unhealthy bool
	// Healthy reports that the replica has been ready and not unhealthy
	// at some time since Started. One that has not is judged by the
	// start-up window, one that has by the unhealthy window.
	Healthy bool
	// Restarted reports that the replica was restarted to remediate it
	// (Plan.Restart) and has not been healthy since: the next remediation
	// it is due replaces it.
	Restarted bool
	// HealthyBefore reports that the replica was healthy at some time
	// before its last restart (Restart keeps it): replacing it is not a
	// failed replacement (History.Failures), as replacing one that was
	// never healthy is.
	HealthyBefore bool
	// Skip opts the replica out of remediation (Cluster API's
	// skip-remediation annotation): it counts as unhealthy, but nothing is
	// done to it.
	Skip bool
	// RemediateNow asks for the replica to be remediated now, whatever
	// its health (Cluster API's remediate-machine annotation). It is not
	// held by the storm or zone guards, which guard against faults
	// outside the replicas, but is by the cap on remediations in flight
	// and the rollout's bounds.
	RemediateNow bool
	// Since is when the replica became unhealthy, and has been since
	// without a break. With Unhealthy and a zero Since, how long is
	// unknown: the replica is never remediated for it.
	Since time.Time
	// Reason says why, for status and events ("HeartbeatRed").
	Reason string
	// Started is when the replica's start-up window began: its creation
	// or its start, as the binding keeps time (the package documentation's
	// Self-healing section says which each binding uses), or when it was
	// last restarted to remediate it. A replica still PhasePending with a
	// Started is judged by the window as a running one is. Zero: no
	// start-up window runs yet.
	Started time.Time
}

// Observe returns h updated with a health check's answer at now, as a
// binding keeps a replica's Health pass to pass: ok reports that the
// replica passes (ready, and nothing against it), reason says why not. A
// pass makes the replica Healthy and ends any unhealthy spell and the
// restart it was given; a failure after being healthy starts a spell at
// now, or continues the one under way (Since unchanged). A failure of a
// replica that has not been healthy since it started makes it Unhealthy
// with no spell (Since zero): the start-up window judges it, whether or
// not the replica reads as Ready. Started, Skip and Now are the binding's
// to set.
func (h Health) Observe(ok bool, reason string, now time.Time) Health {
	switch {
	case ok:
		h.Unhealthy, h.Since, h.Reason, h.Healthy, h.Restarted = false, time.Time{}, "", true, false
	case !h.Healthy:
		h.Unhealthy, h.Reason = true, reason
	case !h.Unhealthy:
		h.Unhealthy, h.Since, h.Reason = true, now, reason
	default:
		h.Reason = reason
	}
	return h
}

// Restart returns h as it is once the replica was restarted at now to
// remediate it (Plan.Restart): started again, not yet healthy since, and
// Restarted, so that a replica still not healthy when the start-up window
// ends is replaced; HealthyBefore if it was ever healthy. Skip is kept;
// Now, a request the restart answered, is cleared.
func (h Health) Restart(now time.Time) Health {
	return Health{Started: now, Restarted: true, HealthyBefore: h.Healthy || h.HealthyBefore, Skip: h.Skip}
}

// Unseen returns h for a pass at now that could not see the replica (its
// platform did not answer: Replica.Unreachable), as a binding keeps it:
// time unseen counts toward no window. An unhealthy spell under way ends,
// so that a replica seen unhealthy again starts a new spell then, and a
// replica not yet healthy since it started starts again at now, so that
// its start-up window runs from the last pass that could not see it.
// Remediation comes later for it, never earlier.
func (h Health) Unseen(now time.Time) Health {
	if h.Unhealthy {
		h.Unhealthy, h.Since, h.Reason = false, time.Time{}, ""
	}
	if !h.Healthy {
		h.Started = now
	}
	return h
}

// Remediation is a set's self-healing policy: which unhealthy replicas are
// remediated, when, how, and the guards that keep a fault outside the
// replicas (a network blip, a storage outage, a failing zone) from
// replacing them all. Every field has a default, so that the zero
// Remediation heals safely. The package documentation's Self-healing
// section states the rules.
type Remediation struct {
	// StartupWindow is how long a replica has from Health.Started to
	// become healthy; one that has not by then is remediated. Zero means
	// DefaultStartupWindow.
	StartupWindow time.Duration
	// UnhealthyWindow is how long a replica that was healthy may stay
	// unhealthy before it is remediated: longer than the blips that heal
	// by themselves. Zero means DefaultUnhealthyWindow.
	UnhealthyWindow time.Duration
	// Restart makes a restart the first remediation: a replica due is
	// restarted (Plan.Restart), given the start-up window again, and
	// replaced only if it is due again before it was healthy. Without it a
	// replica due is replaced.
	Restart bool
	// MaxUnhealthy is the storm guard: when more replicas than this are
	// unhealthy at once, the fault is taken to be outside them and none
	// is remediated. A count, or a percentage of Desired rounded down; at
	// least 1. Unset means DefaultMaxUnhealthy.
	MaxUnhealthy Amount
	// MaxInFlight caps remediations under way at once: restarts in
	// their start-up window and replicas being deleted that were
	// unhealthy. A count, or a percentage of Desired rounded up; at least
	// 1. Unset means DefaultMaxInFlight.
	MaxInFlight Amount
	// Backoff is how long after a replacement that failed
	// (History.Failures) the next replacement waits, doubling with each
	// further failure. Zero means DefaultRemediationBackoff.
	Backoff time.Duration
	// MaxFailures is how many replacements in a row may fail before
	// remediation is suspended: a template whose replicas never become
	// healthy must not become an endless loop of clones. Zero means
	// DefaultMaxFailures.
	MaxFailures int
}

// The defaults of Remediation, each chosen as the package documentation's
// Self-healing section says why.
const (
	// DefaultStartupWindow is Cluster API's nodeStartupTimeout: a VM
	// clone, its boot and its guest's first heartbeat take minutes.
	DefaultStartupWindow = 10 * time.Minute
	// DefaultUnhealthyWindow is Cluster API's usual condition timeout and
	// GCP's guidance: longer than a vMotion, a guest tools restart or a
	// network blip.
	DefaultUnhealthyWindow = 5 * time.Minute
	// DefaultRemediationBackoff is the first wait after a failed
	// replacement: 1, 2, 4 minutes, and so on.
	DefaultRemediationBackoff = time.Minute
	// DefaultMaxFailures suspends remediation after 3 replacements in a
	// row that never became healthy.
	DefaultMaxFailures = 3
)

// DefaultMaxUnhealthy is the storm guard's default: 40% of Desired,
// rounded down (at least 1), Cluster API's documented example; the
// Kubernetes node controller takes 55% of a zone as a zone outage.
var DefaultMaxUnhealthy = Percent(40)

// DefaultMaxInFlight is the default cap on remediations under way: 10% of
// Desired, rounded up (so at least 1); Azure repairs at most 5% at a time.
var DefaultMaxInFlight = Percent(10)

// HealthStatus is what a plan found of its replicas' health, for a
// binding's status and requeue.
type HealthStatus struct {
	// Unhealthy is how many live replicas are unhealthy: failed, past
	// their start-up window, or unhealthy now after being healthy. A
	// replica restarted to remediate it is not counted while its start-up
	// window runs: it is in InFlight.
	Unhealthy int
	// Storm reports that more replicas are unhealthy than MaxUnhealthy:
	// nothing is remediated (but those asked for) until fewer are, whether
	// or not any window has ended yet.
	Storm bool
	// MaxUnhealthy is the storm guard's limit for this plan:
	// Remediation.MaxUnhealthy (or DefaultMaxUnhealthy) resolved for
	// Desired, for a binding's messages. Storm is Unhealthy >
	// MaxUnhealthy.
	MaxUnhealthy int
	// InFlight is how many remediations are under way.
	InFlight int
	// Allowed is how many more remediations the guards allow now (Cluster
	// API's remediationsAllowed): zero while too many replicas are
	// unhealthy, while remediation backs off or is suspended.
	Allowed int
	// BackoffUntil is when remediation may go on after a failed
	// replacement (Remediation.Backoff); zero when it does not back off.
	BackoffUntil time.Time
	// Suspended reports that MaxFailures replacements in a row failed:
	// nothing is remediated until a replica that started since becomes
	// healthy, or the binding clears the history: the Kubernetes binding
	// and vmprovider.Set do on a template of another revision.
	Suspended bool
	// Recovered reports that a replica that started no earlier than the
	// last failed replacement has been healthy: History.After
	// clears the failures.
	Recovered bool
	// FailingZones lists the zones where most replicas are unhealthy:
	// nothing in them is remediated, as a zone whose creates fail is
	// backed off.
	FailingZones []string
	// NextCheck is when a replica's window ends or a backoff does, so
	// that a pass then remediates what is due: a binding requeues for it
	// (no event marks the moment). Zero when nothing waits on time.
	NextCheck time.Time
}

// windows returns rm's windows with their defaults.
func (rm *Remediation) windows() (startup, unhealthy time.Duration) {
	return cmp.Or(rm.StartupWindow, DefaultStartupWindow), cmp.Or(rm.UnhealthyWindow, DefaultUnhealthyWindow)
}

// maxUnhealthy resolves MaxUnhealthy for desired replicas.
func (rm *Remediation) maxUnhealthy(desired int) int {
	return max(cmp.Or(rm.MaxUnhealthy, DefaultMaxUnhealthy).of(desired, false, 0), 1)
}

// maxInFlight resolves MaxInFlight for desired replicas.
func (rm *Remediation) maxInFlight(desired int) int {
	return max(cmp.Or(rm.MaxInFlight, DefaultMaxInFlight).of(desired, true, 0), 1)
}

// backoff returns how long after the last failure the next replacement
// waits, for failures > 0.
func (rm *Remediation) backoff(failures int) time.Duration {
	d := cmp.Or(rm.Backoff, DefaultRemediationBackoff)
	for i := 1; i < failures && i < 16; i++ {
		d *= 2
	}
	return d
}

// validate appends to errs the problems with rm (Spec.Validate).
func (rm *Remediation) validate(errs []error) []error {
	return append(errs,
		negative(rm.StartupWindow < 0, "remediation start-up window", rm.StartupWindow),
		negative(rm.UnhealthyWindow < 0, "remediation unhealthy window", rm.UnhealthyWindow),
		negative(rm.Backoff < 0, "remediation backoff", rm.Backoff),
		negative(rm.MaxUnhealthy.value < 0, "remediation max unhealthy", rm.MaxUnhealthy),
		negative(rm.MaxInFlight.value < 0, "remediation max in flight", rm.MaxInFlight),
		negative(rm.MaxFailures < 0, "remediation max failures", rm.MaxFailures))
}

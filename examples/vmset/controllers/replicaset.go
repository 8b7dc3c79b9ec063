package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// ReplicaSetAdapter tells replicakit's binding about VirtualMachineReplicaSet
// (the owner) and VirtualMachine (the child). A VirtualMachine's zone is
// its spec.zone (kube.Zoner). For a set with spec.remediation, a
// VirtualMachine's health is its Healthy condition and its readiness
// (kube.HealthChecker), its start-up window runs from when its clone is
// under way (kube.Starter),
// and a restart is a reset of its VM in vCenter (kube.Restarter, through
// Reset).
type ReplicaSetAdapter struct {
	// Zones are the zones the operator has placements for; a set listing
	// another is refused (InvalidSpec, naming it).
	Zones []string
	// Reachable, when set, says whether the vCenter holding a zone
	// answers (a nil error), and when it last did: a set's zones whose
	// vCenter does not answer are unreachable (kube.Spec.Unreachable),
	// and status says so with that time. Nil: every zone answers.
	Reachable func(zone string) (lastSeen time.Time, err error)
	// Reset, when set, resets a VirtualMachine's VM in vCenter to
	// remediate it (Restart): Setup sets it to the VirtualMachine
	// reconciler's Reset, so that the reset goes to the vCenter that
	// holds the VM, through the provider that made it, and returns once
	// vCenter has done it. Nil: the operator cannot reset VMs, and a set
	// whose spec.remediation restarts first (the default) is refused
	// with the ReplicaFailure reason InvalidSpec, saying so.
	Reset func(ctx context.Context, vm *vmv1.VirtualMachine) error
}

var (
	_ kube.Adapter[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]         = ReplicaSetAdapter{}
	_ kube.Zoner[*vmv1.VirtualMachine]                                           = ReplicaSetAdapter{}
	_ kube.TemplateMatcher[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] = ReplicaSetAdapter{}
	_ kube.HealthChecker[*vmv1.VirtualMachine]                                   = ReplicaSetAdapter{}
	_ kube.Starter[*vmv1.VirtualMachine]                                         = ReplicaSetAdapter{}
	_ kube.Restarter[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]       = ReplicaSetAdapter{}
	_ kube.InPlaceRollout[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]  = ReplicaSetAdapter{}
)

// Spec implements kube.Adapter.
func (a ReplicaSetAdapter) Spec(s *vmv1.VirtualMachineReplicaSet) (kube.Spec, error) {
	replicas := 1
	if s.Spec.Replicas != nil {
		replicas = int(*s.Spec.Replicas)
	}
	spec := kube.Spec{
		Replicas:     replicas,
		Selector:     s.Spec.Selector.ToMeta(),
		DeletePolicy: s.Spec.DeletePolicy,
		MinReady:     time.Duration(s.Spec.MinReadySeconds) * time.Second,
		Paused:       s.Spec.Paused,
		Zones:        s.Spec.Zones,
		Rebalance:    s.Spec.Rebalance,
		// Rollouts are on for every set; a set made before they existed
		// has its VMs labelled with the current revision, not replaced,
		// unless they differ from its template (MatchesTemplate).
		ProgressDeadline: DefaultProgressDeadline,
	}
	if d := s.Spec.ProgressDeadlineSeconds; d != nil {
		spec.ProgressDeadline = time.Duration(*d) * time.Second
	}
	strategy, err := rollout(s.Spec.Strategy)
	if err != nil {
		return spec, fmt.Errorf("spec.strategy: %w", err)
	}
	spec.Rollout = &strategy
	if spec.Remediation, err = remediation(s.Spec.Remediation); err != nil {
		return spec, fmt.Errorf("spec.remediation: %w", err)
	}
	if spec.Lifecycle, err = lifecycle(s.Spec.Lifecycle); err != nil {
		return spec, fmt.Errorf("spec.lifecycle: %w", err)
	}
	if spec.Remediation != nil && spec.Remediation.Restart && a.Reset == nil {
		return spec, fmt.Errorf("spec.remediation.restart: this operator cannot reset VMs (its ReplicaSetAdapter has no Reset: build it with Setup); set restart to false to replace unhealthy VMs instead")
	}
	if a.Reachable != nil {
		for _, z := range s.Spec.Zones {
			if _, err := a.Reachable(z); err != nil {
				spec.Unreachable = append(spec.Unreachable, z)
			}
		}
	}
	for _, z := range s.Spec.Zones {
		if !slices.Contains(a.Zones, z) {
			// The spec goes with the error: status still says what
			// was asked for.
			return spec, fmt.Errorf("spec.zones: zone %q has no placement in the operator's configuration (%s)", z, known(a.Zones))
		}
	}
	return spec, nil
}

// DefaultProgressDeadline is how long a rollout may go without moving
// before RolledOut says so, when spec.progressDeadlineSeconds is not set:
// a Deployment's default.
const DefaultProgressDeadline = 600 * time.Second

// rollout reads spec.strategy as the planner's Strategy.
func rollout(u vmv1.UpdateStrategy) (replicaset.Strategy, error) {
	s := replicaset.Strategy{Paused: u.Paused, ZoneByZone: u.ZoneByZone}
	var err error
	if s.Method, err = replicaset.ParseUpdateMethod(u.Method); err != nil {
		return s, err
	}
	switch u.Type {
	case "", "RollingUpdate":
	case "OnDelete":
		s.Type = replicaset.OnDelete
	default:
		return s, fmt.Errorf("type %q is neither RollingUpdate nor OnDelete", u.Type)
	}
	for _, a := range []struct {
		name string
		from *intstr.IntOrString
		to   *replicaset.Amount
	}{{"maxSurge", u.MaxSurge, &s.MaxSurge}, {"maxUnavailable", u.MaxUnavailable, &s.MaxUnavailable}, {"partition", u.Partition, &s.Partition}} {
		amount, err := kube.AmountFrom(a.from)
		if err != nil {
			return s, fmt.Errorf("%s: %w", a.name, err)
		}
		*a.to = amount
	}
	return s, nil
}

// lifecycle reads spec.lifecycle as the binding's Lifecycle: nil without.
func lifecycle(l *vmv1.Lifecycle) (*kube.Lifecycle, error) {
	if l == nil {
		return nil, nil
	}
	out := &kube.Lifecycle{PreDelete: l.PreDelete, LaunchGates: l.LaunchGates, MarkNotReady: l.MarkNotReady}
	if l.Timeout != nil {
		out.Timeout = l.Timeout.Duration
	}
	abandon, err := replicaset.ParseHookResult(l.DefaultResult)
	if err != nil {
		return nil, fmt.Errorf("defaultResult: %w", err)
	}
	out.Abandon = abandon
	return out, nil
}

// remediation reads spec.remediation as the planner's Remediation: nil
// when absent (no self-healing); each field left out is the planner's
// default (replicaset.DefaultStartupWindow and the rest), but restart,
// which is on unless false. The API server refuses what is not valid; a
// set stored before the rules is checked here again.
func remediation(r *vmv1.Remediation) (*replicaset.Remediation, error) {
	if r == nil {
		return nil, nil
	}
	out := &replicaset.Remediation{Restart: r.Restart == nil || *r.Restart}
	for _, d := range []struct {
		name string
		from *metav1.Duration
		to   *time.Duration
	}{{"startupWindow", r.StartupWindow, &out.StartupWindow}, {"unhealthyWindow", r.UnhealthyWindow, &out.UnhealthyWindow}, {"backoff", r.Backoff, &out.Backoff}} {
		if d.from == nil {
			continue
		}
		if d.from.Duration <= 0 {
			return out, fmt.Errorf("%s %v is not a positive duration", d.name, d.from.Duration)
		}
		*d.to = d.from.Duration
	}
	for _, a := range []struct {
		name string
		from *intstr.IntOrString
		to   *replicaset.Amount
	}{{"maxUnhealthy", r.MaxUnhealthy, &out.MaxUnhealthy}, {"maxInFlight", r.MaxInFlight, &out.MaxInFlight}} {
		amount, err := kube.AmountFrom(a.from)
		if err != nil {
			return out, fmt.Errorf("%s: %w", a.name, err)
		}
		*a.to = amount
	}
	if f := r.MaxFailures; f != nil {
		if *f < 1 {
			return out, fmt.Errorf("maxFailures %d is below 1", *f)
		}
		out.MaxFailures = int(*f)
	}
	return out, nil
}

// known lists zones for an error message.
func known(zones []string) string {
	if len(zones) == 0 {
		return "it has none: give -zone or $VSPHERE_ZONES"
	}
	return "it has " + strings.Join(zones, ", ")
}

// Zone implements kube.Zoner: a VirtualMachine's zone is its spec.zone.
func (ReplicaSetAdapter) Zone(vm *vmv1.VirtualMachine) string { return vm.Spec.Zone }

// SetZone implements kube.Zoner.
func (ReplicaSetAdapter) SetZone(vm *vmv1.VirtualMachine, zone string) { vm.Spec.Zone = zone }

// MatchesTemplate implements kube.TemplateMatcher: a VirtualMachine with
// no revision label (made by an operator before rollouts, or adopted)
// was made from its set's template when its spec is the template's, but
// for the zone the set put it in when the set lists zones. One that
// differs is replaced under the set's strategy; one that matches is
// labelled with the template's revision and kept.
func (ReplicaSetAdapter) MatchesTemplate(s *vmv1.VirtualMachineReplicaSet, vm *vmv1.VirtualMachine) bool {
	got := vm.Spec
	if len(s.Spec.Zones) > 0 {
		got.Zone = s.Spec.Template.Spec.Zone
	}
	return equality.Semantic.DeepEqual(got, s.Spec.Template.Spec)
}

// NewChild implements kube.Adapter.
// The set's spec.cloneMode rides on each new VirtualMachine as the
// AnnotationCloneMode annotation: metadata, which the template's revision
// leaves out, so that changing it is not a rollout.
func (ReplicaSetAdapter) NewChild(s *vmv1.VirtualMachineReplicaSet) (*vmv1.VirtualMachine, error) {
	vm := &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      copyMap(s.Spec.Template.Metadata.Labels),
			Annotations: copyMap(s.Spec.Template.Metadata.Annotations),
		},
		Spec: *s.Spec.Template.Spec.DeepCopy(),
	}
	if s.Spec.CloneMode == CloneLinked {
		if vm.Annotations == nil {
			vm.Annotations = map[string]string{}
		}
		vm.Annotations[AnnotationCloneMode] = CloneLinked
	}
	return vm, nil
}

// Describe implements kube.Adapter: a VirtualMachine is pending until vCenter
// has it, and while vCenter reports it powered off though its spec wants
// it on (it serves nothing: a rollout does not count it among the VMs that
// may serve); unreachable while vCenter cannot read its VM or does not
// answer (Ready Unknown, ReasonVMUnreadable or ReasonVCenterUnreachable:
// counted, neither replaced nor deleted; zones or none); failed while
// vCenter refuses to clone it or its zone's
// placement is gone (Ready False with the reason CreateFailed or
// ZoneUnavailable: with zones, the set replaces it in another zone), or
// once its guest customization failed (Ready False CustomizationFailed);
// ready while its Ready condition is true, but not once a power cycle for
// a resize is allowed and the VM does not yet run with its spec's size
// (AnnotationPowerCycle: the set ordered it, and the next pass must not
// count the VM as available before its controller has taken it down).
func (ReplicaSetAdapter) Describe(vm *vmv1.VirtualMachine, r *replicaset.Replica) {
	ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	switch {
	case vm.Status.InstanceUUID == "" && ready != nil && (ready.Reason == ReasonCreateFailed || ready.Reason == ReasonZoneUnavailable),
		ready != nil && ready.Reason == ReasonCustomizationFailed:
		r.Phase = replicaset.PhaseFailed
	case vm.Status.InstanceUUID == "":
		r.Phase = replicaset.PhasePending
	case vm.Status.PowerState != "" && vm.Status.PowerState != string(vmv1.PoweredOn) && vm.Spec.PowerState != vmv1.PoweredOff:
		r.Phase = replicaset.PhasePending
	default:
		r.Phase = replicaset.PhaseRunning
	}
	cycling := vm.Annotations[AnnotationPowerCycle] == "allowed" &&
		(vm.Status.Hardware == nil || !sized(vm.Status.Hardware, vm.Spec.CPUs, vm.Spec.MemoryMiB))
	if ready != nil && ready.Status == metav1.ConditionTrue && !cycling {
		r.Ready, r.ReadySince = true, ready.LastTransitionTime.Time
	}
	r.Unreachable = ready != nil && (ready.Reason == ReasonVMUnreadable || ready.Reason == ReasonVCenterUnreachable)
}

// SetStatus implements kube.Adapter.
func (a ReplicaSetAdapter) SetStatus(s *vmv1.VirtualMachineReplicaSet, st kube.Status) {
	s.Status.Replicas = st.Replicas
	s.Status.FullyLabeledReplicas = st.FullyLabeledReplicas
	s.Status.ReadyReplicas = st.ReadyReplicas
	s.Status.AvailableReplicas = st.AvailableReplicas
	s.Status.TerminatingReplicas = st.TerminatingReplicas
	s.Status.UnknownReplicas = st.UnknownReplicas
	s.Status.ObservedGeneration = st.ObservedGeneration
	s.Status.Selector = st.Selector
	s.Status.UpdatedReplicas = st.UpdatedReplicas
	s.Status.UpdatedAvailableReplicas = st.UpdatedAvailableReplicas
	s.Status.UpdateRevision, s.Status.CurrentRevision = st.UpdateRevision, st.CurrentRevision
	s.Status.Zones, s.Status.Spread = nil, ""
	for _, z := range st.Zones {
		zs := vmv1.ZoneStatus{Zone: z.Zone, Replicas: int32(z.Replicas),
			ReadyReplicas: int32(z.Ready), AvailableReplicas: int32(z.Available)}
		if !z.BackoffUntil.IsZero() {
			zs.BackoffUntil = &metav1.Time{Time: z.BackoffUntil.Truncate(time.Second)}
		}
		if z.Unreachable {
			zs.Unreachable = true
			if a.Reachable != nil {
				if seen, _ := a.Reachable(z.Zone); !seen.IsZero() {
					zs.LastSeen = &metav1.Time{Time: seen.Truncate(time.Second)}
				}
			}
		}
		s.Status.Zones = append(s.Status.Zones, zs)
	}
	if len(st.Zones) > 0 {
		s.Status.Spread = replicaset.Spread(st.Zones)
	}
	// The healing counters only while the binding heals the set (it
	// reports RemediationAllowed then): kubectl's UNHEALTHY shows <none>
	// for a set that does not heal, and 0 for one that does.
	s.Status.UnhealthyReplicas, s.Status.RemediationsAllowed = nil, nil
	if meta.FindStatusCondition(st.Conditions, kube.ConditionRemediationAllowed) != nil {
		s.Status.UnhealthyReplicas, s.Status.RemediationsAllowed = ptr.To(st.UnhealthyReplicas), ptr.To(st.RemediationsAllowed)
	}
	s.Status.PreparingReplicas = nil
	if meta.FindStatusCondition(st.Conditions, kube.ConditionDraining) != nil {
		s.Status.PreparingReplicas = ptr.To(st.PreparingReplicas)
	}
	st.MergeConditions(&s.Status.Conditions)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The replica-set controller's permissions: it reads sets and writes their
// status, and creates, adopts, releases and deletes their VirtualMachines.
// Setting blockOwnerDeletion on a VirtualMachine needs update on its owner's
// finalizers. Self-healing patches a set's remediation history
// (kube.AnnotationRemediationHistory) and each VirtualMachine's health
// (kube.AnnotationHealth); its resets go to vCenter, not to Kubernetes.
//
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/status,verbs=patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/finalizers,verbs=update
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// HookDomain is the domain of the lifecycle hooks' and gates' annotations
// on VirtualMachines (spec.lifecycle): pre-delete.hook.vm.replicakit.io/<name>
// and launch.gate.vm.replicakit.io/<name>.
const HookDomain = "vm.replicakit.io"

// NewReplicaSetReconciler returns the VirtualMachineReplicaSet reconciler
// for an operator with placements for zones. Its adapter cannot reset VMs
// (ReplicaSetAdapter.Reset is nil): Setup gives it the VirtualMachine
// reconciler's Reset; without one, a set whose spec.remediation restarts
// first is refused.
func NewReplicaSetReconciler(zones []string) *kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] {
	return &kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]{
		Adapter: ReplicaSetAdapter{Zones: zones},
		// Each child becomes a clone: one read of the set per creating
		// pass is cheap beside cloning a VM for a set being deleted.
		ConfirmOwnerBeforeCreate: true,
		HookDomain:               HookDomain,
	}
}

// Setup registers both controllers with mgr, the VirtualMachine one using p;
// the replica-set adapter resets unhealthy VMs through p (p.Reset, for
// spec.remediation). Each of configure may change the replica-set
// reconciler (its ZoneBackoff, say) before it is set up.
func Setup(mgr ctrl.Manager, p *VirtualMachineReconciler, configure ...func(*kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine])) error {
	if err := p.SetupWithManager(mgr); err != nil {
		return err
	}
	rs := NewReplicaSetReconciler(slices.Sorted(maps.Keys(p.Zones)))
	if a, ok := rs.Adapter.(ReplicaSetAdapter); ok {
		if p.watched() {
			a.Reachable = p.Reachable // zones are unreachable while their vCenter's watch is
		}
		// Resets go straight to the vCenter that holds the VM, as the
		// VirtualMachine controller reaches it: the set's Restarting
		// event follows the reset itself.
		a.Reset = p.Reset
		rs.Adapter = a
	}
	for _, f := range configure {
		f(rs)
	}
	return rs.SetupWithManager(mgr, "virtualmachinereplicaset")
}

// CheckHealth implements kube.HealthChecker: a VirtualMachine passes
// while its Healthy condition (ConditionHealthy) is True, and fails with
// the condition's reason while it is False; the binding adds readiness,
// so a VM that is not Ready is unhealthy (NotReady) too, but while it
// prepares to leave or power-cycles for an in-place resize, which start
// its start-up window again. One not in vCenter yet fails with the
// reason of its Ready condition (CreateFailed, say: a failed VM is
// replaced at once, whatever its health; Creating) or NotCreated; its
// start-up window runs from when its clone is under way (StartedAt). One
// the VirtualMachine controller has not judged yet (made by an operator
// before self-healing) passes while Ready is True, and fails with the
// reason NotReady while not.
func (ReplicaSetAdapter) CheckHealth(vm *vmv1.VirtualMachine) (ok bool, reason string) {
	ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	if vm.Status.InstanceUUID == "" {
		if ready != nil && ready.Status == metav1.ConditionFalse {
			return false, ready.Reason
		}
		return false, "NotCreated"
	}
	if h := meta.FindStatusCondition(vm.Status.Conditions, ConditionHealthy); h != nil && h.Status != metav1.ConditionUnknown {
		if h.Status == metav1.ConditionTrue {
			return true, ""
		}
		return false, h.Reason
	}
	if ready != nil && ready.Status == metav1.ConditionTrue {
		return true, ""
	}
	return false, "NotReady"
}

// StartedAt implements kube.Starter: a VM's start-up window runs from
// when its clone is under way, not from when the VirtualMachine was
// made, so that a queue of clones does not eat it: from the Ready
// condition Creating (a clone that outlasted CreateWait), so that a
// clone that hangs is remediated as a VM that came up and hung is; or,
// for a clone done within CreateWait, from the first pass that sees the
// VM's instance UUID. A clone that fails is failed (CreateFailed), and
// replaced at once.
func (ReplicaSetAdapter) StartedAt(vm *vmv1.VirtualMachine) (time.Time, bool) {
	if vm.Status.InstanceUUID != "" {
		return time.Time{}, true
	}
	if ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready"); ready != nil && ready.Reason == ReasonCreating {
		return ready.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

// Restart implements kube.Restarter: it resets the VM in vCenter through
// a.Reset, synchronously, so that the set's event Restarting follows the
// reset itself. Without a.Reset it fails; Spec refuses a set asking for
// restarts first.
func (a ReplicaSetAdapter) Restart(ctx context.Context, _ *vmv1.VirtualMachineReplicaSet, vm *vmv1.VirtualMachine) error {
	if a.Reset == nil {
		return errNoReset
	}
	return a.Reset(ctx, vm)
}

package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Finalizer keeps a VirtualMachine until its vSphere VM is destroyed.
const Finalizer = "vm.replicakit.io/vsphere-vm"

// VirtualMachineReconciler realizes VirtualMachines in vSphere.
type VirtualMachineReconciler struct {
	// Client reads and writes VirtualMachines.
	Client client.Client
	// Provider creates, powers and destroys the VMs, for a reconciler
	// over one vCenter; one over several (NewVirtualMachineReconcilerOver)
	// uses each vCenter's own.
	Provider vmprovider.Provider
	// Watch, when set, reports changes to VMs in vCenter: each becomes a
	// reconcile of the VirtualMachine named in the VM's mark, and a VM
	// waiting on its guest is not read again on a timer. SetupWithManager
	// runs it. Provider should then read from it (vsphere.Cached).
	Watch *vsphere.Watch
	// DefaultVCenter names the vCenter, of a reconciler over several
	// (NewVirtualMachineReconcilerOver), that holds VMs in no zone and
	// those of zones whose placement names none.
	DefaultVCenter string
	// Events records events on VirtualMachines; nil records none.
	Events events.EventRecorder
	// Zones maps each zone a VirtualMachine may name (spec.zone) to
	// where its VM goes, over the provider's default placement. A
	// VirtualMachine naming another zone fails with the reason
	// UnknownZone.
	Zones map[string]vmprovider.Placement

	// vcenters are the vCenters of a reconciler over several, by name
	// (as a zone's Placement.Endpoint names them); fixed once Setup runs.
	vcenters map[string]*vcenter
}

// ReasonCreateFailed is the Ready condition's reason while vCenter refuses
// to clone a VirtualMachine's VM (it answered with a fault); the clone is
// retried with backoff, and a set with zones replaces the VM elsewhere.
const ReasonCreateFailed = "CreateFailed"

// ReasonCreateRetrying is the Ready condition's reason when a clone got no
// answer (a timeout, a lost connection): it is retried with backoff, and
// does not count against the VM's zone.
const ReasonCreateRetrying = "CreateRetrying"

// transient reports whether err is a lost answer rather than vCenter's
// refusal: an ended context or a transport error.
func transient(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.As(err, &ue) || errors.As(err, &ne)
}

// ReasonVCenterUnreachable is the Ready condition's reason, with the
// status Unknown, while the vCenter that holds a VirtualMachine's VM does
// not answer (vmprovider.ErrUnreachable): the VM is unknown, neither there
// nor gone, so nothing is created, powered or destroyed until it answers.
// The message says when vCenter last answered.
const ReasonVCenterUnreachable = "VCenterUnreachable"

// ReasonVMUnreadable is the Ready condition's reason, with the status
// Unknown, while vCenter lists the VM but cannot read it (its datastore
// gone, its host disconnected: vmprovider.VM.Unreachable): its state is
// unknown, nothing is done to it, and its set counts it as unknown
// (replicaset.Replica.Unreachable), neither replaced nor deleted.
const ReasonVMUnreadable = "VMUnreadable"

// ReasonCreating is the Ready condition's reason while vCenter is still
// making the VM for a create whose call ended first (a clone longer than
// CreateWait: vmprovider.VM.Creating). The provider waits for the clone;
// nothing else is done to the VM meanwhile, but a delete cancels it.
const ReasonCreating = "Creating"

// CreateWait bounds how long a reconcile waits in the provider's Create.
// A full clone takes minutes on a real vCenter: the provider goes on with
// it on its own (vmprovider.VM.Creating) while the worker is freed for
// other objects and the VirtualMachine says Creating; a delete of it
// meanwhile is seen at its next reconcile and cancels the clone, rather
// than waiting for the clone to end.
const CreateWait = 10 * time.Second

// ReasonTemplateNotFound is the Ready condition's reason while no
// template is at the path a VirtualMachine's clone names
// (vsphere.ErrTemplateNotFound): the create is retried with backoff, as
// an image pipeline that rebuilds a template under its name leaves none
// there for a while.
const ReasonTemplateNotFound = "TemplateNotFound"

// ReasonCustomizationFailed is the Ready condition's reason of a
// VirtualMachine whose guest customization failed (vmprovider.VM.Failed:
// its cloud-init was not applied); its set counts it as failed and
// replaces it.
const ReasonCustomizationFailed = "CustomizationFailed"

// ReasonShuttingDown is the Ready condition's reason of a VirtualMachine
// being deleted while its guest shuts down (vmprovider.ErrDeleting): the
// provider powers the VM off when its grace has passed and destroys it,
// and the finalizer stays until it is gone.
const ReasonShuttingDown = "ShuttingDown"

// ReasonZoneUnavailable is the Ready condition's reason while the
// placement of a VirtualMachine's zone is not in vCenter's inventory (its
// cluster removed or renamed); the clone is retried with backoff.
const ReasonZoneUnavailable = "ZoneUnavailable"

// ErrUnknownZone means a VirtualMachine names a zone the operator has no
// placement for.
var ErrUnknownZone = errors.New("unknown zone")

// WatchedFields are the parts of a VM the reconciler reads beside those
// every vsphere.Watch keeps (name, instance UUID, power and the marks):
// the guest's addresses, hostname and heartbeat, which a VirtualMachine's
// status and readiness report. Its watches keep only these.
const WatchedFields = vsphere.FieldIPAddresses | vsphere.FieldHostname | vsphere.FieldHeartbeat

// NewVirtualMachineReconciler returns a reconciler that reads vCenter from
// a watch of p's VMs (vsphere.Cached, keeping WatchedFields) and changes it
// through p: a reconcile reads from memory and calls vCenter only to
// change something.
func NewVirtualMachineReconciler(p *vsphere.Provider) *VirtualMachineReconciler {
	w := vsphere.NewWatch(p)
	w.SetFields(WatchedFields)
	return &VirtualMachineReconciler{Provider: vsphere.Cached{Provider: p, Watch: w}, Watch: w}
}

// VSphereName is the name of the vSphere VM for a VirtualMachine: namespace
// and name joined with '-', cut and hashed to fit vSphere's 80 characters.
// Ownership is decided by the VM's mark (the object's UID), never by name.
func VSphereName(vm *vmv1.VirtualMachine) string {
	name := vm.Namespace + "-" + vm.Name
	if len(name) <= naming.MaxVSphereName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:naming.MaxVSphereName-11] + "-" + hex.EncodeToString(sum[:5])
}

// The VirtualMachine controller's permissions, from which `make generate`
// writes config/rbac/role.yaml:
//
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines/status,verbs=patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines/finalizers,verbs=update
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile implements reconcile.Reconciler.
func (r *VirtualMachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vm vmv1.VirtualMachine
	if err := r.Client.Get(ctx, req.NamespacedName, &vm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	owner := string(vm.UID)
	name := VSphereName(&vm)
	provider := r.providerOf(vm.Spec.Zone)
	if provider == nil {
		err := fmt.Errorf("VM %q: zone %q names vCenter %q, which the operator is not configured with: %w",
			name, vm.Spec.Zone, r.Zones[vm.Spec.Zone].Endpoint, ErrUnknownZone)
		return reconcile.Result{}, r.refuse(ctx, &vm, "UnknownZone", err)
	}

	if vm.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(&vm, Finalizer) {
			return reconcile.Result{}, nil
		}
		if wait, after, err := r.holdDeletion(ctx, &vm); wait || err != nil {
			return reconcile.Result{RequeueAfter: after}, err
		}
		err := provider.Delete(ctx, name, owner)
		if errors.Is(err, vmprovider.ErrDeleting) {
			// Its guest is shutting down; the provider powers it off when
			// the grace has passed and destroys it. The finalizer stays
			// until it is gone.
			r.event(&vm, corev1.EventTypeNormal, ReasonShuttingDown, "Delete", "%v", err)
			cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonShuttingDown, Message: err.Error()}
			return reconcile.Result{RequeueAfter: GuestPollInterval}, r.setStatus(ctx, &vm, lastSeen(&vm), cond)
		}
		if err != nil && !errors.Is(err, vmprovider.ErrNotOwned) {
			return reconcile.Result{}, r.fail(ctx, &vm, "DeleteFailed", err)
		}
		patch := client.MergeFrom(vm.DeepCopy())
		controllerutil.RemoveFinalizer(&vm, Finalizer)
		return reconcile.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, &vm, patch))
	}
	if !controllerutil.ContainsFinalizer(&vm, Finalizer) {
		patch := client.MergeFrom(vm.DeepCopy())
		controllerutil.AddFinalizer(&vm, Finalizer)
		if err := r.Client.Patch(ctx, &vm, patch); err != nil {
			return reconcile.Result{}, err
		}
	}

	want := vm.Spec.PowerState
	if want == "" {
		want = vmv1.PoweredOn
	}
	got, err := provider.Get(ctx, name)
	switch {
	case errors.Is(err, vmprovider.ErrNotFound):
		spec, serr := providerSpec(&vm, name, want, r.Zones)
		if serr == nil {
			cctx, cancel := context.WithTimeout(ctx, CreateWait)
			got, err = provider.Create(cctx, spec)
			waited := errors.Is(err, context.DeadlineExceeded) && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
			cancel()
			if waited {
				// The clone goes on in the provider, which reports the VM
				// as Creating; this worker is free for the next object,
				// and a delete meanwhile is seen at its next reconcile.
				return reconcile.Result{RequeueAfter: GuestPollInterval}, r.creating(ctx, &vm,
					fmt.Sprintf("vSphere VM %s is still being cloned after %v", name, CreateWait))
			}
		} else {
			err = serr
		}
		if errors.Is(err, ErrUnknownZone) {
			return reconcile.Result{}, r.refuse(ctx, &vm, "UnknownZone", err)
		}
		if vm.Spec.Zone != "" && errors.Is(err, vmprovider.ErrPlacement) {
			// The zone's cluster or pool is gone from vCenter: retried,
			// as it may come back, and a set replaces the VM elsewhere.
			return reconcile.Result{}, r.fail(ctx, &vm, ReasonZoneUnavailable, err)
		}
		if errors.Is(err, vsphere.ErrTemplateNotFound) {
			// Rebuilt under its name, say (Packer's -force destroys the
			// old one first): retried with backoff, it is taken once there.
			return reconcile.Result{}, r.fail(ctx, &vm, ReasonTemplateNotFound, err)
		}
		if errors.Is(err, vmprovider.ErrInvalidSpec) {
			return reconcile.Result{}, r.refuse(ctx, &vm, "InvalidSpec", err)
		}
		if err != nil && transient(err) {
			return reconcile.Result{}, r.fail(ctx, &vm, ReasonCreateRetrying, err)
		}
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, &vm, ReasonCreateFailed, err)
		}
		r.event(&vm, corev1.EventTypeNormal, "Created", "Create", "Created vSphere VM %s", name)
	case errors.Is(err, vmprovider.ErrUnreachable):
		// Nothing to retry until vCenter answers: the watch's recovery
		// brings this VirtualMachine back (SetupWithManager).
		return reconcile.Result{RequeueAfter: unreachableRecheck}, r.unknown(ctx, &vm, err)
	case err != nil:
		return reconcile.Result{}, r.fail(ctx, &vm, "GetFailed", err)
	case got.Unreachable != "":
		// Whose it is and what it runs are unknown: nothing is done until
		// vCenter can read it (the watch reports it then).
		err := fmt.Errorf("vSphere VM %s: vCenter cannot read it (%s), so its state is unknown and nothing is done to it until it can: %w",
			name, got.Unreachable, vmprovider.ErrUnreadable)
		return reconcile.Result{RequeueAfter: unreachableRecheck}, r.record(ctx, &vm, metav1.ConditionUnknown, ReasonVMUnreadable, err)
	case got.Creating && got.Owner == owner:
		return reconcile.Result{RequeueAfter: GuestPollInterval}, r.creating(ctx, &vm,
			fmt.Sprintf("vSphere VM %s is still being cloned, for a create whose call ended first", name))
	case got.Owner != owner:
		err := &vmprovider.NotOwnedError{Name: name, Want: owner, Got: got.Owner}
		return reconcile.Result{}, r.refuse(ctx, &vm, "NameTaken", err)
	}
	got, resized, err := r.resize(ctx, &vm, provider, name, got)
	if err != nil {
		if resized != nil {
			err = errors.Join(err, r.setStatus(ctx, &vm, got, *resized))
		}
		return reconcile.Result{}, err
	}
	if poweredOffOutside(&vm, want, got) {
		stay, ready, err := r.offOutside(ctx, &vm, name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if stay {
			return reconcile.Result{}, r.setStatus(ctx, &vm, got, ready, healthCondition(&vm, name, want, got))
		}
	}
	if string(want) != string(got.Power) {
		if err := provider.SetPower(ctx, name, owner, vmprovider.PowerState(want)); err != nil {
			return reconcile.Result{}, r.fail(ctx, &vm, "PowerFailed", err)
		}
		if got, err = provider.Get(ctx, name); err != nil {
			return reconcile.Result{}, r.fail(ctx, &vm, "GetFailed", err)
		}
	}
	cond, wait := readyCondition(&vm, name, want, got)
	if r.watched() {
		wait = 0 // the watch reports the guest's changes
	}
	conds := []metav1.Condition{cond, healthCondition(&vm, name, want, got)}
	if resized != nil {
		conds = append(conds, *resized)
	}
	return reconcile.Result{RequeueAfter: wait}, r.setStatus(ctx, &vm, got, conds...)
}

// GuestPollInterval is how often a VirtualMachine that is not yet ready
// (by its spec.readiness, or not yet powered off as asked) is read again,
// without a Watch.
const GuestPollInterval = 5 * time.Second

// readyCondition is the Ready condition of a VM in got's state, and how
// long to wait before reading it again when it is waiting on its guest. A
// VM that should run and whose guest's heartbeat is red is not ready,
// whatever its spec.readiness (reason HeartbeatRed).
func readyCondition(vm *vmv1.VirtualMachine, name string, want vmv1.PowerState, got vmprovider.VM) (metav1.Condition, time.Duration) {
	if got.Failed != "" {
		// Its cloud-init or identity was not applied: it will not serve as
		// asked, and a set replaces it (ReplicaSetAdapter.Describe).
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonCustomizationFailed,
			Message: fmt.Sprintf("vSphere VM %s failed: %s", name, got.Failed)}, 0
	}
	if want != vmv1.PoweredOn {
		cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: string(got.Power),
			Message: fmt.Sprintf("vSphere VM %s is %s", name, got.Power)}
		if got.Power != vmprovider.PoweredOff {
			cond.Status = metav1.ConditionFalse // not yet what was asked for
			return cond, GuestPollInterval
		}
		return cond, 0
	}
	rd := vmprovider.Readiness(vm.Spec.Readiness)
	if rd == "" {
		rd = vmprovider.ReadyWhenPoweredOn
	}
	if got.Power == vmprovider.PoweredOn && got.Heartbeat == vmprovider.HeartbeatRed {
		// Whatever spec.readiness: the guest stopped answering, so it
		// serves nothing (and a set healing it sees it fail after a reset).
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: vmprovider.ReasonHeartbeatRed,
			Message: fmt.Sprintf("vSphere VM %s is powered on, but its guest's heartbeat is red: it stopped answering", name)}, GuestPollInterval
	}
	if rd.Ready(got) {
		msg := fmt.Sprintf("vSphere VM %s is %s", name, got.Power)
		if len(got.IPAddresses) > 0 {
			msg += " at " + strings.Join(got.IPAddresses, ", ")
		}
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: string(rd), Message: msg}, 0
	}
	if got.Power != vmprovider.PoweredOn {
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: string(got.Power),
			Message: fmt.Sprintf("vSphere VM %s is %s", name, got.Power)}, GuestPollInterval
	}
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "WaitingFor" + string(rd),
		Message: fmt.Sprintf("vSphere VM %s is powered on; its guest has not reported %s yet", name, waitingFor[rd])}, GuestPollInterval
}

// waitingFor says what a readiness choice waits on.
var waitingFor = map[vmprovider.Readiness]string{
	vmprovider.ReadyWhenGuestHeartbeat: "a green heartbeat",
	vmprovider.ReadyWhenIPAddress:      "an IP address",
}

// providerSpec is the VM to create for vm: its hardware, networks,
// cloud-init data (with instance-id and local-hostname added to the
// metadata unless given), the set's template revision it was made from
// (its replicakit.io/revision label) and, with a zone, the zone's
// placement.
func providerSpec(vm *vmv1.VirtualMachine, name string, want vmv1.PowerState, zones map[string]vmprovider.Placement) (vmprovider.Spec, error) {
	spec := vmprovider.Spec{
		Name: name, Owner: vmprovider.Owner{UID: string(vm.UID), Name: vm.Namespace + "/" + vm.Name},
		Template: vm.Spec.Template, CPUs: vm.Spec.CPUs, MemoryMiB: vm.Spec.MemoryMiB,
		CPUHotAdd: vm.Spec.CPUHotAdd, MemoryHotAdd: vm.Spec.MemoryHotAdd,
		LinkedClone: vm.Annotations[AnnotationCloneMode] == CloneLinked,
		PowerOn:     want == vmv1.PoweredOn,
		// The set's template revision, beside the owner's mark: vCenter
		// shows which template a VM was made from.
		Revision: vm.Labels[kube.RevisionLabel],
	}
	if z := vm.Spec.Zone; z != "" {
		pl, ok := zones[z]
		if !ok {
			return spec, fmt.Errorf("VM %q: spec.zone %q has no placement in the operator's configuration (%s): %w",
				name, z, known(slices.Sorted(maps.Keys(zones))), ErrUnknownZone)
		}
		spec.Zone, spec.Placement = z, pl
	}
	if n := vm.Spec.Network; n != nil {
		for _, i := range n.Interfaces {
			spec.Networks = append(spec.Networks, i.Network)
		}
	}
	if b := vm.Spec.Bootstrap; b != nil && b.CloudInit != nil {
		ci, err := vmprovider.CloudInit{UserData: b.CloudInit.UserData, MetaData: b.CloudInit.MetaData}.Personalized(string(vm.UID), vm.Name)
		if err != nil {
			return spec, fmt.Errorf("VM %q: spec.bootstrap.%w", name, err)
		}
		spec.CloudInit = &ci
	}
	return spec, nil
}

// fail records err in the Ready condition and returns it for a retry with
// backoff.
func (r *VirtualMachineReconciler) fail(ctx context.Context, vm *vmv1.VirtualMachine, reason string, err error) error {
	return errors.Join(err, r.record(ctx, vm, metav1.ConditionFalse, reason, err))
}

// refuse records err in the Ready condition and returns it as a
// reconcile.TerminalError: the same VirtualMachine would fail the same way
// (a name another owner's VM holds, a zone with no placement), so it is
// not retried until it changes. When the condition cannot be written, it
// returns that failure, not terminal, so that the reconcile is retried
// until the condition says why: a terminal error is never retried, and
// nothing else would record it.
func (r *VirtualMachineReconciler) refuse(ctx context.Context, vm *vmv1.VirtualMachine, reason string, err error) error {
	if werr := r.record(ctx, vm, metav1.ConditionFalse, reason, err); werr != nil {
		return errors.Join(err, werr)
	}
	return reconcile.TerminalError(err)
}

// unknown records that vm's vCenter does not answer: Ready is Unknown
// (ReasonVCenterUnreachable). It returns only the failure to record it.
func (r *VirtualMachineReconciler) unknown(ctx context.Context, vm *vmv1.VirtualMachine, err error) error {
	return r.record(ctx, vm, metav1.ConditionUnknown, ReasonVCenterUnreachable, err)
}

// unreachableRecheck is how often a VirtualMachine whose vCenter does not
// answer is looked at again, besides when its watch recovers.
const unreachableRecheck = 30 * time.Second

// record records err in the Ready condition, with status and reason, and
// an event; it returns the failure to write the status, if any.
func (r *VirtualMachineReconciler) record(ctx context.Context, vm *vmv1.VirtualMachine, status metav1.ConditionStatus, reason string, err error) error {
	r.event(vm, corev1.EventTypeWarning, reason, "Reconcile", "%v", err)
	cond := metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: err.Error()}
	return r.setStatus(ctx, vm, lastSeen(vm), cond)
}

// creating records that vm's clone goes on past its create's call
// (ReasonCreating), with no event: a clone of minutes is no warning, and
// it is read again every GuestPollInterval until done.
func (r *VirtualMachineReconciler) creating(ctx context.Context, vm *vmv1.VirtualMachine, msg string) error {
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonCreating, Message: msg}
	return r.setStatus(ctx, vm, lastSeen(vm), cond)
}

// lastSeen is the VM as vm's status last recorded it.
func lastSeen(vm *vmv1.VirtualMachine) vmprovider.VM {
	return vmprovider.VM{Power: vmprovider.PowerState(vm.Status.PowerState), InstanceUUID: vm.Status.InstanceUUID,
		IPAddresses: vm.Status.Addresses, Hostname: vm.Status.Hostname, Heartbeat: vmprovider.Heartbeat(vm.Status.GuestHeartbeat)}
}

// setStatus patches the status when it changed: got's state and conds
// (Ready, and Healthy when vCenter was read; a failure leaves Healthy as
// it was).
func (r *VirtualMachineReconciler) setStatus(ctx context.Context, vm *vmv1.VirtualMachine, got vmprovider.VM, conds ...metav1.Condition) error {
	before := vm.DeepCopy()
	vm.Status.VSphereName = VSphereName(vm)
	vm.Status.PowerState = string(got.Power)
	vm.Status.InstanceUUID = got.InstanceUUID
	vm.Status.Addresses = got.IPAddresses
	vm.Status.Hostname = got.Hostname
	vm.Status.GuestHeartbeat = string(got.Heartbeat)
	vm.Status.Hardware = hardwareOf(got)
	vm.Status.ObservedGeneration = vm.Generation
	for _, cond := range conds {
		cond.ObservedGeneration = vm.Generation
		meta.SetStatusCondition(&vm.Status.Conditions, cond)
	}
	if equality.Semantic.DeepEqual(before.Status, vm.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, vm, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *VirtualMachineReconciler) event(vm *vmv1.VirtualMachine, kind, reason, action, note string, args ...any) {
	if r.Events != nil {
		r.Events.Eventf(vm, nil, kind, reason, action, note, args...)
	}
}

// SetupWithManager registers the controller, and the Watch and each
// vCenter's watch (if any) as sources of its events and runnables of the
// manager.
func (r *VirtualMachineReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder("virtualmachine")
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("virtualmachine").For(&vmv1.VirtualMachine{})
	if r.watched() {
		changes := make(chan event.TypedGenericEvent[*vmv1.VirtualMachine], 1024)
		b = b.WatchesRawSource(source.Channel(changes, &handler.TypedEnqueueRequestForObject[*vmv1.VirtualMachine]{}))
		if err := r.runWatches(mgr, changes); err != nil {
			return err
		}
	}
	return b.Complete(r)
}

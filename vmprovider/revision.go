package vmprovider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/replicakit/replicakit/replicaset"
)

// TemplateRevision returns the revision of the VMs t makes: a hash
// (replicaset.HashRevision) of everything in t that shapes a VM, its
// template, CPUs, memory, power, networks, cloud-init data and placement,
// and of nothing that differs from one VM of a set to the next (Name,
// Owner, Zone, Revision). Two specs with the same revision make the same
// VMs; a Set with a Rollout replaces the VMs whose recorded revision is
// not its Template's.
//
// A zone's placement (Set.Zones) is not part of it: moving a zone's VMs
// elsewhere is not a rollout. Nor is LinkedClone, which changes how a VM's
// disks are stored, not what the VM is: a Set that turns it on makes its
// new VMs linked clones and replaces none of those it has. A field added
// to Spec is part of it only when it is named here, so that the revision
// of every spec made before stays what it was (a changed revision would
// replace every VM of every Set with a Rollout).
//
// The hot-add settings (CPUHotAdd, MemoryHotAdd) are part of it only when
// set: a spec that leaves them false has the revision it had before they
// existed, so upgrading replicakit rolls no set out. LinkedCloneSnapshot
// is part of it only when LinkedClone is set and it names a snapshot:
// another snapshot is other disks. BaseRevision is the
// same hash without the VM's size.
func TemplateRevision(t Spec) string {
	shape := struct {
		Template  string
		CPUs      int32
		MemoryMiB int64
		PowerOn   bool
		Networks  []string
		CloudInit *CloudInit
		Placement Placement
		// Added later: omitted when false, so older revisions stay.
		CPUHotAdd    bool   `json:",omitempty"`
		MemoryHotAdd bool   `json:",omitempty"`
		Snapshot     string `json:",omitempty"`
	}{t.Template, t.CPUs, t.MemoryMiB, t.PowerOn, networks(t), t.CloudInit, t.Placement, t.CPUHotAdd, t.MemoryHotAdd, linkedSnapshot(t)}
	return hashShape(shape)
}

// linkedSnapshot returns the snapshot t's linked clones are named to link
// to, "" for full clones or the provider's own.
func linkedSnapshot(t Spec) string {
	if !t.LinkedClone {
		return ""
	}
	return t.LinkedCloneSnapshot
}

// networks returns t's networks, nil when there are none: no networks and
// an empty list both keep the template's.
func networks(t Spec) []string {
	if len(t.Networks) == 0 {
		return nil
	}
	return t.Networks
}

// hashShape hashes a spec's shape, encoded as JSON.
func hashShape(shape any) string {
	b, err := json.Marshal(shape)
	if err != nil {
		panic("vmprovider: encoding a Spec cannot fail: " + err.Error())
	}
	return replicaset.HashRevision(b)
}

// RevisionMarker is implemented by a provider that can record a revision
// on a VM it already has, as Create records Spec.Revision. A Set with a
// Rollout uses it to mark VMs made before revisions were recorded (by an
// earlier replicakit, or before the Set's Rollout was turned on) with its
// current revision, so that they are not replaced at once and a later
// change of the Template does replace them. Without it such VMs count as
// current for good (replicaset counts a replica without a revision as
// on the wanted one); delete them to replace them.
//
// MarkRevision leaves the base revision (Spec.BaseRevision) alone. A
// provider that is a Resizer records both revisions in one change with
// Resize at zero sizes (Resize{Revision: r, BaseRevision: b}), which
// changes nothing else; the interface stays as it was, so providers
// written against it still satisfy it.
type RevisionMarker interface {
	// MarkRevision records revision on the VM called name, which must
	// carry owner's mark (else an error wrapping ErrNotOwned), replacing
	// any revision it had. A VM that is gone is an error wrapping
	// ErrNotFound.
	MarkRevision(ctx context.Context, name, owner, revision string) error
}

// assume gives the VMs in current that record no revision the one they
// count as on (assumed): the revision of the Set's first pass with a
// Rollout, which is revision then. Without a Rollout it forgets it.
func (s *Set) assume(current []replicaset.Replica, revision string) {
	switch {
	case revision == "":
		s.assumed = ""
		return
	case s.assumed == "":
		s.assumed = revision
	}
	for i := range current {
		if current[i].Revision == "" {
			current[i].Revision = s.assumed
		}
	}
}

// markUnrecorded records revision on every VM in current (the replicas
// of vms) that records none, when the Provider can (RevisionMarker, on the
// VM's endpoint when it is EndpointScoped): such VMs count as on it
// already, and marked they are replaced, or changed in place, by the next
// rollout. When the Provider can resize (Resizer, on the VM's endpoint
// when it is EndpointScoped) it records the Template's base revision too,
// in the same change (Resize at zero sizes), on those VMs and on every VM
// on revision that records no base revision (made before base revisions
// were recorded): a VM on the Template's revision was made from the
// Template, so its base is the Template's. VMs on other revisions that
// record none are left as they are: their base is unknown, so InPlaceFor
// has them replaced. It returns the marks that failed, joined; those VMs
// are marked in a later pass, as are those in the unreachable zones. The
// Set's lock is held.
func (s *Set) markUnrecorded(ctx context.Context, vms []VM, current []replicaset.Replica, revision string, unreachable []string) error {
	m, marker := s.Provider.(RevisionMarker)
	// Base revisions are recorded on VMs that lack one only under an
	// in-place method: a Set that never changes VMs in place makes no
	// reconfigure for them.
	recordBase := s.recordsBase() && s.Rollout != nil && s.Rollout.Method != replicaset.UpdateReplace
	if revision == "" || !marker && !recordBase {
		return nil
	}
	scoped, _ := s.Provider.(EndpointScoped)
	base := BaseRevision(s.Template)
	var errs []error
	for i := range current {
		r, vm := &current[i], &vms[i]
		unrecorded := r.Revision == ""
		if r.Deleting || r.Unreachable || slices.Contains(unreachable, r.Zone) ||
			!unrecorded && (!recordBase || r.Revision != revision || vm.BaseRevision != "") {
			continue
		}
		var resize func(context.Context, Resize) error
		if recordBase {
			resize, _ = s.resizer(*vm)
		}
		var err error
		switch {
		case resize != nil:
			var to Resize
			if unrecorded {
				to.Revision = revision
			}
			if vm.BaseRevision == "" {
				to.BaseRevision = base
			}
			if err = resize(ctx, to); err != nil {
				what := fmt.Sprintf("base revision %q", to.BaseRevision)
				switch {
				case to.BaseRevision == "":
					what = fmt.Sprintf("revision %q", to.Revision)
				case unrecorded:
					what = fmt.Sprintf("revision %q and %s", to.Revision, what)
				}
				errs = append(errs, fmt.Errorf("record %s on VM %q: %w", what, vm.Name, err))
				continue
			}
			vm.BaseRevision = cmp.Or(vm.BaseRevision, base)
		case !unrecorded || !marker:
			continue
		case scoped != nil && vm.Endpoint != "":
			err = markRevision(ctx, scoped.On(vm.Endpoint), vm.Name, s.Template.Owner.UID, revision)
		default:
			err = m.MarkRevision(ctx, vm.Name, s.Template.Owner.UID, revision)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("record revision %q on VM %q: %w", revision, vm.Name, err))
			continue
		}
		if unrecorded {
			r.Revision, vm.Revision = revision, revision
		}
	}
	return errors.Join(errs...)
}

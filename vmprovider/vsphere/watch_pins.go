package vsphere

import (
	"time"

	"github.com/replicakit/replicakit/vmprovider"
)

// written is the state a write left (gone, for a destroy), which reads
// return until the watch reports a state that agrees with it or pinFor
// has passed: updates from before the write, still on their way, must not
// take a read back in time.
//
// Some writes are never settled by an update: a destroy of a VM the watch
// never saw, or whose removal it reported before the destroy returned, and
// a write to a VM that then left without an update that agrees. Once
// pinFor has passed nothing reads such an entry, and every update and
// write drops those, so the map holds only pins in force (and, until the
// next update or write, those that passed since the last).
type written struct {
	vm    vmprovider.VM
	gone  bool
	until time.Time
}

// pinFor bounds how long a write's state overrides the watch's.
const pinFor = 10 * time.Second

// recheck reports the VM called name again once until has passed, if the
// watch's state of it still differs from what a write left then: an
// update that disagrees with a write in force may come from before the
// write or from a change after it (a VM powered off in vCenter right after
// the provider powered it on), and reads answer with the write until
// until. Without this report, nothing would say that reads answer
// differently after it. One recheck is pending per name at a time. The
// caller holds w.mu for writing.
func (w *Watch) recheck(name string, until time.Time) {
	if w.rechecks == nil {
		w.rechecks = map[string]*time.Timer{}
	}
	if _, ok := w.rechecks[name]; ok {
		return
	}
	w.rechecks[name] = time.AfterFunc(time.Until(until), func() {
		w.mu.Lock()
		delete(w.rechecks, name)
		vm, ok := w.byName[name]
		wr, pinned := w.written[name]
		now := time.Now()
		if pinned && now.Before(wr.until) {
			// A newer write: its own updates recheck it.
			ok = false
		}
		w.mu.Unlock()
		if ok && (!pinned || !agrees(wr.vm, vm)) {
			w.notify([]vmprovider.VM{vm}, nil)
		}
	})
}

// stopRechecks drops the reports pending: the watch has stopped.
func (w *Watch) stopRechecks() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, t := range w.rechecks {
		t.Stop()
		delete(w.rechecks, name)
	}
}

// put records vm, as a write through the provider left it, for reads
// until the watch reports a state that agrees.
func (w *Watch) put(vm vmprovider.VM) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.expire(now)
	w.written[vm.Name] = written{vm: w.fields.keep(vm), until: now.Add(w.pin)}
}

// forget records that the VM called name is gone, as a write through the
// provider destroyed it, for reads until the watch reports it gone.
//
// The watch's copy is dropped too (a later update about the VM brings it
// back): a destroy that found nothing to destroy, or a write that found no
// VM, also corrects a copy the watch kept after missing the VM's removal,
// as govmomi's simulator can make it do.
func (w *Watch) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.expire(now)
	delete(w.byName, name)
	w.written[name] = written{gone: true, until: now.Add(w.pin)}
}

// powered records that a write through the provider set the power of the
// VM called name to state, for reads until the watch reports it so.
func (w *Watch) powered(name string, state vmprovider.PowerState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.expire(now)
	vm, ok := w.byName[name]
	if wr, pinned := w.written[name]; pinned && !wr.gone && now.Before(wr.until) {
		vm, ok = wr.vm, true
	}
	if !ok || vm.Power == state {
		return
	}
	vm.Power = state
	if state != vmprovider.PoweredOn {
		vm.BootedAt, vm.IPAddresses, vm.Heartbeat, vm.ToolsRunning = time.Time{}, nil, vmprovider.HeartbeatGray, false
	}
	w.written[name] = written{vm: vm, until: now.Add(w.pin)}
}

// expire drops the writes whose pin has passed at now, which no read
// consults any more. The caller holds w.mu for writing.
func (w *Watch) expire(now time.Time) {
	for name, wr := range w.written {
		if !now.Before(wr.until) {
			delete(w.written, name)
		}
	}
}

// agrees reports whether the watch's state of a VM has caught up with what
// a write left: the same VM in the same power state, of the same size and
// on the same revisions (a resize's).
func agrees(wrote, seen vmprovider.VM) bool {
	return wrote.InstanceUUID == seen.InstanceUUID && wrote.Power == seen.Power &&
		wrote.CPUs == seen.CPUs && wrote.MemoryMiB == seen.MemoryMiB &&
		wrote.Revision == seen.Revision && wrote.BaseRevision == seen.BaseRevision
}

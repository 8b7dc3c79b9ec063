package rollwatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Hardware is what vCenter says a VM has.
type Hardware struct {
	CPUs      int32
	MemoryMiB int32
}

// ReadHardware reads, over the vSphere API, the hardware of the VMs in the
// VM folder of cfg's datacenter whose names start with prefix, by name.
func ReadHardware(ctx context.Context, cfg vsphere.Config, prefix string) (map[string]Hardware, error) {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	vms, err := vcsim.FolderVMs(ctx, vc, cfg, "name", "summary.config")
	if err != nil {
		return nil, err
	}
	out := map[string]Hardware{}
	for _, vm := range vms {
		if strings.HasPrefix(vm.Name, prefix) {
			out[vm.Name] = Hardware{CPUs: vm.Summary.Config.NumCpu, MemoryMiB: vm.Summary.Config.MemorySizeMB}
		}
	}
	return out, nil
}

// VCenterCount polls vCenter for the VMs whose names start with a prefix
// (a set's VMs: a VM exists there from its clone until it is destroyed,
// whether or not its VirtualMachine is being deleted) and keeps the most it
// saw, and the polls that saw more than a bound.
type VCenterCount struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu                  sync.Mutex
	polls, failed, most int
	over                []string
}

// PollVCenter logs in to cfg's vCenter once and counts, every interval
// until Stop, the VMs of its datacenter's VM folder whose names start with
// prefix, against bound.
func PollVCenter(ctx context.Context, cfg vsphere.Config, prefix string, bound int, every time.Duration) (*VCenterCount, error) {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	folder, err := vcsim.VMFolder(ctx, vc, cfg)
	if err != nil {
		_ = logout(context.WithoutCancel(ctx))
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	v := &VCenterCount{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		defer func() { _ = logout(context.WithoutCancel(ctx)) }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			vms, err := vcsim.ChildVMs(ctx, vc, folder, "name")
			v.mu.Lock()
			v.polls++
			if err != nil {
				v.failed++ // a VM destroyed between the two reads: the next poll reads again
				v.mu.Unlock()
				continue
			}
			var names []string
			for _, vm := range vms {
				if strings.HasPrefix(vm.Name, prefix) {
					names = append(names, vm.Name)
				}
			}
			v.most = max(v.most, len(names))
			if len(names) > bound && len(v.over) < maxFirst {
				slices.Sort(names)
				v.over = append(v.over, fmt.Sprintf("%d VMs in vCenter, above %d: %v", len(names), bound, names))
			}
			v.mu.Unlock()
		}
	}()
	return v, nil
}

// Stop ends the polling and returns how many polls read vCenter (and how
// many of them failed), the most VMs one saw, and the first few that saw
// more than the bound.
func (v *VCenterCount) Stop() (polls, failed, most int, over []string) {
	v.cancel()
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.polls, v.failed, v.most, slices.Clone(v.over)
}

package vmprovider

import (
	"context"
	"fmt"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// actuator lets execute.Plan apply a Set's replicaset.Plan to VMs: it
// creates VMs from template under the replica's name and deletes them with
// template.Owner's mark. With zones it places each VM in its zone
// (execute.ZonedActuator).
type actuator struct {
	// provider does the work.
	provider Provider
	// template is the spec every new VM gets; its Name is replaced by the
	// replica's name.
	template Spec
	// zones maps each zone a plan may name to where its VMs go; a zone's
	// non-empty placement fields override the template's.
	zones map[string]Placement
}

var _ execute.ZonedActuator = actuator{}

// Create creates the VM called name. A template's cloud-init metadata is
// personalized with the name as instance-id and local-hostname, unless it
// gives them (CloudInit.Personalized).
func (a actuator) Create(ctx context.Context, name string) error {
	s := a.template
	s.Name = name
	if s.CloudInit != nil {
		ci, err := s.CloudInit.Personalized(name, name)
		if err != nil {
			return fmt.Errorf("VM %q: %w", name, err)
		}
		s.CloudInit = &ci
	}
	_, err := a.provider.Create(ctx, s)
	return err
}

// CreateIn creates the VM called name in zone: with the zone's placement
// over the template's, and the zone recorded on the VM (VM.Zone). A zone
// zones does not hold is an error wrapping ErrInvalidSpec.
func (a actuator) CreateIn(ctx context.Context, name, zone string) error {
	pl, ok := a.zones[zone]
	if !ok {
		return fmt.Errorf("VM %q: no placement for zone %q: %w", name, zone, ErrInvalidSpec)
	}
	t := a
	t.template.Zone = zone
	t.template.Placement = pl.over(a.template.Placement)
	return t.Create(ctx, name)
}

// over returns p with base's fields where p's are empty.
func (p Placement) over(base Placement) Placement {
	if p.ResourcePool == "" {
		p.ResourcePool = base.ResourcePool
	}
	if p.Folder == "" {
		p.Folder = base.Folder
	}
	if p.Datastore == "" {
		p.Datastore = base.Datastore
	}
	if p.Endpoint == "" {
		p.Endpoint = base.Endpoint
	}
	return p
}

// Delete destroys r's VM.
func (a actuator) Delete(ctx context.Context, r replicaset.Replica) error {
	return a.provider.Delete(ctx, r.Name, a.template.Owner.UID)
}

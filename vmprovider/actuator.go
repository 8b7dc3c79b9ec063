package vmprovider

import (
	"context"
	"fmt"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Actuator lets execute.Plan apply a replicaset.Plan straight to VMs: it
// creates VMs from Template under the replica's name and deletes them with
// Template.Owner's mark. With Zones it places each VM in its zone
// (execute.ZonedActuator).
type Actuator struct {
	// Provider does the work.
	Provider Provider
	// Template is the spec every new VM gets; its Name is replaced by the
	// replica's name.
	Template Spec
	// Zones maps each zone a plan may name to where its VMs go; a zone's
	// non-empty placement fields override the Template's.
	Zones map[string]Placement
}

var _ execute.ZonedActuator = Actuator{}

// Create creates the VM called name. A template's cloud-init metadata is
// personalized with the name as instance-id and local-hostname, unless it
// gives them (CloudInit.Personalized).
func (a Actuator) Create(ctx context.Context, name string) error {
	s := a.Template
	s.Name = name
	if s.CloudInit != nil {
		ci, err := s.CloudInit.Personalized(name, name)
		if err != nil {
			return fmt.Errorf("VM %q: %w", name, err)
		}
		s.CloudInit = &ci
	}
	_, err := a.Provider.Create(ctx, s)
	return err
}

// CreateIn creates the VM called name in zone: with the zone's placement
// over the Template's, and the zone recorded on the VM (VM.Zone). A zone
// Zones does not hold is an error wrapping ErrInvalidSpec.
func (a Actuator) CreateIn(ctx context.Context, name, zone string) error {
	pl, ok := a.Zones[zone]
	if !ok {
		return fmt.Errorf("VM %q: no placement for zone %q: %w", name, zone, ErrInvalidSpec)
	}
	t := a
	t.Template.Zone = zone
	t.Template.Placement = pl.over(a.Template.Placement)
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
func (a Actuator) Delete(ctx context.Context, r replicaset.Replica) error {
	return a.Provider.Delete(ctx, r.Name, a.Template.Owner.UID)
}

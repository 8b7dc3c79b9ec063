package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// ErrUnreachable means a platform endpoint (a vCenter) did not answer, so
// what it holds is unknown: neither there nor gone. It is wrapped by
// *UnreachableError.
var ErrUnreachable = errors.New("vmprovider: endpoint unreachable")

// ErrDuplicateName means VMs of one name are on more than one endpoint (a
// partition or a person can leave that behind): an operation by name alone
// cannot tell which is meant, so Endpoints refuses it (act on one
// endpoint's VM through Endpoints.On instead), and a Set counts each as a
// replica and reports the name with an error wrapping it.
var ErrDuplicateName = errors.New("vmprovider: VM name on several endpoints")

// EndpointScoped is implemented by a Provider over several endpoints
// (Endpoints) to act on the VM of a name on one endpoint only: the one
// List reported (VM.Endpoint). A Set deletes, marks, resets and resizes
// its VMs through it when its Provider has it, so that of two VMs of one
// name it acts on the one it chose; a wrapper of Endpoints should
// implement it too, or a Set can remove neither copy of a repeated name.
type EndpointScoped interface {
	// On returns a Provider that acts on endpoint only (empty for the
	// default): its Delete of a VM gone from that endpoint is success,
	// whatever other endpoints hold. A Set marks, resets and resizes a VM
	// through it as a RevisionMarker, Resetter and Resizer, which the
	// Provider that Endpoints.On returns is.
	On(endpoint string) Provider
}

// UnreachableError names the endpoints that did not answer. Endpoints.List
// returns it together with the VMs of the endpoints that did. Each
// endpoint's own error is reached through errors.Is and errors.As.
type UnreachableError struct {
	// Endpoints names the endpoints that did not answer, sorted.
	Endpoints []string

	def string // the endpoint a Placement without one means (Endpoints.Default)
	err error  // each endpoint's error, joined
}

// Error says which endpoints did not answer, and why.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("endpoints %s did not answer, so what they hold is unknown: %v", strings.Join(e.Endpoints, ", "), e.err)
}

// Unwrap returns ErrUnreachable and the endpoints' errors.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// Unreachable reports whether endpoint, as a Placement names it (empty for
// the default, Endpoints.Default), is one that did not answer.
func (e *UnreachableError) Unreachable(endpoint string) bool {
	if endpoint == "" {
		endpoint = e.def
	}
	return slices.Contains(e.Endpoints, endpoint)
}

// Endpoints is a Provider over several platform endpoints, such as
// vCenters, each a Provider of its own with its own session, credentials
// and task bounds. Create puts a VM on the endpoint its
// Spec.Placement.Endpoint names (Default when empty); List asks every
// endpoint at once and reports each VM's endpoint (VM.Endpoint); Get finds
// the VM on whichever endpoint holds it, asking the one it was last seen
// on first; SetPower, Delete, MarkRevision, Reset and Resize ask every
// endpoint at once which holds the VM and act there (so they wait for the
// slowest endpoint to answer or fail); On (EndpointScoped) gives the same
// operations on one endpoint only.
//
// An endpoint that fails a List is unreachable, and its VMs are unknown,
// not gone: List returns the VMs of the others with an *UnreachableError
// naming it. Likewise a VM that no endpoint that answered holds, while
// some did not answer, is unknown: Get, SetPower, Delete and MarkRevision
// then return an *UnreachableError, never ErrNotFound or (for Delete)
// success.
//
// A name is meant to be on one endpoint, as a Set's names are; when VMs
// of one name are on several (left by a partition, or by a person),
// SetPower, Delete and MarkRevision refuse the name with an error wrapping
// ErrDuplicateName rather than act on a copy the caller may not mean, and
// Get returns the copy on the endpoint that List last saw it on. Act on
// one copy through On, naming its endpoint. A name held by one endpoint
// that answered while others did not answer is acted on there, as the
// name is unique as far as can be seen.
//
// Set Providers and Default before first use and do not change them; an
// Endpoints is safe for concurrent use after that, and must not be copied.
type Endpoints struct {
	// Providers maps each endpoint's name to its Provider.
	Providers map[string]Provider
	// Default is the endpoint of a Spec whose Placement names none. Empty
	// means such a Spec is refused unless Providers holds one endpoint.
	Default string

	mu sync.Mutex
	at map[string]string // VM name → the endpoint it was last seen on
}

var (
	_ Provider       = (*Endpoints)(nil)
	_ RevisionMarker = (*Endpoints)(nil)
	_ EndpointScoped = (*Endpoints)(nil)
	_ Resetter       = (*Endpoints)(nil)
)

// endpoint resolves the endpoint a placement names.
func (e *Endpoints) endpoint(name string) (string, Provider, error) {
	if name == "" {
		name = e.Default
		if name == "" && len(e.Providers) == 1 {
			for only := range e.Providers {
				name = only
			}
		}
	}
	p, ok := e.Providers[name]
	if !ok {
		return "", nil, fmt.Errorf("no endpoint %q among %v: %w", name, slices.Sorted(maps.Keys(e.Providers)), ErrInvalidSpec)
	}
	return name, p, nil
}

// saw records that the VM called name is on endpoint ("" forgets it).
func (e *Endpoints) saw(name, endpoint string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if endpoint == "" {
		delete(e.at, name)
		return
	}
	if e.at == nil {
		e.at = map[string]string{}
	}
	e.at[name] = endpoint
}

// Create implements Provider on the endpoint spec's placement names.
func (e *Endpoints) Create(ctx context.Context, spec Spec) (VM, error) {
	name, p, err := e.endpoint(spec.Placement.Endpoint)
	if err != nil {
		return VM{}, fmt.Errorf("VM %q: %w", spec.Name, err)
	}
	vm, err := p.Create(ctx, spec)
	if err != nil {
		return vm, fmt.Errorf("on endpoint %q: %w", name, err)
	}
	e.saw(vm.Name, name)
	vm.Endpoint = name
	return vm, nil
}

// List implements Provider: every endpoint's VMs carrying owner's mark,
// asked at once, sorted by name; with an *UnreachableError for the
// endpoints that failed, beside the VMs of those that answered.
func (e *Endpoints) List(ctx context.Context, owner string) ([]VM, error) {
	type answer struct {
		vms []VM
		err error
	}
	answers := make(map[string]*answer, len(e.Providers))
	var wg sync.WaitGroup
	for name, p := range e.Providers {
		a := &answer{}
		answers[name] = a
		wg.Go(func() { a.vms, a.err = p.List(ctx, owner) })
	}
	wg.Wait()
	var out []VM
	var down []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(answers)) {
		a := answers[name]
		if a.err != nil {
			down = append(down, name)
			errs = append(errs, fmt.Errorf("endpoint %q: %w", name, a.err))
			continue
		}
		for _, vm := range a.vms {
			vm.Endpoint = name
			e.saw(vm.Name, name)
			out = append(out, vm)
		}
	}
	slices.SortFunc(out, func(a, b VM) int { return strings.Compare(a.Name, b.Name) })
	if len(down) > 0 {
		return out, &UnreachableError{Endpoints: down, def: e.Default, err: errors.Join(errs...)}
	}
	return out, nil
}

// find runs op on the endpoint that holds the VM called name: first the
// one it was last seen on, then every other. op reports ErrNotFound when
// its endpoint has no such VM. It returns the endpoint that has the VM
// and op's answer there; ErrNotFound when every endpoint answered that it
// has none; or an *UnreachableError when none that answered has it and
// some did not answer.
func (e *Endpoints) find(name string, op func(Provider) error) (string, error) {
	e.mu.Lock()
	first := e.at[name]
	e.mu.Unlock()
	order := slices.Sorted(maps.Keys(e.Providers))
	if i := slices.Index(order, first); i > 0 {
		order = slices.Insert(slices.Delete(order, i, i+1), 0, first)
	}
	var down []string
	var errs []error
	for _, ep := range order {
		err := op(e.Providers[ep])
		switch {
		case err == nil:
			e.saw(name, ep)
			return ep, nil
		case errors.Is(err, ErrNotFound):
			continue
		case errors.Is(err, ErrNotOwned), errors.Is(err, ErrInvalidSpec):
			e.saw(name, ep)
			return ep, fmt.Errorf("on endpoint %q: %w", ep, err)
		default:
			down = append(down, ep)
			errs = append(errs, fmt.Errorf("endpoint %q: %w", ep, err))
		}
	}
	if len(down) > 0 {
		return "", fmt.Errorf("VM %q: %w", name, &UnreachableError{Endpoints: down, def: e.Default, err: errors.Join(errs...)})
	}
	e.saw(name, "")
	return "", fmt.Errorf("VM %q on no endpoint: %w", name, ErrNotFound)
}

// Get implements Provider on whichever endpoint holds the VM.
func (e *Endpoints) Get(ctx context.Context, name string) (VM, error) {
	var vm VM
	ep, err := e.find(name, func(p Provider) error {
		var err error
		vm, err = p.Get(ctx, name)
		return err
	})
	if err != nil {
		return VM{}, err
	}
	vm.Endpoint = ep
	return vm, nil
}

// SetPower implements Provider on the endpoint that holds the VM; a name
// on several endpoints is refused (ErrDuplicateName).
func (e *Endpoints) SetPower(ctx context.Context, name, owner string, state PowerState) error {
	_, err := e.only(ctx, name, func(p Provider) error { return p.SetPower(ctx, name, owner, state) })
	return err
}

// Delete implements Provider on the endpoint that holds the VM. A VM that
// every endpoint answered it does not hold is success, as for one
// endpoint; one that none that answered holds, while some did not answer,
// is an *UnreachableError; a name on several endpoints is refused
// (ErrDuplicateName: delete one copy through On).
func (e *Endpoints) Delete(ctx context.Context, name, owner string) error {
	ep, err := e.only(ctx, name, func(p Provider) error { return p.Delete(ctx, name, owner) })
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err == nil {
		e.forget(name, ep)
	}
	return err
}

// MarkRevision implements RevisionMarker on the endpoint that holds the
// VM, when its Provider is a RevisionMarker (else an error wrapping
// ErrInvalidSpec); a name on several endpoints is refused
// (ErrDuplicateName: mark one copy through On).
func (e *Endpoints) MarkRevision(ctx context.Context, name, owner, revision string) error {
	_, err := e.only(ctx, name, func(p Provider) error { return markRevision(ctx, p, name, owner, revision) })
	return err
}

// markRevision marks the VM on p, when p can.
func markRevision(ctx context.Context, p Provider, name, owner, revision string) error {
	m, ok := p.(RevisionMarker)
	if !ok {
		return fmt.Errorf("the endpoint's provider records no revisions: %w", ErrInvalidSpec)
	}
	return m.MarkRevision(ctx, name, owner, revision)
}

// Reset implements Resetter on the endpoint that holds the VM, when its
// Provider is a Resetter (else an error wrapping ErrInvalidSpec); a name on
// several endpoints is refused (ErrDuplicateName: reset one copy through
// On).
func (e *Endpoints) Reset(ctx context.Context, name, owner string) error {
	_, err := e.only(ctx, name, func(p Provider) error { return reset(ctx, p, name, owner) })
	return err
}

// reset resets the VM on p, when p can.
func reset(ctx context.Context, p Provider, name, owner string) error {
	r, ok := p.(Resetter)
	if !ok {
		return fmt.Errorf("the endpoint's provider cannot reset VMs: %w", ErrInvalidSpec)
	}
	return r.Reset(ctx, name, owner)
}

// forget drops what e remembers of the VM called name on endpoint.
func (e *Endpoints) forget(name, endpoint string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at[name] == endpoint {
		delete(e.at, name)
	}
}

// only runs op on the one endpoint that holds a VM called name, after
// asking every endpoint at once (Get), and returns that endpoint and op's
// answer there. When several hold one, it runs op nowhere and returns an
// error wrapping ErrDuplicateName; when none that answered holds one, an
// *UnreachableError if some did not answer, else ErrNotFound.
func (e *Endpoints) only(ctx context.Context, name string, op func(Provider) error) (string, error) {
	errs := make(map[string]error, len(e.Providers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for ep, p := range e.Providers {
		wg.Go(func() {
			_, err := p.Get(ctx, name)
			mu.Lock()
			errs[ep] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	var held, down []string
	var downErrs []error
	for _, ep := range slices.Sorted(maps.Keys(errs)) {
		switch err := errs[ep]; {
		case err == nil:
			held = append(held, ep)
		case errors.Is(err, ErrNotFound):
		default:
			down = append(down, ep)
			downErrs = append(downErrs, fmt.Errorf("endpoint %q: %w", ep, err))
		}
	}
	switch {
	case len(held) > 1:
		return "", fmt.Errorf("VM %q is on endpoints %s; name the one meant (Endpoints.On): %w", name, strings.Join(held, ", "), ErrDuplicateName)
	case len(held) == 1:
		ep := held[0]
		e.saw(name, ep)
		if err := op(e.Providers[ep]); err != nil {
			return ep, fmt.Errorf("on endpoint %q: %w", ep, err)
		}
		return ep, nil
	case len(down) > 0:
		return "", fmt.Errorf("VM %q: %w", name, &UnreachableError{Endpoints: down, def: e.Default, err: errors.Join(downErrs...)})
	}
	e.saw(name, "")
	return "", fmt.Errorf("VM %q on no endpoint: %w", name, ErrNotFound)
}

// On implements EndpointScoped: a Provider that acts on endpoint only
// (empty for Default), with the Provider that Providers holds for it, and
// reports it as each VM's endpoint. Its Delete, MarkRevision, Reset and
// Resize are those of Endpoints on that one endpoint: a VM gone from it
// is deleted already, whatever other endpoints hold; MarkRevision, Reset
// and Resize fail with an error wrapping ErrInvalidSpec when the
// endpoint's Provider cannot do them. Its Create places the VM there,
// whatever spec.Placement.Endpoint says. An endpoint Providers does not
// hold makes every call fail with an error wrapping ErrInvalidSpec.
func (e *Endpoints) On(endpoint string) Provider { return onEndpoint{e: e, endpoint: endpoint} }

// onEndpoint is Endpoints on one endpoint (Endpoints.On).
type onEndpoint struct {
	e        *Endpoints
	endpoint string
}

var _ interface {
	Provider
	RevisionMarker
	Resetter
	Resizer
} = onEndpoint{}

// do runs op on the endpoint's Provider for the VM called name, and
// returns the endpoint's name and op's error, naming the VM and endpoint.
func (o onEndpoint) do(name string, op func(Provider) error) (string, error) {
	ep, p, err := o.e.endpoint(o.endpoint)
	if err != nil {
		return "", fmt.Errorf("VM %q: %w", name, err)
	}
	if err := op(p); err != nil {
		return ep, fmt.Errorf("VM %q on endpoint %q: %w", name, ep, err)
	}
	return ep, nil
}

// Create implements Provider on the endpoint.
func (o onEndpoint) Create(ctx context.Context, spec Spec) (VM, error) {
	spec.Placement.Endpoint = o.endpoint
	return o.e.Create(ctx, spec)
}

// Get implements Provider on the endpoint.
func (o onEndpoint) Get(ctx context.Context, name string) (VM, error) {
	var vm VM
	ep, err := o.do(name, func(p Provider) error {
		var err error
		vm, err = p.Get(ctx, name)
		return err
	})
	if err != nil {
		return VM{}, err
	}
	o.e.saw(name, ep)
	vm.Endpoint = ep
	return vm, nil
}

// List implements Provider on the endpoint.
func (o onEndpoint) List(ctx context.Context, owner string) ([]VM, error) {
	ep, p, err := o.e.endpoint(o.endpoint)
	if err != nil {
		return nil, err
	}
	vms, err := p.List(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", ep, err)
	}
	for i := range vms {
		vms[i].Endpoint = ep
		o.e.saw(vms[i].Name, ep)
	}
	return vms, nil
}

// SetPower implements Provider on the endpoint.
func (o onEndpoint) SetPower(ctx context.Context, name, owner string, state PowerState) error {
	_, err := o.do(name, func(p Provider) error { return p.SetPower(ctx, name, owner, state) })
	return err
}

// Delete implements Provider on the endpoint: a VM gone from it is
// success, whatever other endpoints hold.
func (o onEndpoint) Delete(ctx context.Context, name, owner string) error {
	ep, err := o.do(name, func(p Provider) error { return p.Delete(ctx, name, owner) })
	if err != nil {
		return err
	}
	o.e.forget(name, ep)
	return nil
}

// MarkRevision implements RevisionMarker on the endpoint, when its
// Provider is one (else an error wrapping ErrInvalidSpec).
func (o onEndpoint) MarkRevision(ctx context.Context, name, owner, revision string) error {
	_, err := o.do(name, func(p Provider) error { return markRevision(ctx, p, name, owner, revision) })
	return err
}

// Reset implements Resetter on the endpoint, when its Provider is one
// (else an error wrapping ErrInvalidSpec).
func (o onEndpoint) Reset(ctx context.Context, name, owner string) error {
	_, err := o.do(name, func(p Provider) error { return reset(ctx, p, name, owner) })
	return err
}

// Resize implements Resizer on the endpoint, when its Provider is one
// (else an error wrapping ErrInvalidSpec).
func (o onEndpoint) Resize(ctx context.Context, name, owner string, to Resize) error {
	_, err := o.do(name, func(p Provider) error { return resize(ctx, p, name, owner, to) })
	return err
}

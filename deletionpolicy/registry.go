package deletionpolicy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/replicakit/replicakit/replicaset"
)

// Policy is a deletion order: it ranks a replica set's deletion candidates.
// replicaset.Compute applies the universal tiers around it (its
// documentation states the whole order), so a policy only orders what they
// leave to it.
type Policy interface {
	replicaset.Ranker
}

// Errors returned by Registry. Unknown names are reported as
// *UnknownPolicyError instead, so callers can list the known ones.
var (
	// ErrDuplicate means a name was registered twice.
	ErrDuplicate = errors.New("deletionpolicy: name already registered")
	// ErrInvalidRegistration means an empty name or a nil policy was
	// registered.
	ErrInvalidRegistration = errors.New("deletionpolicy: invalid registration")
)

// UnknownPolicyError is returned by Registry.Lookup for a name that was never
// registered.
type UnknownPolicyError struct {
	// Name is the name that was looked up.
	Name string
	// Known lists the registered names, sorted.
	Known []string
}

// Error says which name is unknown and which are known.
func (e *UnknownPolicyError) Error() string {
	return fmt.Sprintf("deletionpolicy: unknown policy %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Registry maps policy names, as users write them in a spec, to policies.
// It is an explicit value: nothing registers itself, and there is no
// package-level registry. The zero value is an empty registry ready to use.
// A Registry is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	policies map[string]Policy
}

// Register adds p under name. It returns an error wrapping ErrDuplicate when
// name is taken, and one wrapping ErrInvalidRegistration when name is empty
// or p is nil.
func (r *Registry) Register(name string, p Policy) error {
	if name == "" {
		return fmt.Errorf("policy name is empty: %w", ErrInvalidRegistration)
	}
	if p == nil || isNilValue(p) {
		return fmt.Errorf("policy %q is nil: %w", name, ErrInvalidRegistration)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.policies[name]; ok {
		return fmt.Errorf("policy %q: %w", name, ErrDuplicate)
	}
	if r.policies == nil {
		r.policies = make(map[string]Policy)
	}
	r.policies[name] = p
	return nil
}

// Lookup returns the policy registered under name. Names are matched
// exactly. For an unknown name it returns a *UnknownPolicyError listing the
// known names.
func (r *Registry) Lookup(name string) (Policy, error) {
	r.mu.RLock()
	p, ok := r.policies[name]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnknownPolicyError{Name: name, Known: r.Names()}
	}
	return p, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.policies))
	for n := range r.policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// The names under which Default registers the shipped policies.
const (
	NameRandom         = "Random"
	NameOldest         = "Oldest"
	NameNewest         = "Newest"
	NameUnhealthyFirst = "UnhealthyFirst"
	NameHighestOrdinal = "HighestOrdinal"
)

// Default returns a new registry holding every shipped policy under its
// name: Random (seeded per owner through replicaset.Spec.Seed), Oldest,
// Newest, UnhealthyFirst and HighestOrdinal. Build it once and share it:
// a Registry is safe for concurrent use. Callers may register their own
// policies beside the shipped ones.
func Default() *Registry {
	r := &Registry{}
	for name, p := range map[string]Policy{
		NameRandom:         Random{},
		NameOldest:         Oldest{},
		NameNewest:         Newest{},
		NameUnhealthyFirst: UnhealthyFirst{},
		NameHighestOrdinal: HighestOrdinal{},
	} {
		if err := r.Register(name, p); err != nil {
			panic(err) // unreachable: the names above are distinct and non-empty
		}
	}
	return r
}

// OrdinalPolicy is implemented by policies that order replicas by
// replicaset.Replica.Ordinal, such as HighestOrdinal. A caller whose
// replicas carry no ordinals (randomly named ones) should refuse such a
// policy rather than let it fall back to name order.
type OrdinalPolicy interface {
	Policy
	// UsesOrdinals reports whether the policy's order depends on
	// Replica.Ordinal.
	UsesOrdinals() bool
}

// UsesOrdinals reports whether p orders replicas by their ordinals: p is an
// OrdinalPolicy that says so.
func UsesOrdinals(p Policy) bool {
	o, ok := p.(OrdinalPolicy)
	return ok && o.UsesOrdinals()
}

// isNilValue reports a nil pointer, map, slice or func behind p, which
// would panic when ranked.
func isNilValue(p Policy) bool {
	switch v := reflect.ValueOf(p); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

package replicaset

import (
	"fmt"
	"strings"
)

// Plan is the work one reconcile pass should do, as Compute decided it. It is
// a value: the caller carries it out (an executor, a binding) and never
// re-derives the decision.
type Plan struct {
	// Create is how many new replicas to create in this pass.
	Create int
	// Delete lists the replicas to delete in this pass, in deletion order.
	// None of them is already being deleted or protected.
	Delete []Replica
	// Deleting lists the replicas already being deleted, which need no
	// action: they covered the excess before any replica in Delete was
	// chosen (see Compute's deletion order).
	Deleting []Replica
	// Deferred is how many creates or deletes this pass holds back: those
	// over the per-pass cap, and deletes Spec.Rebalance holds until
	// replicas coming up are available. A later pass will ask for them.
	Deferred int
	// Shortfall is set when scale-in protection prevents reaching the
	// desired count.
	Shortfall Shortfall
	// CreateZones, when the spec lists zones, holds the zone of each of
	// the Create new replicas (len(CreateZones) == Create); nil otherwise.
	CreateZones []string
	// Unbalanced, when the spec lists zones, says why the live replicas
	// per listed zone will still differ by more than one once this plan is
	// carried out (a zone backing off, protection, the per-pass cap,
	// replicas in zones no longer listed); empty when they will not.
	Unbalanced string
}

// Shortfall explains why a plan cannot reach the desired count.
type Shortfall struct {
	// Count is how many more replicas should be deleted than may be.
	Count int
	// Reason says why, in a sentence a person can act on. It is empty when
	// Count is zero.
	Reason string
}

// IsZero reports whether the plan asks for no action and holds nothing
// back: the set has converged, apart from replicas already being deleted
// and any shortfall.
func (p Plan) IsZero() bool {
	return p.Create == 0 && len(p.Delete) == 0 && p.Deferred == 0
}

// String renders the plan on one line, listing replica names, for logs and
// golden tests:
//
//	create=1 delete=[b c] deleting=[a] deferred=0
//
// Zones add " zones=[a b]" (CreateZones), a shortfall " shortfall=N
// (reason)", and an imbalance " unbalanced=(reason)".
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "create=%d delete=%s deleting=%s deferred=%d",
		p.Create, names(p.Delete), names(p.Deleting), p.Deferred)
	if len(p.CreateZones) > 0 {
		fmt.Fprintf(&b, " zones=[%s]", strings.Join(p.CreateZones, " "))
	}
	if p.Shortfall.Count > 0 {
		fmt.Fprintf(&b, " shortfall=%d (%s)", p.Shortfall.Count, p.Shortfall.Reason)
	}
	if p.Unbalanced != "" {
		fmt.Fprintf(&b, " unbalanced=(%s)", p.Unbalanced)
	}
	return b.String()
}

func names(rs []Replica) string {
	s := make([]string, len(rs))
	for i := range rs {
		s[i] = rs[i].Name
	}
	return "[" + strings.Join(s, " ") + "]"
}

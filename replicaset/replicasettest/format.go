package replicasettest

import (
	"fmt"
	"strings"

	"github.com/replicakit/replicakit/replicaset"
)

// String renders the input for a person reading a failure: the time of
// the pass, the spec (amounts as ParseAmount reads them, "25%" or "3",
// and its Remediation and Lifecycle by value) and one replica a line,
// with what its Preparing and Health hold rather than their addresses.
func (in Input) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Input{Now: %s\n  Spec: %s\n  Replicas (%d):", in.Now.Format("2006-01-02T15:04:05Z07:00"),
		formatSpec(in.Spec), len(in.Replicas))
	for _, r := range in.Replicas {
		fmt.Fprintf(&b, "\n    %s", formatReplica(r))
	}
	b.WriteString("\n}")
	return b.String()
}

// GoString is String, so that rapid's log of a drawn Input (%#v) reads
// as String does.
func (in Input) GoString() string { return in.String() }

// formatSpec renders s with %+v, its pointers by value.
func formatSpec(s replicaset.Spec) string {
	rem, lc := s.Remediation, s.Lifecycle
	s.Remediation, s.Lifecycle = nil, nil
	out := fmt.Sprintf("%+v", s)
	if rem != nil {
		out = strings.Replace(out, "Remediation:<nil>", fmt.Sprintf("Remediation:&%+v", *rem), 1)
	}
	if lc != nil {
		out = strings.Replace(out, "Lifecycle:<nil>", fmt.Sprintf("Lifecycle:&%+v", *lc), 1)
	}
	return out
}

// formatReplica renders r with %+v, its Preparing and Health by value.
func formatReplica(r replicaset.Replica) string {
	prep, health := r.Preparing, r.Health
	r.Preparing, r.Health = nil, nil
	out := fmt.Sprintf("%+v", r)
	if prep != nil {
		out = strings.Replace(out, "Preparing:<nil>", fmt.Sprintf("Preparing:&%+v", *prep), 1)
	}
	if health != nil {
		out = strings.Replace(out, "Health:<nil>", fmt.Sprintf("Health:&%+v", *health), 1)
	}
	return out
}

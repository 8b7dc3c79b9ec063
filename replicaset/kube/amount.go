package kube

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/replicakit/replicakit/replicaset"
)

// AmountFrom reads an intstr.IntOrString, the type of a Deployment's
// maxSurge and maxUnavailable and of such fields in an owner's API, as a
// [replicaset.Amount]: nil (an optional field left unset) is the zero
// Amount, so the Strategy's default applies; an integer is a count; a
// string is read as replicaset.ParseAmount reads it ("25%" is a
// percentage of the desired count, "3" a count). A negative count, a
// string that is neither, or an IntOrString of neither type is an error
// saying so, which an Adapter's Spec returns as invalid user input
// (naming the field, as "spec.strategy.maxSurge: …").
//
// Kubernetes' own Deployment takes only percentages in strings; a count
// in a string is taken here, as ParseAmount takes it.
func AmountFrom(v *intstr.IntOrString) (replicaset.Amount, error) {
	if v == nil {
		return replicaset.Amount{}, nil
	}
	switch v.Type {
	case intstr.Int:
		return replicaset.ParseAmount(strconv.Itoa(int(v.IntVal)))
	case intstr.String:
		return replicaset.ParseAmount(v.StrVal)
	}
	return replicaset.Amount{}, fmt.Errorf("IntOrString of unknown type %d is neither a count nor a percentage", v.Type)
}

package kube

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset"
)

// drainingCondition is ConditionDraining for the pass, in the binding's
// words (children, not the planner's replicas): how many children
// prepare to leave, then those that wait on their hooks and those the
// hooks held past their timeout, each with its hooks and the time.
func drainingCondition(o *observation, d decision) metav1.Condition {
	c := metav1.Condition{Type: ConditionDraining, Status: metav1.ConditionFalse, Reason: ReasonNoneDraining,
		Message: "no child prepares to leave", ObservedGeneration: o.owner.GetGeneration()}
	n := d.plan.Lifecycle.Preparing
	if n == 0 {
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, ReasonWaitingOnHooks
	c.Message = fmt.Sprintf("%d %s to leave", n, plural(n, "child prepares", "children prepare"))
	l := lifecycleSpec(o.spec)
	if w := d.plan.Lifecycle.Waiting; len(w) > 0 {
		c.Message += fmt.Sprintf("; %d %s on pre-delete hooks: %s", len(w), plural(len(w), "waits", "wait"), hooksOf(l, w, "until"))
	}
	if msg := abandonedMessage(o, d); msg != "" {
		c.Message += "; " + msg
	}
	return c
}

// hooksOf names the first few children of rs, each with the hooks it
// waits on and, after when, when they time out, to the second rounded up.
func hooksOf(l *replicaset.Lifecycle, rs []replicaset.Replica, when string) string {
	const most = 3
	var parts []string
	for _, r := range rs[:min(len(rs), most)] {
		if r.Preparing == nil {
			continue
		}
		_, until := l.Hold(*r.Preparing, time.Time{})
		if t := until.Truncate(time.Second); !t.Equal(until) {
			until = t.Add(time.Second)
		}
		parts = append(parts, fmt.Sprintf("%s on %s %s %s", r.Name, strings.Join(r.Preparing.Hooks, ", "), when, until.UTC().Format(time.RFC3339)))
	}
	if len(rs) > most {
		parts = append(parts, fmt.Sprintf("and %d more", len(rs)-most))
	}
	return strings.Join(parts, "; ")
}

// abandonedMessage says, in the binding's words, which children stay
// because their hooks held them past their timeout with the default
// result Abandon, or "" when none does.
func abandonedMessage(o *observation, d decision) string {
	a := d.plan.Lifecycle.Abandoned
	if len(a) == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s past the hooks' timeout, as the default result Abandon says (release the hooks to delete %s): %s",
		len(a), plural(len(a), "child stays", "children stay"), plural(len(a), "it", "them"), hooksOf(lifecycleSpec(o.spec), a, "timed out at"))
}

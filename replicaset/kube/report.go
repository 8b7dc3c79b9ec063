package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// waitRequeue is how soon an owner whose expectations are unmet is looked
// at again, should no watch event come first.
const waitRequeue = time.Second

// report computes the owner's status from what was observed, patches it
// when it changed, and says when to look again.
func (r *Reconciler[O, C]) report(ctx context.Context, p *pass) (reconcile.Result, error) {
	st := Status{ObservedGeneration: p.owner.GetGeneration()}
	if p.selector != nil {
		st.Selector = p.selector.String()
	}
	sum := replicaset.Summarize(p.replicas, p.spec.MinReady, p.now)
	st.Replicas, st.ReadyReplicas = int32(sum.Replicas), int32(sum.Ready)
	st.AvailableReplicas, st.TerminatingReplicas = int32(sum.Available), int32(sum.Terminating)
	if p.template != nil {
		template := labels.SelectorFromSet(p.template)
		for _, c := range p.children {
			if c.GetDeletionTimestamp() == nil && template.Matches(labels.Set(c.GetLabels())) {
				st.FullyLabeledReplicas++
			}
		}
	}
	st.Conditions = conditions(p, sum)

	before := p.owner.DeepCopyObject().(client.Object)
	r.Adapter.SetStatus(p.owner.(O), st)
	if !equality.Semantic.DeepEqual(before, p.owner) {
		if err := r.Client.Status().Patch(ctx, p.owner, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, errors.Join(p.acted.Err, fmt.Errorf("patch status of %s: %w", p.key, err))
		}
	}

	switch {
	case p.failure != nil && p.acted.Err == nil:
		return reconcile.Result{}, reconcile.TerminalError(p.failure)
	case p.acted.Err != nil:
		return reconcile.Result{}, p.acted.Err // retried with backoff
	case p.waiting:
		return reconcile.Result{RequeueAfter: waitRequeue}, nil
	case p.plan.Deferred > 0:
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	}
	if after, ok := replicaset.NextAvailable(p.replicas, p.spec.MinReady, p.now); ok {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	return reconcile.Result{}, nil
}

// conditions derives the owner's conditions from the pass.
func conditions(p *pass, sum replicaset.Status) []metav1.Condition {
	gen := p.owner.GetGeneration()
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	failure := cond(ConditionReplicaFailure, false, "NoFailure", "")
	var unknown *deletionpolicy.UnknownPolicyError
	switch {
	case errors.As(p.failure, &unknown):
		failure = cond(ConditionReplicaFailure, true, "UnknownDeletePolicy", unknown.Error())
	case errors.Is(p.failure, ErrSelectorMismatch):
		failure = cond(ConditionReplicaFailure, true, "SelectorMismatch", p.failure.Error())
	case p.failure != nil:
		failure = cond(ConditionReplicaFailure, true, "InvalidSpec", p.failure.Error())
	case p.acted.Err != nil:
		failure = cond(ConditionReplicaFailure, true, "FailedReplicaOperation", p.acted.Err.Error())
	case p.plan.Shortfall.Count > 0:
		failure = cond(ConditionReplicaFailure, true, "ScaleInProtected", p.plan.Shortfall.Reason)
	}
	want := p.spec.Replicas
	return []metav1.Condition{
		failure,
		cond(ConditionScalingUp, p.failure == nil && sum.Replicas < want, "Replicas",
			fmt.Sprintf("%d of %d replicas", sum.Replicas, want)),
		cond(ConditionScalingDown, p.failure == nil && sum.Replicas > want, "Replicas",
			fmt.Sprintf("%d of %d replicas", sum.Replicas, want)),
		cond(ConditionReady, p.failure == nil && sum.Ready >= want && sum.Replicas == want, "ReadyReplicas",
			fmt.Sprintf("%d of %d replicas ready", sum.Ready, want)),
	}
}

// MergeConditions sets s's conditions into existing with
// meta.SetStatusCondition, which keeps the transition time of a condition
// whose status did not change. Adapters call it from SetStatus.
func (s Status) MergeConditions(existing *[]metav1.Condition) {
	for _, c := range s.Conditions {
		meta.SetStatusCondition(existing, c)
	}
}

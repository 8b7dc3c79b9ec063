package widgetkind

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// Empty returns a Widget with only its kind set.
func Empty() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(testenv.WidgetGVK)
	return w
}

// EmptyList returns an empty WidgetList.
func EmptyList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(testenv.WidgetGVK.GroupVersion().WithKind("WidgetList"))
	return l
}

// New returns a Widget of the given replicas selecting, and labelling its
// children, app=name.
func New(ns, name string, replicas int64) *unstructured.Unstructured {
	w := Empty()
	w.SetNamespace(ns)
	w.SetName(name)
	w.Object["spec"] = map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}},
	}
	return w
}

// Spec reads a Widget's spec: replicas, selector, deletePolicy, paused,
// replaceDeleting, minReadySeconds, zones, rebalance, progressDeadlineSeconds,
// strategy, remediation (see remediation) and lifecycle (see lifecycle).
func Spec(w *unstructured.Unstructured) (kube.Spec, error) {
	var s kube.Spec
	replicas, _, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err != nil {
		return s, err
	}
	if replicas < 0 {
		return s, fmt.Errorf("spec.replicas %d is negative", replicas)
	}
	s.Replicas = int(replicas)
	if sel, ok, _ := unstructured.NestedMap(w.Object, "spec", "selector"); ok {
		s.Selector = &metav1.LabelSelector{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, s.Selector); err != nil {
			return s, fmt.Errorf("spec.selector: %w", err)
		}
	}
	s.DeletePolicy, _, _ = unstructured.NestedString(w.Object, "spec", "deletePolicy")
	s.Paused, _, _ = unstructured.NestedBool(w.Object, "spec", "paused")
	s.ReplaceDeleting, _, _ = unstructured.NestedBool(w.Object, "spec", "replaceDeleting")
	minReady, _, _ := unstructured.NestedInt64(w.Object, "spec", "minReadySeconds")
	s.MinReady = time.Duration(minReady) * time.Second
	if s.Zones, _, err = unstructured.NestedStringSlice(w.Object, "spec", "zones"); err != nil {
		return s, fmt.Errorf("spec.zones: %w", err)
	}
	s.Rebalance, _, _ = unstructured.NestedBool(w.Object, "spec", "rebalance")
	deadline, _, _ := unstructured.NestedInt64(w.Object, "spec", "progressDeadlineSeconds")
	s.ProgressDeadline = time.Duration(deadline) * time.Second
	if st, ok, _ := unstructured.NestedMap(w.Object, "spec", "strategy"); ok {
		if s.Rollout, err = strategy(st); err != nil {
			return s, fmt.Errorf("spec.strategy: %w", err)
		}
	}
	if r, ok, _ := unstructured.NestedMap(w.Object, "spec", "remediation"); ok {
		s.Remediation = remediation(r)
	}
	if l, ok, _ := unstructured.NestedMap(w.Object, "spec", "lifecycle"); ok {
		s.Lifecycle = lifecycle(l)
	}
	return s, nil
}

// lifecycle reads spec.lifecycle, which turns lifecycle hooks on:
// preDelete and launchGates (lists of names), timeoutSeconds,
// defaultResult ("Abandon"; anything else continues) and markNotReady,
// each optional.
func lifecycle(l map[string]any) *kube.Lifecycle {
	var out kube.Lifecycle
	names := func(v any) []string {
		var ns []string
		list, _ := v.([]any)
		for _, n := range list {
			if s, ok := n.(string); ok {
				ns = append(ns, s)
			}
		}
		return ns
	}
	out.PreDelete, out.LaunchGates = names(l["preDelete"]), names(l["launchGates"])
	if v, ok := l["timeoutSeconds"].(int64); ok {
		out.Timeout = time.Duration(v) * time.Second
	}
	out.Abandon = l["defaultResult"] == "Abandon"
	out.MarkNotReady, _ = l["markNotReady"].(bool)
	return &out
}

// remediation reads spec.remediation, which turns self-healing on:
// unhealthyWindowSeconds, startupWindowSeconds, maxUnhealthy (a count)
// and restart (a bool), each optional (the planner's default when
// absent); an empty object heals with every default.
func remediation(r map[string]any) *replicaset.Remediation {
	var out replicaset.Remediation
	if v, ok := r["unhealthyWindowSeconds"].(int64); ok {
		out.UnhealthyWindow = time.Duration(v) * time.Second
	}
	if v, ok := r["startupWindowSeconds"].(int64); ok {
		out.StartupWindow = time.Duration(v) * time.Second
	}
	if v, ok := r["maxUnhealthy"].(int64); ok {
		out.MaxUnhealthy = replicaset.Count(int(v))
	}
	out.Restart, _ = r["restart"].(bool)
	return &out
}

// strategy reads spec.strategy: type, maxSurge, maxUnavailable and
// partition (a count or a percentage string such as "25%"), paused, and
// method (an update method: Replace, InPlaceIfPossible, InPlaceOnly).
func strategy(st map[string]any) (*replicaset.Strategy, error) {
	var s replicaset.Strategy
	switch st["type"] {
	case nil, "RollingUpdate":
	case "OnDelete":
		s.Type = replicaset.OnDelete
	default:
		return nil, fmt.Errorf("type %v is neither RollingUpdate nor OnDelete", st["type"])
	}
	for key, a := range map[string]*replicaset.Amount{"maxSurge": &s.MaxSurge, "maxUnavailable": &s.MaxUnavailable, "partition": &s.Partition} {
		var err error
		switch v := st[key].(type) {
		case nil:
		case int64:
			*a, err = replicaset.ParseAmount(fmt.Sprint(v))
		case string:
			*a, err = replicaset.ParseAmount(v)
		default:
			err = fmt.Errorf("%v is neither a number nor a string", v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	s.Paused, _ = st["paused"].(bool)
	method, _ := st["method"].(string)
	var err error
	if s.Method, err = replicaset.ParseUpdateMethod(method); err != nil {
		return nil, err
	}
	return &s, nil
}

// TemplateLabels returns spec.template.metadata.labels, for new children.
func TemplateLabels(w *unstructured.Unstructured) (map[string]string, error) {
	l, _, err := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
	return l, err
}

// TemplateAnnotations returns spec.template.metadata.annotations.
func TemplateAnnotations(w *unstructured.Unstructured) (map[string]string, error) {
	a, _, err := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "annotations")
	return a, err
}

// TemplateData returns spec.template.data, which new children carry
// beside the owner's name.
func TemplateData(w *unstructured.Unstructured) (map[string]string, error) {
	d, _, err := unstructured.NestedStringMap(w.Object, "spec", "template", "data")
	return d, err
}

// SetStatus writes the binding's status into the Widget, merging its
// conditions with those already there.
func SetStatus(w *unstructured.Unstructured, s kube.Status) {
	var conds []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(w.Object, "status", "conditions"); ok {
		for _, c := range raw {
			var cond metav1.Condition
			if m, ok := c.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
				conds = append(conds, cond)
			}
		}
	}
	s.MergeConditions(&conds)
	raw := make([]any, len(conds))
	for i := range conds {
		raw[i], _ = runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
	}
	status := map[string]any{
		"updatedReplicas": int64(s.UpdatedReplicas), "updatedAvailableReplicas": int64(s.UpdatedAvailableReplicas),
		"updateRevision": s.UpdateRevision, "currentRevision": s.CurrentRevision,
		"replicas": int64(s.Replicas), "fullyLabeledReplicas": int64(s.FullyLabeledReplicas),
		"readyReplicas": int64(s.ReadyReplicas), "availableReplicas": int64(s.AvailableReplicas),
		"terminatingReplicas": int64(s.TerminatingReplicas), "observedGeneration": s.ObservedGeneration,
		"selector": s.Selector, "conditions": raw,
	}
	if meta.FindStatusCondition(s.Conditions, kube.ConditionDraining) != nil {
		status["preparingReplicas"] = int64(s.PreparingReplicas)
	}
	if meta.FindStatusCondition(s.Conditions, kube.ConditionRemediationAllowed) != nil {
		status["unhealthyReplicas"], status["remediationsAllowed"] = int64(s.UnhealthyReplicas), int64(s.RemediationsAllowed)
	}
	if len(s.Zones) > 0 {
		zones := make([]any, len(s.Zones))
		for i, z := range s.Zones {
			zones[i] = map[string]any{"zone": z.Zone, "replicas": int64(z.Replicas),
				"readyReplicas": int64(z.Ready), "availableReplicas": int64(z.Available)}
		}
		status["zones"], status["spread"] = zones, replicaset.Spread(s.Zones)
	}
	_ = unstructured.SetNestedField(w.Object, status, "status")
}

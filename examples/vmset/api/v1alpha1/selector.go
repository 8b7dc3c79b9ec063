package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelSelector is metav1.LabelSelector with the same JSON, plus the size
// bounds the API server needs to check the CEL rules that relate the
// selector to the template's labels.
type LabelSelector struct {
	// MatchLabels selects objects whose labels include all of these.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions are label requirements, all of which must hold.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is metav1.LabelSelectorRequirement with bounds.
type LabelSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values for In and NotIn.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// ToMeta returns the selector as a metav1.LabelSelector.
func (s *LabelSelector) ToMeta() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return out
}

package testenv

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// WidgetGVK is the kind of the test owner WidgetCRD defines.
var WidgetGVK = schema.GroupVersionKind{Group: "test.replicakit.io", Version: "v1", Kind: "Widget"}

// WidgetCRD defines Widget, a small namespaced owner kind for tests of
// replica-set machinery: spec.replicas, spec.selector, spec.template,
// spec.deletePolicy, spec.paused and spec.minReadySeconds, a status
// subresource, and a scale subresource whose label selector is
// status.selector.
func WidgetCRD() *apiextensionsv1.CustomResourceDefinition {
	free := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.replicakit.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: WidgetGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true), Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"}, "selector": free, "template": free,
						}},
						"status": free,
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{
						SpecReplicasPath:   ".spec.replicas",
						StatusReplicasPath: ".status.replicas",
						LabelSelectorPath:  ptr.To(".status.selector"),
					},
				},
			}},
		},
	}
}

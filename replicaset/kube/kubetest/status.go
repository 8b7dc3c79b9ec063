package kubetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// StatusFields says where an owner publishes the fields of kube.Status,
// for CheckStatus: by default each field at status.<its Go name in
// lowerCamelCase> (UnhealthyReplicas at status.unhealthyReplicas), as
// the binding's own field names and Kubernetes' conventions spell them.
type StatusFields struct {
	// Omit lists the kube.Status fields, by Go name
	// ("UpdatedReadyReplicas"), that the owner leaves out on purpose.
	Omit []string
	// Paths maps a kube.Status field, by Go name, to where the owner
	// publishes it when not at its conventional place: a dotted path
	// from the object's root ("status.readyPods").
	Paths map[string]string
}

// CheckStatus fails when owner's status drops a field the binding
// reports: it fills a kube.Status with a distinct made-up value in every
// field, has the Adapter's SetStatus copy it into a fresh copy of owner
// (read through c), writes that through the status subresource, reads it
// back and looks for each field where StatusFields says (a number or a
// string as set, the zones and conditions present). The made-up status
// holds every condition the binding reports, as with every feature on,
// so an Adapter that publishes a field only beside its feature's
// condition (the healing counters beside RemediationAllowed, say) is
// checked too. The error names
// each field missing and who dropped it: SetStatus, which did not copy
// it, or the API server, which pruned it because the owner's CRD has no
// such field (regenerate the CRD from the status type). A field the
// binding adds in a later release is checked as soon as the importer
// upgrades, with no change to the test.
//
// It writes made-up counts to owner's status: call it on an owner no
// Reconciler runs for, on envtest to check the CRD too (the fake client
// of NewFakeClient prunes nothing, so there it checks SetStatus alone).
func CheckStatus[O, C client.Object](ctx context.Context, c client.Client, a kube.Adapter[O, C], owner O, f StatusFields) error {
	obj, ok := owner.DeepCopyObject().(O)
	if !ok {
		return fmt.Errorf("kubetest: a copy of %s is no %T", owner.GetName(), owner)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(owner), obj); err != nil {
		return fmt.Errorf("kubetest: read owner %s: %w", owner.GetName(), err)
	}
	st := madeUpStatus()
	a.SetStatus(obj, st)
	set, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("kubetest: owner %s as it SetStatus left it: %w", owner.GetName(), err)
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("kubetest: write the status of owner %s: %w", owner.GetName(), err)
	}
	back, ok := owner.DeepCopyObject().(O)
	if !ok {
		return fmt.Errorf("kubetest: a copy of %s is no %T", owner.GetName(), owner)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(owner), back); err != nil {
		return fmt.Errorf("kubetest: read owner %s back: %w", owner.GetName(), err)
	}
	stored, err := runtime.DefaultUnstructuredConverter.ToUnstructured(back)
	if err != nil {
		return fmt.Errorf("kubetest: owner %s as stored: %w", owner.GetName(), err)
	}
	var errs []error
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if slices.Contains(f.Omit, name) {
			continue
		}
		path := f.Paths[name]
		if path == "" {
			path = "status." + strings.ToLower(name[:1]) + name[1:]
		}
		want := v.Field(i).Interface()
		switch {
		case !holds(set, path, want):
			errs = append(errs, fmt.Errorf("%s: the Adapter's SetStatus does not copy kube.Status.%s there (list it in StatusFields.Omit if the owner leaves it out on purpose, or in Paths if it publishes it elsewhere)", path, name))
		case !holds(stored, path, want):
			errs = append(errs, fmt.Errorf("%s: SetStatus copies kube.Status.%s, but the API server did not keep it: the owner's CRD has no such field (add it to the status type and regenerate the CRD)", path, name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("kubetest: the status of %s drops what the binding reports: %w", owner.GetName(), errors.Join(errs...))
	}
	return nil
}

// madeUpStatus is a kube.Status with a distinct value in every field, so
// that CheckStatus tells each field from every other.
func madeUpStatus() kube.Status {
	var st kube.Status
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Int32, reflect.Int64:
			fv.SetInt(int64(101 + i))
		case reflect.String:
			fv.SetString(fmt.Sprintf("kubetest-%d", 101+i))
		}
	}
	st.Selector = "kubetest=selector"
	st.Zones = []replicaset.ZoneStatus{{Zone: "kubetest-zone", Replicas: 1, Ready: 1, Available: 1}}
	for _, t := range []string{kube.ConditionReady, kube.ConditionReplicaFailure, kube.ConditionScalingUp, kube.ConditionScalingDown,
		kube.ConditionZonesBalanced, kube.ConditionRolledOut, kube.ConditionRemediationAllowed, kube.ConditionDraining} {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "KubetestCheckStatus",
			Message: "written by kubetest.CheckStatus", LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))})
	}
	return st
}

// holds reports whether obj has want at path: the same number or string;
// for zones, a list holding an item that names the made-up zone; for
// conditions, a list holding the made-up condition's type.
func holds(obj map[string]any, path string, want any) bool {
	got, found, err := unstructured.NestedFieldNoCopy(obj, strings.Split(path, ".")...)
	if err != nil || !found {
		return false
	}
	switch w := want.(type) {
	case int32:
		return number(got) == int64(w)
	case int64:
		return number(got) == w
	case string:
		return got == w
	case []replicaset.ZoneStatus:
		return listHolds(got, w[0].Zone)
	case []metav1.Condition:
		for _, c := range w {
			if !listHolds(got, c.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// number reads an unstructured number, or -1.
func number(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

// listHolds reports whether v is a list of which an item has a field
// whose value is s.
func listHolds(v any, s string) bool {
	items, _ := v.([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		for _, x := range m {
			if x == s {
				return true
			}
		}
	}
	return false
}

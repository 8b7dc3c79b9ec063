package kubetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestMadeUpStatus_EveryField: CheckStatus's made-up status sets every
// field of kube.Status, each to a value no other field has, and finds
// each in a status that holds them all as JSON spells them: a field of
// a kind CheckStatus cannot check (one kube.Status gains later) fails
// here, in the library, not in every importer's test.
func TestMadeUpStatus_EveryField(t *testing.T) {
	st := madeUpStatus()
	v := reflect.ValueOf(st)
	status := map[string]any{}
	seen := map[string]string{}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		f := v.Field(i)
		if f.IsZero() {
			t.Errorf("kube.Status.%s is not set by madeUpStatus", name)
			continue
		}
		raw, err := json.Marshal(f.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[string(raw)]; ok {
			t.Errorf("kube.Status.%s has %s's value %s", name, other, raw)
		}
		seen[string(raw)] = name
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		status[strings.ToLower(name[:1])+name[1:]] = back
	}
	obj := map[string]any{"status": status}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if path := "status." + strings.ToLower(name[:1]) + name[1:]; !holds(obj, path, v.Field(i).Interface()) {
			t.Errorf("CheckStatus cannot find kube.Status.%s at %s where it is", name, path)
		}
	}
}

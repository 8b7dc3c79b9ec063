package kube

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-logr/logr"
)

// optionals are the optional interfaces of an Adapter of owner O and child
// C, which the Reconciler finds by type assertion: Zoner, InPlaceUpdater,
// TemplateMatcher, HealthChecker, Starter, Restarter, InPlaceRollout and
// InPlaceSubresource. SetupWithManager's doc, the package documentation's
// Optional interfaces section and the CHANGELOG's list of them name the
// same, as TestOptionalInterfaces_OneList checks.
func (r *Reconciler[O, C]) optionals() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[Zoner[C]](),
		reflect.TypeFor[InPlaceUpdater[O, C]](),
		reflect.TypeFor[TemplateMatcher[O, C]](),
		reflect.TypeFor[HealthChecker[C]](),
		reflect.TypeFor[Starter[C]](),
		reflect.TypeFor[Restarter[O, C]](),
		reflect.TypeFor[InPlaceRollout[O, C]](),
		reflect.TypeFor[InPlaceSubresource[C]](),
	}
}

// logSetup says, once set-up succeeded, which optional interfaces the
// Adapter implements and which it does not; and, as an error, each one it
// does not implement although it has a method of that name (a signature
// that differs, or methods on the pointer of an Adapter given as a value),
// since the Reconciler then silently does without it: zones kept in the
// ZoneLabel label, the binding's own revision, unlabelled children
// counted as current, health read from readiness, no restarts.
func (r *Reconciler[O, C]) logSetup(log logr.Logger, name string) {
	adapter := reflect.TypeOf(r.Adapter)
	var found, missing []string
	for _, it := range r.optionals() {
		if adapter.Implements(it) {
			found = append(found, typeName(it))
			continue
		}
		missing = append(missing, typeName(it))
		if why := nearMiss(r.Adapter, it); why != "" {
			log.Error(fmt.Errorf("%s is not a %s: %s (check at compile time: var _ %s = …)", typeName(adapter), typeName(it), why, typeName(it)),
				"the Adapter does not implement an optional interface it has methods of, so the Reconciler goes without it",
				"controller", name, "adapter", typeName(adapter), "interface", typeName(it))
		}
	}
	log.Info("replica set controller set up: the Adapter's optional interfaces",
		"controller", name, "adapter", typeName(adapter), "implements", found, "doesNotImplement", missing)
}

// nearMiss says why adapter, which does not implement it, looks as if it
// meant to: it has some of it's methods, but of other signatures, or on
// its pointer only. It returns "" when adapter has none of them.
func nearMiss(adapter any, it reflect.Type) string {
	v := reflect.ValueOf(adapter)
	t := v.Type()
	var why []string
	near := false
	for i := range it.NumMethod() {
		m := it.Method(i)
		switch got := v.MethodByName(m.Name); {
		case got.IsValid() && got.Type() != m.Type:
			near = true
			why = append(why, fmt.Sprintf("its method %s is %s, want %s", m.Name, typeName(got.Type()), typeName(m.Type)))
		case got.IsValid():
			near = true // one of its methods, but not all of them
		case t.Kind() != reflect.Pointer && hasMethod(reflect.PointerTo(t), m.Name):
			near = true
			why = append(why, fmt.Sprintf("its method %s has a pointer receiver: give the Reconciler a *%s", m.Name, typeName(t)))
		default:
			why = append(why, "it has no method "+m.Name)
		}
	}
	if !near {
		return ""
	}
	return strings.Join(why, "; ")
}

func hasMethod(t reflect.Type, name string) bool {
	_, ok := t.MethodByName(name)
	return ok
}

// packagePath matches the import path before a package's name in a type's
// name (k8s.io/api/core/ in k8s.io/api/core/v1.Pod).
var packagePath = regexp.MustCompile(`[\w.~-]+(/[\w.~-]+)*/`)

// typeName is t's name as Go source spells it, packages by their names
// alone: kube.Zoner[*v1.Pod], not with k8s.io/api/core/v1's whole path.
func typeName(t reflect.Type) string {
	return packagePath.ReplaceAllString(t.String(), "")
}

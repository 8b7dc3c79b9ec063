package kubetest_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestPoolRole_IsTheDocumentedMarkers: the role the RBAC tests run the
// Pool operator under grants exactly what package kube's Permissions
// section tells importers to mark (for an owner with remediation and
// hooks, its kind renamed pools), so that a right the binding needs and
// the documentation leaves out fails those tests.
func TestPoolRole_IsTheDocumentedMarkers(t *testing.T) {
	doc, err := os.ReadFile("../doc.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	marker := regexp.MustCompile(`\+kubebuilder:rbac:groups=("?)([\w.]*)("?),resources=([\w/]+),verbs=([\w;]+)`)
	for _, m := range marker.FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[4], "resize") {
			continue // the in-place resize of Pods, which the Pool does not do
		}
		key := m[2] + "/" + strings.Replace(m[4], "workerpools", "pools", 1)
		documented[key] = union(documented[key], strings.Split(m[5], ";"))
	}
	raw, err := os.ReadFile(poolRole)
	if err != nil {
		t.Fatal(err)
	}
	_, doc1, _ := strings.Cut(string(raw), "\n---\n")
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(doc1), &role); err != nil {
		t.Fatal(err)
	}
	granted := map[string][]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				granted[g+"/"+res] = union(granted[g+"/"+res], r.Verbs)
			}
		}
	}
	if diff := cmp.Diff(documented, granted); diff != "" {
		t.Errorf("%s grants other rights than package kube's markers (-documented +granted):\n%s", poolRole, diff)
	}
}

// union is a and b's verbs, sorted, each once.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

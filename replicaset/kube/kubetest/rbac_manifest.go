package kubetest

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifest is what one RBAC manifest declares, in its order.
type manifest struct {
	path         string
	clusterRoles []rbacv1.ClusterRole
	roles        []rbacv1.Role
}

// readManifest reads the ClusterRoles and Roles of the file path, and
// refuses (ErrRoleManifest) one that holds anything else, or neither.
func readManifest(path string) (manifest, error) {
	m := manifest{path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("kubetest: read RBAC manifest: %w", err)
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, fmt.Errorf("kubetest: read RBAC manifest %s: %w", path, err)
		}
		if err := m.add(doc); err != nil {
			return m, fmt.Errorf("kubetest: RBAC manifest %s: %w", path, err)
		}
	}
	if len(m.clusterRoles) == 0 && len(m.roles) == 0 {
		return m, fmt.Errorf("kubetest: RBAC manifest %s holds no ClusterRole or Role: %w", path, ErrRoleManifest)
	}
	return m, nil
}

// add adds the role that the YAML document doc declares; a document of
// comments alone declares nothing. Fields unknown to the kind are
// refused, as kubectl's strict field validation refuses them.
func (m *manifest) add(doc []byte) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	if string(bytes.TrimSpace(j)) == "null" {
		return nil
	}
	var meta metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	switch gvk := meta.GroupVersionKind(); gvk {
	case rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &cr); err != nil {
			return fmt.Errorf("decode ClusterRole %s: %w", meta.Name, err)
		}
		if cr.AggregationRule != nil {
			return fmt.Errorf("ClusterRole %s has an aggregationRule, which no controller-manager fills in on envtest: %w",
				cr.Name, ErrRoleManifest)
		}
		m.clusterRoles = append(m.clusterRoles, cr)
	case rbacv1.SchemeGroupVersion.WithKind("Role"):
		var ro rbacv1.Role
		if err := yaml.UnmarshalStrict(doc, &ro); err != nil {
			return fmt.Errorf("decode Role %s: %w", meta.Name, err)
		}
		m.roles = append(m.roles, ro)
	default:
		return fmt.Errorf("kind %s (apiVersion %s) %q is not a ClusterRole or Role of %s: %w",
			cmp.Or(gvk.Kind, `""`), cmp.Or(meta.APIVersion, `""`), meta.Name, rbacv1.SchemeGroupVersion, ErrRoleManifest)
	}
	return nil
}

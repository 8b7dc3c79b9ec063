package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/replicakit/replicakit/internal/testenv"
)

// TestDeploymentConfigs renders the operator's kustomizations
// (config/default, config/two-vcenters) with kubectl and starts the
// manager's option parsing from what the Deployment gives it: its
// arguments, its environment (literals, Secret keys, the placement
// ConfigMap) and its mounted Secrets, with made-up credentials. Each must
// parse, and two-vcenters must give the second vCenter and zones on it.
func TestDeploymentConfigs(t *testing.T) {
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(bin, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is not built (make tools): %v", err)
	}
	for _, tc := range []struct {
		dir       string
		vcenters  []string
		westZones []string
	}{
		{dir: "default"},
		{dir: "two-vcenters", vcenters: []string{"west"}, westZones: []string{"west-a", "west-b"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "..", "config", tc.dir)).Output()
			if err != nil {
				t.Fatalf("kubectl kustomize %s: %v", tc.dir, err)
			}
			dep, cms := decodeConfig(t, out)
			c := dep.Spec.Template.Spec.Containers[0]
			root := t.TempDir()
			mounts := map[string]string{} // Secret name → where the test put its files
			for _, v := range dep.Spec.Template.Spec.Volumes {
				if v.Secret == nil {
					continue
				}
				i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name })
				if i < 0 {
					t.Fatalf("volume %s is not mounted", v.Name)
				}
				dir := filepath.Join(root, strings.TrimPrefix(c.VolumeMounts[i].MountPath, "/"))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				for k, val := range map[string]string{"url": "https://" + v.Secret.SecretName + ".example.com/sdk", "username": "u", "password": "p"} {
					if err := os.WriteFile(filepath.Join(dir, k), []byte(val+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				mounts[c.VolumeMounts[i].MountPath] = dir
			}
			env := map[string]string{}
			for _, from := range c.EnvFrom {
				if from.ConfigMapRef == nil {
					continue
				}
				cm, ok := cms[from.ConfigMapRef.Name]
				if !ok {
					t.Fatalf("ConfigMap %s is not in the kustomization", from.ConfigMapRef.Name)
				}
				for k, v := range cm.Data {
					env[k] = v
				}
			}
			for _, e := range c.Env {
				switch {
				case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
					env[e.Name] = "from-secret-" + e.ValueFrom.SecretKeyRef.Key
				default:
					env[e.Name] = e.Value
				}
			}
			// Paths in the container are the test's folders here.
			for k, v := range env {
				for mount, dir := range mounts {
					env[k] = strings.ReplaceAll(v, mount, dir)
					v = env[k]
				}
			}
			env["VSPHERE_URL"] = "https://vcenter.example.com/sdk"
			o, err := parse(c.Args, func(k string) string { return env[k] }, io.Discard)
			if err != nil {
				t.Fatalf("the Deployment's arguments and environment do not parse: %v", err)
			}
			var got []string
			for name := range o.vcenters {
				got = append(got, name)
			}
			if !slices.Equal(got, tc.vcenters) {
				t.Errorf("vCenters besides the first: %v, want %v", got, tc.vcenters)
			}
			for _, z := range tc.westZones {
				if o.zones[z].Endpoint != "west" {
					t.Errorf("zone %s: %+v, want it on west", z, o.zones[z])
				}
			}
		})
	}
}

// decodeConfig returns the Deployment and the ConfigMaps, by name, of a
// rendered kustomization.
func decodeConfig(t *testing.T, rendered []byte) (*appsv1.Deployment, map[string]*corev1.ConfigMap) {
	t.Helper()
	var dep *appsv1.Deployment
	cms := map[string]*corev1.ConfigMap{}
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "Deployment":
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				t.Fatal(err)
			}
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
				t.Fatal(err)
			}
			cms[cm.Name] = cm
		}
	}
	if dep == nil {
		t.Fatal("no Deployment in the kustomization")
	}
	return dep, cms
}

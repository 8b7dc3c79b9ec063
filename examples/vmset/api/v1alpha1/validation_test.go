package v1alpha1_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = vmv1.AddToScheme(scheme)
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Scheme:            scheme,
	})
}

func set(name string) *vmv1.VirtualMachineReplicaSet {
	return &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "api", Name: name},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 2, MemoryMiB: 2048},
			},
		},
	}
}

func TestCRDs_DefaultsAndValidation(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "api"}}); err != nil {
		t.Fatal(err)
	}

	ok := set("test-rs")
	if err := e.Client.Create(ctx, ok); err != nil {
		t.Fatalf("a valid set was refused: %v", err)
	}
	if ok.Spec.Replicas == nil || *ok.Spec.Replicas != 1 || ok.Spec.DeletePolicy != "Random" || ok.Spec.Template.Spec.PowerState != vmv1.PoweredOn {
		t.Errorf("defaults: replicas %v, deletePolicy %q, powerState %q; want 1, Random, PoweredOn",
			ok.Spec.Replicas, ok.Spec.DeletePolicy, ok.Spec.Template.Spec.PowerState)
	}

	tests := []struct {
		desc string
		edit func(*vmv1.VirtualMachineReplicaSet)
		want string
	}{
		{"negative replicas", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Replicas = ptr.To[int32](-1) },
			"spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"},
		{"no selector", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Selector = nil }, "spec.selector: Required value"},
		{"empty selector", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Selector = &vmv1.LabelSelector{} }, "spec.selector must not be empty"},
		{"selector not matching the template", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Template.Metadata.Labels = map[string]string{"app": "other"}
		},
			"spec.selector.matchLabels must match spec.template.metadata.labels"},
		{"bad power state", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec.PowerState = "Suspended" },
			`spec.template.spec.powerState: Unsupported value: "Suspended": supported values: "PoweredOn", "PoweredOff"`},
		{"negative memory", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec.MemoryMiB = -1 },
			"spec.template.spec.memoryMiB: Invalid value: -1"},
		{"empty cloud-init", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Template.Spec.Bootstrap = &vmv1.VirtualMachineBootstrap{CloudInit: &vmv1.CloudInitBootstrap{}}
		}, "bootstrap.cloudInit needs userData or metaData"},
		{"bad readiness", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec.Readiness = "Booted" },
			`spec.template.spec.readiness: Unsupported value: "Booted"`},
		{"no interfaces", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Template.Spec.Network = &vmv1.VirtualMachineNetwork{Interfaces: []vmv1.NetworkInterface{}}
		}, "spec.template.spec.network.interfaces: Invalid value"},
		{"empty network name", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Template.Spec.Network = &vmv1.VirtualMachineNetwork{Interfaces: []vmv1.NetworkInterface{{}}}
		}, "spec.template.spec.network.interfaces[0].network: Invalid value"},
		{"a zone listed twice", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Zones = []string{"zone-a", "zone-b", "zone-a"} },
			`spec.zones[2]: Duplicate value: "zone-a"`},
		{"a zone no label can hold", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Zones = []string{"zone a"} },
			"spec.zones[0]: Invalid value"},
		{"an empty zone", func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Zones = []string{""} },
			"spec.zones[0]: Invalid value"},
		{"maxSurge and maxUnavailable both 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Strategy = vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
		}, "spec.strategy.maxSurge and spec.strategy.maxUnavailable may not both be 0"},
		{"maxSurge 0% and maxUnavailable 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Strategy = vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromString("0%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
		}, "spec.strategy.maxSurge and spec.strategy.maxUnavailable may not both be 0"},
		{"maxSurge \"0\" and maxUnavailable 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Strategy = vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromString("0")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
		}, "spec.strategy.maxSurge and spec.strategy.maxUnavailable may not both be 0"},
		{"negative startup window", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{StartupWindow: &metav1.Duration{Duration: -time.Minute}}
		}, "spec.remediation.startupWindow: Invalid value: \"-1m0s\": must be a duration of at least 1s"},
		{"zero unhealthy window", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{UnhealthyWindow: &metav1.Duration{}}
		}, "spec.remediation.unhealthyWindow: Invalid value: \"0s\": must be a duration of at least 1s"},
		{"negative backoff", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{Backoff: &metav1.Duration{Duration: -time.Second}}
		}, "spec.remediation.backoff: Invalid value: \"-1s\": must be a duration of at least 1s"},
		{"a window of 1ns", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{UnhealthyWindow: &metav1.Duration{Duration: time.Nanosecond}}
		}, "spec.remediation.unhealthyWindow: Invalid value: \"1ns\": must be a duration of at least 1s"},
		{"a start-up window under a second", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{StartupWindow: &metav1.Duration{Duration: 999 * time.Millisecond}}
		}, "spec.remediation.startupWindow: Invalid value: \"999ms\": must be a duration of at least 1s"},
		{"maxUnhealthy 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxUnhealthy: ptr.To(intstr.FromInt32(0))}
		}, "spec.remediation.maxUnhealthy: Invalid value: 0: must be a count of at least 1 or a percentage from 1% to 100%"},
		{"maxUnhealthy negative", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxUnhealthy: ptr.To(intstr.FromInt32(-2))}
		}, "spec.remediation.maxUnhealthy: Invalid value"},
		{"maxUnhealthy 150%", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxUnhealthy: ptr.To(intstr.FromString("150%"))}
		}, "spec.remediation.maxUnhealthy: Invalid value"},
		{"maxInFlight a word", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxInFlight: ptr.To(intstr.FromString("half"))}
		}, "spec.remediation.maxInFlight: Invalid value: \"half\": must be a count of at least 1 or a percentage from 1% to 100%"},
		{"maxInFlight -10%", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxInFlight: ptr.To(intstr.FromString("-10%"))}
		}, "spec.remediation.maxInFlight: Invalid value"},
		{"maxInFlight 0%", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxInFlight: ptr.To(intstr.FromString("0%"))}
		}, "spec.remediation.maxInFlight: Invalid value"},
		{"maxFailures 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Remediation = &vmv1.Remediation{MaxFailures: ptr.To[int32](0)}
		}, "spec.remediation.maxFailures: Invalid value: 0: spec.remediation.maxFailures in body should be greater than or equal to 1"},
		{"a hook timeout of 0", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Lifecycle = &vmv1.Lifecycle{Timeout: &metav1.Duration{}}
		}, "spec.lifecycle.timeout: Invalid value: \"0s\": must be a positive duration"},
		{"a hook default result unknown", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Lifecycle = &vmv1.Lifecycle{DefaultResult: "Retry"}
		}, "spec.lifecycle.defaultResult: Unsupported value: \"Retry\""},
		{"a hook name no annotation may carry", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Lifecycle = &vmv1.Lifecycle{PreDelete: []string{"Drain Now"}}
		}, "spec.lifecycle.preDelete[0]: Invalid value: \"Drain Now\""},
		{"a hook named twice", func(s *vmv1.VirtualMachineReplicaSet) {
			s.Spec.Lifecycle = &vmv1.Lifecycle{LaunchGates: []string{"lb", "lb"}}
		}, "spec.lifecycle.launchGates[1]: Duplicate value"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := set("bad")
			tt.edit(s)
			err := e.Client.Create(ctx, s)
			if err == nil {
				_ = e.Client.Delete(ctx, s)
				t.Fatalf("accepted; want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}

	// A zero surge is fine beside some unavailability, and both zero in
	// a strategy that replaces nothing (OnDelete).
	for i, st := range []vmv1.UpdateStrategy{
		{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("25%"))},
		{MaxSurge: ptr.To(intstr.FromString("0%")), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
		{Type: "OnDelete", MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(0))},
		{MaxSurge: ptr.To(intstr.FromInt32(0))},
	} {
		s := set(fmt.Sprintf("strategy-%d", i))
		s.Spec.Strategy = st
		if err := e.Client.Create(ctx, s); err != nil {
			t.Errorf("strategy %+v refused: %v", st, err)
		}
	}

	// Remediation: absent stays absent, {} stays {} (the defaults are
	// the operator's, not written into the set), and each field takes
	// what its documentation says.
	for i, rm := range []*vmv1.Remediation{
		{},
		{StartupWindow: &metav1.Duration{Duration: 90 * time.Second}, UnhealthyWindow: &metav1.Duration{Duration: 1500 * time.Millisecond},
			Backoff: &metav1.Duration{Duration: 2 * time.Hour}, Restart: ptr.To(false),
			MaxUnhealthy: ptr.To(intstr.FromString("100%")), MaxInFlight: ptr.To(intstr.FromInt32(2)), MaxFailures: ptr.To[int32](1)},
		{MaxUnhealthy: ptr.To(intstr.FromInt32(1)), MaxInFlight: ptr.To(intstr.FromString("5%"))},
	} {
		s := set(fmt.Sprintf("remediation-%d", i))
		s.Spec.Remediation = rm.DeepCopy()
		if err := e.Client.Create(ctx, s); err != nil {
			t.Errorf("remediation %+v refused: %v", rm, err)
			continue
		}
		if diff := cmp.Diff(rm, s.Spec.Remediation); diff != "" {
			t.Errorf("remediation as stored (-sent +stored):\n%s", diff)
		}
	}
	if ok.Spec.Remediation != nil {
		t.Errorf("a set without remediation reads back with %+v", ok.Spec.Remediation)
	}
	// A duration Go would not parse is refused in the API, before the
	// operator's cache would fail to decode it.
	raw := []byte(`{"spec":{"remediation":{"startupWindow":"10 minutes"}}}`)
	if err := e.Client.Patch(ctx, ok.DeepCopy(), client.RawPatch(types.MergePatchType, raw)); err == nil ||
		!strings.Contains(err.Error(), "spec.remediation.startupWindow: Invalid value") {
		t.Errorf("startupWindow \"10 minutes\": %v, want Invalid value", err)
	}

	// The selector cannot change.
	changed := ok.DeepCopy()
	changed.Spec.Selector.MatchLabels["tier"] = "web"
	changed.Spec.Template.Metadata.Labels["tier"] = "web"
	if err := e.Client.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "spec.selector is immutable") {
		t.Errorf("changing the selector: %v, want spec.selector is immutable", err)
	}
}

// TestCRDs_VirtualMachineCloneTimeFields: a VirtualMachine's network and
// bootstrap are fixed once it exists; its readiness may change, and it
// defaults to PoweredOn.
func TestCRDs_VirtualMachineCloneTimeFields(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}); err != nil {
		t.Fatal(err)
	}
	vm := &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fixed", Name: "web-0"},
		Spec: vmv1.VirtualMachineSpec{
			Network: &vmv1.VirtualMachineNetwork{Interfaces: []vmv1.NetworkInterface{{Network: "VM Network"}}},
		},
	}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if vm.Spec.Readiness != vmv1.ReadyWhenPoweredOn {
		t.Errorf("default readiness %q, want PoweredOn", vm.Spec.Readiness)
	}
	for _, tc := range []struct {
		desc string
		edit func(*vmv1.VirtualMachine)
		want string
	}{
		{"another network", func(v *vmv1.VirtualMachine) { v.Spec.Network.Interfaces[0].Network = "DC0_DVPG0" }, "spec.network cannot change"},
		{"no network", func(v *vmv1.VirtualMachine) { v.Spec.Network = nil }, "spec.network cannot change"},
		{"bootstrap added", func(v *vmv1.VirtualMachine) {
			v.Spec.Bootstrap = &vmv1.VirtualMachineBootstrap{CloudInit: &vmv1.CloudInitBootstrap{UserData: "#cloud-config"}}
		}, "spec.bootstrap cannot change"},
		{"a zone added", func(v *vmv1.VirtualMachine) { v.Spec.Zone = "zone-a" }, "spec.zone cannot change"},
		{"readiness", func(v *vmv1.VirtualMachine) { v.Spec.Readiness = vmv1.ReadyWhenIPAddress }, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			changed := vm.DeepCopy()
			tc.edit(changed)
			err := e.Client.Update(ctx, changed)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("update: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCRDs_KubectlColumnsAndScale(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cols"}}); err != nil {
		t.Fatal(err)
	}
	s := set("web")
	s.Namespace = "cols"
	if err := e.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	out, err := e.Kubectl(ctx, "get", "vmreplicaset", "-n", "cols")
	if err != nil {
		t.Fatal(err)
	}
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(header, " ") != "NAME REPLICAS READY UP-TO-DATE UNHEALTHY PREPARING AGE" {
		t.Errorf("kubectl get vmreplicaset header %v, want NAME REPLICAS READY UP-TO-DATE UNHEALTHY PREPARING AGE", header)
	}
	if _, err := e.Kubectl(ctx, "scale", "vmrs/web", "-n", "cols", "--replicas=3"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	if *s.Spec.Replicas != 3 {
		t.Errorf("after kubectl scale: spec.replicas = %d, want 3", *s.Spec.Replicas)
	}
	// The short names resolve (no VirtualMachines exist yet).
	for _, name := range []string{"vm", "vmrs"} {
		if _, err := e.Kubectl(ctx, "get", name, "-n", "cols"); err != nil {
			t.Errorf("kubectl get %s: %v", name, err)
		}
	}
}

// TestCRDs_Samples: every sample under config/samples is valid, as the API
// server checks it (a server-side dry run).
func TestCRDs_Samples(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "samples"}}); err != nil {
		t.Fatal(err)
	}
	samples, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range samples {
		if out, err := e.Kubectl(ctx, "apply", "--dry-run=server", "-n", "samples", "-f", f); err != nil {
			t.Errorf("kubectl apply %s: %v\n%s", filepath.Base(f), err, out)
		}
	}
}

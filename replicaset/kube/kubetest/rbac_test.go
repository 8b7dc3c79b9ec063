package kubetest_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// poolRole is the Pool operator's complete ClusterRole, as controller-gen
// writes it.
const poolRole = "testdata/rbac/role.yaml"

// TestServiceAccountConfig runs the Pool operator as a service account
// with the rights of its RBAC manifest, on envtest: with the complete
// role it makes its Pods and is refused what the role does not grant;
// without patch on Pools, a pass of an owner with lifecycle hooks cannot
// add its finalizer and returns Forbidden; Roles are bound in their own
// namespaces; manifests of other kinds are refused before anything is
// made.
func TestServiceAccountConfig(t *testing.T) {
	admin := rbacEnv(t)
	ac, err := client.New(admin, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("CompleteRole", func(t *testing.T) { testCompleteRole(t, admin, ac) })
	t.Run("MissingPatchOnOwner", func(t *testing.T) { testMissingPatch(t, admin, ac) })
	t.Run("Roles", func(t *testing.T) { testRoles(t, admin, ac) })
	t.Run("Refused", func(t *testing.T) { testRefused(t, admin, ac) })
}

// rbacEnv starts envtest with the Pool CRD, or skips t as
// TestPoolOnAPIServer does, and returns the administrator's config.
func rbacEnv(t *testing.T) *rest.Config {
	t.Helper()
	return startEnv(t, "testdata")
}

// startEnv starts envtest with the CRDs in dir until t ends, or skips t
// (fails it, with REPLICAKIT_REQUIRE_ENVTEST=1) when KUBEBUILDER_ASSETS
// names no binaries, and returns the administrator's config.
func startEnv(t *testing.T, dir string) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if os.Getenv("REPLICAKIT_REQUIRE_ENVTEST") == "1" {
			t.Fatal("KUBEBUILDER_ASSETS is not set (make test sets it to bin/)")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd to test on")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{dir}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest stop: %v", err)
		}
	})
	return cfg
}

// testCompleteRole runs the operator in a manager as pool-operator, with
// poolRole: it makes a Pool's Pods and reports them, while the same
// identity is refused what the role does not grant.
func testCompleteRole(t *testing.T, admin *rest.Config, ac client.Client) {
	ctx := t.Context()
	cfg, err := kubetest.ServiceAccountConfig(ctx, admin, "default", "pool-operator", poolRole)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The API server knows the token as the service account's.
	ssr := &authenticationv1.SelfSubjectReview{}
	if err := cs.Create(ctx, ssr); err != nil {
		t.Fatal(err)
	}
	wantUser := authenticationv1.UserInfo{Username: "system:serviceaccount:default:pool-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}}
	got := ssr.Status.UserInfo
	got.UID, got.Extra = "", nil
	if diff := cmp.Diff(wantUser, got); diff != "" {
		t.Errorf("SelfSubjectReview as the service account (-want +got):\n%s", diff)
	}
	// What the role does not grant is refused: creating a Pool, reading
	// Secrets.
	if err := cs.Create(ctx, newPool("denied", 1)); !apierrors.IsForbidden(err) {
		t.Errorf("create Pool as the service account = %v, want Forbidden", err)
	}
	if err := cs.List(ctx, &corev1.SecretList{}, client.InNamespace("default")); !apierrors.IsForbidden(err) {
		t.Errorf("list Secrets as the service account = %v, want Forbidden", err)
	}

	mgr := rbacManager(t, cfg)
	if err := newReconciler(mgr.GetScheme()).SetupWithManager(mgr, "pool-rbac"); err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)
	pool := newPool("rbac", 3)
	if err := ac.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want := []string{"rbac-0", "rbac-1", "rbac-2"}
	var pods []string
	var status PoolStatus
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pods, status = podsAndStatus(ctx, t, ac, pool)
		if slices.Equal(pods, want) && status.Replicas == 3 {
			break
		}
	}
	if diff := cmp.Diff(want, pods); diff != "" || status.Replicas != 3 {
		t.Fatalf("Pods made as the service account (-want +got):\n%s\nstatus.replicas %d, want 3", diff, status.Replicas)
	}
}

// drainingAdapter is the Pool's Adapter with lifecycle hooks, whose
// owners carry kube.FinalizerDrain: the binding adds it with a patch of
// the owner.
type drainingAdapter struct{ poolAdapter }

func (a drainingAdapter) Spec(p *Pool) (kube.Spec, error) {
	s, err := a.poolAdapter.Spec(p)
	s.Lifecycle = &kube.Lifecycle{PreDelete: []string{"drain"}}
	return s, err
}

// testMissingPatch runs one pass of a Pool with lifecycle hooks, called
// directly on a cache synced as the service account, with poolRole and
// with poolRole less patch on Pools: the first adds the finalizer, the
// second makes the Pods and is then refused the finalizer.
func testMissingPatch(t *testing.T, admin *rest.Config, ac client.Client) {
	full, err := os.ReadFile(poolRole)
	if err != nil {
		t.Fatal(err)
	}
	const ownerRule = "  - pools\n  verbs:\n  - get\n  - list\n  - patch\n"
	if n := strings.Count(string(full), ownerRule); n != 1 {
		t.Fatalf("%s has the Pools rule %d times, want once", poolRole, n)
	}
	noPatch := filepath.Join(t.TempDir(), "role.yaml")
	if err := os.WriteFile(noPatch, []byte(strings.Replace(string(full), ownerRule, "  - pools\n  verbs:\n  - get\n  - list\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		role          string
		wantForbidden bool
		wantFinalizer bool
	}{
		{"drain-full", poolRole, false, true},
		{"drain-nopatch", noPatch, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cfg, err := kubetest.ServiceAccountConfig(ctx, admin, "default", tc.name, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			// The Pool exists before the cache starts, so its first
			// list holds it.
			pool := newPool(tc.name, 2)
			if err := ac.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			mgr := rbacManager(t, cfg)
			r := &kube.Reconciler[*Pool, *corev1.Pod]{
				Scheme: mgr.GetScheme(), Adapter: drainingAdapter{}, Naming: kube.OrdinalNames,
				Client: mgr.GetClient(), Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader(),
			}
			if err := r.SetupWithIndexer(mgr.GetFieldIndexer(), tc.name); err != nil {
				t.Fatal(err)
			}
			startManager(t, mgr)
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				t.Fatal("the cache never synced as the service account")
			}
			_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)})
			if got := apierrors.IsForbidden(err); got != tc.wantForbidden || (err != nil && !got) {
				t.Errorf("Reconcile = %v; Forbidden %t, want %t", err, got, tc.wantForbidden)
			}
			if err := ac.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(pool.Finalizers, kube.FinalizerDrain); got != tc.wantFinalizer {
				t.Errorf("Pool's finalizers %v; has %s %t, want %t", pool.Finalizers, kube.FinalizerDrain, got, tc.wantFinalizer)
			}
			pods, _ := podsAndStatus(ctx, t, ac, pool)
			if want := []string{tc.name + "-0", tc.name + "-1"}; !slices.Equal(pods, want) {
				t.Errorf("Pods %v after the pass, want %v", pods, want)
			}
		})
	}
}

// rolesYAML has a Role in namespace other and one in no namespace, which
// goes to the service account's.
const rolesYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: config-reader
  namespace: other
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: lease-reader
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get]
`

// testRoles binds Roles where they say, creating their namespaces, and
// refuses a second call for the same service account.
func testRoles(t *testing.T, admin *rest.Config, ac client.Client) {
	ctx := t.Context()
	path := writeManifest(t, rolesYAML)
	cfg, err := kubetest.ServiceAccountConfig(ctx, admin, "roles", "reader", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ro := range []client.ObjectKey{
		{Namespace: "other", Name: "kubetest:roles:reader:config-reader"},
		{Namespace: "roles", Name: "kubetest:roles:reader:lease-reader"},
	} {
		var b rbacv1.RoleBinding
		if err := ac.Get(ctx, ro, &b); err != nil {
			t.Errorf("RoleBinding %s: %v", ro, err)
			continue
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "roles", Name: "reader"}}
		if diff := cmp.Diff(want, b.Subjects); diff != "" || b.RoleRef.Name != ro.Name || b.RoleRef.Kind != "Role" {
			t.Errorf("RoleBinding %s binds %v (subjects -want +got:\n%s)", ro, b.RoleRef, diff)
		}
	}
	cs, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		obj           client.Object
		namespace     string
		wantForbidden bool
	}{
		{&corev1.ConfigMap{}, "other", false},
		{&corev1.ConfigMap{}, "roles", true},
		{&coordinationv1.Lease{}, "roles", false},
		{&coordinationv1.Lease{}, "other", true},
	} {
		err := cs.Get(ctx, client.ObjectKey{Namespace: tc.namespace, Name: "absent"}, tc.obj)
		// Allowed, the Get finds nothing; refused, it is Forbidden.
		if apierrors.IsForbidden(err) != tc.wantForbidden || !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			t.Errorf("get %T %s/absent as the service account = %v; want Forbidden: %t (NotFound if allowed)", tc.obj, tc.namespace, err, tc.wantForbidden)
		}
	}
	if _, err := kubetest.ServiceAccountConfig(ctx, admin, "roles", "reader", path); !apierrors.IsAlreadyExists(err) {
		t.Errorf("ServiceAccountConfig again for roles/reader = %v, want AlreadyExists", err)
	}
}

// testRefused gives manifests ServiceAccountConfig does not take: each is
// refused with ErrRoleManifest, an error naming the file and what is
// wrong, and no service account is made.
func testRefused(t *testing.T, admin *rest.Config, ac client.Client) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec: {}
`
	const aggregated = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: aggregated
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {team: pools}
`
	role, err := os.ReadFile(poolRole)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		manifest string
		want     []string // in the error, besides the file's path
	}{
		{"deployment", string(role) + "---\n" + deployment, []string{"Deployment", `"web"`}},
		{"only-deployment", deployment, []string{"Deployment"}},
		{"comments", "# nothing here\n---\n", []string{"no ClusterRole or Role"}},
		{"aggregated", aggregated, []string{"aggregated", "aggregationRule"}},
	} {
		path := writeManifest(t, tc.manifest)
		_, err := kubetest.ServiceAccountConfig(t.Context(), admin, "default", "refused-"+tc.name, path)
		if !errors.Is(err, kubetest.ErrRoleManifest) {
			t.Errorf("%s: ServiceAccountConfig = %v, want ErrRoleManifest", tc.name, err)
			continue
		}
		for _, w := range append(tc.want, path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: ServiceAccountConfig = %q, does not say %q", tc.name, err, w)
			}
		}
		sa := &corev1.ServiceAccount{}
		if err := ac.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "refused-" + tc.name}, sa); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the refused call left ServiceAccount default/refused-%s (get: %v)", tc.name, tc.name, err)
		}
	}
	if _, err := kubetest.ServiceAccountConfig(t.Context(), admin, "default", "refused-none"); !errors.Is(err, kubetest.ErrRoleManifest) {
		t.Errorf("ServiceAccountConfig with no manifest = %v, want ErrRoleManifest", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := kubetest.ServiceAccountConfig(t.Context(), admin, "default", "refused-missing", missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ServiceAccountConfig(%s) = %v, want fs.ErrNotExist", missing, err)
	}
}

// writeManifest writes manifest to a new file and returns its path.
func writeManifest(t *testing.T, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "role.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rbacManager is a manager on cfg, serving no metrics or probes.
func rbacManager(t *testing.T, cfg *rest.Config) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// startManager starts mgr until t ends, and then waits until it stopped.
func startManager(t *testing.T, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

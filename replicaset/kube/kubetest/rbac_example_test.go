package kubetest_test

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// Run the operator of Example (Envtest) with the rights its kubebuilder
// RBAC markers give it, not as envtest's administrator: the manager runs
// as the service account default/pool-operator, bound to the roles of
// the ClusterRole controller-gen writes (testdata/rbac/role.yaml here;
// config/rbac/role.yaml in a kubebuilder project), while the test itself
// keeps the administrator's config to make Pools and read what the
// operator did. A marker the operator lacks makes its requests fail with
// Forbidden, so that what they should have written (Pods, status, the
// owner's finalizer) never comes and the test fails, and the manager's
// log says which request was refused.
func ExampleServiceAccountConfig() {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{"testdata"},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS"),
	}
	admin, err := env.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = env.Stop() }()

	ctx := context.Background()
	operator, err := kubetest.ServiceAccountConfig(ctx, admin, "default", "pool-operator", "testdata/rbac/role.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, stop, err := startPoolOperator(ctx, operator) // its manager runs as the service account
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop() // before env.Stop, deferred above
	c, err := client.New(admin, client.Options{Scheme: newScheme()})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Create(ctx, newPool("web", 3)); err != nil {
		fmt.Println(err)
		return
	}
	// Then poll with c until the Pods web-0, web-1 and web-2 exist and
	// the Pool's status counts them.
}

package kubetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// ErrRoleManifest is returned, wrapped with the file and what is wrong
// with it, by ServiceAccountConfig for an RBAC manifest it does not take:
// one that holds a kind other than ClusterRole and Role
// (rbac.authorization.k8s.io/v1), one that holds neither, or a ClusterRole
// with an aggregationRule; and when no manifest is given at all.
var ErrRoleManifest = errors.New("kubetest: not a manifest of RBAC roles")

// tokenLifetime is how long the service account's token is asked to last:
// longer than any test, so that the returned config never needs another.
const tokenLifetime = 24 * time.Hour

// grantWait is how long ServiceAccountConfig waits, at most, for the API
// server's authorizer to apply the bindings it created.
const grantWait = 30 * time.Second

// ServiceAccountConfig makes the service account namespace/name hold
// exactly the rights the RBAC manifests rbac give, and returns a config
// that authenticates as it: a manager built on that config
// (ctrl.NewManager(cfg, …)) runs the Reconciler as the operator runs in a
// cluster, under its own rights, whereas the config envtest gives is an
// administrator's (group system:masters), whom RBAC never denies. A
// kubebuilder RBAC marker the operator lacks then makes its requests fail
// with Forbidden (apierrors.IsForbidden), in the test, instead of in the
// cluster: patch on the owner's own kind, say, which the binding needs to
// add kube.FinalizerDrain (Spec.Lifecycle) and to write the owner's
// remediation history (Spec.Remediation). The Reconciler logs such an
// error and retries the pass; a test sees it by checking what the request
// was to write (the finalizer, the annotation), or by calling Reconcile
// itself, which returns it.
//
// admin must have the rights to create what is listed below and to bind
// any role (envtest's config has them). rbac are the paths of the
// manifests controller-gen writes (config/rbac/role.yaml), YAML with one
// or more documents, each a ClusterRole or a Role of
// rbac.authorization.k8s.io/v1. Every file is read and checked before
// anything is created: a document of another kind (a RoleBinding, a
// ServiceAccount, a Deployment), a file with no ClusterRole or Role, a
// ClusterRole with an aggregationRule (no controller-manager aggregates
// it on envtest), and a call with no file at all are refused with
// ErrRoleManifest, wrapped with the file and the kind, and create nothing;
// a file that cannot be read is refused with the error of reading it
// (fs.ErrNotExist, say).
//
// It then creates, through admin:
//   - the namespace of the service account, and of each Role, unless it
//     exists;
//   - the ServiceAccount namespace/name;
//   - each ClusterRole, under the name
//     "kubetest:<namespace>:<name>:<its name>", bound to the service
//     account by a ClusterRoleBinding of that name;
//   - each Role, in its own namespace (the service account's if it names
//     none, as kustomize would put it), under the name made the same way,
//     bound to the service account by a RoleBinding of that name there.
//
// The names keep the roles of two service accounts apart on one API
// server, so tests that share one may each have their own rights; a
// second call for the same service account fails with AlreadyExists
// (apierrors.IsAlreadyExists), so use one name per call. Nothing is ever
// deleted: the objects go with the API server.
//
// The config carries a token of the service account from the
// TokenRequest API, valid for a day (or less, if the API server caps it),
// so the API server authenticates it as a Pod's service account:
// user system:serviceaccount:<namespace>:<name>, in the groups
// system:serviceaccounts, system:serviceaccounts:<namespace> and
// system:authenticated, with the rights of the roles given and those the
// API server grants every authenticated user (discovery, self reviews).
// It keeps admin's server, CA and client settings (rest.AnonymousClientConfig)
// and none of its credentials or impersonation. Before returning,
// ServiceAccountConfig checks as the service account that it is
// authenticated as such and, with one rule of each role, that the API
// server's authorizer applies the new bindings (at most 30 s), so a
// manager started at once is not refused by bindings still on their way.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name string, rbac ...string) (*rest.Config, error) {
	if len(rbac) == 0 {
		return nil, fmt.Errorf("kubetest: no RBAC manifest given for ServiceAccount %s/%s: %w", namespace, name, ErrRoleManifest)
	}
	if admin == nil {
		return nil, errors.New("kubetest: ServiceAccountConfig needs the administrator's config")
	}
	var manifests []manifest
	for _, path := range rbac {
		m, err := readManifest(path)
		if err != nil {
			return nil, err
		}
		manifests = append(manifests, m)
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("kubetest: client for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if err := ensureNamespace(ctx, cs, namespace); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: create ServiceAccount %s/%s: %w", namespace, name, err)
	}
	g := grant{cs: cs, namespace: namespace, name: name}
	var checks []check
	for _, m := range manifests {
		for _, cr := range m.clusterRoles {
			c, err := g.clusterRole(ctx, m.path, cr)
			if err != nil {
				return nil, err
			}
			checks = append(checks, c...)
		}
		for _, ro := range m.roles {
			c, err := g.role(ctx, m.path, ro)
			if err != nil {
				return nil, err
			}
			checks = append(checks, c...)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime / time.Second)),
	}}
	tr, err = cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubetest: token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	if err := awaitGrants(ctx, cfg, namespace, name, checks); err != nil {
		return nil, err
	}
	return cfg, nil
}

// grant creates a service account's roles and binds them to it.
type grant struct {
	cs              kubernetes.Interface
	namespace, name string // the service account's
}

// roleName is the name under which the service account's copy of the
// role named role is created, and its binding.
func (g grant) roleName(role string) string {
	return "kubetest:" + g.namespace + ":" + g.name + ":" + role
}

func (g grant) subjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: g.namespace, Name: g.name}}
}

// clusterRole creates the service account's copy of cr, read from path,
// and its ClusterRoleBinding, and returns the check that it applies.
func (g grant) clusterRole(ctx context.Context, path string, cr rbacv1.ClusterRole) ([]check, error) {
	name := g.roleName(cr.Name)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: cr.Labels}, Rules: cr.Rules}
	if _, err := g.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: create ClusterRole %s from %s: %w", cr.Name, path, err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   g.subjects(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
	if _, err := g.cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: bind ClusterRole %s from %s: %w", cr.Name, path, err)
	}
	return checkOf("ClusterRole "+cr.Name, "", cr.Rules), nil
}

// role creates the service account's copy of ro, read from path, in ro's
// namespace (or the service account's), and its RoleBinding there, and
// returns the check that it applies.
func (g grant) role(ctx context.Context, path string, ro rbacv1.Role) ([]check, error) {
	ns, name := cmp.Or(ro.Namespace, g.namespace), g.roleName(ro.Name)
	if err := ensureNamespace(ctx, g.cs, ns); err != nil {
		return nil, err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: ro.Labels}, Rules: ro.Rules}
	if _, err := g.cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: create Role %s/%s from %s: %w", ns, ro.Name, path, err)
	}
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Subjects:   g.subjects(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	}
	if _, err := g.cs.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: bind Role %s/%s from %s: %w", ns, ro.Name, path, err)
	}
	return checkOf("Role "+ns+"/"+ro.Name, ns, ro.Rules), nil
}

// ensureNamespace creates the namespace ns unless it exists.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: create Namespace %s: %w", ns, err)
	}
	return nil
}

// check is a request that one rule of a role allows: the service account
// is allowed it once the API server's authorizer applies the role's
// binding.
type check struct {
	role string // the role, to say which one never applied
	spec authorizationv1.SelfSubjectAccessReviewSpec
}

// checkOf returns the check of the first of rules with a verb, in the
// namespace ns ("" for all), or none when no rule has one.
func checkOf(role, ns string, rules []rbacv1.PolicyRule) []check {
	for _, r := range rules {
		if len(r.Verbs) == 0 {
			continue
		}
		c := check{role: role}
		if len(r.NonResourceURLs) > 0 {
			c.spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: r.NonResourceURLs[0], Verb: r.Verbs[0]}
			return []check{c}
		}
		a := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0]}
		if len(r.APIGroups) > 0 {
			a.Group = r.APIGroups[0]
		}
		if len(r.Resources) > 0 {
			a.Resource, a.Subresource, _ = strings.Cut(r.Resources[0], "/")
		}
		if len(r.ResourceNames) > 0 {
			a.Name = r.ResourceNames[0]
		}
		c.spec.ResourceAttributes = a
		return []check{c}
	}
	return nil
}

// awaitGrants checks, through cfg, that the API server authenticates it
// as the service account namespace/name, then waits until it allows each
// of checks (the authorizer reads bindings from a cache of its own).
func awaitGrants(ctx context.Context, cfg *rest.Config, namespace, name string, checks []check) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubetest: client as ServiceAccount %s/%s: %w", namespace, name, err)
	}
	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubetest: authenticate as ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if got, want := ssr.Status.UserInfo.Username, "system:serviceaccount:"+namespace+":"+name; got != want {
		return fmt.Errorf("kubetest: the token of ServiceAccount %s/%s authenticates as %q, not %q", namespace, name, got, want)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, grantWait, true, func(ctx context.Context) (bool, error) {
		var left []check
		for _, c := range checks {
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: c.spec}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			if !r.Status.Allowed {
				left = append(left, c)
			}
		}
		checks = left
		return len(left) == 0, nil
	})
	if err != nil && len(checks) > 0 {
		return fmt.Errorf("kubetest: ServiceAccount %s/%s: %s not applied: %w", namespace, name, checks[0].role, err)
	}
	if err != nil {
		return fmt.Errorf("kubetest: ServiceAccount %s/%s: review rights: %w", namespace, name, err)
	}
	return nil
}
